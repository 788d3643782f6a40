"""method="lsmr": against scipy.sparse.linalg.lsmr iteration for iteration (its own test
problems, from scipy/sparse/linalg/_isolve/tests/test_lsmr.py, and random ones), and against the
direct solution within the error its stopping rule allows (``test_lsqr.error_bound``: LSMR's
tests have LSQR's form, with its ``||X||`` estimate below the Frobenius norm the bound uses)."""

from __future__ import annotations

import numpy as np
import pytest
from problems import check_within_bound

import lsq_backends as lsq
from lsq_backends.check.problems import design

sl = pytest.importorskip("scipy.sparse.linalg")


def lower_bidiagonal(m, n):
    """SciPy's ``lowerBidiagonalMatrix``: the leading m x n block of [1; 1 2; 2 3; ...], dense."""
    A = np.zeros((m, n))
    for i in range(min(m, n)):
        A[i, i] = i + 1
        if i + 1 < m:
            A[i + 1, i] = i + 1
    return A


def scipy_g(seed=0, n=35):
    """SciPy's test matrix G (identity plus five symmetric rank-one terms and random
    diagonal noise) and right-hand side b, from a seeded generator."""
    rng = np.random.default_rng(seed)
    G = np.eye(n)
    for _ in range(5):
        gg = rng.normal(size=n)
        hh = gg * gg.T
        G += (hh + hh.T) * 0.5
        G += rng.normal(size=n) * rng.normal(size=n)
    return G, rng.normal(size=n)


def _fit(be, X, y, alpha=None, **kw):
    args = (be.asarray(X), be.asarray(y))
    if alpha is None:
        return lsq.lstsq(*args, method="lsmr", **kw)
    return lsq.ridge(*args, alpha, method="lsmr", fit_intercept=False, **kw)


def _rounding_spread(X, y, itn, damp=0.0, x0=None):
    """How far SciPy's own answer moves when X's entries move by an ulp (four draws): the
    rounding noise of the trajectory. Near the end of an exhausted Krylov space, or on
    ill-conditioned X, the last updates divide by rounding noise, and two runs that differ
    only in the order of a sum part by far more than eps (SciPy's dense and sparse runs of
    its 20 x 10 bidiagonal test matrix: 3.6e-8)."""
    rng = np.random.default_rng(99)
    kw = dict(damp=damp, x0=x0, atol=0.0, btol=0.0, conlim=0.0, maxiter=itn)  # x after itn steps
    x = sl.lsmr(X, y, **kw)[0]
    spread = 0.0
    for _ in range(4):
        Xp = X * (1 + np.finfo(float).eps * rng.choice([-1.0, 1.0], X.shape))
        spread = max(spread, float(np.abs(sl.lsmr(Xp, y, **kw)[0] - x).max()))
    return spread


def _same_as_scipy(be, res, X, Y, alpha=None, x0=None, **kw):
    """Every column: SciPy's count and stop reason, and its x to rounding: within 10 times
    the spread of SciPy's own iterates (at that count) under ulp changes of X, plus 1e-13
    relative."""
    coef, n_iter, istop = (be.to_numpy(a) for a in (res.coef, res.n_iter, res.istop))
    cols = Y.shape[1] if Y.ndim == 2 else None
    for j in range(cols or 1):
        y = Y[:, j] if cols else Y
        start = None if x0 is None else (x0[:, j] if cols else x0)
        damp = np.sqrt(alpha[j] if np.ndim(alpha) else (alpha or 0.0))
        x, stop, itn = sl.lsmr(X, y, damp=damp, x0=start, **kw)[:3]
        got = (coef[:, j], n_iter[j], istop[j]) if cols else (coef, n_iter, istop)
        assert (int(got[1]), int(got[2])) == (itn, stop), f"column {j}"
        tol = 10 * _rounding_spread(X, y, itn, damp, start) + 1e-13 * np.abs(x).max()
        np.testing.assert_allclose(got[0], x, rtol=0, atol=tol)


@pytest.fixture
def eager(be):
    if be.lazy:
        pytest.skip("lsmr on Dask computes per block of iterations (slow here): see test_dask")
    return be


SCIPY_CASES = {
    "identity_zero": (np.eye(10), np.zeros(10)),
    "identity_ones": (np.eye(10), np.ones(10)),
    "identity_ramp": (np.eye(10), np.arange(10, 0, -1.0)),
    "bidiagonal_tall": (lower_bidiagonal(20, 10), lower_bidiagonal(20, 10) @ np.arange(10, 0, -1.0)),
    "bidiagonal_wide": (lower_bidiagonal(10, 20), lower_bidiagonal(10, 20) @ np.arange(20, 0, -1.0)),
    "row": (np.array([[1.0, 2.0]]), np.array([3.0])),
    "ones_plus_4i": (4 * np.eye(10) + np.ones((10, 10)), (4 * np.eye(10) + np.ones((10, 10))) @ np.arange(10, 0, -1.0)),
}


