"""ridge_cv with held-out folds (cv=k, splitters, index pairs) and generalized CV, against
brute-force refits (one ridge fit per fold and penalty) and scikit-learn's cross_val_score."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq

ALPHAS = np.logspace(-2, 3, 7)


def _data(rng, m=60, n=5, k=None, offset=3.0):
    X = rng.standard_normal((m, n)) + offset
    w = rng.standard_normal((n,) if k is None else (n, k))
    y = X @ w + rng.standard_normal((m,) if k is None else (m, k)) + offset
    return X, y


def _brute(X, y, alphas, pairs, sw=None, fit_intercept=True, scoring="mse"):
    """Per penalty: the mean over folds of the held-out score of a ridge refit (NumPy)."""
    Y = y[:, None] if y.ndim == 1 else y
    out = []
    for a in alphas:
        fold = []
        for tr, te in pairs:
            r = lsq.ridge(
                X[tr],
                Y[tr],
                float(a),
                fit_intercept=fit_intercept,
                sample_weight=None if sw is None else sw[tr],
                method="svd",
            )
            pred = X[te] @ r.coef + r.intercept
            w = np.ones(len(te)) if sw is None else sw[te]
            sse = (w[:, None] * (Y[te] - pred) ** 2).sum(0)
            if scoring == "r2":
                mu = (w[:, None] * Y[te]).sum(0) / w.sum()
                fold.append(1 - sse / (w[:, None] * (Y[te] - mu) ** 2).sum(0))
            else:
                fold.append(-sse / w.sum())
        out.append(np.mean(fold, axis=0))
    out = np.array(out)
    return out[:, 0] if y.ndim == 1 else out


def _kfold_pairs(m, k):
    from sklearn.model_selection import KFold

    return list(KFold(k).split(np.zeros((m, 1))))


TOL = {"float64": 1e-10, "float32": 2e-3}  # scores of cond-~10 centered data: eps * cond**2 * a few


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("scoring", [None, "r2"])
@pytest.mark.parametrize("weighted", [False, True])
def test_kfold_matches_brute_force(be, dtype, scoring, weighted):
    if be.library == "jax" and (dtype == "float32" or scoring):
        pytest.skip(
            "JAX: float64 with the default scoring (each case compiles per fold shape; the rest is shared code)"
        )
    rng = np.random.default_rng(0)
    X, y = _data(rng)
    sw = rng.random(60) + 0.5 if weighted else None
    got = lsq.ridge_cv(
        be.asarray(X, dtype), be.asarray(y, dtype), be.asarray(ALPHAS, dtype), cv=4, scoring=scoring,
        sample_weight=None if sw is None else be.asarray(sw, dtype),
    )  # fmt: skip
    got = be.finish(got)  # Dask: every field in one compute
    ref = _brute(X, y, ALPHAS, _kfold_pairs(60, 4), sw, scoring="r2" if scoring == "r2" else "mse")
    scores = be.to_numpy(got.scores)
    np.testing.assert_allclose(scores, ref, rtol=TOL[dtype], atol=TOL[dtype] * np.abs(ref).max())
    assert int(be.to_numpy(got.best_index)) == int(np.argmax(ref))
    assert be.to_numpy(got.cv_values).shape == (len(ALPHAS), 4)
    # The refit uses all samples at the chosen penalty.
    r = lsq.ridge(X, y, float(ALPHAS[np.argmax(ref)]), sample_weight=sw)
    np.testing.assert_allclose(be.to_numpy(got.coef), r.coef, rtol=50 * TOL[dtype], atol=50 * TOL[dtype])


def test_kfold_matches_sklearn_cross_val_score(numpy_reference):
    from sklearn.linear_model import Ridge, RidgeCV
    from sklearn.model_selection import KFold, cross_val_score

    rng = np.random.default_rng(1)
    X, y = _data(rng, m=83)
    for scoring in ("neg_mean_squared_error", "r2"):
        sk = [np.mean(cross_val_score(Ridge(alpha=a), X, y, cv=KFold(5), scoring=scoring)) for a in ALPHAS]
        got = lsq.ridge_cv(X, y, ALPHAS, cv=5, scoring=scoring)
        np.testing.assert_allclose(got.scores, sk, rtol=1e-12, atol=1e-12)
    model = RidgeCV(alphas=ALPHAS, cv=5).fit(X, y)
    got = lsq.ridge_cv(X, y, ALPHAS, cv=5, scoring="r2")
    assert float(got.alpha) == model.alpha_
    np.testing.assert_allclose(got.scores[got.best_index], model.best_score_, rtol=1e-12)
    np.testing.assert_allclose(got.coef, model.coef_, rtol=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_r2_of_a_constant_fold_as_sklearn(weighted, numpy_reference):
    """A held-out fold whose targets are constant has no variance to explain: scikit-learn's
    r2_score gives it 0 (1 for a perfect prediction), not 1 - SSE, nor, with weights whose
    mean rounds (sst ~1e-33), ~-1e32."""
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(8)
    X, y = _data(rng, m=30, n=3)
    y[:10] = 0.1  # KFold(3)'s first held-out fold
    sw = rng.uniform(0.3, 3.0, 30) if weighted else None
    got = lsq.ridge_cv(X, y, ALPHAS, cv=3, scoring="r2", sample_weight=sw)
    pairs = _kfold_pairs(30, 3)
    for i, a in enumerate(ALPHAS):
        folds = []
        for tr, te in pairs:
            model = Ridge(alpha=a).fit(X[tr], y[tr], sample_weight=None if sw is None else sw[tr])
            folds.append(r2_score(y[te], model.predict(X[te]), sample_weight=None if sw is None else sw[te]))
        assert folds[0] == 0.0 == got.cv_values[i, 0]
        np.testing.assert_allclose(got.cv_values[i], folds, rtol=1e-10)
        np.testing.assert_allclose(got.scores[i], np.mean(folds), rtol=1e-10)


def test_r2_of_one_sample_folds(numpy_reference):
    """R^2 is undefined on one held-out sample: scikit-learn scores NaN with a warning. Here too
    (per fold), and the penalty is chosen from the other folds; with no other fold (leave-one-out)
    there is nothing to choose from: a clear error before any fit."""
    from sklearn.model_selection import LeaveOneOut

    rng = np.random.default_rng(9)
    X, y = _data(rng, m=20, n=3)
    pairs = _kfold_pairs(19, 3)
    pairs = [(np.r_[tr, 19], te) for tr, te in pairs] + [(np.arange(19), np.array([19]))]
    with pytest.warns(
        UserWarning, match=r"R\^2 is undefined on held-out folds of fewer than 2 samples \(folds \[3\]\)"
    ):
        got = lsq.ridge_cv(X, y, ALPHAS, cv=pairs, scoring="r2")
    assert np.all(np.isnan(got.cv_values[:, 3])) and np.all(np.isfinite(got.cv_values[:, :3]))
    ref = lsq.ridge_cv(X, y, ALPHAS, cv=pairs[:3], scoring="r2")
    np.testing.assert_array_equal(got.scores, ref.scores)
    assert int(got.best_index) == int(ref.best_index)
    for cv in (20, LeaveOneOut()):
        with pytest.raises(ValueError, match="scoring='r2'.*undefined on a held-out fold of fewer than 2"):
            lsq.ridge_cv(X, y, ALPHAS, cv=cv, scoring="r2")
        with pytest.raises(ValueError, match="scoring='neg_mean_squared_error', or cv=None"):
            lsq.RidgeCV(alphas=ALPHAS, cv=cv).fit(X, y)  # r2 is its default with folds
    assert np.all(np.isfinite(lsq.ridge_cv(X, y, ALPHAS, cv=20).scores))  # the squared error is defined


def test_splitters_pairs_and_per_target(numpy_reference):
    from sklearn.model_selection import GroupKFold, TimeSeriesSplit

    rng = np.random.default_rng(2)
    X, Y = _data(rng, m=70, k=3)
    Y[:, 2] *= 30  # a noisier target prefers another penalty
    Y[:, 2] += 30 * rng.standard_normal(70)
    groups = np.repeat(np.arange(7), 10)
    for cv in (GroupKFold(7), TimeSeriesSplit(4), _kfold_pairs(70, 3)):
        pairs = list(cv.split(np.zeros((70, 1)), None, groups)) if hasattr(cv, "split") else cv
        got = lsq.ridge_cv(X, Y, ALPHAS, cv=cv, groups=groups, alpha_per_target=True)
        ref = _brute(X, Y, ALPHAS, pairs)
        np.testing.assert_allclose(got.scores, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
        np.testing.assert_array_equal(got.best_index, np.argmax(ref, axis=0))


def test_gcv_matches_its_formula(be):
    rng = np.random.default_rng(3)
    X, y = _data(rng, m=40, n=4)
    sw = rng.random(40) + 0.5
    got = lsq.ridge_cv(be.asarray(X), be.asarray(y), be.asarray(ALPHAS), cv="gcv", sample_weight=be.asarray(sw))
    ref = []
    A = np.hstack([np.ones((40, 1)), X]) * np.sqrt(sw)[:, None]
    yw = y * np.sqrt(sw)
    for a in ALPHAS:
        P = np.diag([0.0] + [a] * 4)
        H = A @ np.linalg.solve(A.T @ A + P, A.T)
        r = yw - H @ yw
        ref.append(-np.mean(r**2) / (1 - np.trace(H) / 40) ** 2)
    np.testing.assert_allclose(be.to_numpy(got.scores), ref, rtol=1e-10)


def test_kfold_under_jit(numpy_reference):
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(4)
    X, y = _data(rng)
    fit = jax.jit(lsq.ridge_cv, static_argnames=("cv", "scoring", "fit_intercept"))
    got = fit(jax.numpy.asarray(X), jax.numpy.asarray(y), jax.numpy.asarray(ALPHAS), cv=4)
    np.testing.assert_allclose(np.asarray(got.scores), _brute(X, y, ALPHAS, _kfold_pairs(60, 4)), rtol=1e-10)


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        ({"cv": 1}, ValueError, "cv=1"),
        ({"cv": 61}, ValueError, "cv=61"),
        ({"cv": True}, TypeError, "cv must be"),
        ({"cv": "loo"}, ValueError, "cv must be"),
        ({"cv": 3.5}, TypeError, "cv must be"),
        ({"cv": [(np.arange(10), np.array([], dtype=int))]}, ValueError, "test must be"),
        ({"cv": [(np.arange(10), np.array([99]))]}, ValueError, "test must be"),
        ({"cv": 3, "scoring": "r3"}, ValueError, "scoring must be"),
        ({"cv": "gcv", "scoring": "r2"}, ValueError, "cv='gcv' scores"),
        ({"scoring": lambda *a: 0.0, "target_batch": 2, "y2": True}, ValueError, "needs target_batch=None"),
    ],
)
def test_bad_cv_arguments(kw, exc, match, numpy_reference):
    rng = np.random.default_rng(5)
    X, y = _data(rng)
    if kw.pop("y2", False):
        y = np.stack([y, y], axis=1)
    with pytest.raises(exc, match=match):
        lsq.ridge_cv(X, y, ALPHAS, **kw)


def test_ridgecv_estimator_with_folds_matches_sklearn(numpy_reference):
    from sklearn.linear_model import RidgeCV as SkRidgeCV
    from sklearn.model_selection import GroupKFold

    from lsq_backends import RidgeCV

    rng = np.random.default_rng(6)
    X, y = _data(rng, m=90)
    sw = rng.random(90) + 0.5
    for cv in (5, GroupKFold(3)):
        groups = np.repeat(np.arange(9), 10)
        ours = RidgeCV(alphas=ALPHAS, cv=cv).fit(X, y, groups=groups)
        splits = (
            cv if cv == 5 else list(cv.split(X, y, groups))
        )  # scikit-learn routes groups only with metadata routing
        theirs = SkRidgeCV(alphas=ALPHAS, cv=splits).fit(X, y)
        assert float(ours.alpha_) == theirs.alpha_
        np.testing.assert_allclose(ours.best_score_, theirs.best_score_, rtol=1e-10)
        np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-10)
        np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-10)
    # Weighted folds: the weighted held-out error chooses the penalty (scored as mean squared error).
    ours = RidgeCV(alphas=ALPHAS, cv=4, scoring="neg_mean_squared_error").fit(X, y, sample_weight=sw)
    ref = _brute(X, y, ALPHAS, _kfold_pairs(90, 4), sw)
    assert float(ours.alpha_) == ALPHAS[np.argmax(ref)]
    with pytest.raises(ValueError, match="cv!=None and store_cv_results=True are incompatible"):
        RidgeCV(cv=3, store_cv_results=True).fit(X, y)


def test_single_column_y_shapes_as_sklearn(numpy_reference):
    """y of shape (m, 1): Ridge and RidgeCV give coef_ (n,) (scikit-learn 1.9), LinearRegression (1, n)."""
    from sklearn import linear_model as sk

    rng = np.random.default_rng(7)
    X, y = _data(rng, m=30, n=3)
    Y = y[:, None]
    for name in ("Ridge", "RidgeCV", "LinearRegression"):
        ours, theirs = getattr(lsq, name)().fit(X, Y), getattr(sk, name)().fit(X, Y)
        assert ours.coef_.shape == theirs.coef_.shape, name
        assert np.shape(ours.intercept_) == np.shape(theirs.intercept_), name
        assert ours.predict(X).shape == theirs.predict(X).shape, name
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-9)
