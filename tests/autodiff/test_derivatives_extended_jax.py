"""JAX derivatives where the rule was extended: wide X (m < n, the minimum-norm solution and
ridge), penalty paths (ridge with a 1-D alpha: one solution per penalty), ``lsqr`` with one
penalty per target, and ``refine``.

Rank-deficient X (rank 4 of 12 x 6 and of 6 x 10): the tangent along a curve of exactly rank
4 equals central finite differences (step 1e-5: truncation ~1e-10, rounding ~eps / 1e-5 ~
2e-11, both far below the 1e-6 asked) on the NumPy fits (the same solutions, no compilation);
jit(grad) is eager grad to rounding; X = 0 gives finite derivatives (ridge's exact one)."""

from __future__ import annotations

import numpy as np
import pytest
from problems import rel_err
from rank_curves import curve

import lsq_backends as lsq

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

METHODS = ("auto", "normal", "qr", "svd", "lsqr")
PATH_METHODS = METHODS[:4]
H = 1e-5
LSQR = {"atol": 1e-12, "btol": 1e-12, "max_iter": 500}
ALPHAS = np.array([0.0, 0.3, 2.0])  # a path through alpha = 0: the minimum-norm solution


def options(method):
    return LSQR if method == "lsqr" else {}


def fd(f, t0=0.0):
    return (np.asarray(f(t0 + H)) - np.asarray(f(t0 - H))) / (2 * H)


def like(X, a):
    """``a`` in X's namespace (JAX for the traced fits, NumPy for the finite differences)."""
    return jnp.asarray(a) if isinstance(X, jax.Array) else a


def _fit(X, y, alpha, method, fit_intercept=True):
    kw = dict(method=method, fit_intercept=fit_intercept, **options(method))
    r = lsq.lstsq(X, y, **kw) if alpha is None else lsq.ridge(X, y, alpha, **kw)
    return r.coef


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("alpha", [None, 0.7])
def test_wide_rank_deficient_jvp_and_grad_equal_finite_differences(method, alpha):
    """6 x 10 of rank 4, intercept fitted: the minimum-norm solution's derivative (Golub and
    Pereyra's general form) and ridge's, from the wide fit's own m x m factor; forward mode,
    and reverse mode (<grad of c^T w, X'(0)>)."""
    X_of, dX, y, c = curve(6, 10)
    X, dXj = jnp.asarray(X_of(0.0)), jnp.asarray(dX)
    tan = jax.jit(lambda X, dX: jax.jvp(lambda X: _fit(X, jnp.asarray(y), alpha, method), (X,), (dX,))[1])(X, dXj)
    g = jax.jit(jax.grad(lambda X: _fit(X, jnp.asarray(y), alpha, method) @ jnp.asarray(c)))(X)
    ref = fd(lambda t: _fit(X_of(t), y, alpha, method))
    assert np.all(np.isfinite(np.asarray(tan))) and np.all(np.isfinite(np.asarray(g)))
    assert rel_err(tan, ref) < 1e-6
    assert abs(float(jnp.sum(g * dXj)) - ref @ c) < 1e-6 * max(abs(ref @ c), 1.0)


