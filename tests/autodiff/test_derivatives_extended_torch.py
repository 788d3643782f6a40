"""PyTorch autograd where the rule was extended (wide X, penalty paths, ``lsqr`` with one
penalty per target, ``refine``; and ``diagnostics``, through its own steps): ``.backward()``
against central finite differences along curves of exactly rank 4 (step 1e-5, as in the JAX file: 1e-6 relative is far above both
truncation and rounding), finite at X = 0, and equal to JAX's gradients."""

from __future__ import annotations

import numpy as np
import pytest
from rank_curves import curve

import lsq_backends as lsq

torch = pytest.importorskip("torch")

METHODS = ("auto", "normal", "qr", "svd", "lsqr")
H = 1e-5
LSQR = {"atol": 1e-12, "btol": 1e-12, "max_iter": 500}
ALPHAS = np.array([0.0, 0.3, 2.0])


def options(method):
    return LSQR if method == "lsqr" else {}


def _t(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def check_directional(loss, X_of, dX, *args):
    """<grad_X loss, X'(0)> against central differences of loss(X(t)); returns grad_X."""
    X = _t(X_of(0.0), grad=True)
    loss(X, *args).backward()
    assert torch.isfinite(X.grad).all()
    with torch.no_grad():
        ref = (float(loss(_t(X_of(H)), *args)) - float(loss(_t(X_of(-H)), *args))) / (2 * H)
    assert abs(float(torch.sum(X.grad * _t(dX))) - ref) < 1e-6 * max(abs(ref), 1.0)
    return X.grad


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("alpha", [None, 0.7])
def test_wide_rank_deficient_backward(method, alpha):
    X_of, dX, y, c = curve(6, 10)

    def loss(X):
        kw = dict(method=method, **options(method))
        r = lsq.lstsq(X, _t(y), **kw) if alpha is None else lsq.ridge(X, _t(y), alpha, **kw)
        return r.coef @ _t(c) + 3.0 * r.intercept

    check_directional(loss, X_of, dX)


@pytest.mark.parametrize("method", METHODS)
def test_wide_zero_X_backward(method):
    X, y = _t(np.zeros((6, 10)), grad=True), _t(np.arange(6.0))
    (torch.sum(lsq.lstsq(X, y, method=method).coef) + torch.sum(lsq.ridge(X, y, 2.0, method=method).coef)).backward()
    np.testing.assert_allclose(X.grad.numpy(), np.outer(np.arange(6.0) - 2.5, np.ones(10)) / 2.0, atol=1e-10)


@pytest.mark.parametrize("method", METHODS[:4])
@pytest.mark.parametrize("shape", [(12, 6), (6, 10)])
def test_path_backward(method, shape):
    """A path through alpha = 0 on rank-4 X: X along the curve, and each positive alpha."""
    X_of, dX, y, c = curve(*shape, 3)
    w = _t(np.linspace(1.0, 2.0, len(ALPHAS)))

    def loss(X, alphas):
        return torch.sum((lsq.ridge(X, _t(y), alphas, method=method).coef @ _t(c)) * w)

    check_directional(loss, X_of, dX, _t(ALPHAS))
    a = _t(ALPHAS, grad=True)
    loss(_t(X_of(0.0)), a).backward()
    for i in (1, 2):
        e = np.zeros(3)
        e[i] = H
        with torch.no_grad():
            ref = (float(loss(_t(X_of(0.0)), _t(ALPHAS + e))) - float(loss(_t(X_of(0.0)), _t(ALPHAS - e)))) / (2 * H)
        assert abs(float(a.grad[i]) - ref) < 1e-6 * max(abs(ref), 1.0), i


def test_lsqr_per_target_backward():
    X_of, dX, _, _ = curve(12, 6, 5)
    rng = np.random.default_rng(5)
    Y, C, a0 = rng.standard_normal((12, 3)), rng.standard_normal((6, 3)), np.array([0.3, 1.0, 0.0])

    def loss(X, alpha):
        r = lsq.ridge(X, _t(Y), alpha, method="lsqr", per_target=True, **LSQR)
        return torch.sum(r.coef * _t(C)) + torch.sum(r.intercept)

    check_directional(loss, X_of, dX, _t(a0))
    a = _t(a0, grad=True)
    loss(_t(X_of(0.0)), a).backward()
    e = np.array([0.0, H, 0.0])
    with torch.no_grad():
        ref = (float(loss(_t(X_of(0.0)), _t(a0 + e))) - float(loss(_t(X_of(0.0)), _t(a0 - e)))) / (2 * H)
    assert abs(float(a.grad[1]) - ref) < 1e-6 * max(abs(ref), 1.0)


@pytest.mark.parametrize("method", METHODS[:4])
def test_refine_backward(method):
    """refine=2 on full-rank X (Householder QR, which PyTorch cannot differentiate, included)
    and on rank-4 X; the value is the refined fit's."""
    rng = np.random.default_rng(6)
    X0, dX0 = rng.standard_normal((12, 6)), rng.standard_normal((12, 6))
    y, c = rng.standard_normal(12), rng.standard_normal(6)

    def loss(X):
        r = lsq.lstsq(X, _t(y), method=method, fit_intercept=True, refine=2)
        return r.coef @ _t(c) + r.intercept

    check_directional(loss, lambda t: X0 + t * dX0, dX0)
    X_of, dX, _, _ = curve(12, 6, 6)
    check_directional(loss, X_of, dX)
    value = lsq.lstsq(_t(X0, grad=True), _t(y), method=method, fit_intercept=True, refine=2).coef
    plain = lsq.lstsq(X0, y, method=method, fit_intercept=True, refine=2).coef
    np.testing.assert_allclose(value.detach().numpy(), plain, rtol=1e-13)


@pytest.mark.parametrize("cov_type", ["nonrobust", "HC3"])
@pytest.mark.parametrize("weighted", [False, True])
def test_diagnostics_backward(cov_type, weighted):
    """``diagnostics`` with respect to X, through its own steps (its QR is PyTorch's
    differentiable one when X requires grad): standard errors, R², sigma and cond."""
    rng = np.random.default_rng(8)
    X0, dX0 = rng.standard_normal((15, 3)), rng.standard_normal((15, 3))
    y, c = X0 @ np.array([1.0, -2.0, 0.5]) + rng.standard_normal(15), rng.standard_normal(3)
    sw = _t(rng.uniform(0.5, 2.0, 15)) if weighted else None

    def loss(X):
        d = lsq.diagnostics(X, _t(y), sample_weight=sw, cov_type=cov_type)
        return (d.stderr + d.coef) @ _t(c) + d.intercept_stderr + d.sigma + d.r2 + d.cond

    check_directional(loss, lambda t: X0 + t * dX0, dX0)


@pytest.mark.parametrize("case", ["wide", "path", "lsqr_per_target", "refine"])
def test_agrees_with_jax(case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    X_of, _, y, c = curve(6, 10, 7) if case == "wide" else curve(12, 6, 7)
    Y = np.stack([y, 2 * y, -y], axis=1)

    def loss(X, to):
        if case == "wide":
            coef = lsq.ridge(X, to(y), 0.5, method="qr").coef + lsq.lstsq(X, to(y), method="svd").coef
        elif case == "path":
            coef = lsq.ridge(X, to(y), to(ALPHAS), method="auto").coef.sum(0)
        elif case == "refine":
            coef = lsq.lstsq(X, to(y), method="qr", refine=1, fit_intercept=True).coef
        else:
            coef = lsq.ridge(X, to(Y), to([0.3, 0.0, 1.0]), method="lsqr", per_target=True, **LSQR).coef.sum(-1)
        return (coef * to(c)).sum()

    X = _t(X_of(0.0), grad=True)
    loss(X, _t).backward()
    g = jax.jit(jax.grad(lambda X: loss(X, jnp.asarray)))(jnp.asarray(X_of(0.0)))
    np.testing.assert_allclose(X.grad.numpy(), np.asarray(g), rtol=1e-8, atol=1e-10)


def test_weight_gradient_at_a_zero_weight_is_a_known_limit():
    """Tensors that require grad take the full route, which weighs rows by sqrt(w): the gradient with respect
    to a weight of exactly 0 is NaN there (docs/limits.md), the others finite; held so that a fix shows."""
    rng = np.random.default_rng(3)
    X, y = torch.tensor(rng.standard_normal((20, 3))), torch.tensor(rng.standard_normal(20))
    w = torch.tensor(rng.uniform(0.5, 2.0, 20))
    w[3] = 0.0
    w.requires_grad_(True)
    lsq.lstsq(X, y, sample_weight=w, method="normal").coef.sum().backward()
    g = w.grad.numpy()
    assert np.isnan(g[3]), "the weight gradient at w = 0 is finite now: update docs/limits.md"
    assert np.all(np.isfinite(np.delete(g, 3)))
