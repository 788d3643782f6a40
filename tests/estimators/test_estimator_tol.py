"""LinearRegression(tol=) and Ridge(tol=): LSQR's stopping tolerance, as scikit-learn's ``tol``
(ignored by the direct methods, as scikit-learn's direct solvers ignore it)."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq


def _data(m=200, n=30):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, n)) @ np.diag(np.logspace(0, -3, n))  # cond 1e3: LSQR needs iterations
    return X, X @ np.ones(n) + 0.01 * rng.standard_normal(m)


MAKERS = [lambda **kw: lsq.LinearRegression(**kw), lambda **kw: lsq.Ridge(1e-3, **kw)]


@pytest.mark.parametrize("make", MAKERS)
def test_tol_is_lsqr_stopping_tolerance(make, be):
    if be.lazy:
        pytest.skip("Dask builds a graph per block of iterations: test_tol_reaches_lsqr_on_dask")
    X, y = _data()
    direct = make(method="svd").fit(X, y).coef_
    errors, iterations = [], []
    for tol in (1e-3, 1e-12):
        reg = make(method="lsqr", tol=tol).fit(be.asarray(X), be.asarray(y))
        assert reg.get_params()["tol"] == tol
        errors.append(np.abs(be.to_numpy(reg.coef_) - direct).max())
        iterations.append(int(be.to_numpy(reg.n_iter_)))
    # tol 1e-12 stops near the accuracy LSQR can reach here (~cond * 1e-12 relative to |coef| ~ 1,
    # on a problem of cond 1e3 whose small-singular directions need many iterations).
    assert errors[1] < 1e-7 < 1e-2 < errors[0] and iterations[1] > iterations[0]
    # The direct methods ignore it.
    np.testing.assert_array_equal(make(method="svd", tol=0.5).fit(X, y).coef_, direct)
    assert not hasattr(make(method="svd").fit(X, y), "n_iter_")


@pytest.mark.parametrize("make", MAKERS)
def test_tol_reaches_lsqr_on_dask(make, be):
    """On Dask, each tol stops where NumPy's stops (within one iteration: Dask sums in another
    order, and the tests compare quantities that reach rounding level), and the tight one at the
    direct solution (a small problem: every block of LSQR iterations is a graph of its own)."""
    if not be.lazy:
        pytest.skip("Dask only")
    X, y = _data(40, 6)
    direct = make(method="svd").fit(X, y).coef_
    iterations = []
    for tol in (1e-2, 1e-10):
        got = make(method="lsqr", tol=tol).fit(be.asarray(X), be.asarray(y))
        want = make(method="lsqr", tol=tol).fit(X, y)
        iterations.append(int(be.to_numpy(got.n_iter_)))
        assert abs(iterations[-1] - int(want.n_iter_)) <= 1
    assert iterations[0] < iterations[1]
    # cond 1e3: the tight stop within ~cond * 1e-10 of the direct solution (|coef| ~ 1)
    np.testing.assert_allclose(be.to_numpy(got.coef_), direct, atol=1e-6)


@pytest.mark.parametrize("tol", [-1e-3, 1.0, "1e-3", True])
def test_bad_tol(tol, numpy_reference):
    X, y = _data()
    for est in (lsq.LinearRegression(tol=tol), lsq.Ridge(tol=tol, method="lsqr")):
        with pytest.raises(ValueError, match="tol must be None or a number in"):
            est.fit(X, y)


@pytest.mark.parametrize("make", [lambda **kw: lsq.LinearRegression(**kw), lambda **kw: lsq.Ridge(1.0, **kw)])
def test_tol_reaches_the_sparse_default(make, numpy_reference, monkeypatch):
    """With the default method a sparse X of many columns is fitted by LSMR, and ``tol`` is its
    stopping tolerance: tol 1e-13 converges to the direct fit of the dense X (within ~cond eps,
    cond of this X ~ 10 after centering), where the default 1e-6 stops some 1e-6 short. (The
    line is lowered to this X's 20 columns; below it "auto" takes the Gram matrix, exact, and
    tol has nothing to stop.)"""
    from lsq_backends import _operator_fit

    sp = pytest.importorskip("scipy.sparse")
    X = sp.random(300, 20, density=0.25, format="csr", random_state=0)
    y = np.random.default_rng(0).standard_normal(300)
    want = make(method="svd").fit(X.toarray(), y).coef_
    scale = np.abs(want).max()
    by_gram = make(tol=0.5).fit(X, y)
    assert not hasattr(by_gram, "n_iter_") and np.abs(by_gram.coef_ - want).max() <= 1e-13 * scale
    monkeypatch.setattr(_operator_fit, "GRAM_COLUMNS", 19)
    got = make(tol=1e-13).fit(X, y).coef_
    loose = make().fit(X, y).coef_
    assert np.abs(got - want).max() <= 1e-10 * scale < np.abs(loose - want).max()
