"""diagnostics(): against statsmodels (NumPy), every backend against NumPy, jax.jit, devices,
NIST StRD certified standard deviations, residual SD and R², and the text summary."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

import lsq_backends as lsq
from benchmarks import nist
from lsq_backends import _summary
from lsq_backends.diagnostics import COV_TYPES

EPS = np.finfo(np.float64).eps
FIELDS = lsq.Diagnostics._fields


STATIC = ("fit_intercept", "cov_type", "check_finite", "refine")
_JIT = {}


def _diag(be):
    """lsq.diagnostics, under one jax.jit on JAX: eager JAX compiles every operation for every
    new shape (seconds per call here); test_jit_equals_eager checks the eager path once."""
    if be.library != "jax":
        return lsq.diagnostics
    if "jit" not in _JIT:
        import jax

        _JIT["jit"] = jax.jit(lsq.diagnostics, static_argnames=STATIC)
    return _JIT["jit"]


def _host(be, d):
    """All fields as NumPy; on Dask in one compute() (field by field recomputes the graph)."""
    if be.lazy:
        import dask

        return type(d)(*(np.asarray(f) for f in dask.compute(*d)))
    return type(d)(*(be.to_numpy(f) for f in d))


def _data(seed, m=60, n=4, batch=()):
    """Correlated, offset columns and heteroskedastic noise (so HC0-HC3 differ from nonrobust)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal(batch + (m, n)) @ (np.eye(n) + 0.5) + np.linspace(-2, 5, n)
    y = X @ rng.standard_normal(n) + 1.5 + (1 + np.abs(X[..., 0])) * rng.standard_normal(batch + (m,))
    return X, y, rng.uniform(0.2, 3.0, m)


def _kappa(X, fit_intercept, sw=None):
    """Condition number of the weighted design as fitted ([1, X] with an intercept), columns
    scaled to unit norm (every quantity here is invariant to column scaling)."""
    A = np.hstack([np.ones((X.shape[0], 1)), X]) if fit_intercept else X
    A = A * np.sqrt(sw if sw is not None else np.ones(len(A)))[:, None]
    A = A / np.linalg.norm(A, axis=0)
    s = np.linalg.svd(A, compute_uv=False)
    return s[0] / s[-1]


def _full(d, fit_intercept, name):
    """A field over all parameters in statsmodels' order [const, x1, ...]."""
    body = np.asarray(getattr(d, name))
    if not fit_intercept:
        return body
    head = {"coef": "intercept", "stderr": "intercept_stderr", "tvalues": "intercept_tvalue"}[name]
    return np.concatenate([[float(getattr(d, head))], body])


@pytest.mark.parametrize("cov_type", COV_TYPES[:5])  # those without options (the others: test_diagnostics_cluster.py)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_statsmodels(numpy_reference, cov_type, fit_intercept, weighted):
    sm = pytest.importorskip("statsmodels.api")
    X, y, sw = _data(seed=3 + 2 * weighted + fit_intercept)
    A = sm.add_constant(X) if fit_intercept else X
    model = sm.WLS(y, A, weights=sw) if weighted else sm.OLS(y, A)
    ref = model.fit(cov_type=cov_type)
    d = lsq.diagnostics(X, y, fit_intercept=fit_intercept, sample_weight=sw if weighted else None, cov_type=cov_type)
    # Both sides are backward stable: coefficients agree to ~eps*kappa, anything built on
    # (A^T A)^{-1} (covariances, standard errors, t) to ~eps*kappa**2 (statsmodels uses pinv).
    kappa = _kappa(X, fit_intercept, sw if weighted else None)
    p = A.shape[1]
    tol1, tol2 = 10 * p * EPS * kappa, 10 * p * EPS * kappa**2
    # Normwise for coef and t (a coefficient near zero has no componentwise guarantee).
    np.testing.assert_allclose(
        _full(d, fit_intercept, "coef"), ref.params, rtol=0, atol=tol1 * np.abs(ref.params).max()
    )
    np.testing.assert_allclose(_full(d, fit_intercept, "stderr"), ref.bse, rtol=tol2)
    np.testing.assert_allclose(
        _full(d, fit_intercept, "tvalues"), ref.tvalues, rtol=0, atol=tol2 * np.abs(ref.tvalues).max()
    )
    np.testing.assert_allclose(d.cov, ref.cov_params(), rtol=0, atol=tol2 * np.abs(ref.cov_params()).max())
    np.testing.assert_allclose(
        [d.r2, d.r2_adj, d.sigma**2, d.rss], [ref.rsquared, ref.rsquared_adj, ref.scale, ref.ssr], rtol=tol2
    )
    np.testing.assert_allclose(d.cond, ref.condition_number, rtol=tol2)  # statsmodels: eigenvalues of A^T A
    assert int(d.df_resid) == ref.df_resid and int(d.rank) == p
    if not fit_intercept:
        assert float(d.intercept) == float(d.intercept_stderr) == float(d.intercept_tvalue) == 0.0
    if cov_type != "nonrobust":  # the sandwich really is different here
        assert np.max(np.abs(ref.bse / model.fit().bse - 1)) > 0.05


