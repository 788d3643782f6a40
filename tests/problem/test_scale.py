"""Fits at every scale from 1e-300 to 1e300 (``lsq_backends._problem._scaling``).

X (or y) is multiplied by ``c`` and the answer mapped back to unit scale (coef * c / t,
intercept / t, rss / t**2, singular values / c) is compared with the float64 NumPy reference of
the unit-scale problem, within the unit-scale error bounds (``check.problems.threshold``: eps kappa
for QR/SVD plus the residual term, eps kappa**2 for the normal equations; LSQR within what its
stopping rule allows, ``test_lsqr.error_bound``). ``c`` is a power of ten, so ``c X`` is X up to
one rounding per entry, well inside those bounds.

Before the scaling: ridge returned 0 for every method once ||X||**2 overflowed (X ~ 1e200),
LSQR NaN there and 0 after 0 iterations at X ~ 1e-200 (and at y ~ 1e-200), lstsq with an
intercept 0 at X ~ 1e200, ridge_cv chose the wrong penalty at y ~ 1e-250, and ``qr`` ridge
lost every digit where alpha >> sigma_max(X)**2 (X ~ 1e-20, alpha = 1: error 0.88).

One tall and one wide shape, every scale in one test item: few JAX compilations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from problems import center, error_bound

import lsq_backends as lsq
from lsq_backends.check.problems import design, threshold

# The results that are not representable (rss of y ~ 1e300) overflow, as NumPy's would.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

SCALES = (1e-300, 1e-200, 1e-100, 1e-20, 1.0, 1e20, 1e100, 1e200, 1e300)


def _scales(be):
    """Every scale, or on Dask (a graph per fit, ~1 s each) the extremes and unity: the scaling
    is the same backend-agnostic code, swept in full on the eager backends."""
    return (1e-300, 1.0, 1e300) if be.library == "dask" else SCALES


METHODS = ("auto", "normal", "qr", "svd", "lsqr")
DIRECT = ("auto", "normal", "qr", "svd")
EPS = float(np.finfo(np.float64).eps)
TOL = 1e-10  # lsqr's atol = btol here: its error bound stays far below the solution


def _problem(m, n, seed=0):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), 30.0)
    y = X @ rng.standard_normal(n) + 0.05 * rng.standard_normal(m) + 2.0
    return X, y


def _unit_reference(X, y, fit_intercept, alpha):
    """(coef, intercept, rss, singular values, Xc, yc, kappa, eta) of the unit-scale problem,
    ``alpha`` the unit-scale penalty (may be 0 or huge)."""
    Xc, Yc, xo, yo = center(X, y, None, fit_intercept)
    yc = Yc[:, 0]
    s = np.linalg.svd(Xc, compute_uv=False)
    if alpha:
        coef = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(X.shape[1]), Xc.T @ yc)
    else:
        coef = np.linalg.lstsq(Xc, yc, rcond=None)[0]
    r = yc - Xc @ coef
    kappa = s[0] / s[-1]
    eta = np.linalg.norm(r) / (s[0] * _norm(coef))
    return coef, float(yo[0, 0] - xo[0] @ coef), float(r @ r), s, Xc, yc, kappa, eta, alpha


def _norm(v):
    """2-norm at any magnitude (numpy's squares the entries: 1e-200 underflows)."""
    c = float(np.max(np.abs(v)))
    return c * float(np.linalg.norm(np.asarray(v) / c)) if c > 0 else 0.0


def _rel(a, b):
    """Relative error, safe at any magnitude of ``b`` (numpy's norm squares its entries)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    c = float(np.max(np.abs(b)))
    return float(np.linalg.norm(a / c - b / c) / np.linalg.norm(b / c))


def _bound(method, X, kappa, eta, Xc, yc, coef, alpha):
    if method == "lsqr":
        g = 1 / (float(np.max(np.abs(coef))) or 1.0)  # the bound is homogeneous in (y, coef)
        return error_bound(Xc, yc * g, coef * g, alpha, TOL, TOL, EPS) / np.linalg.norm(coef * g)
    return threshold(method, np.float64, kappa, *X.shape, eta)


def _fit(be, method, X, y, *, alpha=None, fit_intercept):
    opts = {"atol": TOL, "btol": TOL} if method == "lsqr" else {}
    if alpha is None:
        r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=fit_intercept, **opts)
    else:
        r = lsq.ridge(be.asarray(X), be.asarray(y), alpha, method=method, fit_intercept=fit_intercept, **opts)
    return be.finish(r)  # Dask: every field in one compute of the graph


def _check(be, method, r, c, t, ref, X, label):
    """The fit ``r`` of (c X, t y), mapped back to unit scale, against ``ref``."""
    coef, intercept, rss, s, Xc, yc, kappa, eta, alpha = ref
    got = be.to_numpy(r.coef).astype(np.float64) * c / t
    assert np.all(np.isfinite(got)), f"{label}: {got}"
    tol = _bound(method, X, kappa, eta, Xc, yc, got, alpha)
    err = _rel(got, coef)
    assert err <= tol, f"{label}: coef error {err:.3g} > {tol:.3g}"
    # intercept = ybar - xbar coef: its error is that of xbar coef (plus rounding of ybar).
    scale_b = abs(intercept) + float(np.abs(X).max(axis=0) @ np.abs(coef))
    got_b = float(be.to_numpy(r.intercept)) / t
    assert abs(got_b - intercept) <= tol * scale_b + 10 * EPS * scale_b, f"{label}: intercept {got_b} vs {intercept}"
    # rss in the units of y: t**2 rss. Checked where representable, else inf or a flush to 0.
    got_rss = float(be.to_numpy(r.rss))
    if math.isfinite(t * t * rss) and t * t * rss > 1e-290:
        band = tol * np.linalg.norm(Xc) * _norm(coef) + 10 * EPS * np.linalg.norm(yc)
        assert abs(math.sqrt(got_rss) / t - math.sqrt(rss)) <= band, f"{label}: rss {got_rss} vs {t * t * rss}"
    elif t * t * rss > 1e300:
        assert got_rss == math.inf, f"{label}: rss {got_rss}"
    if method == "svd":
        sv = be.to_numpy(r.singular_values).astype(np.float64) / c
        assert np.max(np.abs(sv - s)) <= 10 * max(X.shape) * EPS * s[0], f"{label}: singular values {sv} vs {s}"
    if method == "lsqr":
        assert int(be.to_numpy(r.n_iter)) >= 1, f"{label}: lsqr stopped after 0 iterations"


def _skip_lazy_lsqr(be, method):
    if be.lazy and method == "lsqr":
        pytest.skip("lsqr on Dask computes per block of iterations (slow here): see test_dask")


@pytest.mark.parametrize("shape", [(20, 4), (4, 9)], ids=["tall", "wide"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("method", METHODS)
def test_lstsq_every_scale_of_x(be, method, fit_intercept, shape):
    if shape[0] < shape[1] and fit_intercept:
        pytest.skip("wide: without an intercept only (fewer compilations; the scaling is shape-blind)")
    _skip_lazy_lsqr(be, method)
    X, y = _problem(*shape)
    ref = _unit_reference(X, y, fit_intercept, 0.0)
    for c in _scales(be):
        r = _fit(be, method, X * c, y, fit_intercept=fit_intercept)
        _check(be, method, r, c, 1.0, ref, X, f"X * {c:g}")


@pytest.mark.parametrize("method", METHODS)
def test_lstsq_and_ridge_every_scale_of_y(be, method):
    _skip_lazy_lsqr(be, method)
    X, y = _problem(20, 4)
    ref = _unit_reference(X, y, True, 0.0)
    ref_ridge = _unit_reference(X, y, True, 3.0)
    for t in _scales(be):
        _check(be, method, _fit(be, method, X, y * t, fit_intercept=True), 1.0, t, ref, X, f"y * {t:g}")
        r = _fit(be, method, X, y * t, alpha=3.0, fit_intercept=True)
        _check(be, method, r, 1.0, t, ref_ridge, X, f"ridge, y * {t:g}")


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("method", METHODS)
def test_ridge_every_scale_of_x(be, method, fit_intercept):
    """alpha * c**2 (the unit-scale problem scaled) where representable, and alpha = 1 at
    every scale: negligible next to ||c X||**2 for large c, dominant for small c (the
    solution is then ~ X^T y / alpha, where ``qr`` lost every digit)."""
    _skip_lazy_lsqr(be, method)
    X, y = _problem(20, 4)
    for c in _scales(be):
        alphas = [1.0] + ([3.0 * c * c] if 1e-300 < 3.0 * c * c < 1e300 else [])
        for alpha in alphas:
            unit_alpha = alpha / c / c
            if math.isinf(unit_alpha):
                # The unit-scale penalty overflows: coef = (c^2 G + alpha I)^-1 c b = c b / alpha
                # up to a relative c^2 ||G|| / alpha < 1e-290 (G, b the unit-scale X^T X, X^T y).
                Xc, Yc, _, _ = center(X, y, None, fit_intercept)
                want = (Xc.T @ Yc[:, 0]) * c / alpha
                got = be.to_numpy(_fit(be, method, X * c, y, alpha=alpha, fit_intercept=fit_intercept).coef)
                tol = 10 * TOL if method == "lsqr" else threshold(method, np.float64, 1.0, 20, 4)
                err = _rel(got, want)
                assert err <= tol, f"X * {c:g}, alpha {alpha:g}: coef error {err:.3g} > {tol:.3g}"
                continue
            ref = _unit_reference(X, y, fit_intercept, unit_alpha)
            r = _fit(be, method, X * c, y, alpha=alpha, fit_intercept=fit_intercept)
            _check(be, method, r, c, 1.0, ref, X, f"X * {c:g}, alpha {alpha:g}")


@pytest.mark.parametrize("method", DIRECT)
def test_ridge_path_every_scale_of_x(be, method):
    X, y = _problem(20, 4)
    unit = np.array([1e-2, 1.0, 1e2])
    refs = [_unit_reference(X, y, True, a) for a in unit]
    for c in (1e-150, 1e-100, 1e-20, 1.0, 1e20, 1e100, 1e150):
        r = lsq.ridge(be.asarray(X * c), be.asarray(y), be.asarray(unit * c * c), method=method)
        coef = be.to_numpy(r.coef).astype(np.float64) * c
        for i, ref in enumerate(refs):
            tol = threshold(method, np.float64, ref[6], 20, 4, ref[7])
            assert _rel(coef[i], ref[0]) <= tol, f"X * {c:g}, alpha {unit[i] * c * c:g}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_power_of_two_is_exact(be, dtype):
    """The factors that scale fits: 2**k exactly for every k in the exponent range the scaling
    uses, from the number's bits (NumPy, PyTorch, CuPy, JAX) or a product of exact constants
    (elsewhere), and the splits of |k| up to four times that range into factors in it."""
    from lsq_backends._backend import _compat
    from lsq_backends._problem import _scaling

    xp = be.xp
    _, limit = _scaling.limits(xp, getattr(xp, dtype))
    k = np.arange(-limit, limit + 1, dtype=dtype)
    got = be.to_numpy(_compat.exact_powers(xp, be.asarray(k), limit))
    np.testing.assert_array_equal(got, np.ldexp(np.ones_like(k), k.astype(int)))
    wide = np.array([-4 * limit, -3 * limit + 7, -limit - 1, -1, 0, 5, limit + 1, 2 * limit, 4 * limit], dtype=dtype)
    short = np.array([3, -limit, limit], dtype=dtype)
    four, one, two = _scaling.powers(xp, [(be.asarray(wide), 4), (be.asarray(short), 1), (be.asarray(wide), 2)])
    assert len(four) == 4 and len(two) == 2
    np.testing.assert_array_equal(be.to_numpy(one), np.ldexp(np.ones_like(short), short.astype(int)))
    for parts in (four, two):
        logs = sum(np.log2(be.to_numpy(f).astype(np.float64)) for f in parts)
        n = len(parts)
        np.testing.assert_array_equal(logs, np.clip(wide, -n * limit, n * limit))
        for f in parts:
            assert np.all(np.abs(np.log2(be.to_numpy(f).astype(np.float64))) <= limit)


def test_powers_of_two_change_no_rounding(be):
    """Scaled by an exact power of two, a fit is the unit-scale fit multiplied out, bit for bit."""
    X, y = _problem(20, 4)
    k = 400
    for method in ("qr", "svd"):
        base = lsq.ridge(be.asarray(X), be.asarray(y), 3.0, method=method)
        big = lsq.ridge(
            be.asarray(np.ldexp(X, k)), be.asarray(np.ldexp(y, -k)), float(np.ldexp(3.0, 2 * k)), method=method
        )
        base, big = be.finish((base, big))
        np.testing.assert_array_equal(be.to_numpy(big.coef), np.ldexp(be.to_numpy(base.coef), -2 * k))
        np.testing.assert_array_equal(be.to_numpy(big.intercept), np.ldexp(be.to_numpy(base.intercept), -k))
        np.testing.assert_array_equal(be.to_numpy(big.rss), np.ldexp(be.to_numpy(base.rss), -2 * k))


@pytest.mark.parametrize("sx, sy", [(1e-150, 1.0), (1e150, 1.0), (1.0, 1e-250), (1.0, 1e250)])
def test_ridge_cv_every_scale(be, sx, sy):
    X, y = _problem(40, 3, seed=1)
    alphas = np.logspace(-3, 3, 13)
    base = lsq.ridge_cv(be.asarray(X), be.asarray(y), be.asarray(alphas))
    r = lsq.ridge_cv(be.asarray(X * sx), be.asarray(y * sy), be.asarray(alphas * sx * sx))
    base, r = be.finish((base, r))
    assert int(be.to_numpy(r.best_index)) == int(be.to_numpy(base.best_index))
    assert float(be.to_numpy(r.alpha)) == alphas[int(be.to_numpy(base.best_index))] * sx * sx
    coef0 = be.to_numpy(base.coef)
    assert _rel(be.to_numpy(r.coef) * sx / sy, coef0) <= 100 * EPS * 30
    scores = be.to_numpy(r.scores) / sy / sy
    if np.all(np.isfinite(scores)) and np.all(scores != 0):
        assert _rel(scores, be.to_numpy(base.scores)) <= 100 * EPS * 30


@pytest.mark.parametrize("method", METHODS)
def test_every_scale_of_sample_weight(be, method):
    """Weights times c: the same least-squares fit, and the same ridge fit with alpha times c.
    The rows are scaled after weighting, like X, so weights from 1e-300 to 1e300 are safe."""
    _skip_lazy_lsqr(be, method)
    X, y = _problem(20, 4)
    w = np.random.default_rng(3).uniform(0.5, 2.0, 20)
    Xc, Yc, _, _ = center(X, y, w, True)  # centered and scaled by sqrt(w)
    kappa = float(np.linalg.cond(Xc))
    opts = {"atol": TOL, "btol": TOL} if method == "lsqr" else {}
    for alpha in (0.0, 2.0):
        ref = lsq.ridge(X, y, alpha, sample_weight=w, method="svd").coef
        eta = np.linalg.norm(Yc[:, 0] - Xc @ ref) / (np.linalg.norm(Xc, 2) * np.linalg.norm(ref))
        tol = _bound(method, X, kappa, eta, Xc, Yc[:, 0], ref, alpha)
        for c in _scales(be):
            r = lsq.ridge(
                be.asarray(X), be.asarray(y), alpha * c, sample_weight=be.asarray(w * c), method=method, **opts
            )
            err = _rel(be.to_numpy(r.coef), ref)
            assert err <= tol, f"alpha {alpha}, weights * {c:g}: error {err:.3g} > {tol:.3g}"
