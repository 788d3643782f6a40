"""QR: Householder QR and a triangular solve, never forming the normal equations.

Tall X (m >= n): ``X = Q R``, ``w = R^{-1} Q^T y``. Wide X (m < n): the minimum-norm solution
from ``X^T = Q R``: ``w = Q R^{-T} y``. Ridge factors ``[R; sqrt(alpha) I]`` (a 2p x p QR after
the first one), which is the QR of ``[X; sqrt(alpha) I]`` without touching X again. Error
~ eps * cond(X) (plus eps * cond(X)**2 * ||r|| / (||X|| ||w||) for large residuals), for
2mn^2 - 2n^3/3 flops: about twice the normal equations.

Rank deficiency is detected on the diagonal of the triangular factor that is solved: a
pivot ``|R_jj|`` at most ``rcond * ||X[:, j]||`` (default ``rcond = eps * max(m, n)``; the
norm of the column as given, before centering, so the test does not depend on units); for
wide X, where pivots belong to rows, ``rcond`` times the largest row norm. The problem is then solved from the SVD of the small factor R (X = (QU) S
V^T), so the answer is the minimum-norm solution at no more than O(p^3) extra. Without
column pivoting this test is a heuristic: it catches exactly dependent columns, as in the
usual duplicated or constant columns, but can miss a rare near-dependence spread over many
columns (Kahan's matrix); use ``method="svd"`` when the rank itself matters.
"""

from __future__ import annotations

from .. import _compat
from . import svd
from ._shared import (
    add_penalty,
    all_true,
    default_cutoff,
    diagonal,
    dot,
    eye_like,
    full_rank,
    merge_targets,
    mT,
    pivot_ratios,
    split_targets,
)


def _relative_pivots(xp, R):
    """|R_jj| / max_i ||R[:, i]||: near zero for a column that depends on the ones before it
    or whose norm is negligible next to the largest (the scale SVD's cutoff uses too)."""
    d = xp.abs(diagonal(xp, R))
    norms = xp.max(xp.linalg.vector_norm(R, axis=-2), axis=-1, keepdims=True)
    return d / xp.where(norms > 0, norms, xp.ones_like(norms))


def _penalized_r(xp, R, alpha):
    """R factor of ``[R; sqrt(alpha) I]`` (per target when alpha is (k,))."""
    p = R.shape[-1]
    root = xp.sqrt(alpha)[:, None, None] * eye_like(xp, R, p)  # (kα, p, p)
    if alpha.shape[0] == 1:
        top, bottom = R, xp.broadcast_to(root[0, ...], tuple(R.shape))
    else:
        shape = tuple(R.shape[:-2]) + (alpha.shape[0], p, p)
        top, bottom = xp.broadcast_to(R[..., None, :, :], shape), xp.broadcast_to(root, shape)
    stacked = xp.concat([top, bottom], axis=-2)
    return _compat.qr(xp, stacked)


def solve(xp, X, Y, alpha, rcond, norms=None):
    """QR solution, falling back to the SVD of R on a numerically singular factor."""
    m, n = X.shape[-2:]
    wide = m < n
    Q, R = _compat.qr(xp, mT(xp, X) if wide else X)  # X = Q R, or X^T = Q R when wide
    # Z: right-hand side of the triangular system R0 W = Z (or R0^T U = Y when wide).
    Z = Y if wide else dot(xp, mT(xp, Q), Y)
    if alpha is None:
        T = R
    else:
        Q2, T = _penalized_r(xp, R, alpha)
        Zs = split_targets(xp, Z, alpha)
        if not wide:
            # [R; sqrt(a) I] = Q2 T, right-hand side [Z; 0]: T W = Q2[:p]^T Z.
            p = R.shape[-1]
            Zs = dot(xp, mT(xp, Q2[..., :p, :]), Zs)
    cutoff = default_cutoff(xp, X, m, n, rcond)
    if wide:  # the pivots belong to rows of X: compare with the largest
        ratios = _relative_pivots(xp, T)
    else:
        ratios = pivot_ratios(xp, diagonal(xp, T), X, alpha, norms)
    ok = all_true(xp, ratios > cutoff)

    def triangular(X, Y):
        if alpha is None:
            if wide:
                W = dot(xp, Q, _compat.solve_triangular(xp, mT(xp, R), Y, lower=True))
            else:
                W = _compat.solve_triangular(xp, R, Z, lower=False)
            return W, full_rank(xp, X.shape[:-2], min(m, n), X)
        if wide:
            # w = X^T (X X^T + a I)^{-1} y with X X^T + a I = T^T T.
            U = _compat.solve_triangular(xp, mT(xp, T), Zs, lower=True)
            U = _compat.solve_triangular(xp, T, U, lower=False)
            W = dot(xp, Q, dot(xp, R, merge_targets(xp, U, alpha)))
        else:
            W = merge_targets(xp, _compat.solve_triangular(xp, T, Zs, lower=False), alpha)
        return W, full_rank(xp, X.shape[:-2], n, X)

    def from_svd_of_r(X, Y):
        if wide:
            # X = R^T Q^T; with R^T = U S V^T, X = U S (Q V)^T.
            u, s, vh = _compat.svd(xp, mT(xp, R))
            W, rank = svd.filtered_solve(xp, u, s, vh, Y, alpha, cutoff, n)
            return dot(xp, Q, W), rank
        u, s, vh = _compat.svd(xp, R)  # X = (Q U) S V^T, and (Q U)^T y = U^T Z
        return svd.filtered_solve(xp, u, s, vh, Z, alpha, cutoff, n)

    coef, rank = _compat.cond(xp, ok, triangular, from_svd_of_r, (X, Y))
    return coef, rank, None
