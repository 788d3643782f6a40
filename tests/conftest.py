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
import pytest

from lsq_backends.check.backends import LIBRARIES, avoid_xla_cpu_deadlock, find_backends

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
    avoid_xla_cpu_deadlock()  # XLA's CPU runtime can hang in a batched QR otherwise (see there)
    os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_use_fusion_emitters" not in flags and _jaxlib_before_0_11():
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_use_fusion_emitters=false".strip()

# The names LSQ_BACKENDS takes: each library on its default device (lsq_backends.check.backends,
# the registry the self-check and the benchmarks use too), and torch on the first CUDA device.
BACKENDS = (*LIBRARIES, "torch-cuda")


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


#: Workers a plain ``pytest`` takes: one per core, at most this many (each imports the backends
#: and compiles its own JAX programs).
MAX_WORKERS = 4


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """A plain ``pytest`` runs on pytest-xdist workers, one per core, at most
    :data:`MAX_WORKERS`: the suite is thousands of small, independent tests, and two workers
    halve its time on two cores. Where xdist is not installed, or ``-n``/``--dist``/``--tx``
    says otherwise (``pytest -n 0``: one process), nothing changes. Called before xdist's own
    hook, which then reads these options as if given on the command line."""
    option = config.option
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if option.numprocesses is None and option.dist == "no" and not option.tx:
        option.numprocesses = "auto"
        option.maxprocesses = option.maxprocesses or MAX_WORKERS


def pytest_configure(config):
    # On a GPU, JAX would take 75% of its memory at start, starving CuPy and PyTorch.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    requested = _requested(config)
    for name in requested:
        try:
            importlib.import_module(LIBRARIES[name.split("-")[0]])
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


_FOUND: dict = {}


def _backend(name):
    """The registry's backend ``name``, found once per session; the test is skipped with the
    registry's reason where it cannot run here (not installed, no CUDA device)."""
    if name not in _FOUND:
        found, _, failed = find_backends([name])
        _FOUND[name] = found[0] if found else failed[0][1]
    if isinstance(_FOUND[name], str):
        pytest.skip(_FOUND[name])
    return _FOUND[name]


@pytest.fixture
def be(backend, request):
    """The backend under test (``lsq_backends.check.backends.Backend``: its namespace, device
    and conversions from and to NumPy). array-api-strict runs on a device other than its
    default one, so that any array made on the default device fails. In a module that
    declares ``lazy_fits``, those fits run under ``jax.jit`` or a compute-refusing Dask
    scheduler (``tests/lazy_fits.py``)."""
    found = _backend(backend)
    with lazy_fits.patched(request.module, backend):
        yield found


@pytest.fixture
def xp(be):
    return be.xp


@pytest.fixture
def named_backend():
    """The registry's backend of a given name, for tests that choose their library themselves
    (a skip with the registry's reason where it cannot run here)."""
    return _backend


@pytest.fixture
def strict_device():
    """array-api-strict on a non-default device (in every backend's session): any array
    silently made on the default device raises when combined with the inputs."""
    pytest.importorskip("array_api_strict")
    return _backend("array_api_strict")


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
