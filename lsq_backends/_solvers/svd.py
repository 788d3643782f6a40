"""SVD: the minimum-norm solution through the pseudo-inverse.

Handles every problem: tall, wide, rank deficient. Singular values below
``rcond * s_max`` are treated as zero (default ``rcond = eps * max(m, n)``, as
``numpy.linalg.lstsq``), which gives the minimum-norm least-squares solution, the one
``scipy.linalg.lstsq`` (gelsd) returns. Ridge uses the filter factors
``s / (s**2 + alpha)``. Error ~ eps * cond(X). Cost: a QR of X plus the SVD of its n x n
factor (tall X), or a thin SVD (wide X): the most expensive method.
"""

from __future__ import annotations

from .. import _compat
from ._shared import count, default_cutoff, dot, full_rank, mT


def filtered_solve(xp, u, s, vh, y, alpha, cutoff, n):
    """Solve with the factors ``u @ diag(s) @ vh`` of a matrix with ``n`` columns.

    ``y`` (..., m, k) is the right-hand side in the range space of ``u``. Returns
    ``(coef (..., n, k), rank (...))``. Written with ``where`` only, so it traces under
    ``jax.jit`` and needs no host sync.
    """
    s_max = s[..., :1]
    keep = s > cutoff * s_max  # (..., p)
    safe = xp.where(keep, s, xp.ones_like(s))
    uty = dot(xp, mT(xp, u), y)  # (..., p, k)
    if alpha is None:
        f = xp.where(keep, 1 / safe, xp.zeros_like(s))[..., None]
        rank = count(xp, keep, s)
    else:
        # Filter factors s / (s^2 + alpha), one column per target when alpha is (k,).
        ss = safe[..., None]
        f = xp.where(keep[..., None], ss / (ss * ss + alpha), xp.zeros_like(ss))
        r = count(xp, keep, s)
        rank = xp.where(xp.all(alpha > 0), full_rank(xp, r.shape, n, s), r)
    return dot(xp, mT(xp, vh), f * uty), rank


def solve(xp, X, Y, alpha, rcond, offset_sq=None):
    """Minimum-norm solution of X @ W = Y (or ridge); returns (coef, rank, singular values).
    ``offset_sq`` is unused: the cutoff is relative to the largest singular value, as NumPy's.

    Tall X is reduced to its n x n triangular factor first (X = QR, Q applied implicitly where
    the library can), whose SVD has the same singular values: cheaper than the SVD of X.
    """
    m, n = X.shape[-2:]
    cutoff = default_cutoff(xp, X, m, n, rcond)
    if m >= n:
        R, Z = _compat.qr_apply(xp, X, Y)
        u, s, vh = _compat.svd(xp, R)
        coef, rank = filtered_solve(xp, u, s, vh, Z, alpha, cutoff, n)
    else:
        u, s, vh = _compat.svd(xp, X)
        coef, rank = filtered_solve(xp, u, s, vh, Y, alpha, cutoff, n)
    return coef, rank, s
