"""auto: the normal equations where they are as accurate as QR needs them to be, QR otherwise.

The Gram matrix is formed and factorized (the normal path's work) and the condition number of
the column-equilibrated X is estimated from the factor (``condest``). The normal solution is
kept only when the factor passes the normal path's rank tests, its diagonal is clear of the
subnormal range, and that estimate is at most ``eps**-0.25 / 8`` (float64: 1.5e3, so the
normal equations' error ~ eps * cond**2 stays below ~5e-10; float32: 6.8). Otherwise the
problem goes to Householder QR (not CholeskyQR2, which measured up to 0.7 digits fewer on
NIST's large-residual Wampler problems), and to the SVD of R on rank deficiency. Under
``jax.jit`` each choice is a ``lax.cond`` on the traced estimate, so it never leaves the
device; over a batch, one ill-conditioned problem sends the whole batch down the safer path.
"""

from __future__ import annotations

from . import normal, qr
from ._shared import all_true, diagonal, eps


def kappa_limit(xp, X):
    return eps(xp, X) ** -0.25 / 8


def solve(xp, X, Y, alpha, rcond, offset_sq=None, *, check=None, factor=False):
    fac = normal.Factored(xp, X, Y, alpha, check)
    kappa = fac.condition(xp)
    # NaN (a failed factorization) compares False and goes to QR.
    ok = (kappa <= kappa_limit(xp, X)) & normal.full_rank_test(xp, fac, X, rcond, offset_sq, global_scale=True)
    # A Gram matrix in the subnormal range has lost bits however well conditioned X is.
    d = xp.min(diagonal(xp, fac.A), axis=-1)
    ok = all_true(xp, ok & (d >= xp.finfo(X.dtype).smallest_normal / eps(xp, X)))
    return fac.solve_or(xp, X, Y, ok, qr.householder, rcond, offset_sq, factor)
