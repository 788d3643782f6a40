"""Ridge paths and ridge_cv under jax.jit and jax.grad (traced penalties); jax session only."""

from __future__ import annotations

import numpy as np
import pytest
from problems import center

import lsq_backends as lsq
from lsq_backends.check.problems import design

ALPHAS = np.array([0.01, 0.3, 1.0, 20.0])


@pytest.fixture
def jnp(be):
    if be.library != "jax":
        pytest.skip("JAX tracing: runs in the jax backend's session")
    return be.xp


def _data(m=30, n=5, k=None, seed=0):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), 20.0) + 1.0
    y = rng.standard_normal((m,) if k is None else (m, k))
    return X, y, rng.uniform(0.5, 2, m)


@pytest.mark.parametrize("method", ["auto", "normal", "svd"])  # qr: the svd route
@pytest.mark.parametrize("shape", [(30, 5, 2), (6, 14, None)])
def test_jit_path_equals_eager(jnp, method, shape):
    import jax

    X, y, sw = (jnp.asarray(a) for a in _data(*shape))
    alphas = jnp.asarray(ALPHAS)
    fit = jax.jit(lsq.ridge, static_argnames=("method", "fit_intercept", "check_finite", "per_target"))
    eager = lsq.ridge(X, y, alphas, method=method, sample_weight=sw)
    traced = fit(X, y, alphas, method=method, sample_weight=sw)
    for a, b in zip(eager, traced, strict=False):
        if a is not None:
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("method", ["auto", "normal", "svd"])
def test_grad_wrt_alpha_path(jnp, method):
    """d coef(alpha)/d alpha = -(Xc^T Xc + alpha I)^-1 coef(alpha): the gradient of
    sum_i t . coef(alpha_i) w.r.t. the path is -t^T (G + alpha_i I)^-1 coef_i, per penalty."""
    import jax

    X, y, sw = _data()
    t = np.linspace(-1.0, 1.0, X.shape[1])

    def loss(alphas):
        return jnp.sum(
            lsq.ridge(jnp.asarray(X), jnp.asarray(y), alphas, method=method, sample_weight=jnp.asarray(sw)).coef
            @ jnp.asarray(t)
        )

    Xc, Yc, _, _ = center(X, y, sw, True)
    G = Xc.T @ Xc
    want = []
    for a in ALPHAS:
        coef = np.linalg.solve(G + a * np.eye(5), Xc.T @ Yc[:, 0])
        want.append(-t @ np.linalg.solve(G + a * np.eye(5), coef))
    cond = (np.linalg.eigvalsh(G).max() + ALPHAS[0]) / (np.linalg.eigvalsh(G).min() + ALPHAS[0])
    tol = 100 * np.finfo(np.float64).eps * cond**2  # the derivative squares the solve's condition
    g = jax.grad(loss)(jnp.asarray(ALPHAS))
    np.testing.assert_allclose(np.asarray(g), want, rtol=tol)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(ALPHAS))), np.asarray(g), rtol=1e-10)


@pytest.mark.parametrize("alpha_per_target", [False, True])
@pytest.mark.parametrize("mode", ["auto", pytest.param("svd", marks=pytest.mark.slow)])
@pytest.mark.parametrize("shape", [(30, 5, 3), (8, 15, 2)])
def test_jit_ridge_cv_equals_eager(jnp, shape, mode, alpha_per_target):
    import jax

    X, y, sw = (jnp.asarray(a) for a in _data(*shape, seed=1))
    alphas = jnp.asarray(np.logspace(-2, 3, 11))
    kw = {"mode": mode, "alpha_per_target": alpha_per_target}
    fit = jax.jit(lsq.ridge_cv, static_argnames=("fit_intercept", "alpha_per_target", "mode", "check_finite"))
    eager = lsq.ridge_cv(X, y, alphas, sample_weight=sw, **kw)
    traced = fit(X, y, alphas, sample_weight=sw, **kw)
    for name, a, b in zip(eager._fields, eager, traced, strict=False):
        assert b.shape == a.shape, name
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-9, err_msg=name)
