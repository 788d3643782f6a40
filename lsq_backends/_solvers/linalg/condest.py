"""Cheap condition estimate of X from the Cholesky factor of its Gram matrix.

Used to choose between the normal equations, CholeskyQR2 and Householder QR. O(p^2) per step
on the p x p factor: nothing next to forming the Gram matrix.

``condition_estimate``: for p > 16 the larger of the pivot ratio of the scaled factor and power
iteration on D A D and on its inverse (through the inverse factor), from a fixed start. That is
a lower bound, usually within a small factor of the truth. For p <= 16 it is the
Frobenius-norm bound instead: an upper bound, at most p times the truth. NumPy stacks compute it
by substitution entry by entry (``_stacked_inverse_norm``), other libraries by a batched
inverse.
"""

from __future__ import annotations

import math

from ..._backend import _compat
from ..._backend._compat import diagonal, matmul, mT

POWER_STEPS = 4
SMALL = 16  # up to this size, a Frobenius-norm bound replaces power iteration


def _start_vector(xp, like, p):
    # A fixed +-1 pattern with no structure to be orthogonal to (sign of sin(j * golden ratio)).
    j = xp.arange(1, p + 1, dtype=like.dtype, device=_compat.device(like))
    v = xp.sign(xp.sin(j * 1.6180339887498949)) + 0.5
    shape = tuple(like.shape[:-2]) + (p, 1)
    return xp.broadcast_to(v[:, None], shape)


def _normalize(xp, v):
    nrm = xp.linalg.vector_norm(v, axis=-2, keepdims=True)
    return v / _compat.positive_or_one(xp, nrm)


def condition_estimate(xp, L, A, Lt=None):
    """Estimate of cond(X D) = sqrt(cond(D A D)), D equilibrating A = X^T X = L L^T (unit column norms); NaN where
    the factorization failed. p > 16: power iteration, a lower bound usually within a small factor; p <= 16: the
    Frobenius-norm bound, at most p times too large (see the module docstring). ``Lt``: ``_compat.batch_last(L)``
    for a stack, if the caller has it."""
    p = A.shape[-1]
    d = diagonal(xp, A)
    if p <= SMALL and L.ndim > 2 and _compat.plain_numpy(L):
        # Stacks of small problems: ||D L||_F ||(D L)^-1||_F, where ||D L||_F = sqrt(p) (row i
        # of L has squared norm A_ii), so only the inverse is computed, entry by entry over
        # the stack, without forming D L (half of auto's extra cost on 10000 8x8 problems).
        # NumPy only: p**3 / 6 elementwise operations (~700 at p = 16) are ~700 kernel
        # launches on a GPU, where the batched inverse below is a few.
        return math.sqrt(p) * _stacked_inverse_norm(xp, L, d, Lt)
    if p <= SMALL:
        # Small factors: ||Ls||_F ||Ls^-1||_F (Ls = D L, the Cholesky factor of D A D), an upper
        # bound on cond(X D) at most p times too large, for one reduction instead of 15 products;
        # ||Ls||_F = sqrt(p), as above. Ls^-1 = L^-1 D^-1 scales the columns of L^-1 by sqrt(d),
        # with no division (a factor that succeeded has d > 0; a failed one's NaN reaches L^-1).
        Li = _compat.triangular_inverse(xp, L, lower=True) * xp.sqrt(d)[..., None, :]
        return math.sqrt(p) * xp.sqrt(_compat.reduce_sum(xp, Li * Li, axis=(-2, -1)))
    dinv = 1 / xp.sqrt(_compat.positive_or_one(xp, d))
    Ls = dinv[..., :, None] * L  # Cholesky factor of D A D
    # One triangular solve for the inverse factor, then matrix products only: batched stacks
    # of small problems pay one call instead of ten (O(p^3 / 3), as much as the Cholesky).
    Linv = _compat.triangular_inverse(xp, Ls, lower=True)
    As = dinv[..., :, None] * A * dinv[..., None, :]
    v = w = _start_vector(xp, L, p)
    for _ in range(POWER_STEPS):
        v = _normalize(xp, matmul(xp, As, v))
        w = _normalize(xp, matmul(xp, mT(xp, Linv), matmul(xp, Linv, w)))
    lam_max = xp.linalg.vector_norm(matmul(xp, As, v), axis=(-2, -1))
    inv_min = xp.linalg.vector_norm(matmul(xp, mT(xp, Linv), matmul(xp, Linv, w)), axis=(-2, -1))
    piv = diagonal(xp, Ls)
    ratio = xp.max(piv, axis=-1) / xp.min(piv, axis=-1)
    return xp.maximum(xp.sqrt(lam_max * inv_min), ratio)


def _stacked_inverse_norm(xp, L, d=None, Lt=None):
    """||L^-1 diag(sqrt(d))||_F (``d`` None: ||L^-1||_F) for a stack of small lower triangles, by substitution
    vectorized over the stack: p**3 / 6 elementwise operations on (...,)-shaped arrays, the inverse never assembled
    (NumPy's batched ``inv`` costs more: design notes). ``Lt``: ``_compat.batch_last(L)``, if known."""
    p = L.shape[-1]
    Lt = _compat.batch_last(xp, L) if Lt is None else Lt
    if d is not None:
        dt = _compat.batch_last(xp, _compat.positive_or_one(xp, d)[..., None])  # (p, 1, N)
    rows = [[Lt[i, k, ...] for k in range(i + 1)] for i in range(p)]
    total = None
    for j in range(p):  # column j of L^-1: x_i = 0 for i < j
        x = {j: 1 / rows[j][j]}
        for i in range(j + 1, p):
            acc = rows[i][j] * x[j]
            for k in range(j + 1, i):
                acc = acc + rows[i][k] * x[k]
            x[i] = -acc / rows[i][i]
        col = None
        for v in x.values():
            col = v * v if col is None else col + v * v
        col = col if d is None else col * dt[j, 0, ...]
        total = col if total is None else total + col
    return xp.reshape(xp.sqrt(total), tuple(L.shape[:-2]))
