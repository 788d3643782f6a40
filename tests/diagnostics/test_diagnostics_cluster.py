"""diagnostics() with cluster-robust (one- and two-way), HAC (Newey-West) and Driscoll-Kraay
covariances: against statsmodels' get_robustcov_results (NumPy), every backend against NumPy
(JAX under jax.jit), stacks, the backend layer's segment_sum, and bad options."""

from __future__ import annotations

import sys

import cupy_standin
import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._backend import _compat

EPS = np.finfo(np.float64).eps
STATIC = ("fit_intercept", "cov_type", "check_finite", "refine", "n_groups", "maxlags", "kernel", "use_correction")
M, N, G, G2, T = 120, 3, 11, 6, 15


def _data(seed, m=M, n=N, batch=()):
    """Correlated, offset columns; noise with a cluster effect, heteroskedastic and autocorrelated, so that
    every robust covariance differs from the nonrobust one. Codes: clusters (m,), a second dimension, periods."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal(batch + (m, n)) @ (np.eye(n) + 0.5) + np.linspace(-2, 5, n)
    groups, second = rng.integers(0, G, m), rng.integers(0, G2, m)
    effect = rng.standard_normal(G)[groups] * 2 + rng.standard_normal(G2)[second] * 2
    noise = np.cumsum(rng.standard_normal(batch + (m,)), axis=-1) * 0.3 + (1 + np.abs(X[..., 0])) * effect
    y = X @ rng.standard_normal(n) + 1.5 + noise
    panel = np.sort(rng.integers(0, G, m))  # rows sorted by panel, and each panel's periods 0, 1, ...
    ptime = np.concatenate([np.arange(np.sum(panel == k)) for k in np.unique(panel)])
    codes = {"groups": groups, "second": second, "time": rng.integers(0, T, m), "panel": panel, "ptime": ptime}
    return X, y, rng.uniform(0.2, 3.0, m), codes


# (cov_type, our keywords, statsmodels' cov_kwds); codes named by _data's keys, filled in per test.
CASES = {
    "cluster": ("cluster", {"groups": "groups"}, {}),
    "cluster-CR0": ("cluster", {"groups": "groups", "use_correction": False}, {"use_correction": False}),
    "two-way": ("cluster", {"groups": "two"}, {}),
    "two-way-CR0": ("cluster", {"groups": "two", "use_correction": False}, {"use_correction": False}),
    "HAC": ("HAC", {"maxlags": 4}, {}),
    "HAC-uniform": ("HAC", {"maxlags": 2, "kernel": "uniform", "use_correction": True}, {}),
    "hac-groupsum": ("hac-groupsum", {"time": "time", "maxlags": 3}, {}),
    "hac-groupsum-hac": ("hac-groupsum", {"time": "time", "maxlags": 3, "use_correction": "hac"}, {}),
    "hac-groupsum-none": ("hac-groupsum", {"time": "time", "maxlags": 3, "use_correction": False}, {}),
    "hac-panel": ("hac-panel", {"groups": "panel", "maxlags": 3}, {}),
    "hac-panel-time": ("hac-panel", {"time": "ptime", "maxlags": 2, "use_correction": "cluster"}, {}),
}


def _kwargs(case, codes, with_counts=False):
    """Our keywords for ``case`` (NumPy codes), with ``n_groups`` when asked (needed under jax.jit)."""
    cov_type, kw, _ = CASES[case]
    out = {"cov_type": cov_type, **kw}
    for key in ("groups", "time"):
        if key in kw:
            name = kw[key]
            out[key] = np.column_stack([codes["groups"], codes["second"]]) if name == "two" else codes[name]
    if cov_type == "hac-panel":  # no segments: the panels are runs of rows
        return out
    if with_counts and "groups" in out:
        out["n_groups"] = (G, G2) if out["groups"].ndim == 2 else G
    if with_counts and "time" in out:
        out["n_groups"] = T
    return out


def _statsmodels_kwds(case, ours):
    """statsmodels' cov_kwds for the same covariance (the spelling the docs show side by side)."""
    kwds = {k: v for k, v in ours.items() if k in ("groups", "time", "maxlags", "kernel", "use_correction")}
    return {**kwds, **CASES[case][2]}


