"""One module per solver; each exposes
``solve(xp, X, Y, alpha, rcond, offset_sq) -> (coef, rank, singular values or None)``, where
``offset_sq`` is what centering removed from the squared column norms (for the rank tests).
``normal`` and ``auto`` also take ``check=``, X's finiteness test run on the Gram matrix.

Iterative solvers (``ITERATIVE``) take ``(xp, X, Y, alpha, *, atol, btol, max_iter)`` and return
``(coef, rank, n_iter)``."""

from . import auto, lsqr, normal, qr, svd

SOLVERS = {"auto": auto.solve, "normal": normal.solve, "qr": qr.solve, "svd": svd.solve}
ITERATIVE = {"lsqr": lsqr.solve}
