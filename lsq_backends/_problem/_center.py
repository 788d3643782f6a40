"""Centering and the intercept's elimination: what ``fit_intercept=True`` does to X and y.

``eliminate_intercept``: centered data weighted by ``root`` (sqrt of the weights, or None) are
orthogonal to the unit vector ``v = root / sqrt(total)``. A Householder reflection H with
H v = -e1 maps them to rows whose first one is v^T A = 0 up to rounding. Dropping that row
leaves the same least-squares problem (same solution, same residual norm), exactly one row
shorter. Left in, that row of rounding noise makes rank decisions a coin toss. Wide centered X
(m <= n) is rank deficient by one, and its noise singular value sits right at NumPy's default
cutoff. Centering first (rather than reflecting raw data) keeps the offsets out of the
reflection's rounding. The reflection also removes the rounding error of the mean itself: its
v^T A term is that error (centered twice, in effect).

Tall problems (m - 1 >= n) keep all m rows, the first one set to exactly zero. A zero row
changes no Gram matrix, R factor or residual, and rows of X sharded across devices stay where
they are. ``A[1:]`` shifted every shard by one row: XLA moved a row between neighbouring
devices and re-laid out each shard. The zero comes from the weights' multiplication (the first
weight replaced by 0). Without weights it comes from an in-place write on NumPy
(``_compat.zero_first_row``), so no extra X-sized array is made. Wide problems drop the row.

With ``Ac = A - mean``, rows 1: of ``H (root * Ac)`` are ``root[1:] * (Ac[1:] - c / s)``, where
``s = sqrt(total)`` and ``c = (w^T Ac / s + root[0] Ac[0]) / (1 + root[0] / s)``. That is a row
vector subtracted from the centered data, then the weights. On NumPy both updates overwrite the
centered copy (``_compat.update_fresh``). So one X-sized array is made, where centering,
weighting and reflecting in turn made three.
"""

from __future__ import annotations

from .._backend import _compat


def _weights(xp, X, root):
    """(ones (m, 1) aligned with X's rows, weights w (..., m, 1), their sum (..., 1, 1)), all of
    X's rank (as ``root``, see ``_prepare.prepare``)."""
    m = X.shape[-2]
    ones = _compat.align_rows(xp, xp.ones((m, 1), dtype=X.dtype, device=_compat.device(X)), X)
    ones = _compat.as_rank(xp, ones, X.ndim)
    w = ones if root is None else root * root
    return ones, w, _compat.reduce_sum(xp, w, axis=-2, keepdims=True)


def eliminate_intercept(xp, X, Y, root, eliminate=True):
    """Center and weight X (..., m, n) and Y (..., m, k) and drop the intercept direction, in one X-sized result.
    Returns ``(X, Y, x_offset, y_offset, offset_sq)``: X and Y with m - 1 rows (wide X) or m rows, the first zero
    (tall X); with ``eliminate=False`` centered and weighted only, m rows. Offsets: the weighted means, (..., 1, n) and
    (..., 1, k); ``offset_sq`` (..., n): what centering removed from the squared column norms (module docstring)."""
    m, n = X.shape[-2:]
    ones, w, total = _weights(xp, X, root)  # total: (..., 1, 1)
    wt = _compat.mT(xp, w)
    scale = xp.sqrt(total)
    r0 = (ones if root is None else root)[..., :1, :]

    def reduce(A):
        # Weighted sums as matrix products: BLAS-blocked, and no weighted copy of A.
        mean = _compat.matmul(xp, wt, A) / total
        Ac = A - mean
        if not eliminate:
            return mean, Ac if root is None else _compat.update_fresh(xp, Ac, "multiply", root)
        c = (_compat.matmul(xp, wt, Ac) / scale + r0 * Ac[..., :1, :]) / (1 + r0 / scale)
        if tall:
            D = _compat.update_fresh(xp, Ac, "subtract", c / scale)
            if root is None:
                return mean, _compat.zero_first_row(xp, D, first)
            return mean, _compat.update_fresh(xp, D, "multiply", row_weights)
        D = _compat.update_fresh(xp, Ac[..., 1:, :], "subtract", c / scale)
        return mean, D if root is None else _compat.update_fresh(xp, D, "multiply", root[..., 1:, :])

    tall = eliminate and m - 1 >= n
    if tall:
        first = _compat.align_rows(xp, xp.arange(m, device=_compat.device(X))[:, None] == 0, X)  # (m, 1)
        zero = xp.zeros((), dtype=X.dtype, device=_compat.device(X))
        row_weights = None if root is None else xp.where(first, zero, root)

    x_offset, Xe = reduce(X)
    y_offset, Ye = reduce(Y)
    offset_sq = (total * x_offset * x_offset)[..., 0, :]
    return Xe, Ye, x_offset, y_offset, offset_sq
