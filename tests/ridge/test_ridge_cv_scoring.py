"""RidgeCV and ridge_cv as scikit-learn's RidgeCV: any ``scoring`` for leave-one-out (names,
callables, multi-output scorers), the leave-one-out predictions in ``cv_results_``, alpha = 0
for held-out folds, scikit-learn's alpha checks; and scores in the caller's units on data that
ridge_cv rescales internally."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq

ALPHAS = np.logspace(-2, 2, 5)
NAMES = [
    "r2",
    "explained_variance",
    "neg_mean_squared_error",
    "neg_root_mean_squared_error",
    "neg_mean_absolute_error",
    "neg_median_absolute_error",  # no native version: scikit-learn's scorer
]


def _data(seed, m=30, n=4, k=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) + np.arange(n)
    Y = X @ rng.standard_normal((n, k)) + 2 * rng.standard_normal((m, k))
    Y[:, -1] *= 5  # targets of different scales: per-target and joint scores differ
    return X, Y, rng.uniform(0.5, 2.0, m)


def _brute_loo(X, Y, alphas, sw):
    """Leave-one-out predictions (a, m, k) by refitting without each sample."""
    m = X.shape[0]
    out = np.empty((len(alphas), m, Y.shape[1]))
    for i in range(m):
        keep = np.arange(m) != i
        r = lsq.ridge(X[keep], Y[keep], np.asarray(alphas), sample_weight=None if sw is None else sw[keep])
        out[:, i, :] = X[i] @ r.coef + r.intercept
    return out


@pytest.mark.parametrize("scoring", [*NAMES, "callable"])
def test_leave_one_out_scoring_matches_sklearn(scoring, numpy_reference):
    sk = pytest.importorskip("sklearn.linear_model")
    from sklearn.metrics import make_scorer

    if scoring == "callable":  # the worst weighted error: not a mean over targets

        def worst(y_true, y_pred, sample_weight=None):
            w = 1.0 if sample_weight is None else sample_weight if y_true.ndim == 1 else sample_weight[:, None]
            return -np.max(w * np.abs(y_true - y_pred))

        scoring = make_scorer(worst)
    X, Y, sw = _data(seed=1)
    for y, apt in ((Y[:, 0], False), (Y, False), (Y, True)):
        for w in (None, sw):
            kw = dict(alphas=ALPHAS, scoring=scoring, alpha_per_target=apt, store_cv_results=True)
            ours, theirs = lsq.RidgeCV(**kw).fit(X, y, sample_weight=w), sk.RidgeCV(**kw).fit(X, y, sample_weight=w)
            np.testing.assert_array_equal(ours.alpha_, theirs.alpha_)
            np.testing.assert_allclose(ours.best_score_, theirs.best_score_, rtol=1e-10, atol=1e-12)
            assert ours.cv_results_.shape == theirs.cv_results_.shape
            np.testing.assert_allclose(ours.cv_results_, theirs.cv_results_, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-10)


def test_custom_multioutput_scorer_sees_all_targets(numpy_reference):
    """scikit-learn's test_ridge_cv_custom_multioutput_scorer: a scorer weighting the second
    target twice is called once per penalty with both columns."""
    pytest.importorskip("sklearn")
    X, Y, _ = _data(seed=2)

    def custom_error(y_true, y_pred):
        return -np.average(np.mean((y_true - y_pred) ** 2, axis=0), weights=[2, 1])

    def scorer(estimator, X, y):
        assert np.ndim(y) == 2
        return -custom_error(y, estimator.predict(X))

    reg = lsq.RidgeCV(alphas=ALPHAS, scoring=scorer, store_cv_results=True).fit(X, Y)
    loo = _brute_loo(X, Y, ALPHAS, None)
    want = [-custom_error(Y, loo[i]) for i in range(len(ALPHAS))]
    np.testing.assert_allclose(reg.best_score_, max(want), rtol=1e-10)
    assert float(reg.alpha_) == ALPHAS[int(np.argmax(want))]
    np.testing.assert_allclose(np.moveaxis(reg.cv_results_, -1, 0), loo, rtol=1e-9)


@pytest.mark.parametrize("scoring", ["r2", "explained_variance", "neg_mean_absolute_error"])
def test_leave_one_out_predictions_on_every_backend(be, scoring):
    """The stored predictions are those of refits without each sample, a zero-weight sample
    included (it does not move the fit: its prediction is the full fit's, not 0/0)."""
    X, Y, sw = _data(seed=3, m=20)
    sw[3] = 0.0
    r = lsq.ridge_cv(be.asarray(X), be.asarray(Y), be.asarray(ALPHAS), sample_weight=be.asarray(sw), scoring=scoring)
    loo = _brute_loo(X, Y, ALPHAS, sw)
    tol = 1e-9
    np.testing.assert_allclose(be.to_numpy(r.cv_values), loo, rtol=tol, atol=tol * np.abs(loo).max())
    ref = lsq.ridge_cv(X, Y, ALPHAS, sample_weight=sw, scoring=scoring)
    np.testing.assert_allclose(be.to_numpy(r.scores), ref.scores, rtol=tol, atol=tol)
    if scoring == "explained_variance" and be.library == "numpy":
        from sklearn.metrics import explained_variance_score

        want = [[explained_variance_score(Y[:, j], loo[i, :, j], sample_weight=sw) for j in range(2)] for i in range(5)]
        np.testing.assert_allclose(ref.scores, want, rtol=1e-10)


def test_target_batch_scores_as_unbatched(numpy_reference):
    X, Y, sw = _data(seed=4, k=5)
    for scoring in ("r2", "neg_mean_absolute_error"):
        full = lsq.ridge_cv(X, Y, ALPHAS, sample_weight=sw, scoring=scoring, alpha_per_target=True)
        part = lsq.ridge_cv(X, Y, ALPHAS, sample_weight=sw, scoring=scoring, alpha_per_target=True, target_batch=2)
        np.testing.assert_allclose(part.scores, full.scores, rtol=1e-12)
        np.testing.assert_array_equal(part.alpha, full.alpha)
        assert part.cv_values is None


def test_scores_in_the_callers_units(numpy_reference):
    """y near 2**600 is solved at unit scale inside ridge_cv; a scorer still sees y as given
    (leave-one-out and held-out folds), and the stored predictions are in y's units."""
    X, Y, _ = _data(seed=5)
    big = 2.0**600
    mae = lambda t, p, w: -float(np.mean(np.abs(t - p)))  # noqa: E731 (ridge_cv's own callable form)
    for cv in (None, 4):
        for scoring in ("neg_mean_absolute_error", "neg_root_mean_squared_error", mae):
            small = lsq.ridge_cv(X, Y, ALPHAS, scoring=scoring, cv=cv)
            large = lsq.ridge_cv(X, Y * big, ALPHAS * 1.0, scoring=scoring, cv=cv)
            np.testing.assert_allclose(large.scores / big, small.scores, rtol=1e-12)
            np.testing.assert_array_equal(large.best_index, small.best_index)
            if cv is None:
                np.testing.assert_allclose(large.cv_values / big, small.cv_values, rtol=1e-12)


def test_held_out_folds_take_alpha_zero(numpy_reference):
    sk = pytest.importorskip("sklearn.linear_model")
    X, Y, _ = _data(seed=6, m=40)
    y = Y[:, 0]
    alphas = (0.0, 0.1, 1.0)
    ours, theirs = lsq.RidgeCV(alphas=alphas, cv=5).fit(X, y), sk.RidgeCV(alphas=alphas, cv=5).fit(X, y)
    assert float(ours.alpha_) == theirs.alpha_
    np.testing.assert_allclose(ours.best_score_, theirs.best_score_, rtol=1e-10)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-10)
    # Least squares wins on noiseless data; the refit at alpha = 0 is lstsq's.
    exact = X @ np.arange(1.0, 5.0) + 3.0
    r = lsq.ridge_cv(X, exact, np.array(alphas), cv=4)
    assert float(r.alpha) == 0.0
    np.testing.assert_allclose(r.coef, lsq.lstsq(X, exact, fit_intercept=True).coef, rtol=1e-10)
    with pytest.raises(ValueError, match="must be positive for leave-one-out"):
        lsq.ridge_cv(X, y, np.array(alphas))


