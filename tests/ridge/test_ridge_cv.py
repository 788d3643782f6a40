"""ridge_cv: leave-one-out for every penalty from one factorization.

Checked against brute-force leave-one-out refits, against scikit-learn's RidgeCV (numpy session
only), and each backend against the NumPy result. Tolerances: the Gram route errs like
eps * cond(Xc^T Xc + alpha I) at the smallest alpha, and the division by 1 - H_ii amplifies
that by up to 1 / min(1 - H_ii); both measured on each problem.
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import center, rel_err

import lsq_backends as lsq
from lsq_backends.check.problems import design

ALPHAS = np.logspace(-2, 3, 11)
SHAPES = {"tall": (30, 5, None), "tall_multi": (30, 5, 3), "wide_multi": (8, 15, 2), "wide": (9, 15, None)}


def _data(shape, seed=0, weighted=False, batch=()):
    m, n, k = SHAPES[shape]
    rng = np.random.default_rng(seed)
    X = np.stack([design(rng, (m, n), 20.0) for _ in range(int(np.prod(batch)))]).reshape(batch + (m, n)) + 2.0
    y = X @ rng.standard_normal((n,) if k is None else (n, k))
    y = y + 0.5 * rng.standard_normal(y.shape)
    sw = None
    if weighted:
        sw = rng.uniform(0.2, 3.0, m)
        sw[1] = 0.0  # a zero weight: that sample's leave-one-out error is 0, as in sklearn
    return X, y, sw


def _tol(X, sw, fit_intercept, dtype="float64"):
    """eps * cond(Gram + alpha_min I) / min(1 - H_ii) times a modest dimension constant."""
    m, n = X.shape[-2:]
    Xc, _, _, _ = center(X, np.zeros(X.shape[:-1]), sw, fit_intercept)
    s = np.linalg.svd(Xc, compute_uv=False)
    a = ALPHAS[0]
    kappa = (s.max() ** 2 + a) / ((s.min() if m > n else 0.0) ** 2 + a)
    G = np.swapaxes(Xc, -1, -2) @ Xc + a * np.eye(n)
    h = np.einsum("...ij,...ji->...i", Xc, np.linalg.solve(G, np.swapaxes(Xc, -1, -2)))
    if fit_intercept:
        w = np.ones(m) if sw is None else sw
        h = h + w / w.sum()
    return 10 * np.sqrt(max(m, n)) * float(np.finfo(dtype).eps) * kappa / float(np.min(1 - h))


@pytest.mark.parametrize("mode", ["auto", "svd"])
@pytest.mark.parametrize("alpha_per_target", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_matches_sklearn_ridgecv(numpy_reference, shape, fit_intercept, weighted, alpha_per_target, mode):
    from sklearn.linear_model import RidgeCV

    X, y, sw = _data(shape, seed=1, weighted=weighted)
    r = lsq.ridge_cv(
        X, y, ALPHAS, fit_intercept=fit_intercept, sample_weight=sw, alpha_per_target=alpha_per_target, mode=mode
    )
    sk = RidgeCV(alphas=ALPHAS, fit_intercept=fit_intercept, alpha_per_target=alpha_per_target, store_cv_results=True)
    sk.fit(X, y, sample_weight=sw)
    tol = _tol(X, sw, fit_intercept)
    np.testing.assert_array_equal(r.alpha, sk.alpha_)
    np.testing.assert_array_equal(ALPHAS[r.best_index], sk.alpha_)
    coef = r.coef.T if y.ndim == 2 else r.coef
    assert rel_err(coef, sk.coef_) <= tol
    np.testing.assert_allclose(r.intercept, sk.intercept_, rtol=tol, atol=tol * np.abs(y).max())
    cv = np.moveaxis(r.cv_values, 0, -1)  # sklearn puts the alpha axis last
    assert cv.shape == sk.cv_results_.shape
    np.testing.assert_allclose(cv, sk.cv_results_, rtol=tol, atol=tol * np.abs(sk.cv_results_).max())
    best = r.scores[r.best_index, np.arange(y.shape[1])] if alpha_per_target and y.ndim == 2 else r.scores[r.best_index]
    best = best if alpha_per_target else np.mean(best)
    np.testing.assert_allclose(best, sk.best_score_, rtol=tol)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("shape", ["tall_multi", "wide"])
def test_equals_brute_force_leave_one_out(numpy_reference, shape, fit_intercept):
    """cv_values[j, i] = w_i (y_i - yhat_{-i})**2 with yhat_{-i} from a ridge fit without sample
    i (weight 0), one whole path per left-out sample."""
    X, y, sw = _data(shape, seed=2, weighted=True)
    r = lsq.ridge_cv(X, y, ALPHAS, fit_intercept=fit_intercept, sample_weight=sw)
    m = X.shape[0]
    want = np.empty_like(r.cv_values)
    for i in range(m):
        w = sw.copy()
        w[i] = 0.0
        path = lsq.ridge(X, y, ALPHAS, fit_intercept=fit_intercept, sample_weight=w, method="svd")
        coef = path.coef if y.ndim == 2 else path.coef[..., None]
        pred = X[i] @ coef + (path.intercept if y.ndim == 2 else path.intercept[:, None])  # (a, k)
        err = sw[i] * ((y[i] if y.ndim == 2 else y[i, None]) - pred) ** 2
        want[:, i] = err if y.ndim == 2 else err[:, 0]
    tol = _tol(X, sw, fit_intercept)
    np.testing.assert_allclose(r.cv_values, want, rtol=tol, atol=tol * np.abs(want).max())
    np.testing.assert_allclose(r.scores, -want.mean(axis=1), rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("alpha_per_target", [False, True])
@pytest.mark.parametrize("case", ["tall_multi", "wide_multi", "batched"])
def test_backend_matches_numpy(be, case, alpha_per_target):
    shape, batch = ("tall", (3,)) if case == "batched" else (case, ())
    X, y, sw = _data(shape, seed=3, weighted=True, batch=batch)
    ref = lsq.ridge_cv(X, y, ALPHAS, sample_weight=sw, alpha_per_target=alpha_per_target)
    r = lsq.ridge_cv(
        be.asarray(X),
        be.asarray(y),
        be.asarray(ALPHAS),
        sample_weight=be.asarray(sw),
        alpha_per_target=alpha_per_target,
    )
    assert r.coef.dtype == be.xp.float64
    assert be.xp.isdtype(r.best_index.dtype, "integral")
    r = be.finish(r)  # Dask: every field in one compute
    tol = _tol(X, sw, True)
    for name, want in zip(ref._fields, ref, strict=False):
        got = be.to_numpy(getattr(r, name))
        assert got.shape == np.shape(want), name
        if name == "best_index":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max(), err_msg=name)
    if batch:  # each problem of the stack on its own
        one = lsq.ridge_cv(X[1], y[1], ALPHAS, sample_weight=sw, alpha_per_target=alpha_per_target)
        np.testing.assert_allclose(ref.coef[1], one.coef, rtol=1e-10)
        np.testing.assert_allclose(ref.cv_values[:, 1], one.cv_values, rtol=1e-10)


def test_float32_and_device(strict_device):
    be = strict_device
    X, y, sw = _data("tall_multi", seed=4, weighted=True)
    ref = lsq.ridge_cv(X, y, ALPHAS, sample_weight=sw)
    r = lsq.ridge_cv(
        be.asarray(X, "float32"),
        be.asarray(y, "float32"),
        be.asarray(ALPHAS, "float32"),
        sample_weight=be.asarray(sw, "float32"),
    )
    assert all(v.device == be.device for v in r)
    assert r.coef.dtype == be.xp.float32
    # auto takes the SVD route in float32 (the Gram limit is cond <= 45 there).
    coef = np.asarray(r.coef.to_device(be.xp.Device("CPU_DEVICE")))
    assert rel_err(coef, ref.coef) <= _tol(X, sw, True, "float32")


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"alphas": np.array([0.0, 1.0])}, ValueError, "positive"),
        ({"alphas": np.ones((2, 2))}, ValueError, "alpha"),
        ({"alphas": 1.0, "mode": "cholesky"}, ValueError, "mode"),
        ({"alphas": 1.0, "alpha_per_target": 1}, TypeError, "alpha_per_target"),
    ],
)
def test_bad_input(kwargs, err, match):
    X, y, _ = _data("tall", seed=5)
    with pytest.raises(err, match=match):
        lsq.ridge_cv(X, y, **kwargs)


def test_scalar_alpha_and_vector_shapes():
    X, y, _ = _data("tall", seed=6)
    r = lsq.ridge_cv(X, y, 1.0)
    assert r.cv_values.shape == (1, 30) and r.scores.shape == (1,) and r.alpha.shape == ()
    r = lsq.ridge_cv(X, y, ALPHAS, alpha_per_target=True)
    assert r.alpha.shape == r.best_index.shape == () and r.coef.shape == (5,)