@pytest.mark.parametrize("case", list(SCIPY_CASES))
def test_scipy_test_problems(eager, case):
    """SciPy's compatible systems, at its defaults (atol = btol = 1e-6, conlim 1e8, maxiter
    min(m, n)): the same count and stop reason, and x the true solution to 1e-5 as there.
    The bidiagonal systems stop at the last step of an exhausted Krylov space, where the
    rounding spread (``_rounding_spread``) is ~1e-7 (tall) and ~1e-4 (wide)."""
    X, y = SCIPY_CASES[case]
    m, n = X.shape
    kw = dict(atol=1e-6, btol=1e-6, conlim=1e8, max_iter=min(m, n))
    res = _fit(eager, X, y, **kw)
    _same_as_scipy(eager, res, X, y, atol=1e-6, btol=1e-6, conlim=1e8, maxiter=min(m, n))
    if case != "bidiagonal_wide":  # a consistent square or tall system: x is the solution
        np.testing.assert_allclose(eager.to_numpy(res.coef), np.linalg.lstsq(X, y)[0], atol=1e-5)


@pytest.mark.parametrize("alpha", [None, 0.5])
def test_scipy_g_and_warm_start(eager, alpha):
    """SciPy's G (identity plus a rank-one row term: a Krylov space of dimension ~2) and its
    ``testInitialization``: from zero and warm-started from SciPy's one-iteration result.
    LSMR stops as the space runs out, on estimates at rounding level, so the count may move
    by one with the library's summation order (as SciPy's own test allows between its cold
    and warm starts); the stop reason is SciPy's, and x within the stopping rule's bound of
    the solution. A penalty with a warm start iterates the augmented system: the ridge
    solution (where SciPy's recurrence would damp the correction instead)."""
    G, b = scipy_g()
    kw = dict(atol=1e-10, btol=1e-10, max_iter=200)
    x0 = sl.lsmr(G, b, maxiter=1)[0]
    for start in (None, x0):
        res = _fit(eager, G, b, alpha, x0=None if start is None else eager.asarray(start), **kw)
        if alpha is None or start is None:
            ref = sl.lsmr(G, b, damp=np.sqrt(alpha or 0.0), x0=start, atol=1e-10, btol=1e-10, conlim=0)
            assert int(eager.to_numpy(res.istop)) == ref[1]
            assert abs(int(eager.to_numpy(res.n_iter)) - ref[2]) <= 1
        check_within_bound(res, eager, G, b, alpha=alpha, atol=1e-10, btol=1e-10)


@pytest.mark.parametrize("shape", [(40, 8), (12, 30)])
@pytest.mark.parametrize("alpha", [None, 0.3])
def test_random_same_as_scipy(eager, shape, alpha):
    """Several targets in one call (one per-column recurrence each), cond 5: SciPy's counts,
    stop reasons and iterates, column by column; warm starts too (without a penalty)."""
    rng = np.random.default_rng(1)
    X = design(rng, shape, 5.0)
    Y = rng.standard_normal((shape[0], 3))
    kw = dict(atol=1e-9, btol=1e-9, max_iter=3 * min(shape))
    alphas = None if alpha is None else np.array([alpha, 2 * alpha, 0.0])
    args = {} if alpha is None else {"per_target": True}
    a = None if alphas is None else eager.asarray(alphas)
    res = _fit(eager, X, Y, a, **kw, **args)
    _same_as_scipy(eager, res, X, Y, alphas, atol=1e-9, btol=1e-9, maxiter=3 * min(shape), conlim=0)
    if alpha is None:
        x0 = rng.standard_normal((shape[1], 3))
        res = _fit(eager, X, Y, x0=eager.asarray(x0), **kw)
        _same_as_scipy(eager, res, X, Y, x0=x0, atol=1e-9, btol=1e-9, maxiter=3 * min(shape), conlim=0)


def test_conlim_and_max_iter(eager):
    """istop 3 (conlim) and 7 (max_iter) as SciPy, with its iterate at that point."""
    rng = np.random.default_rng(2)
    X = design(rng, (200, 50), 1e4)
    y = rng.standard_normal(200)
    for c in (1.0, 1e3):  # at 1e3 X an estimate started wrong (min rbar before it is seen) stops at once
        res = _fit(eager, c * X, y, conlim=10.0)  # stops at 9 iterations, with a spread of 1.6e-12
        _same_as_scipy(eager, res, c * X, y, conlim=10.0, maxiter=200)
        assert int(eager.to_numpy(res.istop)) == 3
    res = _fit(eager, X, y, max_iter=4)
    _same_as_scipy(eager, res, X, y, conlim=0, maxiter=4)
    assert int(eager.to_numpy(res.istop)) == 7


