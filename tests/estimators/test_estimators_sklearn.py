"""The estimators against scikit-learn (NumPy input, numpy session only): its estimator checks,
its meta-estimators, and its own LinearRegression / Ridge coefficients."""

from __future__ import annotations

import numpy as np
import pytest
from problems import cond

import lsq_backends as lsq

sklearn = pytest.importorskip("sklearn")
from sklearn import linear_model  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

CHECKED = [
    lsq.LinearRegression(),
    lsq.LinearRegression(fit_intercept=False, method="svd"),
    lsq.Ridge(),
    lsq.Ridge(alpha=0.3, method="normal"),
    lsq.LinearRegression(positive=True),
    lsq.Ridge(alpha=0.5, positive=True),
    lsq.RidgeCV(),
    lsq.RidgeCV(alpha_per_target=True, fit_intercept=False, gcv_mode="svd"),
    lsq.RidgeCV(cv=3),
    lsq.RidgeCV(cv="gcv", alpha_per_target=True),
    lsq.LinearRegression(method="lsqr"),
    lsq.Ridge(alpha=0.3, method="lsmr"),
    lsq.RidgeCV(cv=3, alpha_per_target=True),
]


@parametrize_with_checks(CHECKED)
def test_sklearn_check_estimator(estimator, check, numpy_reference):
    check(estimator)


def _data(m=50, n=5, k=None, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) @ np.diag(np.logspace(0, -1, n)) + 2.0
    y = X @ rng.standard_normal((n,) if k is None else (n, k)) + 0.1 * rng.standard_normal(
        (m,) if k is None else (m, k)
    )
    return X, y, rng.uniform(0.2, 3.0, m)


def _tol(X):
    # Both sides are backward stable: each is within eps * cond of the exact answer.
    return 100 * np.finfo(np.float64).eps * cond(X - X.mean(0))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("k", [None, 3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda fi: lsq.LinearRegression(fit_intercept=fi), lambda fi: linear_model.LinearRegression(fit_intercept=fi)),
        (
            lambda fi: lsq.Ridge(2.0, fit_intercept=fi),
            lambda fi: linear_model.Ridge(2.0, fit_intercept=fi, solver="svd"),
        ),
    ],
    ids=["linear", "ridge"],
)
def test_matches_sklearn(ours, theirs, fit_intercept, k, weighted, numpy_reference):
    X, y, sw = _data(k=k)
    sw = sw if weighted else None
    a = ours(fit_intercept).fit(X, y, sample_weight=sw)
    b = theirs(fit_intercept).fit(X, y, sample_weight=sw)
    tol = _tol(X)
    assert a.coef_.shape == b.coef_.shape
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=tol, atol=tol * np.abs(b.coef_).max())
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=tol * (1 + np.abs(b.intercept_).max()))
    assert a.score(X, y, sw) == pytest.approx(b.score(X, y, sw), rel=tol)
    scale = (np.abs(X[:5]) @ np.abs(b.coef_.T)).max() + np.abs(b.intercept_).max()  # cancellation in X w + b
    np.testing.assert_allclose(a.predict(X[:5]), b.predict(X[:5]), rtol=0, atol=tol * scale)


def test_ridge_per_target_alpha_matches_sklearn(numpy_reference):
    X, y, sw = _data(k=3)
    alpha = np.array([0.1, 5.0, 300.0])
    a = lsq.Ridge(alpha).fit(X, y, sample_weight=sw)
    b = linear_model.Ridge(alpha, solver="svd").fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=_tol(X))
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=_tol(X))
    # One penalty in a vector applies to every target, as in scikit-learn (not a 1-long path).
    a = lsq.Ridge(np.array([5.0])).fit(X, y)
    b = linear_model.Ridge(np.array([5.0]), solver="svd").fit(X, y)
    assert a.coef_.shape == b.coef_.shape == (3, X.shape[1])
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=_tol(X))


def test_linear_regression_rank_matches_sklearn(numpy_reference):
    X, y, _ = _data(m=8, n=12)  # wide: rank m - 1 after centering
    a = lsq.LinearRegression(method="svd").fit(X, y)
    b = linear_model.LinearRegression().fit(X, y)
    assert int(a.rank_) == b.rank_ == 7
    np.testing.assert_allclose(a.singular_, b.singular_[:7], rtol=1e-12)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=0, atol=1e-10 * np.abs(b.coef_).max())


