"""jax.jit, vmap and grad: the traced paths must give the eager answers."""

from __future__ import annotations

import numpy as np
import pytest
from problems import METHODS

import lsq_backends as lsq
from lsq_backends.check.problems import design

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
STATIC = ("method", "rcond", "fit_intercept", "check_finite")
STATIC_RIDGE = ("method", "fit_intercept", "check_finite", "per_target")


def _data(m=30, n=5, k=None, seed=0, rank=None):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), 20.0, rank=rank) + (1.0 if rank is None else 0.0)
    y = rng.standard_normal((m,) if k is None else (m, k))
    return jnp.asarray(X), jnp.asarray(y), jnp.asarray(rng.uniform(0.5, 2, m))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", [(30, 5, None, None), (6, 14, 2, None), (30, 6, None, 4)])
def test_jit_equals_eager(method, shape):
    m, n, k, rank = shape
    X, y, sw = _data(m, n, k, rank=rank)
    fit = jax.jit(lsq.lstsq, static_argnames=STATIC)
    for kwargs in ({}, {"fit_intercept": True, "sample_weight": sw}):
        eager = lsq.lstsq(X, y, method=method, **kwargs)
        traced = fit(X, y, method=method, **kwargs)
        assert isinstance(traced, lsq.LstsqResult)
        for a, b in zip(eager, traced, strict=False):
            if a is None:
                assert b is None
                continue
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_jit_ridge_equals_eager(method):
    X, y, sw = _data(30, 5, 2)
    fit = jax.jit(lsq.ridge, static_argnames=STATIC_RIDGE)
    alpha = jnp.asarray([0.5, 2.0])
    eager = lsq.ridge(X, y, alpha, method=method, sample_weight=sw, per_target=True)
    traced = fit(X, y, alpha, method=method, sample_weight=sw, per_target=True)
    np.testing.assert_allclose(np.asarray(traced.coef), np.asarray(eager.coef), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(traced.intercept), np.asarray(eager.intercept), rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_jit_falls_back_on_rank_deficiency(method):
    """The value-dependent fallback runs on the device (lax.cond), not through Python."""
    X, y, _ = _data(30, 6, rank=4)
    res = jax.jit(lsq.lstsq, static_argnames=STATIC)(X, y, method=method)
    ref = np.linalg.lstsq(np.asarray(X), np.asarray(y), rcond=None)[0]
    np.testing.assert_allclose(np.asarray(res.coef), ref, rtol=1e-10, atol=1e-12)
    assert int(res.rank) == 4


@pytest.mark.parametrize("method", METHODS)
def test_vmap_equals_batched(method):
    rng = np.random.default_rng(1)
    X = jnp.asarray(np.stack([design(rng, (20, 4), 10.0) for _ in range(5)]))
    y = jnp.asarray(rng.standard_normal((5, 20)))
    mapped = jax.vmap(lambda a, b: lsq.lstsq(a, b, method=method, fit_intercept=True))(X, y)
    batched = lsq.lstsq(X, y, method=method, fit_intercept=True)
    np.testing.assert_allclose(np.asarray(mapped.coef), np.asarray(batched.coef), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(mapped.intercept), np.asarray(batched.intercept), rtol=1e-10, atol=1e-12)


def _fd_check(f, args, argnum, h=1e-6, rtol=1e-5):
    g = np.asarray(jax.grad(f, argnums=argnum)(*args))
    x0 = np.asarray(args[argnum], dtype=np.float64)
    rng = np.random.default_rng(argnum)
    direction = rng.standard_normal(x0.shape)
    plus = list(args)
    minus = list(args)
    plus[argnum] = jnp.asarray(x0 + h * direction)
    minus[argnum] = jnp.asarray(x0 - h * direction)
    fd = (float(f(*plus)) - float(f(*minus))) / (2 * h)
    assert fd == pytest.approx(float(np.sum(g * direction)), rel=rtol, abs=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_grad_matches_finite_differences(method):
    X, y, _ = _data(25, 4)
    target = jnp.asarray(np.linspace(-1, 1, 4))

    def loss_lstsq(X, y):
        r = lsq.lstsq(X, y, method=method, fit_intercept=True)
        return jnp.sum((r.coef - target) ** 2) + r.intercept**2

    def loss_ridge(X, y, alpha):
        r = lsq.ridge(X, y, alpha, method=method)
        return jnp.sum((r.coef - target) ** 2) + r.intercept**2

    _fd_check(loss_lstsq, (X, y), 0)
    _fd_check(loss_lstsq, (X, y), 1)
    alpha = jnp.asarray(0.8)
    for argnum in (0, 1, 2):
        _fd_check(loss_ridge, (X, y, alpha), argnum)
    # And through jit.
    g1 = jax.grad(loss_ridge, argnums=2)(X, y, alpha)
    g2 = jax.jit(jax.grad(loss_ridge, argnums=2))(X, y, alpha)
    np.testing.assert_allclose(float(g1), float(g2), rtol=1e-10)


def test_float32_stays_float32_under_jit():
    X, y, _ = _data()
    res = jax.jit(lsq.lstsq, static_argnames=STATIC)(X.astype(jnp.float32), y.astype(jnp.float32))
    assert res.coef.dtype == jnp.float32 and res.rss.dtype == jnp.float32


def test_refine_under_jit():
    """The double-double residuals survive XLA's fusion (no FMA-sensitive identities)."""
    t = np.arange(21.0)
    X = jnp.asarray(np.stack([t**k for k in range(1, 6)], axis=1))
    y = jnp.asarray(1 + t + t**2 + t**3 + t**4 + t**5 + 1e6 * np.cos(7 * t))
    eager = lsq.lstsq(X, y, fit_intercept=True, refine=2)
    traced = jax.jit(lsq.lstsq, static_argnames=STATIC + ("refine",))(X, y, fit_intercept=True, refine=2)
    np.testing.assert_allclose(np.asarray(traced.coef), np.asarray(eager.coef), rtol=1e-14)


def test_lazy_fits_trace_under_jit():
    """The helper the fits of ``test_lstsq`` run under on JAX (``lazy_fits``): under
    ``jax.jit`` nothing is read, so NaN input is not refused (eagerly it is) and propagates."""
    import types

    import lazy_fits

    X, y, _ = _data()
    X = X.at[0, 0].set(jnp.nan)
    with pytest.raises(ValueError, match="X"):
        lsq.lstsq(X, y)
    with lazy_fits.patched(types.SimpleNamespace(lazy_fits=("lstsq",)), "jax"):
        coef = lsq.lstsq(X, y, method="qr").coef
    assert bool(jnp.isnan(coef).any())