def test_rank_deficient_is_finite_and_reported(numpy_reference):
    """A duplicated column: rank p - 1, finite answers, the fit itself (rss, sigma, df) as statsmodels."""
    sm = pytest.importorskip("statsmodels.api")
    X, y, _ = _data(seed=11)
    X = np.hstack([X, X[:, :1]])
    for cov_type in ("nonrobust", "HC3"):
        d = lsq.diagnostics(X, y, cov_type=cov_type)
        ref = sm.OLS(y, sm.add_constant(X)).fit(cov_type=cov_type)
        assert int(d.rank) == X.shape[1] and int(d.df_resid) == ref.df_resid
        assert all(np.all(np.isfinite(np.asarray(f))) for name, f in zip(FIELDS, d, strict=False) if name != "cond")
        np.testing.assert_allclose([d.rss, d.sigma, d.r2], [ref.ssr, np.sqrt(ref.scale), ref.rsquared], rtol=1e-10)
        # The identifiable combination coef_1 + coef_dup and its fitted values agree.
        np.testing.assert_allclose(d.coef[0] + d.coef[-1], ref.params[1] + ref.params[-1], rtol=1e-10)
        # cond is finite: the smallest singular value is rounding noise, not zero (as statsmodels'
        # condition_number); docs/estimators.md says so.
        assert 1e13 < float(d.cond) < np.inf and 1e13 < ref.condition_number < np.inf
    # A constant column next to an intercept is the same dependence, centered to exact zeros: inf.
    d = lsq.diagnostics(np.hstack([X[:, :2], np.full((X.shape[0], 1), 7.0)]), y, cov_type="HC2")
    assert int(d.rank) == 3 and float(d.cond) == np.inf
    assert all(np.all(np.isfinite(np.asarray(f))) for name, f in zip(FIELDS, d, strict=False) if name != "cond")


def _compare(be, kwargs, X, y, sw, dtype="float64"):
    ref = lsq.diagnostics(X, y, sample_weight=sw, **kwargs)
    d = _diag(be)(
        be.asarray(X, dtype),
        be.asarray(y, dtype),
        sample_weight=None if sw is None else be.asarray(sw, dtype),
        **kwargs,
    )
    assert isinstance(d, lsq.Diagnostics)
    fit_intercept = kwargs.get("fit_intercept", True)
    kappa = _kappa(X.reshape(-1, X.shape[-1])[: X.shape[-2]], fit_intercept, sw)
    tol = 10 * X.shape[-1] * np.finfo(dtype).eps * kappa**2
    for name, got, host, want in zip(FIELDS, d, _host(be, d), ref, strict=False):
        assert type(got) is type(d.coef) or be.library == "numpy", name  # NumPy: 0-d results are scalars
        if name in ("df_resid", "rank"):
            np.testing.assert_array_equal(host, want)
            continue
        assert got.dtype == getattr(be.xp, dtype), name
        want = np.asarray(want)
        np.testing.assert_allclose(host, want, rtol=tol, atol=tol * np.abs(want).max(), err_msg=name)


@pytest.mark.parametrize("cov_type", ["nonrobust", "HC1", "HC3"])
def test_backend_matches_numpy(be, cov_type):
    X, y, sw = _data(seed=5)
    _compare(be, {"cov_type": cov_type}, X, y, sw)
    _compare(be, {"cov_type": cov_type, "fit_intercept": False}, X, y, None)


def test_backend_float32_and_batch(be):
    X, y, sw = _data(seed=6)
    _compare(be, {"cov_type": "HC2"}, X, y, sw, dtype="float32")
    Xb, yb, sw = _data(seed=7, m=25, n=3, batch=(3,))
    _compare(be, {"cov_type": "HC0"}, Xb, yb, sw)
    # A batch is the same as its problems one by one.
    d = lsq.diagnostics(Xb, yb, sample_weight=sw, cov_type="HC0")
    one = lsq.diagnostics(Xb[1], yb[1], sample_weight=sw, cov_type="HC0")
    for a, b in zip(d, one, strict=False):
        np.testing.assert_allclose(np.asarray(a)[1], b, rtol=1e-12)