@pytest.mark.parametrize(
    "alphas, cv, exc, match",
    [
        ((1, -1, -100), None, ValueError, r"alphas\[1\] == -1, must be > 0.0"),
        ((-0.1, -1.0, -10.0), None, ValueError, r"alphas\[0\] == -0.1, must be > 0.0"),
        ((1, 1.0, "1"), None, TypeError, r"alphas\[2\] must be an instance of float, not str"),
        ((0.0, 1.0), None, ValueError, r"alphas\[0\] == 0.0, must be > 0.0"),
        ((1.0, -1.0), 3, ValueError, r"alphas\[1\] == -1.0, must be >= 0.0"),
    ],
)
def test_alphas_checked_as_sklearn(alphas, cv, exc, match, numpy_reference):
    X, Y, _ = _data(seed=7)
    with pytest.raises(exc, match=match):
        lsq.RidgeCV(alphas=alphas, cv=cv).fit(X, Y[:, 0])


@pytest.mark.parametrize("mode", ["eigen", "svd"])
@pytest.mark.parametrize("shape", [(50, 10), (10, 50)], ids=["tall", "wide"])
def test_predictions_match_refits_down_to_tiny_alpha(mode, shape, numpy_reference):
    """scikit-learn's test_ridge_cv_results_predictions: the stored predictions equal refits
    without each sample to 1e-6, down to alpha = 1e-5. On wide X with an intercept, 1 - H_ii is
    ~ alpha / lam there, and the noise eigenvalue of centering's null direction (kept next to a
    tiny alpha) once made the eigen route's leverages, hence predictions, 0.2% wrong."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, Y = datasets.make_regression(n_samples=shape[0], n_features=shape[1], n_targets=2, random_state=0)
    alphas = np.logspace(-5, 7, 5)
    sw = np.where(np.arange(shape[0]) % 2 == 0, 0.5, 1.0)
    for w in (None, sw):
        r = lsq.ridge_cv(X, Y, alphas, sample_weight=w, mode=mode, scoring="neg_mean_squared_error")
        np.testing.assert_allclose(r.cv_values, _brute_loo(X, Y, alphas, w), rtol=1e-6)
