"""nnls and positive=True: against scipy.optimize.nnls (Lawson and Hanson's method, the same
active set), the KKT conditions, jit/vmap, convergence reporting and input checks."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq

so = pytest.importorskip("scipy.optimize")

EPS = {"float64": np.finfo(np.float64).eps, "float32": np.finfo(np.float32).eps}


def _problem(rng, m, n, k, mix=0.3):
    """Correlated columns, coefficients of both signs: the active set must drop some."""
    B = np.eye(n) + mix * rng.standard_normal((n, n))
    X = rng.standard_normal((m, n)) @ B
    Y = X @ rng.standard_normal((n, k)) + 0.1 * rng.standard_normal((m, k))
    return X, Y


def _scipy(X, Y, alpha=0.0, sw=None, fit_intercept=False):
    """Reference: SciPy's nnls per column on the centered, weighted (and augmented) data."""
    w = np.ones(X.shape[0]) if sw is None else sw
    if fit_intercept:
        X = X - (w @ X) / w.sum()
        Y = Y - (w @ Y) / w.sum()
    X, Y = np.sqrt(w)[:, None] * X, np.sqrt(w)[:, None] * Y
    n = X.shape[1]
    alphas = np.broadcast_to(np.asarray(alpha, dtype=float), (Y.shape[1],))
    cols = []
    for j in range(Y.shape[1]):
        A = np.vstack([X, np.sqrt(alphas[j]) * np.eye(n)])
        cols.append(so.nnls(A, np.concatenate([Y[:, j], np.zeros(n)]))[0])
    return np.stack(cols, axis=1), X


def _bound(Xw, coef, dtype):
    """Error bound on the coefficients: the Gram route's eps * cond(X_P)**2 (before its
    refinement step) on the columns kept, times 10, relative to max |coef|."""
    kept = np.any(coef > 0, axis=1)
    s = np.linalg.svd(Xw[:, kept], compute_uv=False) if kept.any() else np.ones(1)
    return 10 * EPS[dtype] * (s[0] / s[-1]) ** 2 * max(np.abs(coef).max(), 1.0)


