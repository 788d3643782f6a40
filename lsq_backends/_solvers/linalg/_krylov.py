"""What the Krylov solvers (``lsqr``, ``lsmr``) share: their options' names and defaults, the products
with X (an array, or a ``_operator.LinearMap`` for sparse and matrix-free X), column norms
safe from underflow, the stable plane rotation of SOL's codes, and column scaling as a
preconditioner (:func:`preconditioned`).

Both touch X only through ``X @ V`` and ``X^T @ U`` on blocks of k columns (one per target),
so a sparse matrix or an operator serves them as well as a dense array.

``preconditioned``: D holds the column norms of the matrix iterated on. That is X as prepared
(centered and weighted; ``LinearMap.norms`` for a sparse X, from its entries), and with a
penalty ``[X; sqrt(alpha) I]``: ``D_j = sqrt(||x_j||^2 + alpha)``. Where each target has its
own penalty there is one D per target, applied column by column inside the block products. A
column of norm 0 keeps scale 1. The penalty stays on the original coefficients,
``alpha ||D^-1 z||^2``: there is no scalar damping. The scaled problem
``[X D^-1; sqrt(alpha) D^-1] z = [Y; 0]`` (unit columns) is iterated undamped, its products n
entries longer. Its stopping rules read ``||r||`` and ``||X||`` of that augmented system
(SciPy's ``damp`` puts the penalty rows in ``||r||`` alike).
"""

from __future__ import annotations

from ..._backend import _compat
from ..._backend._compat import full_int, matmul, mT
from ..._problem._operator import LinearMap
from .._record import DIRECT_FEATURES

# the options of every Krylov method (``Record.options``)
OPTIONS = ("atol", "btol", "max_iter", "precondition")
PRECONDITIONERS = ("columns",)
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


def tolerances(xp, X, options):
    """``atol``, ``btol`` and ``max_iter`` from an iterative solve's ``options`` (``Given.options``), the
    defaults where absent or None."""
    options = options or {}
    atol, btol, max_iter = options.get("atol"), options.get("btol"), options.get("max_iter")
    return (
        default_tol(xp, X.dtype) if atol is None else atol,
        default_tol(xp, X.dtype) if btol is None else btol,
        default_max_iter(*X.shape[-2:]) if max_iter is None else max_iter,
    )


def forward(xp, X, V):
    """``X @ V`` for an array X (..., m, n) or a ``LinearMap``; V (..., n, k)."""
    if isinstance(X, LinearMap):
        return X.matvec(V)
    return matmul(xp, X, V)


def adjoint(xp, X, U):
    """``X^T @ U`` for an array X (..., m, n) or a ``LinearMap``; U (..., m, k)."""
    if isinstance(X, LinearMap):
        return X.rmatvec(U)
    return matmul(xp, mT(xp, X), U)


def fresh_products(X):
    """Whether X's products return new arrays that the solver may write into (``multiply_add``'s
    ``fresh``): a dense array's (a matrix product), a ``LinearMap``'s where it says so."""
    return not isinstance(X, LinearMap) or X.fresh


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
    q = _compat.sign(xp, den) / xp.sqrt(1 + tau * tau)  # s where |b| > |a|, else c
    p = q * tau
    r = den / safe(xp, q)
    return xp.where(bigger, p, q), xp.where(bigger, q, p), r


def rank_of(xp, batch, n, alpha, like):
    """The rank a Krylov solve reports: ``n`` for ridge with every penalty positive (the
    damped system has full column rank), else -1 (not estimated)."""
    rank = full_int(xp, batch, -1, like)
    if alpha is None:
        return rank
    return xp.where(xp.all(alpha > 0), full_int(xp, batch, n, like), rank)


def preconditioned(xp, solve, X, Y, alpha, given):
    """``solve`` (LSMR's or LSQR's) with X's columns scaled to unit norm: ``X D^-1 z = Y``, ``coef = D^-1 z``, at
    ``given.options`` (``_record.Given``). Returns ``solve``'s ``Solution``, ``n_iter`` and ``istop`` the scaled
    problem's. D is (..., n, 1), or (..., n, k) with a penalty. A warm start ``x0`` (original coordinates) starts at
    ``D x0``. No host read and no branch on values: D stays an array. See the module docstring."""
    options = {**given.options, "precondition": None}
    m, n = X.shape[-2:]
    batch = tuple(X.shape[:-2])
    if isinstance(X, LinearMap):
        norms = X.norms()
        if norms is None:
            msg = "precondition='columns' needs X's column norms: an operator has none (scale its columns yourself)"
            raise TypeError(msg)
        dev = X.device
    else:
        norms = column_norm(xp, X)  # (..., 1, n)
        X = _compat.kept(xp, X)  # closed over by the products below: persisted once on Dask
        dev = _compat.device(X)
    d = mT(xp, norms)  # (..., n, 1)
    if alpha is not None:
        zero = xp.zeros_like(Y[..., :1, :])
        root = xp.sqrt(zero + _compat.as_rank(xp, alpha, zero.ndim))  # (..., 1, k): one penalty per column
        d = xp.hypot(d, root)  # (..., n, k): the columns of [X; sqrt(alpha) I]
    d = safe(xp, d)

    def fwd(V):
        return forward(xp, X, V / d)

    def adj(U):
        return adjoint(xp, X, U) / d

    shape = (*batch, m, n)
    if alpha is not None:
        shape = (*batch, m + n, n)
        fwd, adj = (
            lambda V: xp.concat([forward(xp, X, V / d), root * (V / d)], axis=-2),
            lambda U: (adjoint(xp, X, U[..., :m, :]) + root * U[..., m:, :]) / d,
        )
        Y = xp.concat([Y, xp.zeros((*Y.shape[:-2], n, Y.shape[-1]), dtype=Y.dtype, device=_compat.device(Y))], axis=-2)
    if options.get("x0") is not None:
        options["x0"] = options["x0"] * d
    # fwd returns X's product (or, with a penalty, a new concatenation); adj a new quotient
    scaled = LinearMap(xp, shape, X.dtype, dev, (fwd, adj), fresh=alpha is not None or fresh_products(X))
    sol = solve(xp, scaled, Y, None, given._replace(options=options))
    return sol._replace(coef=sol.coef / d, rank=rank_of(xp, batch, n, alpha, Y))