def _kappa(X, fit_intercept, sw=None):
    A = np.hstack([np.ones((X.shape[0], 1)), X]) if fit_intercept else X
    A = A * np.sqrt(sw if sw is not None else np.ones(len(A)))[:, None]
    s = np.linalg.svd(A / np.linalg.norm(A, axis=0), compute_uv=False)
    return s[0] / s[-1]


def _full(d, fit_intercept):
    se = np.asarray(d.stderr)
    return np.concatenate([[float(d.intercept_stderr)], se]) if fit_intercept else se


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_statsmodels(numpy_reference, case, fit_intercept, weighted):
    sm = pytest.importorskip("statsmodels.api")
    X, y, sw, codes = _data(seed=3 + 2 * weighted + fit_intercept)
    A = sm.add_constant(X) if fit_intercept else X
    model = sm.WLS(y, A, weights=sw) if weighted else sm.OLS(y, A)
    ours = _kwargs(case, codes)
    ref = model.fit(cov_type=ours["cov_type"], cov_kwds=_statsmodels_kwds(case, ours))
    d = lsq.diagnostics(X, y, fit_intercept=fit_intercept, sample_weight=sw if weighted else None, **ours)
    # Both sides are backward stable: anything built on (A^T A)^{-1} agrees to ~eps*kappa**2
    # (statsmodels uses pinv), here below the 1e-10 asked of these covariances.
    kappa = _kappa(X, fit_intercept, sw if weighted else None)
    tol = 10 * A.shape[1] * EPS * kappa**2
    assert tol < 1e-10
    cov = ref.cov_params()
    np.testing.assert_allclose(d.cov, cov, rtol=0, atol=tol * np.abs(cov).max())
    assert np.all(np.isfinite(ref.bse))  # (a two-way covariance need not be positive semidefinite)
    np.testing.assert_allclose(_full(d, fit_intercept), ref.bse, rtol=tol)
    # The robust covariance really differs from the nonrobust one and from HC0 on these data.
    for other in ("nonrobust", "HC0"):
        assert np.max(np.abs(ref.bse / model.fit(cov_type=other).bse - 1)) > 0.01  # 1e8 times the tolerance
    assert d.cov_type == ours["cov_type"] and "Covariance Type:" in d.summary()


def test_codes_not_all_used_and_unsorted_periods(numpy_reference):
    """Codes that skip values (G = the clusters present, as statsmodels' len(unique)), a larger n_groups,
    a lag longer than the sample, and periods in any row order."""
    sm = pytest.importorskip("statsmodels.api")
    X, y, _, codes = _data(seed=21)
    groups = 3 * codes["groups"]  # 0, 3, ..., 30: 11 clusters among 31 codes
    model = sm.OLS(y, sm.add_constant(X))
    ref = model.fit(cov_type="cluster", cov_kwds={"groups": groups})
    for n_groups in (None, 31, 100):
        d = lsq.diagnostics(X, y, cov_type="cluster", groups=groups, n_groups=n_groups)
        np.testing.assert_allclose(d.cov, ref.cov_params(), rtol=1e-12, atol=1e-12 * np.abs(ref.cov_params()).max())
    ref = model.fit(cov_type="HAC", cov_kwds={"maxlags": M + 5})
    d = lsq.diagnostics(X, y, cov_type="HAC", maxlags=M + 5)
    np.testing.assert_allclose(d.cov, ref.cov_params(), rtol=1e-11, atol=1e-11 * np.abs(ref.cov_params()).max())
    time = codes["time"][::-1].copy()
    ref = model.fit(cov_type="hac-groupsum", cov_kwds={"time": time, "maxlags": 2})
    d = lsq.diagnostics(X, y, cov_type="hac-groupsum", time=time, maxlags=2)
    np.testing.assert_allclose(d.cov, ref.cov_params(), rtol=1e-12, atol=1e-12 * np.abs(ref.cov_params()).max())


