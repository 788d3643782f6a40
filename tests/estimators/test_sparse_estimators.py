"""The estimators and ``ridge_cv`` with a SciPy sparse X (numpy session): fitted by LSMR (held-out
folds for ``RidgeCV(cv=k)``), against the dense fits of the same data and scikit-learn's own
sparse ``Ridge``; the configurations that factorize X refuse it by name. scikit-learn's sparse
estimator checks run in ``test_estimators_sklearn``."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq

sp = pytest.importorskip("scipy.sparse")
sklearn = pytest.importorskip("sklearn")
from sklearn import linear_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("numpy_reference")
ALPHAS = np.logspace(-3, 3, 7)


def _data(m=400, n=30, k=None, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=0.15, format="csr", random_state=seed) + 0.5 * sp.eye(m, n)
    w = rng.standard_normal((n,) if k is None else (n, k))
    noise = 0.3 * rng.standard_normal((m,) if k is None else (m, k))
    return sp.csr_array(A), A @ w + 2.0 + noise, rng.uniform(0.5, 2.0, m)


@pytest.mark.parametrize("make", [lambda: lsq.LinearRegression(), lambda: lsq.Ridge(3.0, method="lsqr")])
def test_fit_predict_like_dense(make):
    """The dense direct fit within LSMR's/LSQR's default tolerance (1e-6, times cond 1.8 of the
    centered data: measured 4e-7 of max |coef|); ``predict`` on sparse rows equals ``predict``
    on the same rows dense."""
    A, y, sw = _data(k=2)
    sparse = make().fit(A, y, sample_weight=sw)
    dense = lsq.LinearRegression() if isinstance(sparse, lsq.LinearRegression) else lsq.Ridge(3.0)
    dense = dense.fit(A.toarray(), y, sample_weight=sw)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=0, atol=1e-5 * np.abs(dense.coef_).max())
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-5)
    np.testing.assert_allclose(sparse.predict(A[:7]), sparse.predict(A[:7].toarray()), rtol=1e-13)
    assert sparse.n_features_in_ == 30 and isinstance(sparse.predict(A), np.ndarray)


def test_ridge_like_sklearn_sparse():
    A, y, _ = _data(seed=1)
    ours = lsq.Ridge(2.0).fit(A, y)
    theirs = linear_model.Ridge(2.0, solver="sparse_cg", tol=1e-12).fit(A, y)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=0, atol=1e-5 * np.abs(theirs.coef_).max())
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-5)


@pytest.mark.parametrize("per_target", [False, True])
@pytest.mark.parametrize("scoring", [None, "r2"])
@pytest.mark.parametrize("route", ["gram", "lsmr"])
def test_ridge_cv_folds_like_dense(per_target, scoring, route, monkeypatch):
    """Held-out folds from each fold's Gram matrix (30 columns, under ``FOLD_COLUMNS``): the dense folds' scores to
    the eigen route's bound, eps times the regularized Gram matrix's condition number at the smallest penalty
    (times 100 for the sums over rows and targets). Past ``FOLD_COLUMNS`` (set to 0 here) by LSMR, every penalty in
    one call per fold: to LSMR's tolerance (1e-6 times cond 1.8 of the centered data). Both choose the dense
    folds' penalty."""
    from lsq_backends._ridge import _operator_cv

    if route == "lsmr":
        monkeypatch.setattr(_operator_cv, "FOLD_COLUMNS", 0)
    A, Y, sw = _data(k=2, seed=2)
    Xc = np.sqrt(sw)[:, None] * (A.toarray() - np.average(A.toarray(), axis=0, weights=sw))
    lam = np.linalg.eigvalsh(Xc.T @ Xc)
    bound = 100 * np.finfo(float).eps * (lam[-1] + ALPHAS[0]) / (lam[0] + ALPHAS[0]) if route == "gram" else 1e-5
    kw = dict(cv=5, alpha_per_target=per_target, scoring=scoring, sample_weight=sw)
    got = lsq.ridge_cv(A, Y, ALPHAS, **kw)
    want = lsq.ridge_cv(A.toarray(), Y, ALPHAS, **kw)
    near_zero = bound if scoring == "r2" else 0  # R^2 is 1 - SSE/SST: its error is absolute
    np.testing.assert_allclose(got.cv_values, want.cv_values, rtol=bound, atol=near_zero)
    np.testing.assert_allclose(got.scores, want.scores, rtol=bound, atol=near_zero)
    np.testing.assert_array_equal(got.best_index, want.best_index)
    np.testing.assert_array_equal(got.alpha, want.alpha)
    np.testing.assert_allclose(got.coef, want.coef, rtol=0, atol=bound * np.abs(want.coef).max())
    est = lsq.RidgeCV(alphas=ALPHAS, cv=5, alpha_per_target=per_target, scoring=scoring).fit(A, Y, sample_weight=sw)
    ref = lsq.RidgeCV(alphas=ALPHAS, cv=5, alpha_per_target=per_target, scoring=scoring)
    ref = ref.fit(A.toarray(), Y, sample_weight=sw)
    np.testing.assert_array_equal(est.alpha_, ref.alpha_)
    np.testing.assert_allclose(est.best_score_, ref.best_score_, rtol=bound, atol=near_zero)


