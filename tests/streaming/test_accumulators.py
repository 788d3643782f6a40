"""NormalAccumulator and QRAccumulator: chunked fits against the in-memory ones, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from problems import cond, reference, rel_err

import lsq_backends as lsq
from lsq_backends._backend import _compat
from lsq_backends.check.backends import find_backends
from lsq_backends.check.problems import design, threshold

ACCUMULATORS = {"normal": lsq.NormalAccumulator, "qr": lsq.QRAccumulator}

CASES = {
    # name: (fit_intercept, weighted, k, alpha)
    "plain": (False, False, None, 0.0),
    "intercept": (True, False, None, 0.0),
    "weighted_multi": (True, True, 3, 0.0),
    "ridge_per_target": (True, True, 2, (0.5, 2.0)),
    "ridge_no_intercept": (False, False, None, 1.0),
}

M = 60
CHUNKINGS = {
    "whole": [M],
    "single_rows_then_rest": [1] * 6 + [0] + [M - 6],
    "even": [15] * 4,
    "ragged_with_empty": [0, 7, 1, 0, 23, 29, 0],
}


def _problem(case, n=5, seed=0, offset=3.0, kappa=30.0):
    fit_intercept, weighted, k, alpha = CASES[case]
    rng = np.random.default_rng(seed)
    X = design(rng, (M, n), kappa) + offset
    w_true = rng.standard_normal((n,) if k is None else (n, k))
    y = X @ w_true + 0.5 + 1e-2 * rng.standard_normal((M,) if k is None else (M, k))
    sw = None
    if weighted:
        sw = rng.uniform(0.5, 2.0, M)
        sw[[3, 40]] = 0.0  # zero weights are allowed, as in lstsq
    return X, y, sw, fit_intercept, alpha


def _accumulate(be, kind, X, y, sw, sizes, dtype="float64"):
    acc = ACCUMULATORS[kind]()
    start = 0
    for size in sizes:
        sl = slice(start, start + size)
        w = None if sw is None else be.asarray(sw[sl], dtype)
        out = acc.update(be.asarray(X[sl], dtype), be.asarray(y[sl], dtype), sample_weight=w)
        assert out is acc
        start += size
    assert start == X.shape[0]
    return acc


def _expected_bounds(kind, X, y, sw, fit_intercept, alpha, dtype="float64"):
    """float64 reference and a coefficient tolerance from the error bound of the method,
    with kappa measured on the centered, weighted problem."""
    ref = reference(X, y, alpha=None if np.all(np.asarray(alpha) == 0) else alpha, sw=sw, fit_intercept=fit_intercept)
    coef, _, rss, Xc = ref
    w = np.linalg.norm(coef)
    eta = float(np.sqrt(np.max(rss)) / (np.linalg.svd(Xc, compute_uv=False).max() * w))
    tol = threshold(kind, dtype, cond(Xc), *X.shape, eta)
    return ref, tol


def _fields(be, res):
    """coef, intercept, rss and rank as NumPy arrays (on Dask, in one compute of the graph)."""
    names = ("coef", "intercept", "rss", "rank")
    values = [getattr(res, name) for name in names]
    if be.lazy:
        import dask

        return {name: np.asarray(v) for name, v in zip(names, dask.compute(*values), strict=False)}
    return {name: be.to_numpy(v) for name, v in zip(names, values, strict=False)}


def _check(be, res, ref, tol, alpha, dtype="float64"):
    coef, intercept, rss, Xc = ref
    got = _fields(be, res)
    assert got["coef"].shape == coef.shape and got["intercept"].shape == intercept.shape
    assert got["rss"].shape == rss.shape and res.singular_values is None
    assert res.coef.dtype == getattr(be.xp, dtype)
    assert rel_err(got["coef"], coef) <= tol
    scale = max(np.abs(coef).max(), 1.0) * (np.abs(Xc).max() + 3.0)
    assert np.max(np.abs(got["intercept"] - intercept)) <= tol * scale
    # rss = S_yy - 2 w^T S_xy + w^T S_xx w: rounding of the statistics (~eps * S_yy), plus
    # the coefficient error (first order for ridge, whose gradient 2 alpha w is not zero).
    eps = float(np.finfo(dtype).eps)
    c = 10.0 * np.sqrt(Xc.shape[0])
    wn2, sxx = float(np.sum(coef**2)), float(np.linalg.norm(Xc, 2) ** 2)
    syy = float(np.sum((np.abs(Xc) @ np.abs(coef.reshape(Xc.shape[1], -1))) ** 2)) + float(np.max(rss))
    atol = c * eps * (syy + wn2 * sxx) + 2 * np.max(alpha) * wn2 * tol + tol**2 * wn2 * sxx
    np.testing.assert_allclose(got["rss"], rss, rtol=c * eps, atol=atol)
    return got


# Each case with two chunkings, each chunking with several cases (any chunking of every case:
# the hypothesis test below, in the numpy session; JAX compiles an update per chunk shape).
PAIRS = [
    (case, chunking)
    for i, case in enumerate(sorted(CASES))
    for chunking in (sorted(CHUNKINGS)[i % 4], sorted(CHUNKINGS)[(i + 2) % 4])
]


@pytest.mark.parametrize(("case", "chunking"), PAIRS)
@pytest.mark.parametrize("kind", sorted(ACCUMULATORS))
def test_matches_in_memory_reference(be, kind, case, chunking):
    X, y, sw, fit_intercept, alpha = _problem(case)
    acc = _accumulate(be, kind, X, y, sw, CHUNKINGS[chunking])
    res = acc.solve(alpha if np.ndim(alpha) == 0 else be.asarray(alpha), fit_intercept=fit_intercept)
    ref, tol = _expected_bounds(kind, X, y, sw, fit_intercept, alpha)
    got = _check(be, res, ref, tol, alpha)
    assert got["rank"] == X.shape[1]
    # O(p^2) state, whatever the rows: weight, count, mean (p,), statistic (p, p).
    p = X.shape[1] + (1 if y.ndim == 1 else y.shape[1])
    assert tuple(acc.state.stat.shape) == (p, p) and tuple(acc.state.mean.shape) == (p,)


@pytest.mark.parametrize("kind", sorted(ACCUMULATORS))
def test_agrees_with_lstsq_and_ridge(be, kind):
    """Same answers as the in-memory functions of the same backend, float32 included."""
    X, y, sw, _, _ = _problem("weighted_multi")
    lstsq, ridge = lsq.lstsq, lsq.ridge
    if be.library == "jax":  # one compilation instead of one per eager operation
        import jax

        lstsq = jax.jit(lstsq, static_argnames=("method", "fit_intercept"))
        ridge = jax.jit(ridge, static_argnames=("method", "fit_intercept"))
    # On JAX each dtype compiles the in-memory solvers again (~10 s each on this machine);
    # float32 accumulation on JAX is the same code as on the other backends.
    for dtype in ("float64",) if be.library == "jax" else ("float64", "float32"):
        acc = _accumulate(be, kind, X, y, sw, CHUNKINGS["ragged_with_empty"], dtype)
        args = (be.asarray(X, dtype), be.asarray(y, dtype))
        kw = {"sample_weight": be.asarray(sw, dtype), "fit_intercept": True}
        ref, tol = _expected_bounds(kind, X, y, sw, True, 0.0, dtype)
        pairs = [(acc.solve(), lstsq(*args, method=kind, **kw))]
        if dtype == "float64":  # (float32 ridge adds a compilation on JAX and nothing new)
            pairs.append((acc.solve(3.0), ridge(*args, 3.0, method=kind, **kw)))
        for res, mem in pairs:
            assert res.coef.dtype == mem.coef.dtype
            res, mem = be.finish((res, mem))  # Dask: the two graphs in one compute
            assert rel_err(be.to_numpy(res.coef), be.to_numpy(mem.coef)) <= 2 * tol
            np.testing.assert_allclose(
                be.to_numpy(res.intercept), be.to_numpy(mem.intercept), rtol=2 * tol, atol=2 * tol
            )


@pytest.mark.parametrize("kind", sorted(ACCUMULATORS))
def test_large_offset_keeps_digits(be, kind):
    """Columns around 1e8 with spread 1: the pairwise (centered) statistics keep the digits that
    the naive uncentered Gram matrix of [1, X] loses."""
    rng = np.random.default_rng(1)
    m, n = 400, 3
    Xs = rng.standard_normal((m, n))
    X = 1e8 + Xs
    y = Xs @ np.array([1.0, -2.0, 0.5]) + 7.0 + 0.1 * rng.standard_normal(m)
    ref = reference(X, y, fit_intercept=True)
    acc = _accumulate(be, kind, X, y, None, [1, 99, 0, 150, 150])
    res = acc.solve()
    kappa = cond(ref[3])  # ~1: the centered problem is perfectly conditioned
    tol = threshold(kind, "float64", kappa, m, n, 0.1)
    assert rel_err(be.to_numpy(res.coef), ref[0]) <= tol
    # The naive way: sums of [1, x]^T [1, x] over chunks, then solve. It has no digits left.
    A = np.concatenate([np.ones((m, 1)), X], axis=1)
    naive = np.linalg.lstsq(A.T @ A, A.T @ y, rcond=None)[0][1:]
    assert rel_err(naive, ref[0]) > 1e-3 > 1e6 * tol


@pytest.mark.parametrize("kind", sorted(ACCUMULATORS))
def test_merge_is_order_invariant(be, kind):
    X, y, sw, fit_intercept, _ = _problem("weighted_multi")
    parts = [(0, 9), (9, 10), (10, 10), (10, 41), (41, 60)]
    accs = [_accumulate(be, kind, X[a:b], y[a:b], sw[a:b], [b - a]) for a, b in parts]
    sequential = _accumulate(be, kind, X, y, sw, [b - a for a, b in parts]).solve()
    states = [acc.state for acc in accs]
    before = be.to_numpy(accs[0].state.stat).copy()
    left = accs[0].copy()
    for acc in accs[1:]:
        assert left.merge(acc) is left  # in place, as update
    tree = (accs[4].copy().merge(accs[2])).merge(accs[1].copy().merge(accs[3].copy().merge(accs[0])))
    ref, tol = _expected_bounds(kind, X, y, sw, fit_intercept, 0.0)
    for res in (left.solve(), tree.solve()):
        _check(be, res, ref, tol, 0.0)
        # Same data, different rounding only: the two agree far inside the error bound.
        np.testing.assert_allclose(be.to_numpy(res.coef), be.to_numpy(sequential.coef), rtol=tol, atol=tol)
    # The merged-in operands and the originals of the copies are left alone.
    assert all(acc.state is state for acc, state in zip(accs, states, strict=False))
    np.testing.assert_array_equal(be.to_numpy(accs[0].state.stat), before)
    assert lsq.NormalAccumulator().merge(lsq.NormalAccumulator()).state is None


@pytest.mark.parametrize("kind", sorted(ACCUMULATORS))
def test_merge_is_in_place_like_update(be, kind):
    """``a.merge(b)`` adds b's rows to a, as ``a.update(chunk)`` adds a chunk's (written like
    an update, it used to return a new accumulator and leave a without b's rows); ``b`` and
    the original of a copy are unchanged."""
    X, y, sw, fit_intercept, _ = _problem("weighted_multi")
    ref, tol = _expected_bounds(kind, X, y, sw, fit_intercept, 0.0)
    a = _accumulate(be, kind, X[:25], y[:25], sw[:25], [25])
    b = _accumulate(be, kind, X[25:], y[25:], sw[25:], [10, 25])
    a_alone, b_state = a.copy(), b.state
    assert a.merge(b) is a
    _check(be, a.solve(fit_intercept=fit_intercept), ref, tol, 0.0)
    assert b.state is b_state
    # The copy taken before holds a's own rows only: merging into a did not reach it, and
    # merging into the copy does not reach a.
    a_ref, a_tol = _expected_bounds(kind, X[:25], y[:25], sw[:25], fit_intercept, 0.0)
    _check(be, a_alone.solve(fit_intercept=fit_intercept), a_ref, a_tol, 0.0)
    merged_state = a.state
    a_alone.copy().merge(b)
    assert a.state is merged_state
    # Empty operands: merging into an empty accumulator takes the other's rows (later updates
    # of either do not reach the other); merging an empty one changes nothing.
    empty = ACCUMULATORS[kind]()
    assert empty.merge(b) is empty and empty.state is b.state
    empty.update(be.asarray(X[:5]), be.asarray(y[:5]), sample_weight=be.asarray(sw[:5]))
    assert b.state is b_state
    assert a.merge(ACCUMULATORS[kind]()).state is merged_state


@pytest.mark.parametrize("kind", sorted(ACCUMULATORS))
def test_rank_deficient_minimum_norm(be, kind):
    """A duplicated column and a constant one: the minimum-norm answer, the rank, no NaN."""
    rng = np.random.default_rng(2)
    base = rng.standard_normal((50, 3))
    X = np.concatenate([base, base[:, :1], np.full((50, 1), 4.0)], axis=1)
    y = base @ np.array([1.0, 2.0, -1.0]) + 0.01 * rng.standard_normal(50)
    for fit_intercept, rank in ((True, 3), (False, 4)):
        coef, intercept, _, _ = reference(X, y, fit_intercept=fit_intercept)
        acc = _accumulate(be, kind, X, y, None, [20, 0, 1, 29])
        res = acc.solve(fit_intercept=fit_intercept)
        got = be.to_numpy(res.coef)
        assert np.all(np.isfinite(got)) and int(be.to_numpy(res.rank)) == rank
        # Normal: the dropped direction costs eps*kappa**2-level errors (kappa ~ 10 here).
        np.testing.assert_allclose(got, coef, atol=1e-9)
        np.testing.assert_allclose(be.to_numpy(res.intercept), intercept, atol=1e-9)


def test_no_features_and_errors(be):
    xp = be.xp
    X, y = np.ones((4, 0)), np.arange(4.0)
    res = lsq.NormalAccumulator().update(be.asarray(X), be.asarray(y)).solve()
    assert res.coef.shape == (0,) and float(be.to_numpy(res.intercept)) == 1.5
    np.testing.assert_allclose(be.to_numpy(res.rss), 5.0)
    acc = lsq.QRAccumulator()
    with pytest.raises(ValueError, match="no data"):
        acc.solve()
    acc.update(be.asarray(np.ones((3, 2))), be.asarray(np.ones(3)))
    with pytest.raises(ValueError, match="2 columns"):
        acc.update(be.asarray(np.ones((3, 3))), be.asarray(np.ones(3)))
    with pytest.raises(ValueError, match=r"shape \(m,\)"):
        acc.update(be.asarray(np.ones((3, 2))), be.asarray(np.ones((3, 1))))
    with pytest.raises(TypeError, match="float32"):
        acc.update(be.asarray(np.ones((3, 2)), "float32"), be.asarray(np.ones(3), "float32"))
    with pytest.raises(ValueError, match="shape"):
        acc.update(be.asarray(np.ones((2, 3, 2))), be.asarray(np.ones((2, 3))))
    with pytest.raises(TypeError, match="merge"):
        acc.merge(lsq.NormalAccumulator())
    with pytest.raises(ValueError, match="rcond"):
        acc.solve(rcond=2.0)
    if not _compat.is_lazy(be.asarray(np.ones(1))):  # values are read on eager arrays only
        with pytest.raises(ValueError, match="alpha"):
            acc.solve(-1.0)
        with pytest.raises(ValueError, match="NaN"):
            acc.update(be.asarray(np.full((3, 2), np.nan)), be.asarray(np.ones(3)))
        with pytest.raises(ValueError, match="non-negative"):
            acc.update(be.asarray(np.ones((3, 2))), be.asarray(np.ones(3)), sample_weight=be.asarray(-np.ones(3)))
        zero = lsq.NormalAccumulator().update(
            be.asarray(np.ones((3, 2))), be.asarray(np.ones(3)), sample_weight=be.asarray(np.zeros(3))
        )
        with pytest.raises(ValueError, match="positive total weight"):
            zero.solve()
    # Integer chunks take the accumulator's dtype; the failed updates above changed nothing.
    acc.update(be.asarray(np.ones((2, 2), dtype=np.int64)), be.asarray(np.ones(2, dtype=np.int64)))
    assert int(be.to_numpy(acc.state.count)) == 5
    if be.library != "numpy":
        with pytest.raises(TypeError, match="numpy"):
            acc.update(np.ones((3, 2)), np.ones(3))
    assert xp is not None


def test_strict_device(strict_device):
    """Every array made by an update, merge or solve lands on the chunks' device; a chunk on
    another device is a clear error (array-api-strict raises on any silent mixing)."""
    be = strict_device
    X, y, sw, _, _ = _problem("weighted_multi")
    for kind in ACCUMULATORS:
        acc = _accumulate(be, kind, X, y, sw, [10, 0, 50])
        other = _accumulate(be, kind, X, y, sw, [1, 59])
        for res in (
            acc.solve(),
            acc.copy().merge(other).solve(0.5, fit_intercept=False),
            acc.solve(fit_intercept=False),
        ):
            for field in (res.coef, res.intercept, res.rss, res.rank):
                assert field.device == be.device
        with pytest.raises(ValueError, match="device"):
            acc.update(be.xp.asarray(X[:3]), be.xp.asarray(y[:3]))
        ref, tol = _expected_bounds(kind, X, y, sw, True, 0.0)
        _check(be, acc.solve(), ref, tol, 0.0)


@pytest.mark.parametrize("kind", sorted(ACCUMULATORS))
def test_jax_jit_step_and_scan(request, kind):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax backend's session")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    X, y, sw, _, _ = _problem("weighted_multi")
    acc = ACCUMULATORS[kind]().update(jnp.asarray(X[:12]), jnp.asarray(y[:12]), sample_weight=jnp.asarray(sw[:12]))
    step = jax.jit(acc.step)
    state = step(acc.state, jnp.asarray(X[12:36]), jnp.asarray(y[12:36]), jnp.asarray(sw[12:36]))
    state = step(state, jnp.asarray(X[36:]), jnp.asarray(y[36:]), jnp.asarray(sw[36:]))
    eager = _accumulate_jax(kind, X, y, sw)
    for a, b in zip(state, eager.state, strict=False):
        if kind == "normal":  # the QR factor is unique only up to the signs of its rows
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    # lax.scan over equal chunks, then a jitted solve.
    Xs, ys, ws = (jnp.asarray(a[12:]).reshape((4, 12) + a.shape[1:]) for a in (X, y, sw))
    final, _ = jax.lax.scan(lambda s, c: (acc.step(s, *c), None), acc.state, (Xs, ys, ws))
    res = jax.jit(lambda s: acc.with_state(s).solve())(final)
    np.testing.assert_allclose(np.asarray(res.coef), np.asarray(eager.solve().coef), rtol=1e-10)
    ref, tol = _expected_bounds(kind, X, y, sw, True, 0.0)
    assert rel_err(np.asarray(res.coef), ref[0]) <= tol


def _accumulate_jax(kind, X, y, sw):
    import jax.numpy as jnp

    acc = ACCUMULATORS[kind]()
    for a, b in ((0, 12), (12, 36), (36, 60)):
        acc.update(jnp.asarray(X[a:b]), jnp.asarray(y[a:b]), sample_weight=jnp.asarray(sw[a:b]))
    return acc


def _chunk_sizes(draw_cuts, m):
    cuts = sorted(draw_cuts)
    return [b - a for a, b in zip([0, *cuts], [*cuts, m], strict=False)]


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    given = None

if given is not None:
    # numpy_reference only decides whether this runs (numpy session): safe to share.
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        cuts=st.lists(st.integers(0, M), max_size=8),
        kind=st.sampled_from(sorted(ACCUMULATORS)),
        case=st.sampled_from(sorted(CASES)),
    )
    def test_any_chunking_numpy(numpy_reference, cuts, kind, case):
        """Any split of the rows (repeated cuts give empty chunks) gives the in-memory answer."""
        be = find_backends(["numpy"])[0][0]
        X, y, sw, fit_intercept, alpha = _problem(case)
        acc = _accumulate(be, kind, X, y, sw, _chunk_sizes(cuts, M))
        ref, tol = _expected_bounds(kind, X, y, sw, fit_intercept, alpha)
        _check(
            be,
            acc.solve(alpha if np.ndim(alpha) == 0 else np.asarray(alpha), fit_intercept=fit_intercept),
            ref,
            tol,
            alpha,
        )


def test_rss_of_near_exact_fit(be):
    """QR's rss is a sum of squares of the factor's entries: its error is first order in the
    residual, ~eps * ||y|| * ||r|| (as for a residual computed from the data), even when the
    fit explains all but 1e-15 of y's variance; the normal statistics' rss has an absolute
    error ~eps * S_yy (documented) and is never negative. Inputs are left untouched."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((80, 4)) + 2.0
    y = X @ np.array([1.0, -1.0, 2.0, 0.5]) + 1e-7 * rng.standard_normal(80)
    for a in (X, y):
        a.setflags(write=False)  # a write into NumPy chunks would raise
    rss = reference(X, y, fit_intercept=True)[2]
    syy = float(np.sum((y - y.mean()) ** 2))
    c, eps = 10 * np.sqrt(80), float(np.finfo(np.float64).eps)
    res_qr = _accumulate(be, "qr", X, y, None, [30, 1, 49]).solve()
    res_n = _accumulate(be, "normal", X, y, None, [30, 1, 49]).solve()
    assert abs(float(be.to_numpy(res_qr.rss)) - rss) <= 2 * c * eps * np.sqrt(syy * rss)
    rss_n = float(be.to_numpy(res_n.rss))
    assert rss_n >= 0 and abs(rss_n - rss) <= c * eps * syy
    assert syy / rss > 1e12  # the regime where the normal statistics' rss is noise
