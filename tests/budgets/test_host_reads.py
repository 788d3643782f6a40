"""Host reads per eager fit: every ``bool()``/``float()``/``int()``/``.item()`` of a device value
is a synchronization on CuPy and CUDA PyTorch. Counted on PyTorch (CPU: the same code path
as CUDA) and array-api-strict; the budget is one read on the common path of every direct
method, at most one more where a fallback runs (README's method table).

The other way to stall a GPU's stream: a tensor built from host data (``xp.asarray`` of a Python
number or list, or of a NumPy array, on a CUDA device is a blocking copy). A fit makes its
constants on the device; the budget is zero such tensors for every entry point, counted on
PyTorch on the CPU (the same code path as CUDA) by the operator torch dispatches for each.
"""

from __future__ import annotations

import collections
import traceback

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends.check import count_host_reads
from lsq_backends.check.problems import design


@pytest.mark.parametrize("lib", ["torch", "array_api_strict"])
@pytest.mark.parametrize("shape", [(200, 8), (6, 20)], ids=["tall", "wide"])
@pytest.mark.parametrize("method", ["auto", "normal", "qr", "svd"])
@pytest.mark.parametrize("extras", ["plain", "intercept", "weights"])
def test_one_read_per_fit(lib, shape, method, extras, numpy_reference, named_backend):
    be = named_backend(lib)  # array-api-strict off its default device
    put = be.asarray
    rng = np.random.default_rng(0)
    X = design(rng, shape, 10.0)
    y = rng.standard_normal(shape[0])
    kw = {}
    if extras != "plain":
        kw["fit_intercept"] = True
    if extras == "weights":
        kw["sample_weight"] = put(rng.random(shape[0]) + 0.5)
    Xd, yd = put(X), put(y)
    with count_host_reads(lib) as n:
        r = lsq.lstsq(Xd, yd, method=method, **kw)
    assert n.count == 1, f"{n.count} host reads"
    ref = lsq.lstsq(X, y, method=method, **{k: (be.to_numpy(v) if k == "sample_weight" else v) for k, v in kw.items()})
    np.testing.assert_allclose(be.to_numpy(r.coef), ref.coef, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lib", ["torch", "array_api_strict"])
@pytest.mark.parametrize("method", ["auto", "normal", "qr"])
def test_fallback_costs_one_more_read(lib, method, numpy_reference, named_backend):
    be = named_backend(lib)  # array-api-strict off its default device
    put = be.asarray
    rng = np.random.default_rng(1)
    X = rng.standard_normal((100, 5))
    X[:, 3] = X[:, 1]  # rank 4: the fallback to the SVD runs
    y = rng.standard_normal(100)
    with count_host_reads(lib) as n:
        r = lsq.lstsq(put(X), put(y), method=method, fit_intercept=True)
    # qr: past CholeskyQR2's gate, shifted CholeskyQR3's own check is one more read before
    # Householder QR (whose rank test sends this problem to the SVD of R); normal and auto: the lean route's
    # certificate is read first, then the full route's two
    assert n.count <= 3, f"{n.count} host reads"
    assert int(r.rank) == 4


@pytest.mark.parametrize("lib", ["torch", "array_api_strict"])
def test_ridge_and_bad_input_reads(lib, numpy_reference, named_backend):
    be = named_backend(lib)  # array-api-strict off its default device
    put = be.asarray
    rng = np.random.default_rng(2)
    X, y = put(rng.standard_normal((50, 4))), put(rng.standard_normal(50))
    with count_host_reads(lib) as n:
        lsq.ridge(X, y, put(np.asarray(0.5)), sample_weight=put(rng.random(50)))
    assert n.count == 1
    # The checks read together still raise the right error, naming the argument.
    bad = rng.random(50)
    bad[3] = -1.0
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        lsq.lstsq(X, y, sample_weight=put(bad), method="qr")
    Xn = rng.standard_normal((50, 4))
    Xn[2, 1] = np.nan
    for method in ("auto", "normal", "qr", "svd", "lsqr"):
        with pytest.raises(ValueError, match="X contains NaN"):
            lsq.lstsq(put(Xn), y, method=method)
    with pytest.raises(ValueError, match="alpha must be non-negative"):
        lsq.ridge(X, y, put(np.asarray(-1.0)))


def test_lsqr_reads_once_per_iteration_on_host(numpy_reference):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    X, y = torch.asarray(rng.standard_normal((300, 6))), torch.asarray(rng.standard_normal(300))
    with count_host_reads("torch") as n:
        r = lsq.lstsq(X, y, method="lsqr")
    # The value checks ride on the first convergence test; in host memory every iteration's
    # test is read (free there), on a GPU every 10th.
    assert n.count <= int(r.n_iter) + 1


# --- tensors built from host data ----------------------------------------------------------


def _host_tensor_counter():
    """A torch dispatch mode that records every tensor built from host data: torch dispatches
    ``aten.lift_fresh`` for each (``torch.asarray``/``torch.tensor`` of Python numbers, lists,
    NumPy arrays), on every device; on CUDA each is a copy that blocks the stream. ``sites``
    counts them by the library's lines that made them."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class HostTensors(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.sites = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is torch.ops.aten.lift_fresh.default:
                frames = [f for f in traceback.extract_stack() if "lsq_backends" in f.filename]
                self.sites[
                    " <- ".join(f"{f.filename.rsplit('lsq_backends', 1)[-1]}:{f.lineno}" for f in frames[-3:][::-1])
                ] += 1
            return func(*args, **(kwargs or {}))

    return HostTensors()


def torch_cat(parts):
    import torch

    return torch.cat(parts, dim=1)


def _torch_fits():
    """Every entry point, as a fit on torch tensors (X, y, w made beforehand) with the host-side
    arguments users pass: Python and NumPy penalties, default estimator alphas."""
    import lsq_backends.estimators as est

    def accumulate(cls, alpha):
        def fit(X, y, w):
            a = cls().update(X[:120], y[:120], w[:120])
            b = cls().update(X[120:], y[120:])
            return a.merge(b).solve(alpha)

        return fit

    fits = {
        f"lstsq-{m}": (lambda m: lambda X, y, w: lsq.lstsq(X, y, method=m))(m)
        for m in ("auto", "normal", "qr", "svd", "lsqr", "lsmr")
    }
    fits.update({
        "lstsq-intercept-weights": lambda X, y, w: lsq.lstsq(X, y, method="qr", fit_intercept=True, sample_weight=w),
        "lstsq-float32": lambda X, y, w: lsq.lstsq(X.float(), y.float()),
        # past 16 columns: the power iteration's condition estimate (its start vector's signs)
        "lstsq-18-columns": lambda X, y, w: lsq.lstsq(torch_cat([X, X * X, X * X * X]), y),
        "lstsq-refine": lambda X, y, w: lsq.lstsq(X, y, method="qr", refine=1),
        "ridge-python-float": lambda X, y, w: lsq.ridge(X, y, 0.5),
        "ridge-python-int": lambda X, y, w: lsq.ridge(X, y, 2, method="normal"),
        "ridge-lsqr": lambda X, y, w: lsq.ridge(X, y, 0.5, method="lsqr"),
        "ridge-per-target-list": lambda X, y, w: lsq.ridge(X, y[:, None] * X[:, :2], [0.5, 2.0], per_target=True),
        "ridge-path-numpy": lambda X, y, w: lsq.ridge(X, y, np.array([0.1, 1.0, 10.0])),
        "nnls": lambda X, y, w: lsq.nnls(X, y),
        "nnls-ridge": lambda X, y, w: lsq.nnls(X, y, alpha=0.5, fit_intercept=True),
        "ridge_cv-list": lambda X, y, w: lsq.ridge_cv(X, y, [0.1, 1.0, 10.0]),
        "ridge_cv-gcv-numpy": lambda X, y, w: lsq.ridge_cv(X, y, np.logspace(-2, 2, 9), cv="gcv", sample_weight=w),
        "diagnostics": lambda X, y, w: lsq.diagnostics(X, y, cov_type="HC1"),
        "NormalAccumulator": accumulate(lsq.NormalAccumulator, 0.5),
        "QRAccumulator": accumulate(lsq.QRAccumulator, 0.0),
        "Ridge": lambda X, y, w: est.Ridge(alpha=1.0).fit(X, y).predict(X),
        "RidgeCV": lambda X, y, w: est.RidgeCV().fit(X, y).score(X, y),
    })  # fmt: skip
    return fits


@pytest.mark.parametrize("entry", sorted(_torch_fits()))
def test_no_tensor_built_from_host_data(entry, numpy_reference):
    """Every fit makes its constants on the device: no tensor is built from host data (on
    CUDA each would be a blocking copy, a stream synchronization in the middle of the fit).
    Held-out folds are the exception (their row indices are host data)."""
    torch = pytest.importorskip("torch")
    if entry in ("Ridge", "RidgeCV"):
        pytest.importorskip("sklearn")
    rng = np.random.default_rng(4)
    X = torch.asarray(rng.standard_normal((200, 6)))
    y = torch.asarray(rng.standard_normal(200))
    w = torch.asarray(rng.random(200) + 0.5)
    fit = _torch_fits()[entry]
    with _host_tensor_counter() as host:
        fit(X, y, w)
    assert sum(host.sites.values()) == 0, dict(host.sites)


def test_the_host_tensor_counter_sees_host_data(numpy_reference):
    torch = pytest.importorskip("torch")
    import array_api_compat

    xp = array_api_compat.array_namespace(torch.empty(0))
    with _host_tensor_counter() as host:
        xp.asarray([1.0, 2.0], dtype=torch.float64, device="cpu")
        xp.asarray(0.5, dtype=torch.float64, device="cpu")
        xp.full((), 0.5, dtype=torch.float64, device="cpu")  # made on the device: not counted
    assert sum(host.sites.values()) == 2


@pytest.mark.parametrize("lib", ["torch", "array_api_strict"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_constants_made_on_the_device_are_exact(lib, dtype, numpy_reference, named_backend):
    """The scaling's powers of two (from a running product on the device) and filled-in
    penalties equal the host values exactly."""
    from lsq_backends._backend import _compat

    be = named_backend(lib)  # array-api-strict off its default device
    put = be.asarray
    like = put(np.zeros(1, dtype=dtype))
    xp = _compat.array_namespace(like)
    nbits = 10 if dtype == "float64" else 7
    step, up, down = (be.to_numpy(a) for a in _compat.powers_of_two(xp, nbits, like))
    np.testing.assert_array_equal(step, np.asarray([2.0**b for b in range(nbits)], dtype=dtype))
    np.testing.assert_array_equal(up, np.asarray([2.0 ** (2**b) for b in range(nbits)], dtype=dtype))
    np.testing.assert_array_equal(down, np.asarray([2.0 ** -(2**b) for b in range(nbits)], dtype=dtype))
    values = [0.1, 1.0, 1e-300 if dtype == "float64" else 1e-30, 3]
    got = _compat.constants(xp, values, like.dtype, like)
    np.testing.assert_array_equal(be.to_numpy(got), np.asarray(values, dtype=dtype))
    assert tuple(_compat.constants(xp, 0.1, like.dtype, like).shape) == ()


# --- XLA:GPU: predicates copied to the host inside a compiled call --------------------------


def _xla_entries():
    """Entry of the capability table -> a call on (X, y, w) as JAX arrays."""
    return {
        "lstsq:normal": lambda X, y: lsq.lstsq(X, y, method="normal"),
        "lstsq:auto": lambda X, y: lsq.lstsq(X, y, method="auto"),
        "lstsq:qr": lambda X, y: lsq.lstsq(X, y, method="qr"),
        "lstsq:svd": lambda X, y: lsq.lstsq(X, y, method="svd"),
        "lstsq:lsqr": lambda X, y: lsq.lstsq(X, y, method="lsqr"),
        "ridge (path)": lambda X, y: lsq.ridge(X, y, X[:3, 0] ** 2 + 0.1),
        "ridge_cv": lambda X, y: lsq.ridge_cv(X, y, X[:3, 0] ** 2 + 0.1),
        "diagnostics": lambda X, y: lsq.diagnostics(X, y),
        "nnls": lambda X, y: lsq.nnls(X, y),
        "NormalAccumulator": lambda X, y: lsq.NormalAccumulator().update(X, y).solve(),
        "QRAccumulator": lambda X, y: lsq.QRAccumulator().update(X, y).solve(),
    }


@pytest.mark.parametrize("entry", sorted(_xla_entries()))
def test_xla_gpu_syncs_match_the_capability_table(entry, request, monkeypatch):
    """XLA:GPU copies to the host the predicate of every ``lax.cond`` it executes and of every
    ``while_loop`` trip. Counted here on the CPU: each traced cond and loop test gets a host
    callback, so the compiled call reports the predicates it evaluates; with the eager read
    of the value checks, the total is the capability table's common-path figure (loops run as
    on an accelerator: 10 iterations a trip)."""
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax backend's session")
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from lsq_backends._backend import _control
    from lsq_backends.capabilities import CAPABILITIES

    evaluated = []
    real_cond, real_while = jax.lax.cond, jax.lax.while_loop

    def cond(pred, *args, **kwargs):
        jax.debug.callback(lambda: evaluated.append("cond"))
        return real_cond(pred, *args, **kwargs)

    def while_loop(cond_fun, body, init):
        def test(c):
            jax.debug.callback(lambda: evaluated.append("while"))
            return cond_fun(c)

        return real_while(test, body, init)

    monkeypatch.setattr(jax.lax, "cond", cond)
    monkeypatch.setattr(jax.lax, "while_loop", while_loop)
    monkeypatch.setattr(_control, "steps_per_trip", lambda jax: 10)
    rng = np.random.default_rng(7)
    X = jnp.asarray(design(rng, (311, 7), 10.0))  # a shape of its own: traced afresh, with the callbacks
    y = X @ jnp.asarray(rng.standard_normal(7))
    with count_host_reads("jax-cpu") as reads:
        r = jax.block_until_ready(_xla_entries()[entry](X, y))
    total = reads.count + len(evaluated)
    cell = CAPABILITIES[entry]["xla_gpu_syncs"]
    want = int(cell.split()[0])
    if "per 10 iterations" in cell:
        want += -(-int(np.max(np.asarray(r.n_iter))) // 10)  # trips of 10 begun
    assert total == want, (cell, reads.count, evaluated)