def test_ridge_cv_folds_refuse_a_fold_without_weight():
    A, y, sw = _data(seed=8)
    sw[:200] = 0.0
    with pytest.raises(ValueError, match="positive sum on every fold's training rows"):
        lsq.ridge_cv(A, y, ALPHAS, cv=[(np.arange(200), np.arange(200, 400))], sample_weight=sw)


def test_ridge_cv_in_ys_library():
    torch = pytest.importorskip("torch")
    A, y, _ = _data(seed=3)
    got = lsq.ridge_cv(A, torch.asarray(y), ALPHAS, cv=3)
    assert all(isinstance(a, torch.Tensor) for a in got)
    np.testing.assert_allclose(got.coef.numpy(), lsq.ridge_cv(A, y, ALPHAS, cv=3).coef, rtol=1e-12)


def test_tags_and_refusals():
    A, y, _ = _data(seed=4)
    sparse_ok = [
        lsq.LinearRegression(), lsq.Ridge(method="normal"), lsq.Ridge(method="lsqr"), lsq.RidgeCV(cv=3),
        lsq.Ridge(positive=True), lsq.RidgeCV(), lsq.RidgeCV(cv="gcv"), lsq.RidgeCV(gcv_mode="svd"),
    ]  # fmt: skip
    dense_only = [lsq.LinearRegression(method="qr"), lsq.Ridge(method="svd")]
    assert all(e.__sklearn_tags__().input_tags.sparse for e in sparse_ok)
    for est in dense_only:
        assert not est.__sklearn_tags__().input_tags.sparse
        with pytest.raises(
            TypeError, match="X is a SciPy sparse csr_array: .* factorizes a dense X; sparse X is fitted"
        ):
            est.fit(A, y)
    with pytest.raises(ValueError, match="target_batch and mode apply to dense X"):
        lsq.ridge_cv(A, y, ALPHAS, mode="svd")
    with pytest.raises(ValueError, match="target_batch and mode apply to dense X"):
        lsq.ridge_cv(A, y, ALPHAS, cv=3, mode="svd")
    with pytest.raises(ValueError, match="alphas must be a non-empty 1-D array of positive"):
        lsq.ridge_cv(A, y, [0.0, 1.0], cv=3)


def test_ridge_cv_svd_mode_falls_back_on_sparse():
    """``gcv_mode="svd"`` on a sparse X: scikit-learn's convention, the eigen mode with a FutureWarning naming
    it (bit for bit the eigen fit); held-out folds of a sparse X take LSMR whatever the mode, without warning."""
    A, y, sw = _data(seed=5)
    with pytest.warns(FutureWarning, match="The 'svd' mode is not supported for sparse X"):
        got = lsq.RidgeCV(ALPHAS, gcv_mode="svd").fit(A, y, sample_weight=sw)
    want = lsq.RidgeCV(ALPHAS, gcv_mode="eigen").fit(A, y, sample_weight=sw)
    np.testing.assert_array_equal(got.coef_, want.coef_)
    assert float(got.alpha_) == float(want.alpha_)
    folds = lsq.RidgeCV(ALPHAS, cv=3, gcv_mode="svd").fit(A, y)
    np.testing.assert_array_equal(folds.coef_, lsq.RidgeCV(ALPHAS, cv=3).fit(A, y).coef_)


def test_method_attribute_names_what_fitted():
    """``method_`` (scikit-learn's ``solver_``): the method itself on dense X, the one that fitted a sparse X in
    its stead (the Gram route's "normal"; "lsmr" past it), "nnls" with ``positive=True``."""
    A, y, _ = _data(seed=6)
    assert lsq.LinearRegression(method="qr").fit(A.toarray(), y).method_ == "qr"
    assert lsq.Ridge().fit(A.toarray(), y).method_ == "auto"
    assert lsq.Ridge().fit(A, y).method_ == "normal"
    assert lsq.Ridge(method="lsqr").fit(A, y).method_ == "lsqr"
    assert lsq.Ridge(positive=True).fit(A, y).method_ == "nnls"
    wide = sp.random(50, 3000, density=0.01, format="csr", random_state=0)
    assert lsq.LinearRegression().fit(wide, np.ones(50)).method_ == "lsmr"


@pytest.mark.parametrize("method", ["normal", "svd", "lsqr"])
def test_refusals_in_sklearn_words(method):
    """The refusals scikit-learn's tests match: a method other than "auto" with ``positive=True``, and a count
    of penalties other than the targets'."""
    A, y, _ = _data(k=4, seed=7)
    with pytest.raises(ValueError, match=f"method='{method}' does not support positive=True"):
        lsq.Ridge(positive=True, method=method).fit(A.toarray(), y)
    with pytest.raises(ValueError, match="Number of targets and number of penalties do not correspond: 5 != 4"):
        lsq.Ridge(np.ones(5)).fit(A.toarray(), y)