def test_pipeline_and_grid_search(numpy_reference):
    X, y, sw = _data(m=80)
    pipe = make_pipeline(StandardScaler(), lsq.Ridge())
    grid = GridSearchCV(pipe, {"ridge__alpha": [1e-3, 1.0, 1e3], "ridge__method": ["qr", "normal"]}, cv=4)
    grid.fit(X, y)
    ref = GridSearchCV(
        make_pipeline(StandardScaler(), linear_model.Ridge(solver="svd")), {"ridge__alpha": [1e-3, 1.0, 1e3]}, cv=4
    ).fit(X, y)
    assert grid.best_params_["ridge__alpha"] == ref.best_params_["ridge__alpha"]
    assert grid.best_score_ == pytest.approx(ref.best_score_, rel=1e-10)
    np.testing.assert_allclose(grid.predict(X[:4]), ref.predict(X[:4]), rtol=1e-10)
    # sample_weight reaches the estimator through the pipeline's fit parameters.
    lr = make_pipeline(StandardScaler(), lsq.LinearRegression()).fit(X, y, linearregression__sample_weight=sw)
    ref_lr = make_pipeline(StandardScaler(), linear_model.LinearRegression()).fit(
        X, y, linearregression__sample_weight=sw
    )
    np.testing.assert_allclose(lr[-1].coef_, ref_lr[-1].coef_, rtol=1e-10)


def test_clone_and_params(numpy_reference):
    est = lsq.Ridge(alpha=3.0, method="svd")
    twin = sklearn.base.clone(est)
    assert twin is not est and twin.get_params() == est.get_params()
    assert repr(est) == "Ridge(alpha=3.0, method='svd')"
    assert sklearn.base.is_regressor(est)
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(solver="lu")


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize(("k", "per_target"), [(None, False), (3, False), (3, True)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("mode", ["eigen", "svd"])
def test_ridge_cv_matches_sklearn(fit_intercept, k, per_target, weighted, mode, numpy_reference):
    X, y, sw = _data(k=k, seed=2)
    y = y + 0.5 * np.random.default_rng(3).standard_normal(y.shape)  # noise: an interior optimum
    sw = sw if weighted else None
    alphas = np.logspace(-3, 3, 13)
    kw = dict(fit_intercept=fit_intercept, alpha_per_target=per_target, store_cv_results=True, gcv_mode=mode)
    a = lsq.RidgeCV(alphas, **kw).fit(X, y, sample_weight=sw)
    b = linear_model.RidgeCV(alphas, **kw).fit(X, y, sample_weight=sw)
    tol = _tol(X)
    np.testing.assert_array_equal(a.alpha_, b.alpha_)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=tol, atol=tol * np.abs(b.coef_).max())
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=tol * (1 + np.abs(b.intercept_).max()))
    np.testing.assert_allclose(a.best_score_, b.best_score_, rtol=tol)
    assert a.cv_results_.shape == b.cv_results_.shape
    np.testing.assert_allclose(a.cv_results_, b.cv_results_, rtol=tol, atol=tol * np.abs(b.cv_results_).max())


def test_ridge_cv_in_pipeline_and_grid_search(numpy_reference):
    X, y, _ = _data(m=60)
    grid = GridSearchCV(make_pipeline(StandardScaler(), lsq.RidgeCV()), {"ridgecv__fit_intercept": [True, False]}, cv=3)
    ref = GridSearchCV(
        make_pipeline(StandardScaler(), linear_model.RidgeCV()), {"ridgecv__fit_intercept": [True, False]}, cv=3
    )
    grid.fit(X, y)
    ref.fit(X, y)
    assert grid.best_params_ == ref.best_params_
    assert grid.best_score_ == pytest.approx(ref.best_score_, rel=1e-10)


def test_sample_weight_metadata_routing(numpy_reference):
    X, y, sw = _data(m=60)
    with sklearn.config_context(enable_metadata_routing=True):
        est = lsq.Ridge().set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
        ref = linear_model.Ridge(solver="svd").set_fit_request(sample_weight=True).set_score_request(sample_weight=True)
        grid = GridSearchCV(est, {"alpha": [0.1, 10.0]}, cv=3).fit(X, y, sample_weight=sw)
        grid_ref = GridSearchCV(ref, {"alpha": [0.1, 10.0]}, cv=3).fit(X, y, sample_weight=sw)
    assert grid.best_params_ == grid_ref.best_params_
    assert grid.best_score_ == pytest.approx(grid_ref.best_score_, rel=1e-10)