def test_small_scale_does_not_read_as_ill_conditioned(eager):
    """X of norm ~1e-20 (inside float64's range, left unscaled): LSMR's condition estimate is
    scale-free from its first iteration, so the fit converges as on X itself (SciPy's, whose
    first estimate compares X's scale with 1, stops there at istop 3 with the first iterate)."""
    rng = np.random.default_rng(8)
    X, w = design(rng, (40, 3), 3.0), np.array([1.0, 2.0, 3.0])
    y = X @ w + 0.1 * rng.standard_normal(40)
    want = np.linalg.lstsq(X, y, rcond=None)[0]
    for c in (1e-20, 1e-100):
        res = _fit(eager, c * X, y, atol=1e-12, btol=1e-12)
        assert int(eager.to_numpy(res.istop)) in (1, 2)
        np.testing.assert_allclose(c * eager.to_numpy(res.coef), want, rtol=1e-9)


@pytest.mark.parametrize(
    ("shape", "k", "dtype"), [((80, 12), None, "float64"), ((15, 40), 2, "float64"), ((80, 12), 2, "float32")]
)
def test_within_bound(eager, shape, k, dtype):
    """Intercept, weights and a per-target penalty: within the stopping rule's bound of the
    direct solution, at the default tolerances (100 ulps in float32)."""
    rng = np.random.default_rng(3)
    X = design(rng, shape, 20.0)
    y = rng.standard_normal((shape[0],) if k is None else (shape[0], k))
    sw = np.linspace(0.5, 2.0, shape[0])
    args = [eager.asarray(a, dtype) for a in (X, y)]
    tol = 1e-6 if dtype == "float64" else 100 * float(np.finfo(np.float32).eps)
    res = lsq.lstsq(*args, method="lsmr", fit_intercept=True, sample_weight=eager.asarray(sw, dtype))
    assert res.coef.dtype == args[0].dtype and tuple(res.istop.shape) == (() if k is None else (k,))
    check_within_bound(res, eager, X, y, sw=sw, fit_intercept=True, atol=tol, btol=tol, dtype=np.dtype(dtype))
    alpha = np.array([0.1, 5.0])[: 1 if k is None else k]
    a = eager.asarray(alpha, dtype)
    res = lsq.ridge(*args, a if k else a[0], method="lsmr", per_target=k is not None, atol=tol, btol=tol)
    check_within_bound(res, eager, X, y, alpha=alpha if k else alpha[0], fit_intercept=True, atol=tol, btol=tol,
                       dtype=np.dtype(dtype))  # fmt: skip


def test_zero_target_and_stack(eager):
    """A zero target stops at once (istop 0, W = 0) beside a running one; a stack of problems
    runs one recurrence per problem and column."""
    rng = np.random.default_rng(4)
    X = design(rng, (30, 6), 10.0)
    Y = np.stack([rng.standard_normal(30), np.zeros(30)], axis=1)
    res = lsq.lstsq(eager.asarray(X), eager.asarray(Y), method="lsmr")
    assert eager.to_numpy(res.istop).tolist()[1] == 0 and eager.to_numpy(res.n_iter).tolist()[1] == 0
    np.testing.assert_array_equal(eager.to_numpy(res.coef)[:, 1], 0.0)
    Xs = np.stack([design(rng, (30, 6), 3.0) for _ in range(3)])
    ys = rng.standard_normal((3, 30))
    res = lsq.lstsq(eager.asarray(Xs), eager.asarray(ys), method="lsmr", atol=1e-10, btol=1e-10)
    for i in range(3):
        x, stop, itn = sl.lsmr(Xs[i], ys[i], atol=1e-10, btol=1e-10, conlim=0, maxiter=24)[:3]
        assert (int(eager.to_numpy(res.n_iter)[i]), int(eager.to_numpy(res.istop)[i])) == (itn, stop)
        np.testing.assert_allclose(eager.to_numpy(res.coef)[i], x, rtol=1e-10)


