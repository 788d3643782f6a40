"""PyTorch autograd of lstsq and ridge through the solution's rule (``torch.autograd.Function``):
``.backward()`` works for every method (Householder QR has no autograd formula in PyTorch, and
LSQR's loop is not unrolled), rank-deficient X and X = 0 included, and agrees with central
finite differences and with JAX."""

from __future__ import annotations

import numpy as np
import pytest
from problems import rel_err
from rank_curves import curve

import lsq_backends as lsq
from lsq_backends._solvers import METHODS, record  # the direct ones first (``METHODS[:4]``)

torch = pytest.importorskip("torch")

M, N, RANK = 12, 6, 4
H = 1e-5
LSQR = {"atol": 1e-10, "btol": 1e-10, "max_iter": 200}


def _options(method):
    return LSQR if record(method).iterative else {}


def _curve(seed=0):
    """X(t) of rank exactly RANK for small t, and X'(0) (``rank_curves``); y, c."""
    return curve(M, N, seed, RANK)


def _t(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_rank_deficient_backward_equals_finite_differences(method, fit_intercept):
    """<grad_X L, X'(0)> is the derivative of L(X(t)) along a rank-preserving curve."""
    X_of, dX, y, c = _curve()

    def loss(X):
        r = lsq.lstsq(X, _t(y), method=method, fit_intercept=fit_intercept, **_options(method))
        return r.coef @ _t(c) + 3.0 * r.intercept

    X = _t(X_of(0.0), grad=True)
    loss(X).backward()
    assert torch.isfinite(X.grad).all()
    with torch.no_grad():
        fd = (float(loss(_t(X_of(H)))) - float(loss(_t(X_of(-H))))) / (2 * H)
    assert abs(float(torch.sum(X.grad * _t(dX))) - fd) < 1e-6 * max(abs(fd), 1.0)


@pytest.mark.parametrize("method", METHODS)
def test_grad_wrt_y_is_pinv_transpose_c(method):
    X_of, _, y, c = _curve(1)
    X = X_of(0.0)
    yt = _t(y, grad=True)
    (lsq.lstsq(_t(X), yt, method=method, **_options(method)).coef @ _t(c)).backward()
    np.testing.assert_allclose(yt.grad.numpy(), np.linalg.pinv(X).T @ c, atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_ridge_grads_wrt_alpha_X_and_sample_weight(method):
    X_of, dX, y, c = _curve(2)
    sw0 = np.random.default_rng(2).uniform(0.5, 2.0, M)

    def loss(X, alpha, sw):
        r = lsq.ridge(X, _t(y), alpha, method=method, sample_weight=sw, **_options(method))
        return r.coef @ _t(c) + 2.0 * r.intercept

    X, alpha, sw = _t(X_of(0.0), True), _t(0.7, True), _t(sw0, True)
    loss(X, alpha, sw).backward()
    e = np.zeros(M)
    e[4] = 1.0
    with torch.no_grad():
        # Ridge is smooth in X (no rank to preserve): any direction will do.
        Xp, Xm = _t(X_of(0.0) + H * dX), _t(X_of(0.0) - H * dX)
        fx = (float(loss(Xp, _t(0.7), _t(sw0))) - float(loss(Xm, _t(0.7), _t(sw0)))) / (2 * H)
        fa = (float(loss(_t(X_of(0.0)), _t(0.7 + H), _t(sw0))) - float(loss(_t(X_of(0.0)), _t(0.7 - H), _t(sw0)))) / (
            2 * H
        )
        fw = (
            float(loss(_t(X_of(0.0)), _t(0.7), _t(sw0 + H * e))) - float(loss(_t(X_of(0.0)), _t(0.7), _t(sw0 - H * e)))
        ) / (2 * H)
    assert abs(float(torch.sum(X.grad * _t(dX))) - fx) < 1e-6 * max(abs(fx), 1.0)
    assert abs(float(alpha.grad) - fa) < 1e-6 * max(abs(fa), 1.0)
    assert abs(float(sw.grad[4]) - fw) < 1e-6 * max(abs(fw), 1.0)


@pytest.mark.parametrize("method", METHODS)
def test_zero_X_backward_is_finite(method):
    X = _t(np.zeros((M, N)), grad=True)
    y = _t(np.arange(M))
    loss = torch.sum(lsq.lstsq(X, y, method=method).coef) + torch.sum(lsq.ridge(X, y, 2.0, method=method).coef)
    loss.backward()
    assert torch.isfinite(X.grad).all()
    yc = np.arange(M) - np.mean(np.arange(M))
    np.testing.assert_allclose(X.grad.numpy(), np.outer(yc, np.ones(N)) / 2.0, atol=1e-10)


def test_singular_values_backward():
    X_of, _, y, _ = _curve(3)
    X = _t(X_of(0.0), grad=True)
    s = lsq.lstsq(X, _t(y), method="svd").singular_values
    torch.sum(s[:RANK]).backward()
    u, _, vh = np.linalg.svd(X_of(0.0))
    np.testing.assert_allclose(X.grad.numpy(), u[:, :RANK] @ vh[:RANK], atol=1e-10)


def test_without_requires_grad_the_fit_is_unchanged():
    """Tensors that need no gradient take the solvers' path; the rule's path gives the same fit."""
    X_of, _, y, _ = _curve(4)
    for method in METHODS:
        plain = lsq.lstsq(_t(X_of(0.0)), _t(y), method=method, fit_intercept=True, **_options(method))
        X = _t(X_of(0.0), grad=True)
        ruled = lsq.lstsq(X, _t(y), method=method, fit_intercept=True, **_options(method))
        assert ruled.coef.requires_grad and not plain.coef.requires_grad
        assert rel_err(ruled.coef.detach().numpy(), plain.coef.numpy()) < 1e-12
        assert int(ruled.rank) == int(plain.rank)


@pytest.mark.parametrize("method", ["qr", "lsqr"])
def test_agrees_with_jax(method):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    X_of, _, y, c = _curve(5)
    X = _t(X_of(0.0), grad=True)
    (lsq.lstsq(X, _t(y), method=method, fit_intercept=True, **_options(method)).coef @ _t(c)).backward()

    def loss(X):
        return lsq.lstsq(X, jnp.asarray(y), method=method, fit_intercept=True, **_options(method)).coef @ jnp.asarray(c)

    g = jax.jit(jax.grad(loss))(jnp.asarray(X_of(0.0)))
    np.testing.assert_allclose(X.grad.numpy(), np.asarray(g), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("method", METHODS[:4])
def test_per_target_alphas(method):
    """One penalty per target (one of them 0 on rank-deficient X: that target is a minimum-norm
    least-squares fit): X and alpha gradients against central differences."""
    X_of, dX, _, _ = _curve(6)
    rng = np.random.default_rng(6)
    Y, C, a0 = rng.standard_normal((M, 3)), rng.standard_normal((N, 3)), np.array([0.3, 1.0, 0.0])

    def loss(X, alpha):
        r = lsq.ridge(X, _t(Y), alpha, method=method, per_target=True)
        return torch.sum(r.coef * _t(C)) + torch.sum(r.intercept)

    X, alpha = _t(X_of(0.0), True), _t(a0, True)
    loss(X, alpha).backward()
    e = np.array([0.0, 1.0, 0.0])
    with torch.no_grad():
        fx = (float(loss(_t(X_of(H)), _t(a0))) - float(loss(_t(X_of(-H)), _t(a0)))) / (2 * H)
        fa = (float(loss(_t(X_of(0.0)), _t(a0 + H * e))) - float(loss(_t(X_of(0.0)), _t(a0 - H * e)))) / (2 * H)
    assert abs(float(torch.sum(X.grad * _t(dX))) - fx) < 1e-6 * max(abs(fx), 1.0)
    assert abs(float(alpha.grad[1]) - fa) < 1e-6 * max(abs(fa), 1.0)
