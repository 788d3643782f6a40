"""float32 in, float32 out, as accurate as the float32-rounded data allow.

The default rank cutoff of float32 fits is the factorization's probable rounding noise,
``eps * (sqrt(max(m, n)) + min(m, n))`` (``_shared.default_cutoff``), not the worst case
``eps * max(m, n)``: that reached 0.024 at m = 200000 and every direct method dropped the second
direction of correlated two-column data (s2/s1 = 5e-3), a residual 10x SciPy's on the same
float32 data. References are float64 solutions of the float32-rounded data; bounds are
``lsq_backends.check.problems.threshold`` with kappa measured on those data (eps32 kappa for QR/SVD plus the
residual term, eps32 kappa**2 for the normal equations).
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import METHODS as DIRECT
from problems import center, reference, rel_err

import lsq_backends as lsq
from lsq_backends.check.problems import design, threshold

EPS32 = float(np.finfo(np.float32).eps)


def _correlated(m, delta, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(m)
    X = np.stack([a, a + delta * rng.standard_normal(m)], axis=1).astype(np.float32)
    y = (X.astype(np.float64) @ np.array([1.0, -1.0]) + 1e-3 * rng.standard_normal(m)).astype(np.float32)
    return X, y


@pytest.mark.parametrize("method", DIRECT)
def test_tall_correlated_columns_residual_not_above_scipy(be, method):
    sla = pytest.importorskip("scipy.linalg")
    m = 200_000
    # s2/s1 = 5e-3; normal on JAX falls back to its Gram matrix's eigendecomposition, which
    # resolves down to the square root of the Gram matrix's probable rounding (7.3e-3 here,
    # documented): there s2/s1 = 1e-2, still below the worst-case cutoff.
    X, y = _correlated(m, 2e-2 if (be.library, method) == ("jax", "normal") else 1e-2)
    X64, y64 = X.astype(np.float64), y.astype(np.float64)
    s = np.linalg.svd(X64, compute_uv=False)
    assert s[1] / s[0] < EPS32 * m  # below the worst-case cutoff: the case this is about
    w_sp = sla.lstsq(X, y)[0].astype(np.float64)
    res_sp = np.linalg.norm(y64 - X64 @ w_sp)
    r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method)
    assert be.to_numpy(r.coef).dtype == np.float32
    w = be.to_numpy(r.coef).astype(np.float64)
    assert int(be.to_numpy(r.rank)) == 2
    if method != "normal":
        # A coefficient error d raises ||r||^2 by ||X d||^2 (r is orthogonal to X's range):
        # within QR's bound that is < 1e-6 relative here; a dropped direction gave 10x. The
        # normal equations' eps kappa**2 (with a Gram matrix summed over 200000 rows in
        # float32) allows more, measurably: their bound below is what they promise.
        assert np.linalg.norm(y64 - X64 @ w) <= res_sp * (1 + 1e-3)
    ref = np.linalg.lstsq(X64, y64, rcond=None)[0]
    kappa = s[0] / s[1]
    eta = np.linalg.norm(y64 - X64 @ ref) / (s[0] * np.linalg.norm(ref))
    assert rel_err(w, ref) <= threshold(method, np.float32, kappa, m, 2, eta)


@pytest.mark.parametrize("method", DIRECT)
def test_exact_dependence_still_dropped(be, method):
    """The lower cutoff keeps real directions, not the rounding noise of a dependent column
    (measured at ~0.5 eps32 of s_max up to 500000 x 2 and 200000 x 50, against a cutoff
    of ~700 eps32 there)."""
    rng = np.random.default_rng(1)
    m, n = 20_000, 5
    B = rng.standard_normal((m, n - 1)).astype(np.float32)
    X = np.concatenate([B, B[:, :1] * np.float32(0.3) + B[:, 1:2] * np.float32(0.7)], axis=1)
    y = rng.standard_normal(m).astype(np.float32)
    for fit_intercept in (False, True):
        r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=fit_intercept)
        assert int(be.to_numpy(r.rank)) == n - 1
        # The float64 reference drops the same direction: the data's own rounding left it at
        # ~eps32 of s_max (float64's default cutoff would keep it, at 1e5 x the coefficients).
        Xc, Yc, _, _ = center(X, y, None, fit_intercept)
        ref = np.linalg.lstsq(Xc, Yc[:, 0], rcond=1e-5)[0]
        s = np.linalg.svd(Xc, compute_uv=False)
        assert s[-1] < 1e-6 * s[0] and s[-2] > 0.1 * s[0]
        # minimum-norm answer on the rank-(n-1) data: kappa is that of the kept directions
        assert rel_err(be.to_numpy(r.coef), ref) <= threshold(method, np.float32, s[0] / s[-2], m, n)


@pytest.mark.parametrize("shape", [(3000, 8), (8, 60)], ids=["tall", "wide"])
@pytest.mark.parametrize("method", DIRECT)
def test_float32_against_float64_reference(be, method, shape):
    rng = np.random.default_rng(2)
    m, n = shape
    for cond in (10.0, 300.0):
        X = design(rng, (m, n), cond).astype(np.float32)
        y = (X.astype(np.float64) @ rng.standard_normal(n) + 0.01 * rng.standard_normal(m)).astype(np.float32)
        for fit_intercept in (False, True):
            coef, _, _, Xc = reference(X.astype(np.float64), y.astype(np.float64), fit_intercept=fit_intercept)
            s = np.linalg.svd(Xc, compute_uv=False)
            kappa = s[0] / s[-1]
            yc = y.astype(np.float64) - (y.mean() if fit_intercept else 0.0)
            eta = np.linalg.norm(yc - Xc @ coef) / (s[0] * np.linalg.norm(coef))
            r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=fit_intercept)
            got = be.to_numpy(r.coef)
            assert got.dtype == np.float32
            assert int(be.to_numpy(r.rank)) == min(m - int(fit_intercept), n)
            tol = threshold(method, np.float32, kappa, m, n, eta)
            assert rel_err(got, coef) <= tol, f"cond {cond} intercept {fit_intercept}"


@pytest.mark.parametrize("cls, method, delta", [("NormalAccumulator", "normal", 2e-2), ("QRAccumulator", "qr", 1e-2)])
def test_streamed_tall_float32_keeps_real_directions(be, cls, method, delta):
    """The accumulators' default cutoff is lstsq's, with the rows seen as m: the worst case
    ``eps * rows`` (0.024 here) made both take these rank-2 streams (s2/s1 = 0.01 and 0.005)
    for rank 1 (error 1.0). The Gram matrix of ``NormalAccumulator`` resolves directions down
    to the square root of its probable rounding, 7.3e-3 of s1 here (its documented cut): the
    QR factor, to the cutoff itself."""
    m = 200_000
    X, y = _correlated(m, delta)
    acc = getattr(lsq, cls)()
    for i in range(0, m, 50_000):
        acc.update(be.asarray(X[i : i + 50_000]), be.asarray(y[i : i + 50_000]))
    r = acc.solve(fit_intercept=False)
    X64, y64 = X.astype(np.float64), y.astype(np.float64)
    ref = np.linalg.lstsq(X64, y64, rcond=None)[0]
    s = np.linalg.svd(X64, compute_uv=False)
    eta = np.linalg.norm(y64 - X64 @ ref) / (s[0] * np.linalg.norm(ref))
    assert int(be.to_numpy(r.rank)) == 2
    w = be.to_numpy(r.coef).astype(np.float64)
    assert rel_err(w, ref) <= threshold(method, np.float32, s[0] / s[1], m, 2, eta)
