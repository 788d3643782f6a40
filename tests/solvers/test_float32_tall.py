"""float32 on tall data: the Gram matrix's rank tests use its rounding noise, not m * eps.

With the worst-case factor ``eps * m`` (0.024 in float32 at m = 200000) the normal equations
took cond-100 data for rank deficient and fell back to the SVD, whose NumPy cutoff then
dropped real directions (65% error on the benchmark's tall float32 case), and a ridge path on
the Gram route dropped directions at small penalties. Both now keep every direction and meet
the normal equations' bound, ``eps * cond**2`` (a path: ``eps`` times the regularized Gram
matrix's condition), times ``10 n`` for the dimension dependence. The answers that dropped a
direction erred by about the weight of that direction in the solution, ~0.5 here.
"""

from __future__ import annotations

import numpy as np
from problems import rel_err

import lsq_backends as lsq
from lsq_backends.check.problems import design

EPS32 = float(np.finfo(np.float32).eps)


def _tall(m, n, cond, seed=0):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), cond).astype(np.float32)
    y = (X.astype(np.float64) @ rng.standard_normal(n)).astype(np.float32)
    return X, y


def test_normal_float32_tall_keeps_every_direction(be):
    m, n, cond = 200_000, 3, 100.0
    X, y = _tall(m, n, cond)
    ref = np.linalg.lstsq(X.astype(np.float64), y.astype(np.float64), rcond=None)[0]
    r = lsq.lstsq(be.asarray(X), be.asarray(y), method="normal")
    assert int(be.to_numpy(r.rank)) == n
    assert rel_err(be.to_numpy(r.coef), ref) <= 10 * n * EPS32 * cond**2


def test_ridge_path_float32_gram_route_keeps_every_direction(be):
    m, n, cond = 20_000, 4, 30.0
    X, y = _tall(m, n, cond, seed=1)
    X64, y64 = X.astype(np.float64), y.astype(np.float64)
    s = np.linalg.svd(X64, compute_uv=False)
    alphas = np.array([1e-6, 1e-2]) * s[0] ** 2
    r = lsq.ridge(
        be.asarray(X), be.asarray(y), be.asarray(alphas.astype(np.float32)), method="normal", fit_intercept=False
    )
    assert be.to_numpy(r.rank).tolist() == [n, n]
    coef = be.to_numpy(r.coef)
    for i, a in enumerate(alphas):
        ref = np.linalg.solve(X64.T @ X64 + a * np.eye(n), X64.T @ y64)
        kappa_a = (s[0] ** 2 + a) / (s[-1] ** 2 + a)
        assert rel_err(coef[i], ref) <= 10 * n * EPS32 * kappa_a