def test_dask_warm_start(be):
    """On Dask (the state persisted every 10 iterations): a warm-started fit with a penalty per
    target stops where NumPy's does, with its coefficients, and stays a Dask array."""
    if not be.lazy:
        pytest.skip("Dask only")
    rng = np.random.default_rng(5)
    arrays = design(rng, (30, 6), 3.0), rng.standard_normal((30, 2)), np.array([0.5, 0.0]), np.ones((6, 2))
    kw = dict(method="lsmr", per_target=True, atol=1e-8, btol=1e-8)
    got, want = (
        lsq.ridge(*(conv(a) for a in arrays[:3]), x0=conv(arrays[3]), **kw) for conv in (be.asarray, np.asarray)
    )
    assert type(got.coef) is type(be.asarray(arrays[0]))
    assert be.to_numpy(got.istop).tolist() == want.istop.tolist()
    np.testing.assert_allclose(be.to_numpy(got.coef), want.coef, rtol=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "lsqr", "conlim": 1e8}, "conlim apply to method='lsmr' only"),
        ({"method": "qr", "x0": np.zeros(3)}, "x0 apply to method='lsmr' only"),
        ({"method": "lsmr", "conlim": 0.0}, "conlim must be"),
        ({"method": "lsmr", "conlim": True}, "conlim must be"),
        ({"method": "lsmr", "max_iter": 0}, "max_iter must be"),
        ({"method": "lsmr", "x0": np.zeros(4)}, r"x0 must have shape \(3,\)"),
        ({"method": "lsmr", "x0": np.array([0.0, np.nan, 0.0])}, "x0 contains NaN"),
        ({"method": "lsmr", "refine": 1}, "refine applies to the direct methods"),
        ({"method": "lsmr", "rcond": 0.1}, "method='lsmr' estimates no singular values"),
        ({"method": "lsqr", "rcond": 0.1}, "method='lsqr' estimates no singular values"),
    ],
)
def test_bad_options(kwargs, match):
    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((10, 3)), rng.standard_normal(10)
    with pytest.raises(ValueError, match=match):
        lsq.lstsq(X, y, **kwargs)
    if "refine" not in kwargs and "rcond" not in kwargs:  # ridge takes neither
        with pytest.raises(ValueError, match=match):
            lsq.ridge(X, y, 1.0, **kwargs)
    with pytest.raises(ValueError, match="alpha path needs a direct method"):
        lsq.ridge(X, y, np.array([0.1, 1.0]), method="lsmr")


def test_stays_on_device(strict_device):
    rng = np.random.default_rng(7)
    X, y = rng.standard_normal((20, 30)), rng.standard_normal((20, 2))
    Xd, yd = strict_device.asarray(X), strict_device.asarray(y)
    sw = strict_device.asarray(np.linspace(0.5, 1.5, 20))
    x0 = strict_device.asarray(np.ones((30, 2)))
    fits = (
        lsq.lstsq(Xd, yd, method="lsmr", fit_intercept=True, sample_weight=sw, x0=x0),
        lsq.ridge(Xd, yd, strict_device.asarray([0.1, 1.0]), method="lsmr", per_target=True, x0=x0),
    )
    assert all(f.device == strict_device.device for r in fits for f in r if f is not None)


def test_jit_vmap(request):
    """Under jax.jit (x0 traced, conlim static) and vmap: the eager fit's counts and stops."""
    jax = pytest.importorskip("jax") if "jax" in request.config._lsq_backends else pytest.skip("jax session only")
    jnp = jax.numpy
    rng = np.random.default_rng(8)
    X, y = design(rng, (40, 70), 3.0), rng.standard_normal((40, 2))
    x0 = rng.standard_normal((70, 2))
    static = ("method", "fit_intercept", "atol", "btol", "max_iter", "per_target", "conlim")
    fit = jax.jit(lsq.ridge, static_argnames=static)
    for kw in ({"atol": 1e-9, "btol": 1e-9}, {"max_iter": 4}):
        traced = fit(jnp.asarray(X), jnp.asarray(y), jnp.asarray([0.0, 2.0]), method="lsmr", per_target=True,
                     x0=jnp.asarray(x0), **kw)  # fmt: skip
        eager = lsq.ridge(X, y, np.array([0.0, 2.0]), method="lsmr", per_target=True, x0=x0, **kw)
        np.testing.assert_array_equal(np.asarray(traced.istop), eager.istop)
        np.testing.assert_array_equal(np.asarray(traced.n_iter), eager.n_iter)
        np.testing.assert_allclose(np.asarray(traced.coef), eager.coef, rtol=1e-9, atol=1e-12)
    Xs = jnp.stack([jnp.asarray(X), 0.5 * jnp.asarray(X)[:, ::-1]])
    ys = jnp.asarray(y.T)
    n_iter = jax.jit(jax.vmap(lambda a, b: lsq.lstsq(a, b, method="lsmr").n_iter))(Xs, ys)
    want = [int(lsq.lstsq(np.asarray(a), np.asarray(b), method="lsmr").n_iter) for a, b in zip(Xs, ys, strict=True)]
    assert np.asarray(n_iter).tolist() == want
