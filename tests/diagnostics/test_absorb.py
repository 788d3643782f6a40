"""Absorbed fixed effects (``absorb=``): lstsq, ridge and diagnostics against the same regression with
explicit dummy columns (NumPy's lstsq and statsmodels' OLS on [X, dummies]), one-, two- (worker-firm-like)
and three-way; every backend against the dummy regression (JAX also under jax.jit); the absorbed rank;
bad codes (the partialling out itself: test_absorb_convergence.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._problem._absorb import absorb_codes, absorbed_rank

M, N = 240, 3
SIZES = (24, 9, 4)  # groups of the first (worker), second (firm) and third factor


def _data(seed, k, weighted=False):
    """X correlated with the fixed effects (so that leaving them out would bias coef), y with effects of
    every factor; codes (m, k); a worker-firm-like second factor: each worker at one of two firms."""
    rng = np.random.default_rng(seed)
    worker = rng.integers(0, SIZES[0], M)
    home = rng.integers(0, SIZES[1], SIZES[0])
    firm = np.where(rng.random(M) < 0.6, home[worker], rng.integers(0, SIZES[1], M))
    codes = np.column_stack([worker, firm, rng.integers(0, SIZES[2], M)])[:, :k]
    effects = [rng.standard_normal(g) * 2 for g in SIZES]
    fe = sum(effects[j][codes[:, j]] for j in range(k))
    X = rng.standard_normal((M, N)) + fe[:, None] * np.array([0.5, -0.3, 0.1]) + 3.0
    y = X @ np.array([1.0, -2.0, 0.5]) + fe + rng.standard_normal(M) * (1 + np.abs(X[:, 0]) / 3)
    w = rng.uniform(0.2, 3.0, M) if weighted else None
    return X, y, w, codes


def _dummies(codes):
    """[1, the dummies of every factor but each one's first group]: full column rank on connected designs."""
    cols = [np.ones((codes.shape[0], 1))]
    for j in range(codes.shape[1]):
        cols.append(np.eye(codes[:, j].max() + 1)[codes[:, j]][:, 1:])
    return np.hstack(cols)


def _reference(X, y, w, codes, cov_type="nonrobust", groups=None):
    sm = pytest.importorskip("statsmodels.api")
    A = np.hstack([X, _dummies(codes)])
    model = sm.OLS(y, A) if w is None else sm.WLS(y, A, weights=w)
    kw = {"cov_type": "cluster", "cov_kwds": {"groups": groups}} if cov_type == "cluster" else {}
    return model.fit(**kw)


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_dummy_regression(numpy_reference, k, weighted):
    X, y, w, codes = _data(k, k, weighted)
    ref = _reference(X, y, w, codes)
    assert np.linalg.matrix_rank(np.hstack([X, _dummies(codes)])) == N + _dummies(codes).shape[1]
    r = lsq.lstsq(X, y, absorb=codes, sample_weight=w)
    assert _rel(r.coef, ref.params[:N]) < 1e-8
    assert float(r.intercept) == 0.0
    np.testing.assert_allclose(float(r.rss), ref.ssr, rtol=1e-8)
    d = lsq.diagnostics(X, y, absorb=codes, sample_weight=w)
    assert _rel(d.coef, ref.params[:N]) < 1e-8
    assert _rel(d.stderr, ref.bse[:N]) < 1e-6
    assert int(d.df_resid) == ref.df_resid
    for groups in (codes[:, 0], (codes[:, 0] * 7 + np.arange(M)) % 13):  # nesting a factor, and not
        rc = _reference(X, y, w, codes, "cluster", groups)
        dc = lsq.diagnostics(X, y, absorb=codes, sample_weight=w, cov_type="cluster", groups=groups, fixef_k="full")
        assert _rel(dc.stderr, rc.bse[:N]) < 1e-6
    hc1 = lsq.diagnostics(X, y, absorb=codes, sample_weight=w, cov_type="HC1")
    A = np.hstack([X, _dummies(codes)])
    sm = pytest.importorskip("statsmodels.api")
    rh = (sm.OLS(y, A) if w is None else sm.WLS(y, A, weights=w)).fit(cov_type="HC1")
    assert _rel(hc1.stderr, rh.bse[:N]) < 1e-6


@pytest.mark.parametrize("k", [1, 2, 3])
def test_matches_linearmodels(numpy_reference, k):
    """linearmodels' AbsorbingLS (``debiased=True``: its degrees of freedom count the absorbed rank), where
    installed: coefficients, nonrobust and cluster standard errors (clusters that nest no factor: for one
    factor nested in the clusters AbsorbingLS leaves the factor's groups out of the correction)."""
    absorbing = pytest.importorskip("linearmodels.iv.absorbing")
    pd = pytest.importorskip("pandas")
    X, y, _, codes = _data(k, k)
    frame = pd.DataFrame({f"f{j}": pd.Categorical(codes[:, j]) for j in range(k)})
    model = absorbing.AbsorbingLS(y, X, absorb=frame)
    ref = model.fit(cov_type="unadjusted", debiased=True)
    d = lsq.diagnostics(X, y, absorb=codes)
    assert _rel(d.coef, ref.params.to_numpy()) < 1e-8
    assert _rel(d.stderr, ref.std_errors.to_numpy()) < 1e-6
    groups = (codes[:, 0] * 7 + np.arange(M)) % 13
    ref = model.fit(cov_type="clustered", clusters=groups, debiased=True)
    dc = lsq.diagnostics(X, y, absorb=codes, cov_type="cluster", groups=groups)
    assert _rel(dc.stderr, ref.std_errors.to_numpy()) < 1e-6


def test_ridge_fixed_effects_unpenalized(numpy_reference):
    X, y, _, codes = _data(5, 2)
    D = _dummies(codes)
    # ridge with unpenalized dummies: the normal equations with the penalty on X's block only
    A = np.hstack([X, D])
    P = np.zeros((A.shape[1],) * 2)
    P[:N, :N] = 4.0 * np.eye(N)
    want = np.linalg.solve(A.T @ A + P, A.T @ y)[:N]
    got = lsq.ridge(X, y, 4.0, absorb=codes)
    assert _rel(got.coef, want) < 1e-8


def test_absorbed_rank(numpy_reference):
    # two disconnected worker-firm blocks: G1 + G2 - 2
    codes = np.array([[0, 0], [1, 0], [1, 1], [2, 2], [3, 2], [3, 3]])
    factors = absorb_codes(np, np.zeros((6, 1)), codes, None, None)
    assert absorbed_rank(factors) == np.linalg.matrix_rank(np.hstack([np.eye(4)[codes[:, 0]], np.eye(4)[codes[:, 1]]]))
    assert absorbed_rank(factors) == 6
    # unused codes do not count
    factors = absorb_codes(np, np.zeros((3, 1)), np.array([0, 5, 5]), None, None)
    assert absorbed_rank(factors) == 2


def _jit_or_not(be, fn, static):
    if be.library != "jax":
        return fn
    import jax

    return jax.jit(fn, static_argnames=static)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_backends_match_dummy_regression(be, k):
    """Every backend (JAX under jax.jit, group counts static) against the dummy regression: lstsq's
    coefficients, weighted; diagnostics' nonrobust and cluster standard errors (concrete codes: NumPy's on
    Dask). A traced or lazy ``absorb`` in diagnostics is refused."""
    if be.lazy and k == 3:
        pytest.skip("Dask: two factors take the lazy conjugate gradient that three do (26 s of graphs per case)")
    X, y, w, codes = _data(10 + k, k, weighted=True)
    ref = _reference(X, y, w, codes)
    counts = tuple(int(c) + 1 for c in codes.max(axis=0))
    fit = _jit_or_not(be, lsq.lstsq, ("absorb_n_groups",))
    r = fit(be.asarray(X), be.asarray(y), sample_weight=be.asarray(w), absorb=be.asarray(codes), absorb_n_groups=counts)
    assert type(r.coef) is type(be.asarray(X))
    assert _rel(be.to_numpy(r.coef), ref.params[:N]) < 1e-8
    fixed = codes if be.lazy else be.asarray(codes)  # diagnostics counts the absorbed rank from concrete codes
    d = lsq.diagnostics(be.asarray(X), be.asarray(y), sample_weight=be.asarray(w), absorb=fixed)
    assert _rel(be.to_numpy(d.stderr), ref.bse[:N]) < 1e-6
    rc = _reference(X, y, w, codes, "cluster", codes[:, 0])
    dc = lsq.diagnostics(
        be.asarray(X), be.asarray(y), sample_weight=be.asarray(w), absorb=fixed, cov_type="cluster",
        groups=be.asarray(codes[:, 0]), n_groups=SIZES[0], fixef_k="full",
    )  # fmt: skip
    assert _rel(be.to_numpy(dc.stderr), rc.bse[:N]) < 1e-6
    nested = lsq.diagnostics(
        be.asarray(X), be.asarray(y), sample_weight=be.asarray(w), absorb=fixed, cov_type="cluster",
        groups=codes[:, 0] if be.lazy else be.asarray(codes[:, 0]), n_groups=SIZES[0],
    )  # fmt: skip
    assert _rel(be.to_numpy(nested.stderr), rc.bse[:N] * _nested_scale(codes, [0])) < 1e-6
    if be.lazy:
        with pytest.raises(ValueError, match="absorb codes: pass them concrete"):
            lsq.diagnostics(be.asarray(X), be.asarray(y), absorb=be.asarray(codes), absorb_n_groups=counts)


def test_inputs_unchanged(numpy_reference):
    X, y, w, codes = _data(3, 2, weighted=True)
    copies = [a.copy() for a in (X, y, w, codes)]
    lsq.diagnostics(X, y, sample_weight=w, absorb=codes)
    lsq.lstsq(X, y, sample_weight=w, absorb=codes)
    for a, b in zip((X, y, w, codes), copies, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("absorb", "kwargs", "error", "match"),
    [
        (np.zeros(M - 1, dtype=int), {}, ValueError, "absorb must have shape"),
        (np.zeros((M, 2, 2), dtype=int), {}, ValueError, "absorb must have shape"),
        (np.zeros(M), {}, TypeError, "absorb must hold integer"),
        (np.zeros(M, dtype=bool), {}, TypeError, "absorb must hold integer"),
        (np.full(M, -1), {}, ValueError, "absorb must hold codes in"),
        (np.arange(M), {"absorb_n_groups": 5}, ValueError, "absorb must hold codes in"),
        (np.zeros(M, dtype=int), {"absorb_n_groups": (3, 4)}, ValueError, "absorb_n_groups must be"),
        (np.zeros(M, dtype=int), {"absorb_n_groups": 0}, ValueError, "absorb_n_groups must be"),
        (None, {"absorb_n_groups": 3}, ValueError, "absorb_n_groups is used only with absorb"),
    ],
)
def test_bad_absorb(be, absorb, kwargs, error, match):
    X, y, _, _ = _data(0, 1)
    if be.lazy and match == "absorb must hold codes in":
        pytest.skip("Dask: the range of lazy codes is not read (as groups= of the cluster covariances)")
    if be.lazy and absorb is not None:
        kwargs = {"absorb_n_groups": 1, **kwargs}
    given = None if absorb is None else be.asarray(absorb)
    for fn in (lsq.lstsq, lsq.diagnostics):
        with pytest.raises(error, match=match):
            out = fn(be.asarray(X), be.asarray(y), absorb=given, **kwargs)
            if be.lazy:
                be.to_numpy(out.coef)


def test_hc2_refused(numpy_reference):
    X, y, _, codes = _data(0, 1)
    with pytest.raises(ValueError, match="not with absorb"):
        lsq.diagnostics(X, y, absorb=codes, cov_type="HC2")


def test_summary_f_test_is_the_slopes(numpy_reference):
    """The summary's F test is that of X's coefficients in the dummy regression (the fixed effects left out of
    df_model); the absorbed rank is recorded."""
    X, y, _, codes = _data(4, 2)
    d = lsq.diagnostics(X, y, absorb=codes)
    ref = _reference(X, y, None, codes)
    assert d.absorbed_rank == _dummies(codes).shape[1]
    table = d.summary()
    np.testing.assert_allclose(
        table.fvalue, float(np.squeeze(ref.f_test(np.eye(ref.params.size)[:N]).fvalue)), rtol=1e-8
    )
    assert "const" not in table


def test_sparse_x_refused(numpy_reference):
    sparse = pytest.importorskip("scipy.sparse")
    X = sparse.random(10, 3, density=0.5, format="csr", random_state=0)
    with pytest.raises(ValueError, match="absorb takes a dense X"):
        lsq.lstsq(X, np.ones(10), absorb=np.zeros(10, dtype=int))


def _singleton_data(seed):
    """Worker-firm codes with singletons, some of them only once others are dropped (a chain: row 0 alone in
    its firm; without it, row 1 alone in its worker; ...), X and y."""
    X, y, _, codes = _data(seed, 2)
    codes = codes.copy()
    codes[0] = [SIZES[0], SIZES[1]]  # a new worker and a new firm, both alone
    codes[1] = [SIZES[0] + 1, SIZES[1]]  # shares row 0's firm: alone in its worker once row 0 leaves
    codes[2] = [SIZES[0] + 1, 0]
    codes[3] = [SIZES[0] + 2, 1]  # a worker alone
    return X, y, codes


def _singletons_by_hand(codes):
    """The rows dropped, one at a time, while some row is alone in its group of some factor."""
    keep = np.ones(len(codes), dtype=bool)
    while True:
        alone = [
            i for i in np.flatnonzero(keep)
            if any(np.sum(keep & (codes[:, j] == codes[i, j])) == 1 for j in range(codes.shape[1]))
        ]  # fmt: skip
        if not alone:
            return ~keep
        keep[alone[0]] = False


def test_drop_singletons_matches_dropped_rows(numpy_reference):
    """lstsq, ridge and diagnostics with drop_singletons=True against the same calls and statsmodels' dummy
    regression on the rows kept (the chain's rows included); the count recorded."""
    X, y, codes = _singleton_data(7)
    dropped = _singletons_by_hand(codes)
    assert dropped[:3].all() and dropped[3] and dropped.sum() >= 4
    k = ~dropped
    w = np.random.default_rng(1).uniform(0.5, 2.0, M)
    ref = _reference(X[k], y[k], w[k], codes[k] - codes[k].min(axis=0))
    for fit in (lsq.lstsq, lambda *a, **kw: lsq.ridge(*a, 0.0, **kw)):
        r = fit(X, y, absorb=codes, sample_weight=w, drop_singletons=True)
        assert _rel(r.coef, ref.params[:N]) < 1e-8
        np.testing.assert_allclose(float(r.rss), ref.ssr, rtol=1e-8)
    got = lsq.ridge(X, y, 3.0, absorb=codes, drop_singletons=True).coef
    assert _rel(got, lsq.ridge(X[k], y[k], 3.0, absorb=codes[k]).coef) < 1e-12
    d = lsq.diagnostics(X, y, absorb=codes, sample_weight=w, drop_singletons=True)
    assert d.n_singletons == dropped.sum()
    assert int(d.df_resid) == ref.df_resid
    assert _rel(d.stderr, ref.bse[:N]) < 1e-6
    groups = (codes[:, 0] * 7 + np.arange(M)) % 13  # dropped with the rows
    rc = _reference(X[k], y[k], w[k], codes[k] - codes[k].min(axis=0), "cluster", groups[k])
    dc = lsq.diagnostics(X, y, absorb=codes, sample_weight=w, drop_singletons=True, cov_type="cluster", groups=groups)
    assert _rel(dc.stderr, rc.bse[:N]) < 1e-6
    kept = lsq.diagnostics(X, y, absorb=codes)  # not asked: every row kept, each singleton with its own dummy
    assert kept.n_singletons == 0 and int(kept.rank) == int(d.rank) + dropped.sum()


def test_singletons_found_in_turn(numpy_reference):
    from lsq_backends._problem._absorb import singletons

    codes = np.array([[0, 0], [0, 1], [1, 1], [1, 2], [2, 2], [2, 2], [3, 3], [3, 3]])
    # row 0 is alone in firm 0; then row 1 in worker 0; then row 2 in firm 1; then row 3 in worker 1
    np.testing.assert_array_equal(singletons(codes), [True, True, True, True, False, False, False, False])
    np.testing.assert_array_equal(singletons(codes), _singletons_by_hand(codes))
    for seed in range(3):
        _, _, c = _singleton_data(seed)
        np.testing.assert_array_equal(singletons(c), _singletons_by_hand(c))


def test_drop_singletons_matches_pyfixest(numpy_reference):
    """pyfixest's feols (``fixef_rm="singleton"``) where installed: observations, coefficients, iid standard
    errors (a connected design: its count of the fixed effects is the rank)."""
    pf = pytest.importorskip("pyfixest")
    pd = pytest.importorskip("pandas")
    X, y, codes = _singleton_data(8)
    frame = pd.DataFrame({"y": y, **{f"x{i}": X[:, i] for i in range(N)}, "f1": codes[:, 0], "f2": codes[:, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "singleton fixed effect(s) dropped"
        ref = pf.feols("y ~ x0 + x1 + x2 | f1 + f2", data=frame, vcov="iid", fixef_rm="singleton")
    d = lsq.diagnostics(X, y, absorb=codes, drop_singletons=True)
    assert M - d.n_singletons == ref._N
    assert _rel(d.coef, ref.coef().to_numpy()) < 1e-8
    assert _rel(d.stderr, ref.se().to_numpy()) < 1e-6


def test_drop_singletons_backends(be):
    """Every backend against NumPy's fit on the rows kept; JAX under jax.jit with the codes concrete (closed
    over), and refused with traced codes; Dask with NumPy codes."""
    X, y, codes = _singleton_data(9)
    k = ~_singletons_by_hand(codes)
    want = lsq.lstsq(X[k], y[k], absorb=codes[k]).coef
    given = codes if be.lazy else be.asarray(codes)
    if be.library == "jax":
        import jax

        fit = jax.jit(lambda X, y: lsq.lstsq(X, y, absorb=codes, drop_singletons=True))
        traced = jax.jit(lambda X, y, c: lsq.lstsq(X, y, absorb=c, absorb_n_groups=(30, 10), drop_singletons=True))
        with pytest.raises(ValueError, match="drop_singletons=True finds the singletons"):
            traced(be.asarray(X), be.asarray(y), given)
    else:
        fit = lambda X, y: lsq.lstsq(X, y, absorb=given, drop_singletons=True)  # noqa: E731
    r = fit(be.asarray(X), be.asarray(y))
    assert type(r.coef) is type(be.asarray(X))
    assert _rel(be.to_numpy(r.coef), want) < 1e-10
    d = lsq.diagnostics(be.asarray(X), be.asarray(y), absorb=given, drop_singletons=True)
    assert _rel(be.to_numpy(d.coef), want) < 1e-10


def test_drop_singletons_bad_input(numpy_reference):
    X, y, codes = _singleton_data(0)
    for fn in (lsq.lstsq, lsq.diagnostics, lambda *a, **kw: lsq.ridge(*a, 1.0, **kw)):
        with pytest.raises(TypeError, match="drop_singletons must be a bool"):
            fn(X, y, absorb=codes, drop_singletons="yes")
        with pytest.raises(ValueError, match="drop_singletons is used only with absorb"):
            fn(X, y, drop_singletons=True)
        with pytest.raises(ValueError, match="drops every observation"):
            fn(X, y, absorb=np.arange(M), drop_singletons=True)
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(ValueError, match="absorb takes a dense X"):
        lsq.lstsq(sparse.csr_matrix(X), y, drop_singletons=True)


def _dummy_rank(codes, factors):
    return np.linalg.matrix_rank(np.hstack([np.eye(codes[:, j].max() + 1)[codes[:, j]] for j in factors]))


def _nested_scale(codes, nested):
    """The ratio of cluster standard errors, the nested factors (by index) left out of CR1's p, to those of the
    dummy regression: sqrt((m - p_full) / (m - p_nested)), the ranks from the explicit dummies."""
    k = codes.shape[1]
    free = [j for j in range(k) if j not in nested]
    p_full, p_nested = N + _dummy_rank(codes, range(k)), N + (_dummy_rank(codes, free) if free else 1)
    return np.sqrt((M - p_full) / (M - p_nested))


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt")  # statsmodels: some dummies' variances
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("two_way", [False, True])
def test_nested_in_clusters(numpy_reference, k, two_way):
    """Clusters that nest the first factor (workers within 5 groups of workers): the correction counts the
    other factors' rank (1 where none is left), statsmodels' dummy regression scaled by the ratio of the two
    corrections; fixef_k="full" is statsmodels' own. Clusters that nest no factor: unchanged."""
    X, y, w, codes = _data(20 + k, k, weighted=True)
    outer = codes[:, 0] % 5
    groups = np.column_stack([outer, np.arange(M) % 17]) if two_way else outer
    ref = _reference(X, y, w, codes, "cluster", groups)
    kw = {"absorb": codes, "sample_weight": w, "cov_type": "cluster", "groups": groups}
    d = lsq.diagnostics(X, y, **kw)
    assert _rel(d.stderr, ref.bse[:N] * _nested_scale(codes, [0])) < 1e-6
    assert int(d.df_resid) == ref.df_resid  # the degrees of freedom count every factor
    assert _rel(lsq.diagnostics(X, y, **kw, fixef_k="full").stderr, ref.bse[:N]) < 1e-6
    loose = (codes[:, 0] * 7 + np.arange(M)) % 13
    ref = _reference(X, y, w, codes, "cluster", loose)
    assert _rel(lsq.diagnostics(X, y, **{**kw, "groups": loose}).stderr, ref.bse[:N]) < 1e-6


def test_nested_every_factor(numpy_reference):
    """Two factors, both nested in the clusters (firm within region, worker within firm): p counts 1."""
    X, y, _, codes = _data(30, 1)
    firm = codes[:, 0] // 2
    codes = np.column_stack([codes[:, 0], firm])
    region = firm // 3
    ref = _reference(X, y, None, codes[:, :1], "cluster", region)  # the same fit: firm's dummies in worker's span
    d = lsq.diagnostics(X, y, absorb=codes, cov_type="cluster", groups=region)
    assert _rel(d.stderr, ref.bse[:N] * _nested_scale(codes, [0, 1])) < 1e-6


@pytest.mark.parametrize("k", [1, 2])
def test_nested_matches_pyfixest(numpy_reference, k):
    """pyfixest's feols with CRV1 and its default ``ssc`` (nested factors left out of k), where installed: the
    cluster column named apart from the factors (pyfixest matches a fixed effect and a cluster by name too)."""
    pf = pytest.importorskip("pyfixest")
    pd = pytest.importorskip("pandas")
    X, y, _, codes = _data(40 + k, k)
    frame = pd.DataFrame({"y": y, **{f"x{i}": X[:, i] for i in range(N)}, "cl": codes[:, 0] % 5})
    frame = frame.assign(**{f"f{j}": codes[:, j] for j in range(k)})
    fe = " + ".join(f"f{j}" for j in range(k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = pf.feols(f"y ~ x0 + x1 + x2 | {fe}", data=frame, vcov={"CRV1": "cl"}, fixef_rm="none")
    d = lsq.diagnostics(X, y, absorb=codes, cov_type="cluster", groups=codes[:, 0] % 5)
    assert _rel(d.coef, ref.coef().to_numpy()) < 1e-8
    assert _rel(d.stderr, ref.se().to_numpy()) < 1e-6


def test_nested_needs_concrete_groups(be):
    """Traced (jax.jit) or lazy (Dask) groups: refused with the default fixef_k, fitted with fixef_k="full"."""
    if not be.lazy and be.library != "jax":
        pytest.skip("eager groups are concrete")
    X, y, _, codes = _data(3, 2)

    def fit(X, y, g, fixef_k):
        return lsq.diagnostics(X, y, absorb=codes, cov_type="cluster", groups=g, n_groups=SIZES[0], fixef_k=fixef_k)

    if be.library == "jax":
        import jax

        fit = jax.jit(fit, static_argnames=("fixef_k",))
    args = (be.asarray(X), be.asarray(y), be.asarray(codes[:, 0]))
    with pytest.raises(ValueError, match="fixef_k='nested' compares the cluster codes"):
        fit(*args, "nested")
    ref = _reference(X, y, None, codes, "cluster", codes[:, 0])
    assert _rel(be.to_numpy(fit(*args, "full").stderr), ref.bse[:N]) < 1e-6


def test_bad_fixef_k(numpy_reference):
    X, y, _, codes = _data(0, 1)
    for bad in ("none", True, None):
        with pytest.raises(ValueError, match="fixef_k must be 'nested' or 'full'"):
            lsq.diagnostics(X, y, absorb=codes, cov_type="cluster", groups=codes[:, 0], fixef_k=bad)


def test_estimators_absorb(be):
    """LinearRegression and Ridge take ``fit(X, y, sample_weight, absorb)``: the fixed-effects regression's
    coefficients (statsmodels' dummy regression; Ridge: the penalty on X's block only), a zero intercept,
    and ``predict`` without the fixed effects; on every backend, one target or two."""
    X, y, w, codes = _data(50, 2, weighted=True)
    ref = _reference(X, y, w, codes)
    given = codes if be.lazy else be.asarray(codes)
    reg = lsq.LinearRegression().fit(be.asarray(X), be.asarray(y), sample_weight=be.asarray(w), absorb=given)
    assert _rel(be.to_numpy(reg.coef_), ref.params[:N]) < 1e-8
    assert float(be.to_numpy(reg.intercept_)) == 0.0
    np.testing.assert_allclose(be.to_numpy(reg.predict(be.asarray(X))), X @ be.to_numpy(reg.coef_), rtol=1e-12)
    A = np.hstack([X, _dummies(codes)])
    P = np.zeros((A.shape[1],) * 2)
    P[:N, :N] = 4.0 * np.eye(N)
    Y = np.column_stack([y, y[::-1]])
    want = np.linalg.solve(A.T @ A + P, A.T @ Y)[:N].T  # scikit-learn's orientation (k, n)
    ridge = lsq.Ridge(alpha=4.0).fit(be.asarray(X), be.asarray(Y), absorb=given)
    assert _rel(be.to_numpy(ridge.coef_), want) < 1e-8


def test_estimators_absorb_refused(numpy_reference):
    X, y, _, codes = _data(0, 1)
    for est in (lsq.LinearRegression(positive=True), lsq.Ridge(positive=True)):
        with pytest.raises(ValueError, match="absorb= is not with positive=True"):
            est.fit(X, y, absorb=codes)
    with pytest.raises(ValueError, match="absorb must have shape"):
        lsq.LinearRegression().fit(X, y, absorb=codes[:-1])
    reg = lsq.LinearRegression().fit(X, y, absorb=codes)
    assert "absorb" not in reg.get_params()  # data, not a parameter
