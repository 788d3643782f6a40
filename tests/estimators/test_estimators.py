"""The estimators on every backend: fitted attributes and predictions stay in the input's
namespace, dtype and device, and match the float64 NumPy reference; bad input fails clearly;
without scikit-learn they still work (duck-typed)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import array_api_compat
import numpy as np
import pytest
from problems import cond, reference, rel_err

import lsq_backends as lsq
from lsq_backends._sklearn._estimator_base import NotFittedError
from lsq_backends.check.problems import design, threshold


def _problem(m=40, n=4, k=None, weighted=False, seed=0):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), 30.0) + 3.0
    w_true = rng.standard_normal((n,) if k is None else (n, k))
    y = X @ w_true + 0.5 + 1e-2 * rng.standard_normal((m,) if k is None else (m, k))
    sw = rng.uniform(0.5, 2.0, m) if weighted else None
    return X, y, sw


def _r2(y, pred, sw):
    Y, P = y.reshape(len(y), -1), pred.reshape(len(y), -1)
    w = np.ones(len(y)) if sw is None else sw
    mean = (w[:, None] * Y).sum(0) / w.sum()
    return float(np.mean(1 - (w[:, None] * (Y - P) ** 2).sum(0) / (w[:, None] * (Y - mean) ** 2).sum(0)))


ESTIMATORS = {
    # SVD and QR: the cheapest methods to compile on eager JAX (seconds per new shape here).
    "linear": (lambda fi: lsq.LinearRegression(fit_intercept=fi, method="svd"), None),
    "ridge": (lambda fi: lsq.Ridge(alpha=2.5, fit_intercept=fi, method="qr"), 2.5),
}


# Few cases: eager JAX compiles every operation for every new shape and dtype (seconds each here).
@pytest.mark.parametrize(
    ("kind", "k", "weighted", "fit_intercept", "dtype"),
    [
        ("linear", None, False, True, "float64"),
        ("ridge", None, True, False, "float64"),
        ("linear", 3, True, True, "float32"),
        ("ridge", 2, False, True, "float32"),
    ],
)
def test_fit_predict_score_in_namespace(be, kind, k, weighted, fit_intercept, dtype):
    make, alpha = ESTIMATORS[kind]
    X, y, sw = _problem(k=k, weighted=weighted)
    est = make(fit_intercept).fit(
        be.asarray(X, dtype), be.asarray(y, dtype), sample_weight=None if sw is None else be.asarray(sw, dtype)
    )
    coef, intercept, rss, Xc = reference(X, y, alpha=alpha, sw=sw, fit_intercept=fit_intercept)
    for name in ("coef_", "intercept_"):
        a = getattr(est, name)
        assert array_api_compat.array_namespace(a) is be.xp
        assert a.dtype == getattr(be.xp, dtype)
    assert est.n_features_in_ == X.shape[1]
    # scikit-learn's orientation: coef_ is (n_targets, n_features).
    expected = coef if k is None else coef.T
    assert tuple(est.coef_.shape) == expected.shape and tuple(est.intercept_.shape) == np.shape(intercept)
    tol = threshold("qr", dtype, cond(Xc), *X.shape)
    assert rel_err(be.to_numpy(est.coef_), expected) <= tol
    assert np.allclose(be.to_numpy(est.intercept_), intercept, rtol=0, atol=tol * 10 * np.abs(expected).max())

    Xnew = be.asarray(X[:7] - 1.0, dtype)
    pred = est.predict(Xnew)
    assert array_api_compat.array_namespace(pred) is be.xp and pred.dtype == getattr(be.xp, dtype)
    ref_pred = (X[:7] - 1.0) @ coef + intercept
    assert tuple(pred.shape) == ref_pred.shape
    assert np.allclose(be.to_numpy(pred), ref_pred, rtol=0, atol=tol * 100 * np.abs(ref_pred).max())

    score = est.score(be.asarray(X, dtype), be.asarray(y, dtype), None if sw is None else be.asarray(sw, dtype))
    assert isinstance(score, float)
    assert score == pytest.approx(_r2(y, X @ coef + intercept, sw), abs=100 * tol)


def test_linear_regression_rank_and_singular_values(be):
    X, y, _ = _problem(m=12, n=3)
    X = np.c_[X, X[:, :1]]  # a duplicated column: rank 3 of 4
    est = lsq.LinearRegression(method="svd").fit(be.asarray(X), be.asarray(y))
    assert int(be.to_numpy(est.rank_)) == 3
    Xc = X - X.mean(0)
    s_ref = np.linalg.svd(Xc, compute_uv=False)
    assert np.allclose(be.to_numpy(est.singular_), s_ref, rtol=0, atol=1e-12 * s_ref[0])
    assert lsq.LinearRegression(method="normal").fit(be.asarray(X), be.asarray(y)).singular_ is None


def test_ridge_alpha_per_target(be):
    X, y, _ = _problem(k=2)
    alphas = np.array([0.5, 40.0])
    est = lsq.Ridge(alpha=be.asarray(alphas), method="svd").fit(be.asarray(X), be.asarray(y))
    coef = reference(X, y, alpha=alphas, fit_intercept=True)[0]
    assert np.allclose(be.to_numpy(est.coef_), coef.T, rtol=1e-10, atol=0)
    # A list is a vector of penalties too.
    est2 = lsq.Ridge(alpha=[0.5, 40.0], method="svd").fit(be.asarray(X), be.asarray(y))
    assert np.allclose(be.to_numpy(est2.coef_), coef.T, rtol=1e-10, atol=0)


ALPHAS = np.logspace(-2, 3, 11)


@pytest.mark.parametrize(("k", "weighted", "per_target"), [(None, True, False), (2, False, True)])
def test_ridge_cv_in_namespace(be, k, weighted, per_target):
    X, y, sw = _problem(k=k, weighted=weighted)
    y = y + 0.3 * np.random.default_rng(1).standard_normal(y.shape)  # noise: an interior optimum
    kw = dict(alpha_per_target=per_target, store_cv_results=True)
    ref = lsq.RidgeCV(ALPHAS, **kw).fit(X, y, sample_weight=sw)  # float64 NumPy
    est = lsq.RidgeCV(be.asarray(ALPHAS), **kw).fit(
        be.asarray(X), be.asarray(y), sample_weight=None if sw is None else be.asarray(sw)
    )
    for name in ("coef_", "intercept_", "alpha_", "best_score_", "cv_results_"):
        a = getattr(est, name)
        assert array_api_compat.array_namespace(a) is be.xp, name
        assert tuple(a.shape) == np.shape(getattr(ref, name)), name
        # Same penalty chosen; everything else to the accuracy of a well-conditioned solve.
        assert np.allclose(be.to_numpy(a), getattr(ref, name), rtol=1e-9, atol=1e-12), name
    # The chosen penalty is the one the ridge reference solution belongs to.
    alpha = be.to_numpy(est.alpha_)
    coef = reference(X, y, alpha=alpha, sw=sw, fit_intercept=True)[0]
    assert rel_err(be.to_numpy(est.coef_), coef if k is None else coef.T) < 1e-10
    assert array_api_compat.array_namespace(est.predict(be.asarray(X[:3]))) is be.xp


def test_attributes_and_predictions_stay_on_device(strict_device):
    X, y, sw = _problem(k=2, weighted=True)
    dev = strict_device.device
    Xd, yd, swd = strict_device.asarray(X), strict_device.asarray(y), strict_device.asarray(sw)
    for est, on_host in (
        (lsq.LinearRegression(method="svd"), lsq.LinearRegression(method="svd")),
        (lsq.Ridge(alpha=strict_device.asarray([1.0, 2.0])), lsq.Ridge(alpha=[1.0, 2.0])),
        (lsq.RidgeCV(alphas=(0.1, 1.0, 10.0), alpha_per_target=True), lsq.RidgeCV(alpha_per_target=True)),
    ):
        est.fit(Xd, yd, sample_weight=swd)
        for a in (est.coef_, est.intercept_, est.predict(Xd)):
            assert a.device == dev
        if isinstance(est, lsq.RidgeCV):
            assert est.alpha_.device == dev and est.best_score_.device == dev
        expected = on_host.fit(X, y, sample_weight=sw).score(X, y, sw)
        assert est.score(Xd, yd, swd) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="one device"):
        est.predict(strict_device.xp.asarray(X))  # default device


def test_bad_input_on_own_route(be):
    X, y, _ = _problem()
    est = lsq.Ridge()
    with pytest.raises(NotFittedError, match="not fitted yet"):
        est.predict(be.asarray(X))
    with pytest.raises(ValueError, match="X must be 2-D|Expected 2D array"):
        lsq.LinearRegression().fit(be.asarray(X[:, 0]), be.asarray(y))
    with pytest.raises(ValueError, match="requires y"):
        lsq.LinearRegression().fit(be.asarray(X), None)
    with pytest.raises(ValueError, match="method must be one of"):
        lsq.LinearRegression(method="lu").fit(be.asarray(X), be.asarray(y))
    est.fit(be.asarray(X), be.asarray(y))
    with pytest.raises(ValueError, match="X has 3 features, but Ridge is expecting 4"):
        est.predict(be.asarray(X[:, :3]))
    with pytest.raises(ValueError, match="X must be 2-D|Expected 2D array"):
        est.predict(be.asarray(X[0]))
    if be.library != "numpy":
        with pytest.raises(TypeError, match="X .* must come from the array library"):
            est.predict(X)
        with pytest.raises(TypeError, match="y .* must come from the array library"):
            est.score(be.asarray(X), y)
    if be.library not in ("dask", "jax"):  # NaN is looked for in eager arrays only (README)
        Xnan = X.copy()
        Xnan[3, 1] = np.nan
        with pytest.raises(ValueError, match="X contains NaN"):
            lsq.Ridge().fit(be.asarray(Xnan), be.asarray(y))
        with pytest.raises(ValueError, match="X contains NaN"):
            est.predict(be.asarray(Xnan))


def test_inputs_unchanged_and_pickle(numpy_reference):
    X, y, sw = _problem(k=2, weighted=True)
    copies = [a.copy() for a in (X, y, sw)]
    est = lsq.Ridge(alpha=[1.0, 3.0], method="normal").fit(X, y, sample_weight=sw)
    for a, c in zip((X, y, sw), copies, strict=False):
        assert np.array_equal(a, c)
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(again.predict(X), est.predict(X))


NO_SKLEARN = textwrap.dedent(
    """
    import sys, importlib.abc

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "sklearn" or name.startswith("sklearn."):
                raise ImportError("scikit-learn is blocked for this test")

    sys.meta_path.insert(0, Block())
    import numpy as np
    import lsq_backends as lsq
    from lsq_backends._sklearn import _estimator_base as base
    assert not base.HAVE_SKLEARN
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3)); y = X @ [1.0, -2.0, 0.5] + 4.0
    est = lsq.Ridge(alpha=0.0, method="svd")
    assert repr(est) == "Ridge(alpha=0.0, method='svd')", repr(est)
    assert est.get_params() == {"alpha": 0.0, "check_finite": True, "fit_intercept": True, "method": "svd", "positive": False,
                                "tol": None}
    clone = type(est)(**est.get_params())
    assert clone.get_params() == est.get_params() and clone is not est
    try:
        est.predict(X)
    except ValueError as exc:
        assert isinstance(exc, base.NotFittedError) and isinstance(exc, AttributeError)
    else:
        raise AssertionError("predict before fit must raise")
    est.set_params(alpha=1e-12).fit(X, y)
    assert np.allclose(est.coef_, [1.0, -2.0, 0.5]) and np.isclose(est.intercept_, 4.0)
    assert est.score(X, y) > 0.999999
    try:
        est.set_params(solver="lu")
    except ValueError as exc:
        assert "Invalid parameter 'solver'" in str(exc)
    else:
        raise AssertionError("an unknown parameter must be refused")
    try:
        est.fit(X[:, 0], y)
    except ValueError as exc:
        assert "X must be 2-D" in str(exc)
    assert lsq.LinearRegression().fit(X.tolist(), y.tolist()).predict(X[:2]).shape == (2,)
    cv = lsq.RidgeCV(alphas=[1e-3, 1.0, 1e3], store_cv_results=True).fit(X, y)
    assert float(cv.alpha_) == 1e-3 and cv.cv_results_.shape == (30, 3)
    print("sklearn" in sys.modules)
    """
)


def test_works_without_sklearn(numpy_reference):
    out = subprocess.run([sys.executable, "-c", NO_SKLEARN], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_import_does_not_load_sklearn():
    code = "import sys, lsq_backends; print('sklearn' in sys.modules, 'LinearRegression' in dir(lsq_backends))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False True"