def test_rank_deficient_backend(be):
    """The pseudo-inverse branch on every backend (on Dask both branches are in the graph and
    the triangular one meets a singular R: it must not leak NaN through the selection)."""
    X, y, sw = _data(seed=14)
    X = np.hstack([X, X[:, 1:2]])
    d = _diag(be)(be.asarray(X), be.asarray(y), sample_weight=be.asarray(sw), cov_type="HC2")
    ref = lsq.diagnostics(X, y, sample_weight=sw, cov_type="HC2")
    d = _host(be, d)
    assert int(d.rank) == int(ref.rank) == X.shape[1]
    # Conditioning of the part that is kept: the rank - 1 largest singular values of the
    # centered design with unit columns (the duplicate's is ~eps and cut off).
    A = (X - X.mean(0)) / np.linalg.norm(X, axis=0)
    sv = np.linalg.svd(A, compute_uv=False)
    tol = 10 * X.shape[1] * EPS * (sv[0] / sv[-2]) ** 2
    for name, a, b in zip(FIELDS, d, ref, strict=False):
        assert np.all(np.isfinite(a)) or name == "cond", name
        if name != "cond":
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.abs(b).max(), err_msg=name)


def test_jit_equals_eager(be):
    if be.library != "jax":
        pytest.skip("jax.jit only")
    import jax

    X, y, sw = _data(seed=8)
    X, y, sw = be.asarray(X), be.asarray(y), be.asarray(sw)
    fit = _diag(be)
    traced = fit(X, y, sample_weight=sw, cov_type="HC3")
    eager = lsq.diagnostics(X, y, sample_weight=sw, cov_type="HC3")  # the one eager JAX call
    for name, a, b in zip(FIELDS, traced, eager, strict=False):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, err_msg=name)
    # The rank-deficient branch runs on the device (lax.cond) and is finite there too.
    Xd = jax.numpy.concatenate([X, X[:, :1]], axis=1)
    d = fit(Xd, y, cov_type="HC1")
    assert int(d.rank) == Xd.shape[1] and bool(jax.numpy.all(jax.numpy.isfinite(d.stderr)))


def test_strict_device(strict_device):
    xp = strict_device.xp
    X, y, sw = _data(seed=9)
    d = lsq.diagnostics(
        strict_device.asarray(X), strict_device.asarray(y), sample_weight=strict_device.asarray(sw), cov_type="HC2"
    )
    for name, f in zip(FIELDS, d, strict=False):
        assert f.device == strict_device.device, name
    ref = lsq.diagnostics(X, y, sample_weight=sw, cov_type="HC2")
    cpu = xp.__array_namespace_info__().default_device()
    np.testing.assert_allclose(np.asarray(xp.asarray(d.stderr).to_device(cpu)), ref.stderr, rtol=1e-12)
    assert "x1" in d.summary()  # read element by element, which works on any device


def test_bad_input(be):
    X, y, _ = _data(seed=1, m=6, n=2)
    X, y = be.asarray(X), be.asarray(y)
    diagnostics = _diag(be)
    with pytest.raises(ValueError, match="cov_type"):
        diagnostics(X, y, cov_type="HC4")
    with pytest.raises(ValueError, match="refine"):
        diagnostics(X, y, refine=-1)
    with pytest.raises(TypeError, match="fit_intercept"):
        diagnostics(X, y, fit_intercept=None)
    with pytest.raises(ValueError, match="one target"):
        diagnostics(X, be.asarray(np.ones((6, 2))))
    with pytest.raises(ValueError, match="at least one column, or fit_intercept=True"):
        diagnostics(be.asarray(np.ones((6, 0))), y, fit_intercept=False)
    with pytest.raises(ValueError, match="sample_weight"):
        diagnostics(X, y, sample_weight=be.asarray(np.ones(5)))


def test_summary(numpy_reference):
    sm = pytest.importorskip("statsmodels.api")
    pytest.importorskip("scipy")
    X, y, _ = _data(seed=12, m=30, n=2)
    d = lsq.diagnostics(X, y, cov_type="HC1")
    text = d.summary(names=["height", "weight"], title="HC1 fit", use_t=True)
    ref = sm.OLS(y, sm.add_constant(X)).fit(cov_type="HC1", use_t=True)
    rows = {
        line.split()[0]: line.split()[1:]
        for line in text.splitlines()
        if line.split()[:1] in (["const"], ["height"], ["weight"])
    }
    assert list(rows) == ["const", "height", "weight"] and text.splitlines()[0].strip() == "HC1 fit"
    ci = ref.conf_int(0.05)
    for j, name in enumerate(rows):
        want = [ref.params[j], ref.bse[j], ref.tvalues[j], ref.pvalues[j], ci[j, 0], ci[j, 1]]
        np.testing.assert_allclose([float(v) for v in rows[name]], want, rtol=5e-4, atol=5e-5)
    assert f"{float(d.cond):.3g}" in text and f"{ref.rsquared:.4f}" in text
    with pytest.raises(ValueError, match="one name per column"):
        d.summary(names=["a"])


