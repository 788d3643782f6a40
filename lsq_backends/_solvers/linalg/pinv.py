"""The SVD filter and the SVD route, shared by the solvers.

``filtered_solve``: the minimum-norm (or ridge) solution from singular factors
``u diag(s) vh``. Singular values at most ``cutoff`` times the largest (or times the largest
column norm before centering, ``uncentered_scale``) count as zero, and ridge uses the filter
factors ``s / (s**2 + alpha)``. It is written with ``where`` only, so it traces under
``jax.jit`` and needs no host sync.

``minimum_norm``: the SVD route itself, the ``svd`` solver and the fallback of the normal
equations on a singular Gram matrix. Tall X is reduced to its n x n triangular factor first
(``cholqr.r_factor``: CholeskyQR2 where its gate passes, Householder otherwise, Q applied
implicitly where the library can). That factor's SVD has the same singular values, and it is
cheaper than the SVD of X. Wide X is reduced to the m x m factor of a QR of X^T, and the SVD
is taken of that factor.
"""

from __future__ import annotations

from ..._backend import _compat
from ..._backend._compat import full_int, matmul, mT
from .._record import NOTHING, Solution
from . import cholqr
from ._operators import asked, spectral_factor
from ._shared import count, default_cutoff


def uncentered_scale(xp, colsq, offset_sq):
    """Largest column norm of X before centering (None without an intercept): the scale
    rounding noise is relative to. Centered data whose columns are all constant are pure
    noise; a cutoff relative to their own largest singular value would keep it."""
    if offset_sq is None:
        return None
    return xp.sqrt(xp.max(colsq + offset_sq, axis=-1))


def filtered_solve(xp, svd, y, alpha, cutoff, n, scale=None):
    """Solve with ``svd = (u, s, vh)``, the factors of a matrix with ``n`` columns, ``y`` (..., m, k) in ``u``'s range;
    singular values at most ``cutoff`` times the largest (or ``scale`` (...), if larger) count as zero. Returns
    ``(coef, rank, keep)``, ``keep`` (..., p) the directions kept (for ``_operators.spectral_factor``)."""
    u, s, vh = svd
    s_max = s[..., :1]
    if scale is not None:
        s_max = xp.maximum(s_max, _compat.as_rank(xp, scale[..., None], s_max.ndim))
    keep = s > cutoff * s_max  # (..., p)
    safe = xp.where(keep, s, xp.ones_like(s))
    uty = matmul(xp, mT(xp, u), y)  # (..., p, k)
    if alpha is None:
        f = xp.where(keep, 1 / safe, xp.zeros_like(s))[..., None]
        rank = count(xp, keep, s)
    else:
        # Filter factors s / (s^2 + alpha), one column per target when alpha is (k,).
        ss = safe[..., None]
        f = xp.where(keep[..., None], ss / (ss * ss + _compat.as_rank(xp, alpha, ss.ndim)), xp.zeros_like(ss))
        r = count(xp, keep, s)
        rank = xp.where(xp.all(alpha > 0), full_int(xp, r.shape, n, s), r)
    coef = matmul(xp, mT(xp, vh), f * uty)
    return coef, rank, keep


def minimum_norm(xp, X, Y, alpha, given=NOTHING, *, operators=False):
    """Minimum-norm solution of X @ W = Y (or ridge): a ``Solution`` with the singular values, and with ``operators``
    (tall X, one penalty or none) the ``_operators.Operators`` of the SVD. Cutoff relative to the largest singular value,
    as NumPy's, or with an intercept (``given.offset_sq``) to the largest column norm before centering, if larger.
    ``given.check``, ``given.data`` (tall X, no penalty): as ``cholqr.r_factor`` takes them; with data, rss too."""
    rcond, offset_sq, check, data, _ = given
    m, n = X.shape[-2:]
    cutoff = default_cutoff(xp, X, m, n, rcond)
    if m >= n:
        if alpha is None and n > 0:
            R, Z = cholqr.r_factor(xp, X, Y, rcond, offset_sq, check, data)  # CholeskyQR2 where qr would use it
            if data is not None and data.offset_sq is not None:
                offset_sq = data.offset_sq  # centered on the n x n side: the offsets found there
        else:
            R, Z = _compat.qr_apply(xp, X, Y)
        _compat.flush_checks(xp)  # LAPACK's SVD raises on NaN: the value checks come first
        u, s, vh = _compat.svd(xp, R)
        scale = uncentered_scale(xp, xp.sum(R * R, axis=-2), offset_sq)
        coef, rank, keep = filtered_solve(xp, (u, s, vh), Z, alpha, cutoff, n, scale)
        rss = None if data is None else data.residual(X, Y, coef, cross=False)[1]
        return Solution(
            coef, rank, s, rss=rss, operators=asked(operators, spectral_factor, xp, s, vh, keep, alpha, True)
        )
    # X^T = Q R, so X = R^T Q^T; with R^T = U S V^T, X = U S (Q V)^T: the SVD of an m x m
    # factor, Q applied to the m x k solution (0.6x numpy.linalg.lstsq at 200 x 5000,
    # where the SVD of X itself, forming its n x m singular vectors, took 1.4x).
    R, q_times = _compat.qr_implicit(xp, mT(xp, X))
    _compat.flush_checks(xp)
    u, s, vh = _compat.svd(xp, mT(xp, R), after_qr_implicit=True)
    scale = uncentered_scale(xp, xp.sum(X * X, axis=-2), offset_sq)
    # u diag(s) (Q vh^T)^T is X: u is X's left singular vectors
    W, rank, keep = filtered_solve(xp, (u, s, vh), Y, alpha, cutoff, n, scale)
    return Solution(
        q_times(W), rank, s, operators=asked(operators, lambda: spectral_factor(xp, s, mT(xp, u), keep, alpha, True))
    )
