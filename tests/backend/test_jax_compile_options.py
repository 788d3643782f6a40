"""The library's own compiled calls on JAX (``_control.jax_jit``): eagerly, with XLA's older CPU code generator
where the jaxlib has the option (``compile_options``); inside a caller's trace, without options (JAX refuses them
on a nested jit), so that ``jax.jit``, ``grad`` and ``vmap`` of a fit keep working."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._backend import _control


@pytest.fixture
def jax(request):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_the_option_is_asked_of_the_jaxlib(jax):
    import jaxlib

    older = tuple(int(p) for p in jaxlib.__version__.split(".")[:2]) < (0, 11)  # 0.11 removed the option
    assert _control.compile_options() == ({"xla_cpu_use_fusion_emitters": False} if older else None)


def test_eager_and_inside_every_kind_of_trace(jax):
    jnp = jax.numpy
    f = _control.jax_jit(lambda a: jnp.sin(a) * 2.0)
    x = jnp.linspace(0.0, 1.0, 5)
    want = np.sin(np.linspace(0.0, 1.0, 5)) * 2.0
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), want, rtol=1e-15)  # nested: no options
    np.testing.assert_allclose(np.asarray(jax.vmap(f)(x)), want, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda a: f(a).sum())(x)), 2.0 * np.cos(np.asarray(x)), rtol=1e-15)


def test_fits_compiled_eagerly_and_under_jit(jax):
    """An eager fit runs the lean fit and the full route as the library's compiled calls; the same fit under
    ``jax.jit`` nests them in the caller's program."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((40, 3)), rng.standard_normal(40)
    want = np.linalg.lstsq(np.c_[np.ones(40), X], y, rcond=None)[0][1:]
    for method in ("normal", "qr"):
        eager = lsq.lstsq(jax.numpy.asarray(X), jax.numpy.asarray(y), method=method, fit_intercept=True).coef
        jitted = jax.jit(lambda a, b, m=method: lsq.lstsq(a, b, method=m, fit_intercept=True).coef)(X, y)
        np.testing.assert_allclose(np.asarray(eager), want, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-12)


@pytest.mark.parametrize("method", ["normal", "qr"])
def test_grad_and_vmap_outside_jit_trace_one_program(jax, method, monkeypatch):
    """``grad`` or ``vmap`` of a fit outside any ``jax.jit`` traces it inside one compiled program: each operation
    dispatched on its own cost 20-80 ms a call at 25 x 4 and compiled every ``lax.cond`` of ``qr`` anew (10 s the
    first call), where the program takes 4-6 ms. The fit's steps never run outside a program."""
    from lsq_backends import _api
    from lsq_backends._backend import _compat

    seen, lean, full = [], _api._lean, _api._full_fit
    monkeypatch.setattr(_api, "_lean", lambda *a: seen.append(_compat.outside_jit()) or lean(*a))
    monkeypatch.setattr(_api, "_full_fit", lambda *a: seen.append(_compat.outside_jit()) or full(*a))
    rng = np.random.default_rng(1)
    X, y = jax.numpy.asarray(rng.standard_normal((20, 3))), jax.numpy.asarray(rng.standard_normal(20))

    def loss(X, y):
        r = lsq.lstsq(X, y, method=method, fit_intercept=True)
        return (r.coef**2).sum() + r.intercept**2

    g = jax.grad(loss)(X, y)
    b = jax.vmap(lambda a: lsq.lstsq(X, a, method=method).coef)(jax.numpy.stack([y, 2 * y]))
    assert seen and not any(seen)
    h = 1e-6
    for i, j in ((0, 0), (7, 2)):
        d = np.zeros((20, 3))
        d[i, j] = h
        fd = (float(loss(X + d, y)) - float(loss(X - d, y))) / (2 * h)
        assert abs(float(g[i, j]) - fd) <= 1e-6 * max(abs(fd), 1.0)
    np.testing.assert_allclose(np.asarray(b[1]), 2 * np.asarray(b[0]), rtol=1e-12)


def test_a_mix_of_libraries_is_refused_under_grad_as_eagerly(jax):
    """``jax.jit`` would convert a NumPy ``sample_weight``: the one program is not taken, and validation refuses it."""
    X, y = jax.numpy.ones((10, 2)) + jax.numpy.eye(10, 2), jax.numpy.arange(10.0)
    w = np.ones(10)
    with pytest.raises(TypeError, match="must come from one array library"):
        lsq.lstsq(X, y, sample_weight=w)
    with pytest.raises(TypeError, match="must come from one array library"):
        jax.grad(lambda a: lsq.lstsq(a, y, sample_weight=w).coef.sum())(X)
