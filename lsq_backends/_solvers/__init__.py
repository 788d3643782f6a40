"""One module per solver; each exposes
``solve(xp, X, Y, alpha, rcond, offset_sq) -> (coef, rank, singular values or None)``, where
``offset_sq`` is what centering removed from the squared column norms (for the rank tests).
``normal`` and ``auto`` also take ``check=``, X's finiteness test run on the Gram matrix.

Iterative solvers (``ITERATIVE``) take ``(xp, X, Y, alpha, *, atol, btol, max_iter)`` and return
``(coef, rank, n_iter)``."""

from . import auto, lsqr, normal, qr, svd

SOLVERS = {"auto": auto.solve, "normal": normal.solve, "qr": qr.solve, "svd": svd.solve}
ITERATIVE = {"lsqr": lsqr.solve}


def fit(xp, X, Y, alpha, method, rcond, offset_sq, check, options, factor=False):
    """Any method's solve, by name: ``(coef, rank, singular values or None, n_iter or None,
    Factor or None)``. ``check`` goes to the methods that take it, ``options`` (atol, btol,
    max_iter) to the iterative ones; ``factor`` asks a direct method for the ``_factor.Factor``
    it solved with (iterative methods have none: None)."""
    if method in ITERATIVE:
        coef, rank, n_iter = ITERATIVE[method](xp, X, Y, alpha, **options)
        return coef, rank, None, n_iter, None
    kw = {} if check is None else {"check": check}
    if factor:
        coef, rank, s, fac = SOLVERS[method](xp, X, Y, alpha, rcond, offset_sq, factor=True, **kw)
        return coef, rank, s, None, fac
    return (*SOLVERS[method](xp, X, Y, alpha, rcond, offset_sq, **kw), None, None)
