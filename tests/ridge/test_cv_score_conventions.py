"""The two default scores of k-fold cross-validation, side by side as docs/ridge.md puts them:
``ridge_cv(cv=k)`` reports minus the mean squared error (its one default for every ``cv``),
``RidgeCV(cv=k)`` R² (scikit-learn's ``RidgeCV``), and ``scoring="r2"`` gives the function
the estimator's number."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq

pytestmark = pytest.mark.usefixtures("numpy_reference")

ALPHAS = np.logspace(-3, 3, 7)


def _data():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 4))
    return X, X @ rng.standard_normal(4) + 0.5 * rng.standard_normal(60)


def _folds(m, k=5):
    """scikit-learn's KFold(k): contiguous folds, the first m % k one sample longer."""
    sizes = np.full(k, m // k) + (np.arange(k) < m % k)
    stops = np.cumsum(sizes)
    return [np.arange(stop - size, stop) for size, stop in zip(sizes, stops, strict=True)]


def _by_hand(X, y, alpha):
    """Mean over 5 folds of the held-out MSE and R² of ``ridge`` fitted on the other folds."""
    mse, r2 = [], []
    for test in _folds(len(y)):
        train = np.setdiff1d(np.arange(len(y)), test)
        fit = lsq.ridge(X[train], y[train], alpha)
        resid = y[test] - (X[test] @ fit.coef + fit.intercept)
        mse.append(np.mean(resid**2))
        r2.append(1 - np.sum(resid**2) / np.sum((y[test] - y[test].mean()) ** 2))
    return np.mean(mse), np.mean(r2)


def test_function_reports_minus_mse_and_estimator_r2():
    X, y = _data()
    cv = lsq.ridge_cv(X, y, ALPHAS, cv=5)
    by_hand = np.array([_by_hand(X, y, a) for a in ALPHAS])
    np.testing.assert_allclose(np.asarray(cv.scores), -by_hand[:, 0], rtol=1e-10)
    reg = lsq.RidgeCV(alphas=ALPHAS, cv=5).fit(X, y)
    np.testing.assert_allclose(float(reg.best_score_), by_hand[:, 1].max(), rtol=1e-10)
    r2 = lsq.ridge_cv(X, y, ALPHAS, cv=5, scoring="r2")
    np.testing.assert_allclose(float(np.max(r2.scores)), float(reg.best_score_), rtol=1e-12)
    assert float(np.max(cv.scores)) < 0 < float(reg.best_score_)


def test_estimator_matches_sklearn_ridgecv():
    sklearn = pytest.importorskip("sklearn.linear_model")
    X, y = _data()
    ref = sklearn.RidgeCV(alphas=ALPHAS, cv=5).fit(X, y)
    reg = lsq.RidgeCV(alphas=ALPHAS, cv=5).fit(X, y)
    assert float(reg.alpha_) == ref.alpha_
    np.testing.assert_allclose(float(reg.best_score_), ref.best_score_, rtol=1e-8)
