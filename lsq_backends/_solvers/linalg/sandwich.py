"""Cluster- and autocorrelation-robust (sandwich) covariances of a least-squares fit, as statsmodels'
``get_robustcov_results`` computes them: ``cov_type="cluster"`` (one- and two-way), ``"HAC"``
(Newey-West), ``"hac-groupsum"`` (Driscoll-Kraay) and ``"hac-panel"`` (Newey-West within panels).

Every estimator here is ``(A^T A)^{-1} M (A^T A)^{-1}``, ``M`` the meat built from the scores (the rows
of ``A diag(e)``, statsmodels' ``wexog * wresid``). Each meat is linear in the outer products of
the scores, so it may be built from the scores in any coordinates ``Z = A diag(e) B^{-1}``: then
``cov = F M(Z) F^T`` with ``F = (A^T A)^{-1} B^T``. :func:`lsq_backends.diagnostics` passes the
centered design's scores and the F of its QR factors (no ``A^T A``, no m x p basis formed).

- ``cluster``, one-way: ``M = c sum_g t_g t_g^T``, ``t_g`` the sum of the scores over cluster ``g``
  (:func:`lsq_backends._backend._compat.segment_sum`: O(m p + G p) memory, no m x G matrix),
  ``c = G / (G - 1) (m - 1) / (m - p)`` with ``use_correction`` (CR1, statsmodels' default), ``G``
  the number of clusters that have observations (statsmodels' ``len(np.unique(groups))``), ``p``
  the number of columns of the design (intercept included, as statsmodels' ``k_params``).
- ``cluster``, two-way (Cameron, Gelbach and Miller): ``M_1 + M_2 - M_12``, each one-way meat
  with its own correction; the intersection clusters are the distinct pairs of codes, numbered in
  sorted order (a stable ``argsort`` by the second code, then the first: no product of the two
  counts is formed, so no overflow and at most m segments).
- ``HAC``: ``M = w_0 Z^T Z + sum_{l=1..L} w_l (Z_l^T Z_0 + Z_0^T Z_l)``, the rows in the order
  given, lag ``l`` pairing rows ``i`` and ``i - l``; Bartlett ``w_l = 1 - l / (L + 1)`` or uniform
  ``w_l = 1``; ``use_correction`` multiplies by ``m / (m - p)``. A uniform kernel can give a meat
  that is not positive semidefinite (as in statsmodels).
- ``hac-groupsum``: the scores summed per period (``time`` codes), then the HAC meat over the
  periods in the order of their codes (an empty period is a zero row, lags count codes);
  ``use_correction="cluster"`` (default) is the one-way cluster factor with ``G`` the number of
  periods present, ``"hac"`` is ``m / (m - p)``.
- ``hac-panel``: the HAC meat with lag products only between rows of the same panel: a panel is a
  run of consecutive rows (``groups`` codes equal, or ``time`` codes increasing: the data sorted
  by panel, as statsmodels requires), :func:`panel_runs` numbers them. Default correction
  ``"hac"`` (``m / (m - p)``); ``"cluster"`` is CR1 with G the number of runs.

The number of segments (``n_groups``) is a Python int: static under ``jax.jit``. Given, nothing is
read; not given, it is ``max(codes) + 1``, one host read of the concrete codes (refused for traced
or lazy codes). The codes' range is a value check read with the fit's other checks.
"""

from __future__ import annotations

from ..._backend import _compat
from ..._backend._compat import matmul, mT
from ..._problem._cov_options import runs


def _gram(xp, T):
    return matmul(xp, mT(xp, T), T)


def _present(xp, codes, n_groups, U):
    """The number of segments of ``codes`` (m,) that hold a row: 0-d, in U's dtype (statsmodels' ``len(unique)``)."""
    ones = xp.ones((codes.shape[0], 1), dtype=U.dtype, device=_compat.device(U))
    return xp.sum(xp.astype(_compat.segment_sum(xp, ones, codes, n_groups) > 0, U.dtype))


