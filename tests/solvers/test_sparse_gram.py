"""A SciPy sparse X where the normal equations are asked for (``normal``, and ``auto`` up to
``_operator_fit.GRAM_COLUMNS`` columns): ``X^T W X`` by a sparse product into a dense n x n array,
the intercept a rank-one correction, then ``normal``'s Cholesky, certificate, refinement and
eigendecomposition fallback. Against the dense fit of the same data by the SVD, within the
normal equations' bound eps cond**2 (cond of the centered, weighted X); rank-deficient and wide X
get the minimum-norm solution; memory O(nnz + n**2 + m k), never O(m n); inputs unchanged."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
from problems import center, cond

import lsq_backends as lsq

sp = pytest.importorskip("scipy.sparse")
pytestmark = pytest.mark.usefixtures("numpy_reference")
EPS = np.finfo(np.float64).eps


def _problem(m=300, n=25, k=2, seed=0, grade=0.0, fmt="csr"):
    """Sparse X of full column rank, its columns graded over ``grade`` decades (cond ~ 10**grade)."""
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=0.15, random_state=seed) + sp.eye(m, n)
    A = sp.csr_array(A @ sp.diags_array(np.logspace(0, -grade, n))).asformat(fmt)
    Y = rng.standard_normal((m, k)) + 3.0
    return A, Y, rng.uniform(0.5, 2.0, m)


def _cond(A, sw, fit_intercept):
    """The condition number of the weighted, centered design (``problems.center``)."""
    return cond(center(A.toarray(), np.zeros(A.shape[0]), sw, fit_intercept)[0])


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("method", ["auto", "normal"])
@pytest.mark.parametrize("grade", [0.0, 3.0])
def test_same_as_dense(method, grade, fmt):
    A, Y, sw = _problem(grade=grade, fmt=fmt)
    for fit_intercept in (False, True):
        for weights in (None, sw):
            kappa = _cond(A, weights, fit_intercept)
            kw = dict(method=method, fit_intercept=fit_intercept, sample_weight=weights)
            fits = [
                (lsq.lstsq(A, Y, **kw), lsq.lstsq(A.toarray(), Y, **{**kw, "method": "svd"})),
                (lsq.ridge(A, Y, 0.3, **kw), lsq.ridge(A.toarray(), Y, 0.3, **{**kw, "method": "svd"})),
                (
                    lsq.ridge(A, Y, np.array([0.1, 10.0]), per_target=True, **kw),
                    lsq.ridge(A.toarray(), Y, np.array([0.1, 10.0]), per_target=True, **{**kw, "method": "svd"}),
                ),
            ]
            for got, want in fits:
                bound = 50 * EPS * kappa**2
                assert got.n_iter is None and got.istop is None
                assert np.abs(got.coef - want.coef).max() <= bound * np.abs(want.coef).max()
                assert np.abs(got.intercept - want.intercept).max() <= bound * (np.abs(Y).max() + 1)
                np.testing.assert_allclose(got.rss, want.rss, rtol=bound)
                np.testing.assert_array_equal(got.rank, want.rank)


@pytest.mark.parametrize("method", ["auto", "normal"])
def test_rank_deficient_and_wide_are_minimum_norm(method):
    """Duplicated and zero columns (the Cholesky factor certifies no full rank: the Gram matrix's
    eigendecomposition decides), and a wide X (n x n Gram matrix, singular): NumPy's minimum-norm
    solution and rank, within eps cond**2 of the kept part (cond ~ 10 here)."""
    rng = np.random.default_rng(1)
    B = sp.random(200, 8, density=0.3, random_state=1).toarray() + np.eye(200, 8)
    cases = [np.hstack([B, B[:, :2], np.zeros((200, 1))]), sp.random(20, 50, density=0.3, random_state=2).toarray()]
    for X in cases:
        y = rng.standard_normal(X.shape[0])
        for fit_intercept in (False, True):
            got = lsq.lstsq(sp.csr_array(X), y, method=method, fit_intercept=fit_intercept)
            want = lsq.lstsq(X, y, method="svd", fit_intercept=fit_intercept)
            assert int(got.rank) == int(want.rank)
            np.testing.assert_allclose(got.coef, want.coef, rtol=0, atol=1e-12 * np.abs(want.coef).max())
            np.testing.assert_allclose(got.intercept, want.intercept, rtol=0, atol=1e-12)
            ridge = lsq.ridge(sp.csr_array(X), y, 0.5, method=method, fit_intercept=fit_intercept)
            ref = lsq.ridge(X, y, 0.5, method="svd", fit_intercept=fit_intercept)
            np.testing.assert_allclose(ridge.coef, ref.coef, rtol=0, atol=1e-12 * np.abs(ref.coef).max())
            assert int(ridge.rank) == X.shape[1]


def test_rcond_is_honoured():
    """rcond cuts the Gram route's directions as the dense methods' (a cutoff on singular values)."""
    A, Y, _ = _problem(grade=3.0, k=1)
    got = lsq.lstsq(A, Y[:, 0], method="normal", rcond=1e-2)
    want = lsq.lstsq(A.toarray(), Y[:, 0], method="svd", rcond=1e-2)
    assert int(got.rank) == int(want.rank) < 25
    np.testing.assert_allclose(got.coef, want.coef, rtol=0, atol=1e-10 * np.abs(want.coef).max())


def test_memory_is_nnz_and_n_squared():
    """200000 x 60 with 2 non-zeros a row: the fit's peak is a few times nnz + n**2 + m k, never m n
    (a dense X would be 96 MB alone); the inputs are left as they were."""
    rng = np.random.default_rng(3)
    m, n, k = 200000, 60, 2
    rows = np.repeat(np.arange(m), 2)
    cols = rng.integers(0, n, 2 * m)
    A = sp.csr_array((rng.standard_normal(2 * m), (rows, cols)), shape=(m, n))
    Y = rng.standard_normal((m, k))
    sw = rng.uniform(0.5, 2.0, m)
    kept = A.data.copy(), A.indices.copy(), A.indptr.copy(), Y.copy(), sw.copy()
    lsq.lstsq(A, Y, fit_intercept=True, sample_weight=sw)
    gc.collect()
    tracemalloc.start()
    res = lsq.lstsq(A, Y, fit_intercept=True, sample_weight=sw)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    nnz_bytes = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    budget = 4 * nnz_bytes + 4 * 8 * n * n + 4 * 8 * m * (k + 1)  # X's copies (weighted, transposed), vectors
    assert peak <= budget and peak < 0.3 * 8 * m * n, (peak, budget)
    assert res.n_iter is None
    for before, after in zip(kept, (A.data, A.indices, A.indptr, Y, sw), strict=True):
        np.testing.assert_array_equal(before, after)


def test_estimators():
    """LinearRegression and Ridge take a sparse X by the Gram route by default and with
    ``method="normal"``: the dense fit's coefficients, no ``n_iter_``; ``tol`` has nothing to stop."""
    A, Y, sw = _problem(k=1)
    y = Y[:, 0]
    for make in (lambda **kw: lsq.LinearRegression(**kw), lambda **kw: lsq.Ridge(2.0, **kw)):
        want = make(method="svd").fit(A.toarray(), y, sample_weight=sw)
        for method in ("auto", "normal"):
            got = make(method=method, tol=1e-2).fit(A, y, sample_weight=sw)
            assert not hasattr(got, "n_iter_")
            np.testing.assert_allclose(got.coef_, want.coef_, rtol=0, atol=1e-12 * np.abs(want.coef_).max())
            np.testing.assert_allclose(got.intercept_, want.intercept_, rtol=1e-12)