@pytest.mark.parametrize("shape", [(60, 8, 3), (200, 30, 2), (25, 40, 2)])
def test_matches_scipy(be, shape):
    rng = np.random.default_rng(sum(shape))
    X, Y = _problem(rng, *shape)
    ref, Xw = _scipy(X, Y)
    r = lsq.nnls(be.asarray(X), be.asarray(Y))
    coef = be.to_numpy(r.coef)
    bound = _bound(Xw, ref, "float64")
    assert bound < 1e-8  # well posed: the comparison below is at least that tight
    np.testing.assert_allclose(coef, ref, rtol=0, atol=bound)
    assert (coef >= 0).all() and ((coef > 0) == (ref > 0)).all()
    assert be.to_numpy(r.converged).all()
    assert (be.to_numpy(r.n_iter) <= 3 * shape[1]).all()
    np.testing.assert_allclose(be.to_numpy(r.rss), ((Y - X @ ref) ** 2).sum(0), rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_intercept_weights_penalty(be, dtype):
    if be.library == "jax" and dtype == "float32":
        pytest.skip("JAX runs with x64 here; float32 is covered by the other backends")
    rng = np.random.default_rng(3)
    X, Y = _problem(rng, 90, 12, 3)
    X, Y = X + 4.0, Y + 7.0
    sw = rng.random(90) + 0.5
    alpha = np.array([0.0, 2.0, 50.0])
    ref, Xw = _scipy(X, Y, alpha, sw, fit_intercept=True)
    r = lsq.nnls(
        be.asarray(X, dtype), be.asarray(Y, dtype), alpha=be.asarray(alpha, dtype), fit_intercept=True,
        sample_weight=be.asarray(sw, dtype),
    )  # fmt: skip
    coef = be.to_numpy(r.coef)
    assert coef.dtype == np.dtype(dtype)
    bound = _bound(Xw, ref, dtype) * (10 if dtype == "float32" else 1)  # float32 data rounding too
    np.testing.assert_allclose(coef, ref, rtol=0, atol=bound)
    w = sw / sw.sum()
    intercept = w @ Y - (w @ X) @ ref
    np.testing.assert_allclose(be.to_numpy(r.intercept), intercept, rtol=0, atol=bound * np.abs(X).max() * 10)


def test_kkt_conditions(be):
    """Optimality: on P the gradient vanishes, off P it is not positive (beyond rounding)."""
    rng = np.random.default_rng(5)
    X, Y = _problem(rng, 120, 25, 4, mix=0.6)
    r = lsq.nnls(be.asarray(X), be.asarray(Y), alpha=1.5)
    W = be.to_numpy(r.coef)
    G = X.T @ (Y - X @ W) - 1.5 * W
    scale = np.linalg.norm(X, axis=0)[:, None] * np.linalg.norm(Y, axis=0)[None, :]
    tol = 1e-12 * scale
    assert (W >= 0).all()
    assert (np.abs(G[W > 0]) <= tol[W > 0]).all()
    assert (G[W == 0] <= tol[W == 0]).all()


def test_convergence_reported(be):
    rng = np.random.default_rng(7)
    X, Y = _problem(rng, 80, 20, 2)
    full = lsq.nnls(be.asarray(X), be.asarray(Y))
    need = be.to_numpy(full.n_iter)
    assert (need > 2).all()
    short = lsq.nnls(be.asarray(X), be.asarray(Y), max_iter=2)
    assert not be.to_numpy(short.converged).any()
    assert (be.to_numpy(short.n_iter) == 2).all()
    assert (be.to_numpy(short.coef) >= 0).all()  # feasible, not optimal


def test_stack_and_vector_y(be):
    rng = np.random.default_rng(11)
    Xs = np.stack([_problem(rng, 40, 6, 1)[0] for _ in range(3)])
    ys = rng.standard_normal((3, 40))
    r = lsq.nnls(be.asarray(Xs), be.asarray(ys))
    assert tuple(r.coef.shape) == (3, 6) and tuple(r.n_iter.shape) == (3,)
    for i in range(3):
        np.testing.assert_allclose(be.to_numpy(r.coef)[i], so.nnls(Xs[i], ys[i])[0], atol=1e-12)


def test_trivial_answers(be):
    rng = np.random.default_rng(2)
    X = np.abs(rng.standard_normal((30, 4)))
    r = lsq.nnls(be.asarray(X), be.asarray(np.zeros(30)))
    assert (be.to_numpy(r.coef) == 0).all() and bool(be.to_numpy(r.converged))
    r = lsq.nnls(be.asarray(X), be.asarray(-X @ np.ones(4)))  # every gradient negative at 0
    assert (be.to_numpy(r.coef) == 0).all() and int(be.to_numpy(r.n_iter)) == 0


def test_jit_and_vmap():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(13)
    Xs = np.stack([_problem(rng, 50, 10, 1)[0] for _ in range(4)])
    ys = rng.standard_normal((4, 50))
    fit = jax.jit(lambda X, y, a: lsq.nnls(X, y, alpha=a, fit_intercept=True))
    out = jax.vmap(fit, in_axes=(0, 0, None))(jnp.asarray(Xs), jnp.asarray(ys), jnp.asarray(0.5))
    for i in range(4):
        ref, _ = _scipy(Xs[i], ys[i][:, None], 0.5, fit_intercept=True)
        np.testing.assert_allclose(np.asarray(out.coef[i]), ref[:, 0], atol=1e-12)
    assert bool(jnp.all(out.converged))


def test_bad_input_named_and_inputs_unchanged(be):
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((20, 3)), rng.standard_normal(20)
    Xb, yb = be.asarray(X), be.asarray(y)
    with pytest.raises(ValueError, match="alpha"):
        lsq.nnls(Xb, yb, alpha=-1.0)
    with pytest.raises(ValueError, match="max_iter"):
        lsq.nnls(Xb, yb, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        lsq.nnls(Xb, yb, tol=-0.1)
    with pytest.raises(TypeError, match="fit_intercept"):
        lsq.nnls(Xb, yb, fit_intercept="False")
    if not be.lazy:
        bad = X.copy()
        bad[0, 0] = np.nan
        with pytest.raises(ValueError, match="X"):
            lsq.nnls(be.asarray(bad), yb)
    np.testing.assert_array_equal(be.to_numpy(Xb), X)
    np.testing.assert_array_equal(be.to_numpy(yb), y)


def test_estimators_positive():
    sk = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(17)
    X, Y = _problem(rng, 100, 9, 2)
    X, Y = X + 2.0, Y + 3.0
    sw = rng.random(100) + 0.5
    ours = lsq.LinearRegression(positive=True).fit(X, Y, sample_weight=sw)
    theirs = sk.LinearRegression(positive=True).fit(X, Y, sample_weight=sw)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-10)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-9)
    ridge = lsq.Ridge(alpha=4.0, positive=True).fit(X, Y[:, 0], sample_weight=sw)
    ref, _ = _scipy(X, Y[:, :1], 4.0, sw, fit_intercept=True)
    np.testing.assert_allclose(ridge.coef_, ref[:, 0], atol=1e-10)
    assert ridge.coef_.shape == (9,) and int(ridge.n_iter_) > 0
    assert not hasattr(lsq.Ridge(alpha=4.0).fit(X, Y), "n_iter_")
    with pytest.raises(ValueError, match="method"):
        lsq.Ridge(positive=True, method="qr").fit(X, Y)
    with pytest.raises(TypeError, match="positive"):
        lsq.LinearRegression(positive="yes").fit(X, Y)