def _pairs(xp, codes):
    """The intersection clusters of two-way codes (m, 2): the rows' order sorted by (first, second) code
    and each sorted row's pair number (0, 1, ...; (m,))."""
    order = xp.argsort(codes[:, 1], stable=True)
    order = xp.take(order, xp.argsort(xp.take(codes[:, 0], order), stable=True))
    a, b = xp.take(codes[:, 0], order), xp.take(codes[:, 1], order)
    return order, runs(xp, (a[1:] != a[:-1]) | (b[1:] != b[:-1]), codes.dtype)


def _hac_meat(xp, U, options, runs=None):
    """``w_0 U^T U + sum_l w_l (U_l^T U_0 + U_0^T U_l)`` for U (..., m, p), the weights of ``options.kernel``;
    with ``runs`` (m,), only the pairs of rows in the same panel."""
    meat, maxlags = _gram(xp, U), options.maxlags
    m = U.shape[-2]
    for lag in range(1, min(maxlags, m - 1) + 1):
        w = 1 - lag / (maxlags + 1) if options.kernel == "bartlett" else 1.0
        later = U[..., lag:, :]
        if runs is not None:
            later = later * _compat.as_rank(xp, xp.astype(runs[lag:] == runs[: m - lag], U.dtype)[:, None], U.ndim)
        s = matmul(xp, mT(xp, later), U[..., : m - lag, :])
        meat = meat + w * (s + mT(xp, s))
    return meat


def _cluster_factor(G, m, p):
    return G / (G - 1) * ((m - 1) / (m - p))


def robust_cov(xp, U, F, options):
    """The covariance ``F M F^T`` (..., p, p) of ``options`` (:class:`CovOptions`), M its meat from the scores
    U (..., m, p) in the coordinates F maps back (module docstring), corrections included."""
    m, p = U.shape[-2:]
    p = p + options.absorbed
    kind, codes, n_groups = options.cov_type, options.codes, options.n_groups
    if kind == "cluster":
        # One-way: one meat; two-way: V_1 + V_2 - V_12, each with its own correction.
        pairs = [(codes, n_groups[0])] if codes.ndim == 1 else [(codes[:, 0], n_groups[0]), (codes[:, 1], n_groups[1])]
        meats = [_gram(xp, _compat.segment_sum(xp, U, c, g)) for c, g in pairs]
        counts = [_present(xp, c, g, U) for c, g in pairs] if options.correction else []
        if codes.ndim == 2:
            order, ids = _pairs(xp, codes)
            meats.append(_gram(xp, _compat.segment_sum(xp, xp.take(U, order, axis=-2), ids, m)))
            counts += [xp.astype(ids[-1] + 1, U.dtype)] if options.correction else []
        if options.correction:
            meats = [M * _cluster_factor(G, m, p) for M, G in zip(meats, counts, strict=True)]
        meat = meats[0] if len(meats) == 1 else meats[0] + meats[1] - meats[2]
    elif kind == "HAC":
        meat = _hac_meat(xp, U, options)
        meat = meat * (m / (m - p)) if options.correction else meat
    else:  # Driscoll-Kraay: the HAC meat of the per-period sums; panel HAC: within panels (codes: runs)
        panel = kind == "hac-panel"
        sums = U if panel else _compat.segment_sum(xp, U, codes, n_groups[0])
        meat = _hac_meat(xp, sums, options, codes if panel else None)
        if options.correction == "hac":
            meat = meat * (m / (m - p))
        elif options.correction == "cluster":
            G = xp.astype(codes[-1] + 1, U.dtype) if panel else _present(xp, codes, n_groups[0], U)
            meat = meat * _cluster_factor(G, m, p)
    cov = matmul(xp, matmul(xp, F, meat), mT(xp, F))
    return (cov + mT(xp, cov)) / 2
