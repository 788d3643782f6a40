"""Non-negative least squares (and non-negative ridge): Lawson and Hanson's active-set method
on the Gram matrix, every target column running its own active set, in fixed shapes.

Solves ``min ||Y - X W||^2 + alpha ||W||^2`` subject to ``W >= 0``, column by column. The
method is Lawson and Hanson's (1974), the algorithm behind ``scipy.optimize.nnls``: a passive
set P of free coefficients grows by the coefficient with the largest gradient
``w = X^T (y - X x) - alpha x`` while one is positive (beyond ``tol``); the least-squares
solution z on P replaces x when it is positive, else x moves towards z until a coefficient
reaches zero, which leaves P. At the end x solves the problem restricted to P exactly and
satisfies the KKT conditions (``w <= tol`` off P).

Written for tracing: each iteration is ONE step of that method for every column at once (an
addition followed by a solve, or a removal followed by a solve, per column), with P held as a
boolean mask. The solve on P is a Cholesky solve of the full n x n Gram matrix masked to P
(identity outside it), so shapes never depend on P: a stack (..., k, n, n), one system per
column. The loop is ``_compat.loop`` (``lax.while_loop`` under ``jax.jit``); a finished column
stops changing (masked with ``where``) and its iteration count stops. After the loop one step
of iterative refinement on P (residual from X itself, not from the Gram matrix) takes the
coefficients from the Gram matrix's ``eps * cond(X)**2`` to about ``eps * cond(X)``.

Cost per iteration: O(k n^3) for the k masked factorizations; Lawson and Hanson need about
one iteration per coefficient that ends up positive, plus one per removal.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._backend import _compat
from .._backend._compat import matmul, mT
from .._problem._operator import LinearMap


def default_max_iter(n):
    """``3 n`` solves (SciPy's default for ``nnls``, which counts inner iterations only): the
    method takes one solve per coefficient added to P plus one per removal."""
    return 3 * max(n, 1)


def default_tol(xp, dtype, m, n):
    """Tolerance of the optimality test, ``10 max(m, n) eps``, relative to ``||x_j|| ||y||``
    (scale-free: the same decisions for X and y in any units)."""
    return 10 * max(m, n, 1) * float(xp.finfo(dtype).eps)


class _State(NamedTuple):
    x: Any  # (..., k, n) current iterate, zero off P
    passive: Any  # (..., k, n) bool: P
    inner: Any  # (..., k) bool: the last solve was infeasible (x moved, P lost a coefficient)
    n_iter: Any  # (..., k) int
    done: Any  # (..., k) bool: optimal (KKT holds)


def _masked_solve(xp, A, alpha, b, passive):
    """z (..., k, n): the solution of ``(A + alpha I) z = b`` restricted to ``passive``, zero
    off it. A (..., n, n), alpha (k,) or (1,), b (..., k, n), passive (..., k, n)."""
    n = A.shape[-1]
    eye = _compat.eye_like(xp, A, n)
    pair = passive[..., :, None] & passive[..., None, :]  # (..., k, n, n)
    M = A[..., None, :, :] + _compat.as_rank(xp, alpha[:, None, None] * eye[None, :, :], A.ndim + 1)
    M = xp.where(pair, M, _compat.as_rank(xp, eye, M.ndim))
    rhs = xp.where(passive, b, xp.zeros_like(b))[..., None]  # (..., k, n, 1)
    z = _compat.cho_solve(xp, _compat.cholesky(xp, M), rhs)[..., 0]
    return xp.where(passive, z, xp.zeros_like(z))


def solve(xp, X, Y, alpha, *, max_iter=None, tol=None):
    """Non-negative solution of X W = Y (penalized by ``alpha``, shape (1,) or (k,), for ridge). X: an array, or a
    ``_operator.LinearMap`` with a Gram product (a sparse X: its ``gram()`` and products, never X densely).

    Returns ``(coef (..., n, k), n_iter (..., k), converged (..., k))``; ``converged`` is False
    for a column that ran out of ``max_iter`` iterations (its coefficients are then feasible,
    the last iterate, but not optimal).
    """
    m, n = X.shape[-2:]
    max_iter = default_max_iter(n) if max_iter is None else max_iter
    tol = default_tol(xp, X.dtype, m, n) if tol is None else tol
    if isinstance(X, LinearMap):  # X known by its products and its Gram matrix (a sparse X)
        A, times, times_t = X.gram(), X.matvec, X.rmatvec
    else:
        Xt = mT(xp, X)
        A = matmul(xp, Xt, X)  # (..., n, n)

        def times(V):
            return matmul(xp, X, V)

        def times_t(U):
            return matmul(xp, Xt, U)

    b = mT(xp, times_t(Y))  # (..., k, n)
    alpha = xp.zeros((1,), dtype=X.dtype, device=_compat.device(X)) if alpha is None else alpha
    # The optimality test, scale-free: w_j <= tol ||x_j|| ||y|| (x_j a column of X).
    col = xp.sqrt(xp.linalg.diagonal(A)[..., None, :] + _compat.as_rank(xp, alpha[:, None], A.ndim))  # (..., k or 1, n)
    ynorm = xp.sqrt(xp.sum(Y * Y, axis=-2))[..., None]  # (..., k, 1)
    thresh = tol * col * ynorm  # (..., k, n)
    _, int_dtype = _compat.default_dtypes(xp, _compat.device(X))
    false = xp.zeros(tuple(b.shape), dtype=xp.bool, device=_compat.device(X))
    n_iter = xp.zeros(tuple(b.shape[:-1]), dtype=int_dtype, device=_compat.device(X))
    state = _State(x=xp.zeros_like(b), passive=false, inner=false[..., 0], n_iter=n_iter, done=false[..., 0])
    idx = xp.arange(n, device=_compat.device(X))
    neg_inf = xp.full((), -float("inf"), dtype=X.dtype, device=_compat.device(X))
    pos_inf = xp.full((), float("inf"), dtype=X.dtype, device=_compat.device(X))
    alpha_col = _compat.as_rank(xp, alpha[:, None], b.ndim)  # (..., k or 1, 1)

    def step(s, A, b):
        # Outer phase: optimal when no coefficient off P has a positive gradient; else the
        # one with the largest joins P.
        w = b - matmul(xp, s.x, A) - alpha_col * s.x
        cand = ~s.passive & (w > thresh)
        optimal = ~s.inner & ~xp.any(cand, axis=-1)
        j = _compat.arg_best(xp, xp.where(cand, w, neg_inf), -1, largest=True)  # (..., k)
        grow = (~s.inner & ~optimal)[..., None] & (_compat.as_rank(xp, idx, j.ndim + 1) == j[..., None])
        passive = s.passive | grow
        z = _masked_solve(xp, A, alpha, b, passive)
        # z infeasible: move x towards z until the first coefficient reaches zero; it leaves P.
        neg = passive & (z < 0)
        feasible = ~xp.any(neg, axis=-1)
        gap = xp.where(neg, s.x - z, xp.ones_like(z))  # > 0 where neg (x >= 0 > z)
        ratio = xp.where(neg, s.x / gap, pos_inf)
        t = xp.min(ratio, axis=-1, keepdims=True)
        t = xp.where(feasible[..., None], xp.ones_like(t), t)
        x = s.x + t * (z - s.x)
        leave = (neg & (ratio <= t)) | (x <= 0)
        passive = passive & ~(leave & ~feasible[..., None])
        x = xp.where(passive, x, xp.zeros_like(x))
        run = ~(s.done | optimal)
        vec = run[..., None]
        return _State(
            xp.where(vec, x, s.x), xp.where(vec, passive, s.passive), xp.where(run, ~feasible, s.inner),
            xp.where(run, s.n_iter + 1, s.n_iter), s.done | optimal,
        )  # fmt: skip

    state = _compat.loop(xp, step, state, max_iter, lambda s: xp.all(s.done), (A, b))
    # The last step may have found the optimum (``done``) or the budget ran out first: test
    # the KKT conditions once more on the final iterate.
    x, passive = state.x, state.passive
    w = b - matmul(xp, x, A) - alpha_col * x
    converged = state.done | (~state.inner & ~xp.any(~passive & (w > thresh), axis=-1))
    # One step of refinement on P, the residual taken from X (its rounding ~ eps ||X|| ||r||).
    r = Y - times(mT(xp, x))  # (..., m, k)
    g = mT(xp, times_t(r)) - alpha_col * x
    d = _masked_solve(xp, A, alpha, g, passive)
    refined = x + d
    x = xp.where(passive & (refined > 0), refined, x)
    return mT(xp, x), state.n_iter, converged
