"""What a fitted estimator keeps: a refused refit leaves every fitted attribute as it was (and
predict working); fitted estimators survive a plain-pickle round trip, Dask-fitted ones (whose
attributes are lazy graphs) included."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends.check.problems import design

ESTIMATORS = {
    "linear": lambda: lsq.LinearRegression(method="svd"),
    "ridge": lambda: lsq.Ridge(alpha=2.0, method="qr"),
    "ridge_cv": lambda: lsq.RidgeCV(alphas=(0.1, 1.0, 10.0), store_cv_results=True),
}


def _problem(m=30, n=3, k=None, seed=0):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), 10.0) + 1.0
    y = (
        X @ rng.standard_normal((n,) if k is None else (n, k))
        + 0.5
        + 1e-2 * rng.standard_normal((m,) if k is None else (m, k))
    )
    return X, y, rng.uniform(0.5, 2.0, m)


def _bad_refits(be, X, y):
    """Refits that must be refused, each with 4 features where the fit had 3 (so a premature
    ``n_features_in_`` would show): checked by scikit-learn's route (NumPy) or ours, during
    validation or inside the solver. Dask reads no values: only shapes can be refused there."""
    X4 = np.concatenate([X, X[:, :1] ** 2], axis=1)
    nan = X4.copy()
    nan[2, 3] = np.nan
    cases = {"y rows": (X4, y[:-1], None)}
    if not be.lazy:
        cases["NaN in X"] = (nan, y, None)
        cases["negative weight"] = (X4, y, -np.ones(len(y)))
    return cases


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_refused_refit_leaves_fitted_estimator_unchanged(be, name):
    X, y, _ = _problem()
    est = ESTIMATORS[name]().fit(be.asarray(X), be.asarray(y))
    before = dict(vars(est))
    pred = be.to_numpy(est.predict(be.asarray(X)))
    for case, (X2, y2, sw2) in _bad_refits(be, X, y).items():
        with pytest.raises(ValueError):
            est.fit(be.asarray(X2), be.asarray(y2), sample_weight=None if sw2 is None else be.asarray(sw2))
        assert vars(est).keys() == before.keys(), case
        assert all(vars(est)[k] is v for k, v in before.items()), case
        assert np.array_equal(be.to_numpy(est.predict(be.asarray(X))), pred), case


def test_refused_refit_keeps_feature_names(numpy_reference):
    """scikit-learn's validation records a data frame's column names before it checks the
    values: a refused refit must not leave the new names on the estimator."""
    pd = pytest.importorskip("pandas")
    X, y, _ = _problem()
    est = lsq.Ridge().fit(pd.DataFrame(X, columns=["a", "b", "c"]), y)
    bad = pd.DataFrame(np.concatenate([X, X[:, :1]], axis=1), columns=["d", "e", "f", "g"])
    bad.iloc[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(bad, y)
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.n_features_in_ == 3
    est.fit(X, y)  # a refit on a plain array drops the names, as scikit-learn does
    assert not hasattr(est, "feature_names_in_") and est.n_features_in_ == 3


def test_ridge_cv_refit_without_store_drops_cv_results(numpy_reference):
    X, y, _ = _problem()
    est = lsq.RidgeCV(store_cv_results=True).fit(X, y)
    assert est.cv_results_.shape == (30, 3)
    est.set_params(store_cv_results=False).fit(X, y)
    assert not hasattr(est, "cv_results_")


PICKLED = {
    **{f"linear-{m}": (lambda m=m: lsq.LinearRegression(method=m)) for m in ("auto", "normal", "qr", "svd")},
    **{f"ridge-{m}": (lambda m=m: lsq.Ridge(alpha=2.0, method=m)) for m in ("auto", "normal", "qr", "svd")},
    "ridge-per-target": lambda: lsq.Ridge(alpha=[1.0, 3.0]),
    **{f"ridge_cv-{g}": (lambda g=g: lsq.RidgeCV(gcv_mode=g, store_cv_results=True)) for g in ("auto", "eigen", "svd")},
    "ridge_cv-per-target": lambda: lsq.RidgeCV(alpha_per_target=True),
    # nnls's active-set loop picks candidates by an argmax (Dask's own argmax does not pickle)
    **{f"positive-{c.__name__}": (lambda c=c: c(positive=True)) for c in (lsq.LinearRegression, lsq.Ridge)},
}


@pytest.mark.parametrize("name", list(PICKLED))
def test_pickle_round_trip(be, name):
    """Plain pickle (not cloudpickle): every function in a Dask-fitted estimator's graphs must
    be importable by name."""
    if be.library not in ("numpy", "dask"):
        pytest.skip("NumPy and Dask")
    X, Y, sw = _problem(k=2)
    est = PICKLED[name]().fit(be.asarray(X), be.asarray(Y), sample_weight=be.asarray(sw))
    again = pickle.loads(pickle.dumps(est))
    assert type(again) is type(est) and again.get_params() == est.get_params()
    fitted = [k for k in vars(est) if k.endswith("_")]
    assert set(fitted) == {k for k in vars(again) if k.endswith("_")}
    # Dask: each estimator's graphs computed together (the unpickled ones on their own)
    mine, theirs = be.finish({k: getattr(est, k) for k in fitted}), be.finish({k: getattr(again, k) for k in fitted})
    for k in fitted:
        a, b = mine[k], theirs[k]
        if hasattr(a, "shape"):
            assert np.array_equal(be.to_numpy(a), be.to_numpy(b)), k
        else:
            assert a == b, k
    assert np.array_equal(be.to_numpy(again.predict(be.asarray(X))), be.to_numpy(est.predict(be.asarray(X))))
