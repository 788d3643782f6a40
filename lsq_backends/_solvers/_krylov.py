"""What the Krylov solvers (``lsqr``, ``lsmr``) share: their options' names and defaults, the products
with X (an array, or a ``_operator.LinearMap`` for sparse and matrix-free X), column norms
safe from underflow, and the stable plane rotation of SOL's codes.

Both touch X only through ``X @ V`` and ``X^T @ U`` on blocks of k columns (one per target),
so a sparse matrix or an operator serves them as well as a dense array.
"""

from __future__ import annotations

from .. import _compat
from .._operator import LinearMap
from ._record import DIRECT_FEATURES
from ._shared import dot, mT

OPTIONS = ("atol", "btol", "max_iter")  # the options of every Krylov method (``Record.options``)
# Their row of the capability table (``Record.capabilities``).
CAPABILITIES = {
    **DIRECT_FEATURES,
    "dask_lazy": False,
    "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
    "torch_cuda_syncs": "none",
    "xla_gpu_syncs": "2 + 1 per 10 iterations begun",
}


def default_tol(xp, dtype):
    """``atol`` and ``btol`` when not given: SciPy's 1e-6, or 100 ulps where the dtype cannot
    resolve 1e-6 (float32: 1.2e-5; float16 would get 0.1)."""
    return max(1e-6, 100 * float(xp.finfo(dtype).eps))


def default_max_iter(m, n):
    """Four times the dimension of the largest Krylov space, min(m, n). Exact arithmetic needs
    at most min(m, n); in floating point the Lanczos vectors lose orthogonality and it takes
    more: SciPy's 2 n stopped float32 benchmark problems of cond 100 at 8% error, which
    converged within 3.8 min(m, n) iterations."""
    return 4 * min(m, n)


def forward(xp, X, V):
    """``X @ V`` for an array X (..., m, n) or a ``LinearMap``; V (..., n, k)."""
    if isinstance(X, LinearMap):
        return X.matvec(V)
    return dot(xp, X, V)


def adjoint(xp, X, U):
    """``X^T @ U`` for an array X (..., m, n) or a ``LinearMap``; U (..., m, k)."""
    if isinstance(X, LinearMap):
        return X.rmatvec(U)
    return dot(xp, mT(xp, X), U)


def column_norm(xp, a):
    """Column norms (..., 1, k), safe from underflow and overflow (``_compat.column_norms``):
    a norm of 0, from squares that underflowed, would stop the iteration at once."""
    return _compat.column_norms(xp, a)


def safe(xp, d):
    """A divisor: ``d`` where nonzero, else 1 (the quotient is then masked or zero)."""
    return _compat.nonzero_or_one(xp, d)


def sym_ortho(xp, a, b):
    """``(c, s, r)`` with ``[c s; -s c] [a; b] = [r; 0]``, elementwise: SciPy's ``_sym_ortho``
    (Choi's stable Givens rotation, the same operations in the same order), with ``r >= 0``
    and ``(0, 0, 0)`` for ``a = b = 0``."""
    bigger = xp.abs(b) > xp.abs(a)
    num, den = xp.where(bigger, a, b), xp.where(bigger, b, a)
    tau = num / safe(xp, den)
    q = xp.sign(den) / xp.sqrt(1 + tau * tau)  # s where |b| > |a|, else c
    p = q * tau
    r = den / safe(xp, q)
    return xp.where(bigger, p, q), xp.where(bigger, q, p), r
