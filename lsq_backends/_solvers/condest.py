"""Cheap condition estimate of X from the Cholesky factor of its Gram matrix.

Used to choose between the normal equations, CholeskyQR2 and Householder QR. O(p^2) per step
on the p x p factor: nothing next to forming the Gram matrix.
"""

from __future__ import annotations

from .. import _compat
from ._shared import diagonal, dot, mT

POWER_STEPS = 4


def _start_vector(xp, like, p):
    # A fixed +-1 pattern with no structure to be orthogonal to (sign of sin(j * golden ratio)).
    j = xp.arange(1, p + 1, dtype=like.dtype, device=_compat.device(like))
    v = xp.sign(xp.sin(j * 1.6180339887498949)) + 0.5
    shape = tuple(like.shape[:-2]) + (p, 1)
    return xp.broadcast_to(v[:, None], shape)


def _normalize(xp, v):
    nrm = xp.linalg.vector_norm(v, axis=-2, keepdims=True)
    return v / xp.where(nrm > 0, nrm, xp.ones_like(nrm))


def condition_estimate(xp, L, A):
    """Estimate of cond(X D) = sqrt(cond(D A D)), D equilibrating A = X^T X = L L^T (unit
    column norms): the larger of the pivot ratio of the scaled factor and power iteration on
    D A D and on its inverse (two triangular solves a step) from a fixed start. A lower bound,
    usually within a small factor of the truth; NaN where the factorization failed."""
    p = A.shape[-1]
    d = diagonal(xp, A)
    dinv = 1 / xp.sqrt(xp.where(d > 0, d, xp.ones_like(d)))
    Ls = dinv[..., :, None] * L  # Cholesky factor of D A D
    As = dinv[..., :, None] * A * dinv[..., None, :]
    v = w = _start_vector(xp, L, p)
    for _ in range(POWER_STEPS):
        v = _normalize(xp, dot(xp, As, v))
        z = _compat.solve_triangular(xp, Ls, w, lower=True)
        w = _normalize(xp, _compat.solve_triangular(xp, mT(xp, Ls), z, lower=False))
    lam_max = xp.linalg.vector_norm(dot(xp, As, v), axis=(-2, -1))
    z = _compat.solve_triangular(xp, Ls, w, lower=True)
    inv_min = xp.linalg.vector_norm(_compat.solve_triangular(xp, mT(xp, Ls), z, lower=False), axis=(-2, -1))
    piv = diagonal(xp, Ls)
    ratio = xp.max(piv, axis=-1) / xp.min(piv, axis=-1)
    return xp.maximum(xp.sqrt(lam_max * inv_min), ratio)