@pytest.mark.parametrize("method", METHODS)
def test_wide_full_rank_grad_and_jit(method):
    """Full row rank 6 x 10 (the fit interpolates: r = 0), any direction: <grad, dX> and the
    gradient in y against central differences; jit(grad) equals eager grad."""
    rng = np.random.default_rng(1)
    X, dX, y, c = (
        rng.standard_normal((6, 10)),
        rng.standard_normal((6, 10)),
        rng.standard_normal(6),
        rng.standard_normal(10),
    )

    def loss(X, y):
        return _fit(X, y, None, method, False) @ jnp.asarray(c)

    eager = jax.grad(loss, argnums=(0, 1))(jnp.asarray(X), jnp.asarray(y))
    traced = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(X), jnp.asarray(y))
    for a, b in zip(eager, traced, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12)
    ref = fd(lambda t: np.asarray(_fit(X + t * dX, y, None, method, False)) @ c)
    assert abs(float(jnp.sum(eager[0] * dX)) - ref) < 1e-6 * max(abs(ref), 1.0)
    np.testing.assert_allclose(np.asarray(eager[1]), np.linalg.pinv(X).T @ c, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_wide_zero_X_is_finite(method):
    """X = 0, wide: dw = 0 for the minimum-norm solution; ridge's exact dw = dX^T (y - ybar) / alpha."""
    X, y = jnp.zeros((6, 10)), jnp.asarray(np.arange(6.0))

    def loss(X):
        return jnp.sum(lsq.lstsq(X, y, method=method).coef) + jnp.sum(lsq.ridge(X, y, 2.0, method=method).coef)

    g = np.asarray(jax.jit(jax.grad(loss))(X))
    yc = np.arange(6.0) - 2.5
    np.testing.assert_allclose(g, np.outer(yc, np.ones(10)) / 2.0, atol=1e-10)


@pytest.mark.parametrize("method", ["normal", "svd", "lsqr"])
def test_wide_per_target_alphas(method):
    """Wide 6 x 10 of rank 4, one penalty per target (one of them 0): alpha and X against
    central differences."""
    X_of, dX, _, _ = curve(6, 10, 2)
    rng = np.random.default_rng(2)
    Y, C, a0 = rng.standard_normal((6, 3)), rng.standard_normal((10, 3)), np.array([0.3, 1.0, 0.0])

    def loss(X, alpha):
        return (
            lsq.ridge(X, like(X, Y), alpha, method=method, per_target=True, **options(method)).coef * like(X, C)
        ).sum()

    g = jax.jit(jax.grad(lambda X, a: loss(X, a), argnums=(0, 1)))(jnp.asarray(X_of(0.0)), jnp.asarray(a0))
    e = np.array([0.0, 1.0, 0.0])
    fa = (float(loss(X_of(0.0), a0 + H * e)) - float(loss(X_of(0.0), a0 - H * e))) / (2 * H)
    fx = float(fd(lambda t: loss(X_of(t), a0)))
    assert abs(float(g[1][1]) - fa) < 1e-6 * max(abs(fa), 1.0)
    assert abs(float(jnp.sum(g[0] * dX)) - fx) < 1e-6 * max(abs(fx), 1.0)


@pytest.mark.parametrize("method", PATH_METHODS)
@pytest.mark.parametrize("shape", [(12, 6), (6, 10)])
def test_path_jvp_and_alpha_grad_equal_finite_differences(method, shape):
    """A path through alpha = 0 on rank-4 X (tall and wide): every penalty's tangent along the
    rank-preserving curve, and the gradient with respect to each alpha, from the path's one
    factorization."""
    X_of, dX, y, c = curve(*shape, 3)

    def coef(X, alphas):
        return lsq.ridge(X, jnp.asarray(y), alphas, method=method).coef  # (a, n)

    tan = jax.jit(lambda X, dX: jax.jvp(lambda X: coef(X, jnp.asarray(ALPHAS)), (X,), (dX,))[1])(
        jnp.asarray(X_of(0.0)), jnp.asarray(dX)
    )
    assert np.all(np.isfinite(np.asarray(tan)))
    for i in range(len(ALPHAS)):
        ref = fd(lambda t, i=i: lsq.ridge(X_of(t), y, ALPHAS, method=method).coef[i])
        assert rel_err(tan[i], ref) < 1e-6, i
    ga = jax.jit(jax.grad(lambda a: jnp.sum(coef(jnp.asarray(X_of(0.0)), a) @ jnp.asarray(c))))(jnp.asarray(ALPHAS))
    for i in (1, 2):
        e = np.zeros(3)
        e[i] = H
        plus, minus = (lsq.ridge(X_of(0.0), y, ALPHAS + s * e, method=method).coef[i] @ c for s in (1, -1))
        ref = (plus - minus) / (2 * H)
        assert abs(float(ga[i]) - ref) < 1e-6 * max(abs(ref), 1.0), i


@pytest.mark.parametrize("method", PATH_METHODS)
def test_path_equals_single_fits_derivatives(method):
    """grad of a loss over a path = the sum of the single fits' gradients (eager and jit), and
    y's gradient too; X = 0 is finite."""
    X_of, _, y, c = curve(12, 6, 4)
    X = jnp.asarray(X_of(0.0))

    def path_loss(X, y):
        return jnp.sum(lsq.ridge(X, y, jnp.asarray(ALPHAS), method=method).coef @ jnp.asarray(c))

    def single_loss(X, y):
        return sum(lsq.ridge(X, y, float(a), method=method).coef @ jnp.asarray(c) for a in ALPHAS)

    eager = jax.grad(path_loss, argnums=(0, 1))(X, jnp.asarray(y))
    traced = jax.jit(jax.grad(path_loss, argnums=(0, 1)))(X, jnp.asarray(y))
    single = jax.jit(jax.grad(single_loss, argnums=(0, 1)))(X, jnp.asarray(y))
    for a, b, s in zip(eager, traced, single, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12)
        assert rel_err(a, s) < 1e-8
    g0 = jax.jit(jax.grad(path_loss))(jnp.zeros((12, 6)), jnp.asarray(y))
    assert np.all(np.isfinite(np.asarray(g0)))


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_lsqr_per_target_alphas(fit_intercept):
    """lsqr, one penalty per target (one of them 0 on rank-deficient X): reverse mode through
    implicit differentiation per target, against central differences; jit(grad) = eager grad."""
    X_of, dX, _, _ = curve(12, 6, 5)
    rng = np.random.default_rng(5)
    Y, C, a0 = rng.standard_normal((12, 3)), rng.standard_normal((6, 3)), np.array([0.3, 1.0, 0.0])

    def loss(X, alpha):
        r = lsq.ridge(X, like(X, Y), alpha, method="lsqr", per_target=True, fit_intercept=fit_intercept, **LSQR)
        return (r.coef * like(X, C)).sum() + r.intercept.sum()

    args = (jnp.asarray(X_of(0.0)), jnp.asarray(a0))
    g = jax.jit(jax.grad(loss, argnums=(0, 1)))(*args)
    eager = jax.grad(loss, argnums=(0, 1))(*args)
    for a, b in zip(eager, g, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-8, atol=1e-10)
    fx = float(fd(lambda t: loss(X_of(t), a0)))
    assert abs(float(jnp.sum(g[0] * dX)) - fx) < 1e-6 * max(abs(fx), 1.0)
    for i in range(2):  # alpha = 0 has no two-sided difference
        e = np.zeros(3)
        e[i] = H
        fa = (float(loss(X_of(0.0), a0 + e)) - float(loss(X_of(0.0), a0 - e))) / (2 * H)
        assert abs(float(g[1][i]) - fa) < 1e-6 * max(abs(fa), 1.0), i


@pytest.mark.parametrize("method", METHODS[:4])
@pytest.mark.parametrize("rank_deficient", [False, True])
def test_refine_derivative_is_the_solutions(method, rank_deficient):
    """refine=2: the value is the refined solution, the derivative the rule's (refinement is
    not differentiated): central differences of the refined NumPy fits, along a
    rank-preserving curve where X is rank-deficient (refine then returns the fit unchanged)."""
    X_of, dX, y, c = curve(12, 6, 6)
    if not rank_deficient:
        rng = np.random.default_rng(6)
        X0, dX = rng.standard_normal((12, 6)), rng.standard_normal((12, 6))
        X_of = lambda t: X0 + t * dX  # noqa: E731

    def loss(X, refine):
        r = lsq.lstsq(X, like(X, y), method=method, fit_intercept=True, refine=refine)
        return r.coef @ like(X, c) + r.intercept

    X = jnp.asarray(X_of(0.0))
    g = jax.jit(jax.grad(lambda X: loss(X, 2)))(X)
    assert np.all(np.isfinite(np.asarray(g)))
    ref = float(fd(lambda t: loss(X_of(t), 2)))
    assert abs(float(jnp.sum(g * dX)) - ref) < 1e-6 * max(abs(ref), 1.0)
    value = np.asarray(lsq.lstsq(X, jnp.asarray(y), method=method, fit_intercept=True, refine=2).coef)
    want = np.asarray(lsq.lstsq(X_of(0.0), y, method=method, fit_intercept=True, refine=2).coef)
    # normwise: the refined solutions agree to rounding (NumPy's Gram route rounds otherwise)
    assert np.linalg.norm(value - want) <= 1e-13 * np.linalg.norm(want)


@pytest.mark.parametrize("method", ["normal", "qr", "svd"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_weight_gradient_at_a_zero_weight(method, fit_intercept):
    """d coef / d sample_weight at a weight of exactly 0 is finite (the row's residual times its
    leverage direction). The lean route (``normal`` on certified data) differentiates the weights
    themselves and gets it, to finite differences' accuracy (one-sided, step 1e-6: ~1e-6 relative);
    the full route weighs rows by sqrt(w), whose derivative at 0 is infinite, and its gradient is
    NaN there: a known limit (docs/limits.md), held here so that a fix shows."""
    rng = np.random.default_rng(3)
    X, y = jnp.asarray(rng.standard_normal((20, 3))), jnp.asarray(rng.standard_normal(20))
    w = jnp.asarray(rng.uniform(0.5, 2.0, 20)).at[3].set(0.0)

    def f(w):
        return lsq.lstsq(X, y, sample_weight=w, method=method, fit_intercept=fit_intercept).coef.sum()

    g = np.asarray(jax.grad(f)(w))
    if method != "normal":
        assert np.isnan(g[3]), "the full route's weight gradient at w = 0 is finite now: update docs/limits.md"
        return
    step = 1e-6
    want = (float(f(w.at[3].set(step))) - float(f(w))) / step
    assert np.all(np.isfinite(g))
    assert abs(g[3] - want) <= 1e-5 * max(abs(want), 1e-3)
