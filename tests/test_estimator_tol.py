"""LinearRegression(tol=) and Ridge(tol=): LSQR's stopping tolerance, as scikit-learn's ``tol``
(ignored by the direct methods, as scikit-learn's direct solvers ignore it)."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 30)) @ np.diag(np.logspace(0, -3, 30))  # cond 1e3: LSQR needs iterations
    return X, X @ np.ones(30) + 0.01 * rng.standard_normal(200)


@pytest.mark.parametrize("make", [lambda **kw: lsq.LinearRegression(**kw), lambda **kw: lsq.Ridge(1e-3, **kw)])
def test_tol_is_lsqr_stopping_tolerance(make, be):
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


@pytest.mark.parametrize("tol", [-1e-3, 1.0, "1e-3", True])
def test_bad_tol(tol, numpy_reference):
    X, y = _data()
    for est in (lsq.LinearRegression(tol=tol), lsq.Ridge(tol=tol, method="lsqr")):
        with pytest.raises(ValueError, match="tol must be None or a number in"):
            est.fit(X, y)
