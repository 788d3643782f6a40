"""diagnostics() on the models statsmodels fits beyond full-rank tall designs: rank-deficient X
(the minimum-norm coefficients of lstsq, scikit-learn and numpy.linalg.pinv), the intercept-only
model, and designs with no residual degrees of freedom (NaN where undefined, with a warning)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lsq_backends as lsq

FIELDS = lsq.Diagnostics._fields
EPS = np.finfo(np.float64).eps


def _diag(be):
    if be.library != "jax":
        return lsq.diagnostics
    import jax

    return jax.jit(lsq.diagnostics, static_argnames=("fit_intercept", "cov_type", "check_finite", "refine"))


def _host(be, d):
    if be.lazy:
        import dask

        return type(d)(*(np.asarray(f) for f in dask.compute(*d)))
    return type(d)(*(be.to_numpy(f) for f in d))


def _data(seed, m=50, n=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) @ (np.eye(n) + 0.3) + np.arange(n)
    y = X @ rng.standard_normal(n) + 2.0 + (1 + np.abs(X[:, 0])) * rng.standard_normal(m)
    return X, y, rng.uniform(0.3, 2.0, m)


def _sm_fit(sm, X, y, sw, cov_type, const=True):
    A = sm.add_constant(X, has_constant="add") if const else X
    model = sm.OLS(y, A) if sw is None else sm.WLS(y, A, weights=sw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(cov_type=cov_type)


# ---- rank-deficient X: the coefficients everyone else returns ----------------------------


@pytest.mark.parametrize("cov_type", ["nonrobust", "HC3"])
def test_rank_deficient_matches_lstsq_sklearn_statsmodels_pinv(cov_type, numpy_reference):
    """A column that is 1000 times another: every library returns the minimum-norm solution in
    the variables as given (the split 1 : 1000 between the two), and, since the intercept is
    not in X's column space, statsmodels' pinv covariance is the same too."""
    sm = pytest.importorskip("statsmodels.api")
    from sklearn.linear_model import LinearRegression

    X, y, sw = _data(seed=1)
    X = np.hstack([X, 1000 * X[:, 1:2]])
    for weights in (None, sw):
        with pytest.warns(RuntimeWarning, match="rank-deficient"):
            d = lsq.diagnostics(X, y, sample_weight=weights, cov_type=cov_type)
        ref = _sm_fit(sm, X, y, weights, cov_type)
        lst = lsq.lstsq(X, y, fit_intercept=True, sample_weight=weights)
        skl = LinearRegression().fit(X, y, sample_weight=weights)
        root = np.sqrt(np.ones(len(y)) if weights is None else weights)
        pinv = np.linalg.pinv(root[:, None] * np.hstack([np.ones((len(y), 1)), X])) @ (root * y)
        for want in (ref.params[1:], lst.coef, skl.coef_, pinv[1:]):
            np.testing.assert_allclose(d.coef, want, rtol=1e-8, atol=1e-10)
        # Minimum norm as given (coef[1] is 1e6 times smaller than its partner: error ~ 1e6 eps cond).
        np.testing.assert_allclose(d.coef[-1] / d.coef[1], 1000, rtol=1e-6)
        np.testing.assert_allclose(d.intercept, ref.params[0], rtol=1e-10)
        np.testing.assert_allclose(d.stderr, ref.bse[1:], rtol=1e-7)
        np.testing.assert_allclose(d.intercept_stderr, ref.bse[0], rtol=1e-7)
        np.testing.assert_allclose(d.cov, ref.cov_params(), rtol=1e-7, atol=1e-12 * np.abs(ref.cov_params()).max())
        assert int(d.rank) == ref.model.rank == int(lst.rank) + 1 and int(d.df_resid) == ref.df_resid
    # Without an intercept: numpy.linalg.pinv of X itself.
    with pytest.warns(RuntimeWarning, match="rank-deficient"):
        d = lsq.diagnostics(X, y, fit_intercept=False, cov_type=cov_type)
    np.testing.assert_allclose(d.coef, np.linalg.pinv(X) @ y, rtol=1e-8)
    np.testing.assert_allclose(d.stderr, _sm_fit(sm, X, y, None, cov_type, const=False).bse, rtol=1e-7)


def test_full_set_of_dummies_next_to_an_intercept(numpy_reference):
    """The intercept in X's column space: lstsq and scikit-learn center (the intercept is not
    part of the minimum norm), statsmodels' pinv of [1, X] spreads the constant over the dummies;
    the fit is the same."""
    sm = pytest.importorskip("statsmodels.api")
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(2)
    g = rng.integers(0, 3, 60)
    X = np.column_stack([rng.standard_normal(60), *(g == k for k in range(3))]).astype(float)
    y = X[:, 0] + np.array([1.0, 3.0, -2.0])[g] + rng.standard_normal(60)
    with pytest.warns(RuntimeWarning, match="rank-deficient"):
        d = lsq.diagnostics(X, y)
    ref = _sm_fit(sm, X, y, None, "nonrobust")
    np.testing.assert_allclose(d.coef, LinearRegression().fit(X, y).coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.coef, lsq.lstsq(X, y, fit_intercept=True).coef, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([d.rss, d.sigma, d.r2], [ref.ssr, np.sqrt(ref.scale), ref.rsquared], rtol=1e-10)
    np.testing.assert_allclose(d.coef[0], ref.params[1], rtol=1e-10)  # the identified slope
    np.testing.assert_allclose(d.stderr[0], ref.bse[1], rtol=1e-8)
    assert int(d.rank) == ref.model.rank == 4


# ---- the intercept-only model -------------------------------------------------------------


@pytest.mark.parametrize("cov_type", ["nonrobust", "HC0", "HC1", "HC2", "HC3"])
def test_intercept_only_model_matches_statsmodels(cov_type, numpy_reference):
    sm = pytest.importorskip("statsmodels.api")
    _, y, sw = _data(seed=3)
    for weights in (None, sw):
        d = lsq.diagnostics(np.empty((len(y), 0)), y, sample_weight=weights, cov_type=cov_type)
        ref = _sm_fit(sm, np.empty((len(y), 0)), y, weights, cov_type)
        assert d.coef.shape == d.stderr.shape == d.tvalues.shape == (0,) and d.cov.shape == (1, 1)
        np.testing.assert_allclose(
            [d.intercept, d.intercept_stderr, d.intercept_tvalue, d.cov[0, 0], d.rss, d.sigma, d.cond],
            [ref.params[0], ref.bse[0], ref.tvalues[0], ref.cov_params()[0, 0], ref.ssr, np.sqrt(ref.scale), 1.0],
            rtol=1e-12,
        )
        np.testing.assert_allclose([d.r2, d.r2_adj], [ref.rsquared, ref.rsquared_adj], atol=1e-15)
        assert int(d.df_resid) == ref.df_resid == len(y) - 1 and int(d.rank) == 1
    with pytest.raises(ValueError, match="at least one column, or fit_intercept=True"):
        lsq.diagnostics(np.empty((len(y), 0)), y, fit_intercept=False)


def test_intercept_only_model_backend(be):
    _, y, sw = _data(seed=4)
    X = np.empty((len(y), 0))
    for cov_type in ("nonrobust", "HC3"):
        got = _host(be, _diag(be)(be.asarray(X), be.asarray(y), sample_weight=be.asarray(sw), cov_type=cov_type))
        want = lsq.diagnostics(X, y, sample_weight=sw, cov_type=cov_type)
        for name, a, b in zip(FIELDS, got, want, strict=True):
            assert np.shape(a) == np.shape(b), name
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15, err_msg=name)


# ---- no residual degrees of freedom -------------------------------------------------------

UNDEFINED = ("stderr", "intercept_stderr", "tvalues", "intercept_tvalue", "cov", "sigma", "r2_adj")


@pytest.mark.parametrize("shape", [(4, 3), (4, 6)], ids=["square", "wide"])
@pytest.mark.parametrize("cov_type", ["nonrobust", "HC1", "HC3"])
def test_no_residual_dof_as_statsmodels(shape, cov_type, numpy_reference):
    """m = p and m < p: the fit (coefficients as lstsq, rss 0, R² 1) with NaN for all that needs
    the residual variance, where statsmodels gives inf, NaN or rounding noise, and one warning that
    says so (not NumPy's own of the masked NaN: "divide by zero encountered")."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal(shape), rng.standard_normal(shape[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = lsq.diagnostics(X, y, cov_type=cov_type)
    said = [str(w.message) for w in caught]
    assert any("no residual degrees of freedom" in text for text in said), said
    assert not any("encountered in" in text for text in said), said
    ref = _sm_fit(sm, X, y, None, cov_type)
    lst = lsq.lstsq(X, y, fit_intercept=True)
    np.testing.assert_allclose(d.coef, lst.coef, rtol=1e-10)
    np.testing.assert_allclose(d.intercept, lst.intercept, rtol=1e-10)
    if shape[0] > shape[1]:  # full column rank: the one solution, statsmodels' too
        np.testing.assert_allclose(d.coef, ref.params[1:], rtol=1e-10)
    assert int(d.df_resid) == ref.df_resid == 0 and int(d.rank) == ref.model.rank == shape[0]
    assert float(d.rss) < 1e-25 and float(d.r2) == pytest.approx(ref.rsquared, abs=1e-12)
    for name in UNDEFINED:
        assert np.all(np.isnan(getattr(d, name))), name
    assert not np.all(np.isfinite(ref.bse)) or cov_type != "nonrobust"  # statsmodels: inf there


def test_wide_design_with_residual_dof(numpy_reference):
    """m < p, but X of rank 2: df_resid = m - 3 > 0 and everything is defined, as in statsmodels."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(6)
    B = rng.standard_normal((8, 2))
    X = B @ rng.standard_normal((2, 10))  # 8 x 10, rank 2
    y = B @ np.array([1.0, -2.0]) + rng.standard_normal(8)
    with pytest.warns(RuntimeWarning, match="rank-deficient"):
        d = lsq.diagnostics(X, y)
    ref = _sm_fit(sm, X, y, None, "nonrobust")
    assert int(d.rank) == ref.model.rank == 3 and int(d.df_resid) == ref.df_resid == 5
    np.testing.assert_allclose([d.rss, d.sigma, d.r2, d.r2_adj], [ref.ssr, np.sqrt(ref.scale), ref.rsquared,
                                                                   ref.rsquared_adj], rtol=1e-9)  # fmt: skip
    np.testing.assert_allclose(d.coef, lsq.lstsq(X, y, fit_intercept=True).coef, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(X @ d.coef + d.intercept, ref.fittedvalues, rtol=1e-9)


def test_no_residual_dof_backend(be):
    rng = np.random.default_rng(7)
    X, y = rng.standard_normal((4, 5)), rng.standard_normal(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = _host(be, _diag(be)(be.asarray(X), be.asarray(y), cov_type="HC2"))
        want = lsq.diagnostics(X, y, cov_type="HC2")
    for name, a, b in zip(FIELDS, got, want, strict=True):
        if name in UNDEFINED:
            assert np.all(np.isnan(a)), name
        elif name not in ("rss", "cond"):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, err_msg=name)
