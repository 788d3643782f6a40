"""One ``xp`` fixture over every backend, selected by ``LSQ_BACKENDS`` or ``--backend``.

``LSQ_BACKENDS=numpy,jax pytest`` (or ``pytest --backend numpy --backend jax``) runs those
backends; a requested backend that is not installed is an error, an unknown name is an error.
With nothing requested, every installed backend runs and the missing ones are skipped with a
reason. CuPy is skipped with a reason when no CUDA device is usable, even when requested.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys

import lazy_fits
import numpy as np
import pytest

# JAX's cheap compile settings, set before anything imports JAX (XLA reads them at start-up):
# the suite compiles thousands of small programs, and runtime does not matter at their sizes.
# XLA's cheap mode and its older CPU code generator (fusion emitters off) halve the JAX tests'
# time; every result stays within its tolerance. A value the caller set is kept
# (JAX_DISABLE_MOST_OPTIMIZATIONS=0 turns the first off). jaxlib 0.11 no longer has the
# fusion-emitter flag, and XLA aborts the process on an unknown flag: it is set only before.


def _jaxlib_before_0_11():
    try:
        version = importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        return False
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < (0, 11)


if "jax" not in sys.modules:
    os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_use_fusion_emitters" not in flags and _jaxlib_before_0_11():
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_use_fusion_emitters=false".strip()

BACKENDS = {
    "numpy": "numpy",
    "array_api_strict": "array_api_strict",
    "jax": "jax",
    "torch": "torch",
    "dask": "dask.array",
    "cupy": "cupy",
    "torch-cuda": "torch",  # torch tensors on the first CUDA device (skipped without one)
}


def pytest_addoption(parser):
    parser.addoption(
        "--backend", action="append", default=[], help=f"backend to test, one of {sorted(BACKENDS)} (repeatable)"
    )


def _requested(config):
    names = list(config.getoption("--backend"))
    env = os.environ.get("LSQ_BACKENDS", "")
    names += [n.strip() for n in env.split(",") if n.strip()]
    unknown = sorted(set(names) - set(BACKENDS))
    if unknown:
        raise pytest.UsageError(f"unknown backend(s) {unknown}; choose from {sorted(BACKENDS)}")
    return names


def pytest_configure(config):
    # On a GPU, JAX would take 75% of its memory at start, starving CuPy and PyTorch.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    requested = _requested(config)
    for name in requested:
        try:
            importlib.import_module(BACKENDS[name])
        except ImportError as exc:
            raise pytest.UsageError(f"backend {name!r} was requested but cannot be imported: {exc}") from exc
    config._lsq_backends = requested or list(BACKENDS)
    try:
        import jax
    except ImportError:
        return
    jax.config.update("jax_enable_x64", True)
    # As JAX's own test harness (and lineax's, and many JAX libraries'): an implicit rank
    # promotion or an implicit dtype promotion is an error, so the package must broadcast
    # and cast explicitly wherever a caller runs with these settings.
    jax.config.update("jax_numpy_rank_promotion", "raise")
    jax.config.update("jax_numpy_dtype_promotion", "strict")


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", metafunc.config._lsq_backends, scope="session")


class Backend:
    """A backend under test: its namespace and conversions from/to NumPy."""

    def __init__(self, name, xp, device=None):
        self.name, self.xp, self.device = name, xp, device

    def __repr__(self):
        return f"Backend({self.name})"

    def asarray(self, a, dtype=None):
        a = np.asarray(a)
        if dtype is not None:
            a = a.astype(dtype)
        if self.name == "dask":
            import dask.array as da

            return da.from_array(a, chunks=(max(1, a.shape[0] // 3),) + a.shape[1:] if a.ndim else ())
        if self.device is not None:
            return self.xp.asarray(a, device=self.device)
        return self.xp.asarray(a)

    def to_numpy(self, x):
        if x is None:
            return None
        if self.name == "cupy":
            return x.get()
        if self.name == "torch":
            return x.detach().cpu().numpy()
        if self.name == "dask":
            return np.asarray(x.compute())
        return np.asarray(x)

    @property
    def lazy(self):
        return self.name == "dask"


def _load(name):
    if name not in BACKENDS:
        raise ValueError(name)
    try:
        mod = importlib.import_module(BACKENDS[name])
    except ImportError as exc:
        pytest.skip(f"backend {name} is not installed ({exc})")
    if name == "cupy" and not mod.cuda.is_available():
        pytest.skip("cupy is installed but no CUDA device is usable here")
    if name == "torch-cuda" and not mod.cuda.is_available():
        pytest.skip("torch is installed but no CUDA device is usable here")
    import array_api_compat

    if name == "numpy":
        return array_api_compat.array_namespace(np.empty(0))
    if name == "array_api_strict":
        return mod
    if name == "jax":
        import jax.numpy as jnp

        return jnp
    if name in ("torch", "torch-cuda"):
        return array_api_compat.array_namespace(mod.empty(0))
    if name == "dask":
        return array_api_compat.array_namespace(mod.empty(0))
    return mod


@pytest.fixture
def be(backend, request):
    """The backend under test (namespace plus conversions). ``torch-cuda`` is torch with its
    arrays on ``cuda``: the tests see the name ``torch`` and the device. In a module that
    declares ``lazy_fits``, those fits run under ``jax.jit`` or a compute-refusing Dask
    scheduler (``tests/lazy_fits.py``)."""
    if backend == "torch-cuda":
        yield Backend("torch", _load(backend), "cuda")
        return
    with lazy_fits.patched(request.module, backend):
        yield Backend(backend, _load(backend))


@pytest.fixture
def xp(be):
    return be.xp


@pytest.fixture
def strict_device():
    """array-api-strict on a non-default device: any array silently made on the default device
    raises when combined with the inputs."""
    strict = pytest.importorskip("array_api_strict")
    return Backend("array_api_strict", strict, strict.Device("device1"))


@pytest.fixture(scope="module")
def one_blas_thread():
    """Thousands of tiny factorizations: BLAS threads only contend (100x slower on a loaded
    machine). Modules that use this run on one BLAS thread when threadpoolctl is there."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(1):
        yield


@pytest.fixture
def numpy_reference(request):
    """For tests that take no ``xp`` (NumPy against scikit-learn, statsmodels, ...): run them in
    the numpy session only, not once per backend session."""
    if "numpy" not in request.config._lsq_backends:
        pytest.skip("a NumPy-only comparison: it runs in the numpy backend's session")


@pytest.fixture(scope="module", autouse=True)
def _jax_compile_caches_per_module():
    """Clear JAX's compilation caches after each test module. Every compiled program keeps its
    machine code mapped in the process (~17 memory mappings and ~13 MB each, measured on CPU):
    one process compiling the whole suite's thousands of shapes grows by gigabytes and towards
    the kernel's limit on mappings per process (vm.max_map_count, 65530 by default), where XLA's
    compiler aborts. A module's programs are not reused by the next module."""
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