def test_rank_deficient_matches_statsmodels(numpy_reference):
    """A duplicated column: the pseudo-inverse's sandwich, as statsmodels' pinv; p counts every column."""
    sm = pytest.importorskip("statsmodels.api")
    X, y, _, codes = _data(seed=23)
    X = np.hstack([X, X[:, :1]])
    for fit_intercept in (True, False):
        A = sm.add_constant(X) if fit_intercept else X
        ref = sm.OLS(y, A).fit(cov_type="cluster", cov_kwds={"groups": codes["groups"]}).cov_params()
        with pytest.warns(RuntimeWarning, match="rank-deficient"):
            d = lsq.diagnostics(X, y, fit_intercept=fit_intercept, cov_type="cluster", groups=codes["groups"])
        np.testing.assert_allclose(d.cov, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def _fit(be):
    """lsq.diagnostics, under jax.jit on JAX (n_groups, maxlags, kernel and use_correction static)."""
    if be.library != "jax":
        return lsq.diagnostics
    import jax

    return jax.jit(lsq.diagnostics, static_argnames=STATIC)


def _host(be, d):
    if be.lazy:
        import dask

        return type(d)(*(np.asarray(f) for f in dask.compute(*d)))
    return type(d)(*(be.to_numpy(f) for f in d))


@pytest.mark.parametrize("case", ["cluster", "two-way", "HAC-uniform", "hac-groupsum", "hac-panel-time"])
def test_backend_matches_numpy(be, case):
    """Every backend (JAX under jax.jit) against NumPy: weighted, a stack of three problems sharing the
    codes, and one without an intercept; the namespace and float dtype kept."""
    X, y, sw, codes = _data(seed=5, batch=(3,))
    kwargs = _kwargs(case, codes, with_counts=True)
    for fit_intercept, w in ((True, sw), (False, None)):
        ref = lsq.diagnostics(X, y, sample_weight=w, fit_intercept=fit_intercept, **kwargs)
        on = {k: be.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        d = _fit(be)(
            be.asarray(X), be.asarray(y), sample_weight=None if w is None else be.asarray(w),
            fit_intercept=fit_intercept, **on,
        )  # fmt: skip
        assert type(d.cov) is type(d.coef) and d.cov.dtype == be.xp.float64
        got = _host(be, d)
        kappa = max(_kappa(x, fit_intercept, w) for x in X)
        tol = 10 * (N + 1) * EPS * kappa**2
        for name in ("coef", "stderr", "intercept_stderr", "cov"):
            want = np.asarray(getattr(ref, name))
            np.testing.assert_allclose(getattr(got, name), want, rtol=tol, atol=tol * np.abs(want).max(), err_msg=name)
        # A stack is its problems one by one.
        one = lsq.diagnostics(X[1], y[1], sample_weight=w, fit_intercept=fit_intercept, **kwargs)
        np.testing.assert_allclose(np.asarray(ref.cov)[1], one.cov, rtol=1e-12, atol=1e-12 * np.abs(one.cov).max())


@pytest.mark.parametrize("case", ["cluster", "two-way", "hac-groupsum"])
def test_float32(be, case):
    """float32 stays float32, to the float32 error bound against the float64 fit."""
    X, y, sw, codes = _data(seed=6)
    kwargs = _kwargs(case, codes, with_counts=True)
    ref = lsq.diagnostics(X, y, sample_weight=sw, **kwargs)
    on = {k: be.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    d = _fit(be)(be.asarray(X, "float32"), be.asarray(y, "float32"), sample_weight=be.asarray(sw, "float32"), **on)
    assert d.cov.dtype == be.xp.float32
    tol = 10 * (N + 1) * np.finfo(np.float32).eps * _kappa(X, True, sw) ** 2
    got = _host(be, d)
    np.testing.assert_allclose(got.cov, ref.cov, rtol=tol, atol=tol * np.abs(ref.cov).max())


def test_segment_sum(be):
    """The backend layer's segment sums: a stack, empty segments, float32 kept."""
    rng = np.random.default_rng(0)
    values, codes = rng.standard_normal((2, 40, 3)), rng.integers(0, 5, 40)
    want = np.zeros((2, 7, 3))
    for i, c in enumerate(codes):
        want[:, c] += values[:, i]
    for dtype, tol in (("float64", 1e-14), ("float32", 1e-5)):
        v = be.asarray(values, dtype)
        got = _compat.segment_sum(be.xp, v, be.asarray(codes), 7)
        assert got.dtype == v.dtype and tuple(got.shape) == (2, 7, 3)
        np.testing.assert_allclose(be.to_numpy(got), want, rtol=tol, atol=tol * 10)
    got = _compat.segment_sum(be.xp, be.asarray(values[0]), be.asarray(codes), 7)
    np.testing.assert_allclose(be.to_numpy(got), want[0], rtol=1e-14, atol=1e-14)


def test_prepared_segments_sum_as_the_codes_do(be, monkeypatch):
    """``prepare_segments`` (NumPy with SciPy: a sparse indicator, for a projection's every step) sums as the codes
    themselves do, bit for bit (both in row order, accumulated in float64), stacks and float32 included; without
    SciPy it gives the codes back."""
    rng = np.random.default_rng(2)
    values, codes = rng.standard_normal((2, 500, 3)), rng.integers(0, 40, 500)
    prepared = _compat.prepare_segments(be.xp, be.asarray(codes), 41)
    for dtype in ("float64", "float32"):
        for v in (be.asarray(values, dtype), be.asarray(values[0], dtype)):
            want = _compat.segment_sum(be.xp, v, be.asarray(codes), 41)
            got = _compat.segment_sum(be.xp, v, prepared, 41)
            assert got.dtype == v.dtype and tuple(got.shape) == tuple(want.shape)
            np.testing.assert_array_equal(be.to_numpy(got), be.to_numpy(want))
    if be.name == "numpy":
        assert prepared is not codes and type(prepared).__name__ == "_Indicator"
        monkeypatch.setitem(sys.modules, "scipy.sparse", None)  # SciPy missing: the codes as they are
        plain = be.asarray(codes)
        assert _compat.prepare_segments(be.xp, plain, 41) is plain


def test_segment_sum_cupy_branch(monkeypatch, numpy_reference):
    """CuPy's branch (``cupyx.scatter_add`` into zeros, rows moved first) on the NumPy stand-in."""
    cupy = cupy_standin.install(monkeypatch)
    rng = np.random.default_rng(1)
    values, codes = rng.standard_normal((2, 30, 3)), rng.integers(0, 4, 30)
    want = _compat.segment_sum(np, values, codes, 6)
    got = _compat.segment_sum(cupy.xp, values, codes, 6)
    assert got.shape == (2, 6, 3)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("case", ["two-way", "HAC", "hac-groupsum", "hac-panel"])
def test_dask_builds_only_a_graph(be, case):
    """On Dask the fit computes nothing (a scheduler that refuses), and its graph computes NumPy's answer."""
    if not be.lazy:
        pytest.skip("Dask only")
    import dask

    def refuse(*args, **kwargs):
        raise AssertionError("computed before compute()")

    X, y, sw, codes = _data(seed=12)
    kwargs = _kwargs(case, codes, with_counts=True)
    on = {k: be.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with dask.config.set(scheduler=refuse):
        d = lsq.diagnostics(be.asarray(X), be.asarray(y), sample_weight=be.asarray(sw), **on)
    ref = lsq.diagnostics(X, y, sample_weight=sw, **kwargs)
    np.testing.assert_allclose(_host(be, d).cov, ref.cov, rtol=1e-12, atol=1e-12 * np.abs(ref.cov).max())


def test_jit_needs_n_groups(be):
    if be.library != "jax":
        pytest.skip("jax.jit only")
    import jax

    X, y, _, codes = _data(seed=8)
    fit = jax.jit(lsq.diagnostics, static_argnames=STATIC)
    with pytest.raises(ValueError, match="n_groups must be given"):
        fit(be.asarray(X), be.asarray(y), cov_type="cluster", groups=be.asarray(codes["groups"]))
    # Eager JAX reads the count from the codes, and agrees with the jitted fit.
    eager = lsq.diagnostics(be.asarray(X), be.asarray(y), cov_type="cluster", groups=be.asarray(codes["groups"]))
    traced = fit(be.asarray(X), be.asarray(y), cov_type="cluster", groups=be.asarray(codes["groups"]), n_groups=G)
    np.testing.assert_allclose(np.asarray(traced.cov), np.asarray(eager.cov), rtol=1e-12, atol=1e-14)


BAD = [
    ({"cov_type": "cluster"}, ValueError, "needs groups="),
    ({"cov_type": "cluster", "groups": "float"}, TypeError, "groups must hold integer codes"),
    ({"cov_type": "cluster", "groups": "short"}, ValueError, r"groups must have shape \(120,\) or \(120, 2\)"),
    ({"cov_type": "cluster", "groups": "negative"}, ValueError, r"groups must hold codes in \[0, n_groups\)"),
    ({"cov_type": "cluster", "groups": "groups", "n_groups": 5}, ValueError, r"groups must hold codes in \[0, n_groups\) = \[0, 5\)"),
    ({"cov_type": "cluster", "groups": "groups", "n_groups": 0}, ValueError, "n_groups must be a positive int"),
    ({"cov_type": "cluster", "groups": "two", "n_groups": 11}, ValueError, "n_groups must be a pair"),
    ({"cov_type": "cluster", "groups": "groups", "use_correction": "yes"}, ValueError, "use_correction must be a bool"),
    ({"cov_type": "cluster", "groups": "groups", "maxlags": 2}, ValueError, "maxlags is used only with cov_type"),
    ({"cov_type": "HC1", "groups": "groups"}, ValueError, "groups is used only with cov_type 'cluster'"),
    ({"cov_type": "HAC"}, ValueError, "needs maxlags="),
    ({"cov_type": "HAC", "maxlags": -1}, ValueError, "needs maxlags=, a non-negative int"),
    ({"cov_type": "HAC", "maxlags": 2, "kernel": "parzen"}, ValueError, "kernel must be one of"),
    ({"cov_type": "hac-groupsum", "maxlags": 2}, ValueError, "needs time="),
    ({"cov_type": "hac-groupsum", "time": "time", "maxlags": 2, "use_correction": True}, ValueError, "must be False, 'hac' or"),
    ({"cov_type": "hac-panel", "groups": "groups", "time": "time", "maxlags": 1}, ValueError, "needs one of groups= or time="),
    ({"cov_type": "hac-panel", "groups": "groups", "n_groups": 11, "maxlags": 1}, ValueError, "n_groups is used only"),
    ({"cov_type": "Cluster", "groups": "groups"}, ValueError, "cov_type must be one of"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD, ids=[b[2][:30] for b in BAD])
def test_bad_options(be, kwargs, error, match):
    """Every bad option gets a clear error naming the argument, raised before the fit; the codes are unchanged."""
    X, y, _, codes = _data(seed=9)
    made = {
        "groups": codes["groups"], "time": codes["time"], "float": codes["groups"] * 1.0, "short": codes["groups"][:-1],
        "negative": codes["groups"] - 1, "two": np.column_stack([codes["groups"], codes["second"]]),
    }  # fmt: skip
    kwargs = {k: made[v] if isinstance(v, str) and v in made else v for k, v in kwargs.items()}
    codes_given = kwargs.get("groups", kwargs.get("time"))
    counted = kwargs["cov_type"] in ("cluster", "hac-groupsum")
    if be.lazy and counted and "n_groups" not in kwargs and getattr(codes_given, "ndim", 0):  # Dask: static count
        kwargs["n_groups"] = (G, G2) if codes_given.ndim == 2 else max(G, T)
    kept = {k: v.copy() for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    on = {k: be.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    lazy = be.lazy and "must hold codes in" in match  # value checks are not read on a Dask graph
    if lazy:
        pytest.skip("a value check: not read on a lazy graph")
    with pytest.raises(error, match=match):
        lsq.diagnostics(be.asarray(X), be.asarray(y), **on)
    for k, v in kept.items():
        np.testing.assert_array_equal(be.to_numpy(on[k]), v)