def test_summary_pandas_names_cov_type_and_normal(numpy_reference):
    """Column and series names from pandas, the covariance type in the header, and robust
    covariances referred to the normal distribution by default (statsmodels' default)."""
    pd = pytest.importorskip("pandas")
    sm = pytest.importorskip("statsmodels.api")
    pytest.importorskip("scipy")
    X, y, _ = _data(seed=14, m=40, n=2)
    Xf, ys = pd.DataFrame(X, columns=["height", "weight"]), pd.Series(y, name="score")
    for cov_type in ("nonrobust", "HC3"):
        text = lsq.diagnostics(Xf, ys, cov_type=cov_type).summary()
        ref = sm.OLS(ys, sm.add_constant(Xf)).fit(cov_type=cov_type)  # use_t: statsmodels' default
        lines = text.splitlines()
        assert lines[2].split() == ["Dep.", "Variable:", "score", "Covariance", "Type:", cov_type]
        stat = "t" if cov_type == "nonrobust" else "z"
        assert f"P>|{stat}|" in text and (("normal distribution" in text) == (stat == "z"))
        rows = {ln.split()[0]: ln.split()[1:] for ln in lines if ln.split()[:1] in (["const"], ["height"], ["weight"])}
        assert list(rows) == ["const", "height", "weight"]
        ci = np.asarray(ref.conf_int(0.05))
        for j, name in enumerate(rows):
            want = [ref.params.iloc[j], ref.bse.iloc[j], ref.tvalues.iloc[j], ref.pvalues.iloc[j], ci[j, 0], ci[j, 1]]
            np.testing.assert_allclose([float(v) for v in rows[name]], want, rtol=5e-4, atol=5e-5)
    d = lsq.diagnostics(X, y, cov_type="HC1")
    assert "x1" in d.summary() and "HC1" in d.summary()
    rebuilt = type(d)(*d)  # as after jax.jit or dask.compute: the labels are gone
    assert "not recorded" in rebuilt.summary() and "HC1" in rebuilt.summary(cov_type="HC1")
    with pytest.raises(TypeError, match="use_t"):
        d.summary(use_t="yes")


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_summary_object_f_statistic_and_p_values(fit_intercept, numpy_reference):
    """summary() is a str that renders as HTML (as statsmodels' Summary), with statsmodels'
    F statistic and its p-value (ESS form; Wald with the robust covariance), and every p-value
    printed with four decimals (a tiny one was printed as 1.2e-30, the others as 0.1234)."""
    sm = pytest.importorskip("statsmodels.api")
    pytest.importorskip("scipy")
    X, y, _ = _data(seed=15, m=50, n=3)
    y = y + 8 * X[:, 0]  # a p-value far below 1e-4
    A = sm.add_constant(X) if fit_intercept else X
    for cov_type in ("nonrobust", "HC1", "HC3"):
        s = lsq.diagnostics(X, y, fit_intercept=fit_intercept, cov_type=cov_type).summary(names=["a<b>", "b", "c"])
        ref = sm.OLS(y, A).fit(cov_type=cov_type)
        assert isinstance(s, str) and repr(s) == str(s) == s.as_text()
        assert s._repr_html_() == s.as_html() and "<table" in s.as_html() and "a&lt;b&gt;" in s.as_html()
        c = pickle.loads(pickle.dumps(s))
        assert c == s and c.as_html() == s.as_html() and c.fvalue == s.fvalue
        np.testing.assert_allclose([s.fvalue, s.f_pvalue], [ref.fvalue, ref.f_pvalue], rtol=1e-9)
        np.testing.assert_allclose(s.pvalues, ref.pvalues, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(s.conf_int, ref.conf_int(), rtol=1e-9)
        assert f"{ref.fvalue:.4f}" in s and "Prob (F-statistic):" in s
        p_cells = [ln.split()[4] for ln in s.splitlines() if ln.split()[:1] in (["const"], ["a<b>"], ["b"], ["c"])]
        assert len(p_cells) == 3 + fit_intercept and min(ref.pvalues) < 1e-20
        assert all(re.fullmatch(r"\d\.\d{4}", c) for c in p_cells), p_cells
    # Undefined F: the intercept-only model, no residual degrees of freedom.
    s = lsq.diagnostics(np.empty((20, 0)), y[:20]).summary()
    assert np.isnan(s.fvalue) and np.isnan(s.f_pvalue) and "F-statistic:" in s
    with pytest.warns(RuntimeWarning, match="no residual degrees of freedom"):
        d = lsq.diagnostics(X[:4], y[:4])
    s = d.summary()
    assert np.isnan(s.fvalue) and "No residual degrees of freedom" in s and np.isnan(s.pvalues).all()


def test_summary_notes_rank_deficiency(numpy_reference):
    X, y, _ = _data(seed=16, m=30, n=2)
    with pytest.warns(RuntimeWarning, match="rank-deficient"):
        d = lsq.diagnostics(np.hstack([X, 2 * X[:, :1]]), y)
    assert "minimum-norm solution, as lstsq's" in d.summary()


def test_summary_refuses_lazy_and_batches(be, monkeypatch):
    X, y, _ = _data(seed=13, m=20, n=2, batch=(2,))
    d = _diag(be)(be.asarray(X), be.asarray(y))
    if be.lazy:
        with pytest.raises(TypeError, match="eager"):
            d.summary()
        return
    with pytest.raises(ValueError, match="batch"):
        d.summary()
    one = type(d)(*(f[0, ...] for f in d))
    monkeypatch.setattr(_summary, "_t_dist", lambda: None)  # as without SciPy
    text = one.summary()
    assert "n/a" in text and "need SciPy" in text


# ---- NIST StRD ---------------------------------------------------------------------------

MARGIN = 1.5  # as tests/solvers/test_nist.py: digits below the guaranteed ones still accepted


def _nist_diagnostics(ds, be, refine=0):
    X, y = be.asarray(ds.X), be.asarray(ds.y)
    return _diag(be)(X, y, fit_intercept=ds.fit_intercept, refine=refine)


@pytest.mark.skipif(not nist.available(), reason=f"NIST StRD data not found in {nist.NIST_DIR}")
@pytest.mark.parametrize("name", nist.DATASETS)
def test_nist_certified_statistics(name, be):
    """Certified standard deviations of every parameter, residual SD and R² (uncentered for
    NoInt1/2), to at least the digits a backward-stable method is guaranteed on the
    coefficients (``nist.expected_digits``: 15.65 - log10 of a kappa-based bound) less MARGIN.
    Standard errors are products of sigma and row norms of R^{-1}, whose relative errors are
    ~eps*kappa of the scaled design: never worse than the coefficients' bound."""
    if be.library == "jax":
        pytest.skip("on JAX: test_nist_certified_statistics_jax (slow: one compilation per dataset)")
    _check_nist(name, be)


@pytest.mark.slow
@pytest.mark.skipif(not nist.available(), reason=f"NIST StRD data not found in {nist.NIST_DIR}")
@pytest.mark.parametrize("name", nist.DATASETS)
def test_nist_certified_statistics_jax(name, be):
    """As test_nist_certified_statistics, on JAX under jax.jit (~1.3 s CPU per dataset here)."""
    if be.library != "jax":
        pytest.skip("JAX only")
    _check_nist(name, be)


def _check_nist(name, be):
    ds = nist.load(name)
    floor = max(0.0, nist.expected_digits(ds) - MARGIN)
    for refine in (0, 1):
        d = _host(be, _nist_diagnostics(ds, be, refine))
        fi = ds.fit_intercept
        se = np.concatenate([[float(d.intercept_stderr)], d.stderr]) if fi else d.stderr
        cert = np.concatenate([[ds.intercept_sd], ds.coef_sd]) if fi else ds.coef_sd
        digits = {
            "stderr": float(np.min(nist.lre(se, cert))),
            "sigma": nist.lre(float(d.sigma), ds.resid_sd),
            "r2": nist.lre(float(d.r2), ds.r2),
        }
        assert all(v >= floor for v in digits.values()), (
            f"{be.library} {name} refine={refine}: {digits} below {floor:.1f}"
        )
        assert int(d.df_resid) == ds.dof and int(d.rank) == ds.certified.shape[0]
        if refine and ds.resid_sd == 0:
            # Exact fits (Wampler1/2): the refined residual is summed in double-double, so sigma
            # and the standard errors (certified 0, absolute error) reach ~eps.
            assert min(digits["sigma"], digits["stderr"]) >= 14, f"{be.library} {name}: {digits}"
