"""auto: the normal equations where they are as safe as QR needs them to be, QR otherwise.

The Gram matrix is formed and factorized (the normal path's work). Its condition number,
after equilibration (unit column norms), is estimated cheaply from the Cholesky factor: the
largest diagonal ratio and a few steps of power iteration on G and on G^{-1} (two
triangular solves each, O(p^2)). The normal solution is used only when the estimate of
cond(X) is at most ``eps**-0.25 / 8`` (float64: 1.5e3, so its error ~ eps * cond**2 stays
below ~5e-10; float32: 6.8); otherwise the problem goes to QR, which itself falls back to the
SVD of R on rank deficiency. Under ``jax.jit`` the choice is a ``lax.cond`` on the traced
estimate, so it never leaves the device; over a batch, one ill-conditioned problem sends the
whole batch to QR.
"""

from __future__ import annotations

from .. import _compat
from . import normal, qr
from ._shared import all_true, diagonal, dot, eps, mT

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
    """Estimate of cond(X) = sqrt(cond(D A D)) with D equilibrating A = L L^T (a lower bound,
    usually within a small factor of the truth)."""
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


def kappa_limit(xp, X):
    return eps(xp, X) ** -0.25 / 8


def solve(xp, X, Y, alpha, rcond, norms=None):
    fac = normal.Factored(xp, X, Y, alpha)
    kappa = condition_estimate(xp, fac.L, fac.A)
    # NaN (a failed factorization) compares False and goes to QR.
    ok = all_true(xp, kappa <= kappa_limit(xp, X))
    return fac.solve_or(xp, X, Y, ok, qr.solve, rcond, norms)
