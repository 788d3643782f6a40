"""The capability table (``lsq_backends.capabilities``) against the code: every "yes" that this
machine can run is run, every "no" is a strict expected failure, so a change on either side
shows. Tiny problems: this is about what runs, the accuracy suites are elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends.capabilities import CAPABILITIES, FEATURES, markdown_table, supports

ALPHAS = np.array([0.1, 1.0, 10.0])


def _entry(name, xp):
    """``f(X, y) -> array``: the entry point, its result reduced to one array."""
    alphas = xp.asarray(ALPHAS)
    if name == "lstsq (sparse X)":
        return lambda X, y: lsq.lstsq(_sparse(X, xp), y, fit_intercept=True).coef
    if name == 'lstsq:lsmr, precondition="columns"':
        return lambda X, y: lsq.lstsq(X, y, method="lsmr", fit_intercept=True, precondition="columns").coef
    if name.startswith("lstsq:"):
        method = name.split(":")[1]
        return lambda X, y: lsq.lstsq(X, y, method=method, fit_intercept=True).coef
    if name == "ridge (path)":
        return lambda X, y: lsq.ridge(X, y, alphas).coef
    if name == "ridge_cv":
        return lambda X, y: lsq.ridge_cv(X, y, alphas).coef
    if name == "nnls":
        return lambda X, y: lsq.nnls(X, y, fit_intercept=True).coef
    if name == "diagnostics":
        return lambda X, y: lsq.diagnostics(X, y).stderr
    acc = getattr(lsq, name)
    return lambda X, y: acc().update(X, y).solve().coef


def _sparse(X, xp):
    """X in the sparse kind of its library: a JAX BCOO (traced under vmap), a PyTorch CSR
    tensor, else SciPy's CSR (a Dask X is computed for it)."""
    import array_api_compat

    if array_api_compat.is_jax_namespace(xp):
        from jax.experimental import sparse as jsparse

        return jsparse.BCOO.fromdense(X, nse=X.size)
    if array_api_compat.is_torch_namespace(xp):
        return X.to_sparse_csr()
    import scipy.sparse

    return scipy.sparse.csr_array(np.asarray(X))


def _data(batch=None):
    rng = np.random.default_rng(0)
    shape = (8, 3) if batch is None else (batch, 8, 3)
    X = rng.standard_normal(shape)
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(shape[:-1])


def _expect(request, entry, feature):
    """A "no" must fail: a strict xfail, so that a fix shows up as a table to update."""
    if not supports(entry, feature):
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"declared unsupported: {entry}, {feature}"))


def test_table_lists_every_entry_and_feature():
    table = markdown_table()
    for entry in CAPABILITIES:
        assert f"`{entry}`" in table
        assert set(CAPABILITIES[entry]) == set(FEATURES), entry
    with pytest.raises(ValueError, match="entry must be one of"):
        supports("lstsq:cholesky", "jit")
    with pytest.raises(ValueError, match="feature must be one of"):
        supports("lstsq:qr", "host_reads")


@pytest.mark.parametrize("entry", list(CAPABILITIES))
def test_jax_jit_vmap(request, entry):
    """``jit`` and ``vmap`` together: one compilation per entry (compiles dominate here)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    _expect(request, entry, "jit")
    _expect(request, entry, "vmap")
    X, y = _data(batch=2)
    got = jax.jit(jax.vmap(_entry(entry, jnp)))(jnp.asarray(X), jnp.asarray(y))
    want = np.stack([_entry(entry, np)(X[i], y[i]) for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("entry", list(CAPABILITIES))
def test_jax_grad(request, entry):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    _expect(request, entry, "jax_grad")
    X, y = _data()
    f = _entry(entry, jnp)
    g = jax.jit(jax.grad(lambda y: jnp.sum(f(jnp.asarray(X), y) ** 2)))(jnp.asarray(y))
    h = 1e-6 * np.sign(np.arange(y.size) % 2 - 0.5)  # one direction, central differences
    fd = (np.sum(_entry(entry, np)(X, y + h) ** 2) - np.sum(_entry(entry, np)(X, y - h) ** 2)) / 2
    np.testing.assert_allclose(float(np.asarray(g) @ h), fd, rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("entry", list(CAPABILITIES))
def test_torch_autograd(request, entry):
    torch = pytest.importorskip("torch")
    import array_api_compat

    _expect(request, entry, "torch_autograd")
    X, y = _data()
    Xt, yt = torch.asarray(X, requires_grad=True), torch.asarray(y, requires_grad=True)
    f = _entry(entry, array_api_compat.array_namespace(yt))
    torch.sum(f(Xt, yt) ** 2).backward()  # with respect to X and y both
    for grad in (Xt.grad, yt.grad):
        assert grad is not None and bool(torch.isfinite(grad).all())


@pytest.mark.parametrize("entry", list(CAPABILITIES))
def test_dask_lazy(request, entry):
    da = pytest.importorskip("dask.array")
    import array_api_compat
    import dask

    _expect(request, entry, "dask_lazy")
    X, y = _data()
    Xd, yd = da.from_array(X, chunks=(4, 3)), da.from_array(y, chunks=4)
    f = _entry(entry, array_api_compat.array_namespace(Xd))

    def refuse(*args, **kwargs):
        raise AssertionError("computed while building the graph")

    with dask.config.set(scheduler=refuse):
        out = f(Xd, yd)
    np.testing.assert_allclose(np.asarray(out.compute()), _entry(entry, np)(X, y), rtol=1e-8, atol=1e-10)
