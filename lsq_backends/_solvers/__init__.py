"""One module per solver; each direct one exposes
``solve(xp, X, Y, alpha, rcond, offset_sq, *, factor=False) -> (coef, rank, singular values or
None, rss or None)``, where ``offset_sq`` is what centering removed from the squared column norms
(for the rank tests) and ``rss`` the residual sum of squares where the solver has it for free;
with ``factor``, the ``_factor.Factor`` it solved with fifth (or None). ``normal`` and ``auto``
also take ``check=``, X's finiteness test run on the Gram matrix, and ``data=``, the Gram
route's view of tall X (``_gram_data.TallGram``).

Iterative solvers (``ITERATIVE``) take ``(xp, X, Y, alpha, *, atol, btol, max_iter)`` (``lsmr``
also ``conlim`` and ``x0``), X an array or a ``_operator.LinearMap``, and return
``(coef, rank, n_iter)``, ``lsmr`` with its stop reasons (``istop``) fourth. :func:`fit` calls
either kind by name and returns a :class:`Solution`; an iterative one's ``precondition``
option (``"columns"``) runs it through ``_krylov.preconditioned``."""

from typing import Any, NamedTuple

from . import auto, lsmr, lsqr, normal, qr, svd
from ._krylov import preconditioned

SOLVERS = {"auto": auto.solve, "normal": normal.solve, "qr": qr.solve, "svd": svd.solve}
ITERATIVE = {"lsqr": lsqr.solve, "lsmr": lsmr.solve}
GRAM_ROUTE = ("normal", "auto")  # the methods that always form X's Gram matrix


class Solution(NamedTuple):
    """What every method returns through :func:`fit`: the coefficients (..., n, k), the rank
    (...,), and where the method has them, the singular values (``svd``), the iteration counts
    (iterative methods), the residual sum of squares (the refined normal equations), the
    ``_factor.Factor`` solved with (``factor=True``) and why each target stopped (``lsmr``)."""

    coef: Any
    rank: Any
    s: Any = None
    n_iter: Any = None
    rss: Any = None
    factor: Any = None
    istop: Any = None


def fit(xp, X, Y, alpha, method, rcond, offset_sq, check, options, factor=False, data=None):
    """Any method's solve, by name, as a :class:`Solution`. ``check`` and ``data`` go to the
    methods that take them (``GRAM_ROUTE``), ``options`` (atol, btol, max_iter) to the
    iterative ones; ``factor`` asks a direct method for the ``_factor.Factor`` it solved with
    (iterative methods have none: None)."""
    if method in ITERATIVE:
        options = dict(options)
        if options.pop("precondition", None) is None:
            coef, rank, n_iter, *istop = ITERATIVE[method](xp, X, Y, alpha, **options)
        else:
            coef, rank, n_iter, *istop = preconditioned(xp, ITERATIVE[method], X, Y, alpha, **options)
        return Solution(coef, rank, n_iter=n_iter, istop=istop[0] if istop else None)
    kw: dict[str, Any] = {} if check is None else {"check": check}
    if data is not None and method in GRAM_ROUTE:
        kw["data"] = data
    if factor:
        kw["factor"] = True
    coef, rank, s, rss, *fac = SOLVERS[method](xp, X, Y, alpha, rcond, offset_sq, **kw)
    return Solution(coef, rank, s, None, rss, fac[0] if fac else None)