@pytest.mark.parametrize("make", [lambda: lsq.LinearRegression(positive=True), lambda: lsq.Ridge(3.0, positive=True)])
def test_positive_estimators(make):
    """``positive=True`` on a sparse X: the active-set method on its Gram matrix (the intercept a
    rank-one correction), refined with X's products: the dense fit's coefficients, iterations and
    intercept, for one and two targets, with and without weights; memory as the Gram route's."""
    A, Y, sw = _problem(k=2, seed=4)
    Y = Y + A @ np.linspace(-1.0, 1.0, A.shape[1])[:, None]  # some coefficients want to be negative
    for y in (Y[:, 0], Y):
        for weights in (None, sw):
            got = make().fit(A, y, sample_weight=weights)
            want = make().fit(A.toarray(), y, sample_weight=weights)
            assert np.all(got.coef_ >= 0) and np.any(got.coef_ == 0)
            np.testing.assert_allclose(got.coef_, want.coef_, rtol=0, atol=1e-12 * np.abs(want.coef_).max())
            np.testing.assert_allclose(got.intercept_, want.intercept_, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(got.n_iter_, want.n_iter_)


ALPHAS = np.logspace(-3, 3, 9)


@pytest.mark.parametrize("cv", [None, "gcv"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_ridge_cv_leave_one_out_and_gcv(cv, fit_intercept):
    """Leave-one-out and GCV of a sparse X from the eigendecomposition of its Gram matrix: the
    dense route's errors, scores, choice and refit (``mode="svd"``, the exact reference) within
    eps times the regularized Gram matrix's condition number at the smallest penalty, with and
    without weights, one or several targets, one penalty or one per target, and a scoring."""
    A, Y, sw = _problem(m=150, n=12, seed=6)
    lam = np.linalg.eigvalsh(A.toarray().T @ A.toarray())
    bound = 1e3 * EPS * (lam[-1] + ALPHAS[0]) / (lam[0] + ALPHAS[0])
    for y in (Y[:, 0], Y):
        for weights in (None, sw):
            for per_target in (False, True):
                for scoring in (None, "r2") if cv is None else (None,):
                    kw = dict(cv=cv, fit_intercept=fit_intercept, sample_weight=weights, alpha_per_target=per_target,
                              scoring=scoring)  # fmt: skip
                    got = lsq.ridge_cv(A, y, ALPHAS, **kw)
                    want = lsq.ridge_cv(A.toarray(), y, ALPHAS, mode="svd", **kw)
                    np.testing.assert_array_equal(got.best_index, want.best_index)
                    for g, r in zip(got, want, strict=True):
                        assert np.shape(g) == np.shape(r) and np.asarray(g).dtype == np.asarray(r).dtype
                        np.testing.assert_allclose(g, r, rtol=bound, atol=bound * np.abs(r).max())


def test_ridge_cv_memory_and_estimator():
    """Leave-one-out of 200000 x 60 (2 non-zeros a row) with an intercept and weights: no m x n array
    (the leverages by blocks of rows), memory the Gram route's plus the (a, m) errors it returns;
    ``RidgeCV()`` takes the sparse X by the same route, as its dense fit."""
    rng = np.random.default_rng(7)
    m, n = 200000, 60
    rows, cols = np.repeat(np.arange(m), 2), rng.integers(0, n, 2 * m)
    A = sp.csr_array((rng.standard_normal(2 * m), (rows, cols)), shape=(m, n))
    y = A @ rng.standard_normal(n) + rng.standard_normal(m)
    sw = rng.uniform(0.5, 2.0, m)
    alphas = np.logspace(-2, 2, 5)
    lsq.ridge_cv(A, y, alphas, sample_weight=sw)
    gc.collect()
    tracemalloc.start()
    res = lsq.ridge_cv(A, y, alphas, sample_weight=sw)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    nnz_bytes = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    budget = 2 * nnz_bytes + 4 * 8 * n * n + 3 * 8 * m * len(alphas) + 4 * 8 * m  # X's copies, (a, m) arrays
    assert peak <= budget and peak < 0.35 * 8 * m * n, (peak, budget)
    assert res.cv_values.shape == (5, m)
    B, Y, w = _problem(m=150, n=12, seed=8, k=1)
    got = lsq.RidgeCV(alphas=ALPHAS, store_cv_results=True).fit(B, Y[:, 0], sample_weight=w)
    want = lsq.RidgeCV(alphas=ALPHAS, store_cv_results=True, gcv_mode="svd").fit(B.toarray(), Y[:, 0], sample_weight=w)
    assert got.alpha_ == want.alpha_
    np.testing.assert_allclose(got.coef_, want.coef_, rtol=1e-10)
    np.testing.assert_allclose(got.cv_results_, want.cv_results_, rtol=1e-10)
