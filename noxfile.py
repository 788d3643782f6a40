"""Sessions: the test suite once per backend, the benchmark, the NIST accuracy table.

``nox`` runs the tests of every backend this machine can install and run (CPU: NumPy,
array-api-strict, JAX, PyTorch, Dask). ``nox -s "tests(backend='cupy')"`` runs CuPy; it
skips cleanly where no CUDA device is usable.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_existing_virtualenvs = True

# backend -> extra of pyproject.toml that installs it ("" for NumPy, always installed).
BACKENDS = {
    "numpy": "",
    "array_api_strict": "strict",
    "jax": "jax",
    "torch": "torch",
    "dask": "dask",
    "cupy": "cupy",
}
CPU_BACKENDS = [b for b in BACKENDS if b != "cupy"]

# Installed before the package wherever an extra needs them: the published extras do not pin
# torch, and a plain "torch" here would pull a multi-GB CUDA build; 2.13.0 is a CPU build on
# this machine's package index.
PINS = {"torch": ["torch==2.13.0"]}


def _install(session, *extras):
    pins = [p for e in extras for p in PINS.get(e, [])]
    if pins:
        session.install(*pins)
    extras = ",".join(e for e in extras if e)
    session.install("-e", f".[{extras}]")


@nox.session
@nox.parametrize("backend", list(BACKENDS))
def tests(session, backend):
    """The whole suite against the NumPy reference, with the ``xp`` fixture on ``backend``."""
    _install(session, "test", BACKENDS[backend])
    if backend == "cupy":
        ok = session.run("python", "-c", "import cupy; print(cupy.cuda.is_available())", silent=True)
        if "True" not in ok:
            session.skip("cupy is installed but no CUDA device is usable here")
    module = {"dask": "dask.array"}.get(backend, backend)
    session.run("python", "-c", f"import {module}")  # the backend must import, or fail here
    # JAX's tests are dominated by single-threaded XLA compilation: two workers took the
    # session from 469 s to 326 s on this 2-core machine. The others are BLAS-bound or short.
    workers = ["-n", "2"] if backend == "jax" else []
    session.run("pytest", "-q", *workers, *session.posargs, env={"LSQ_BACKENDS": backend})


@nox.session
def bench(session):
    """The benchmark session (``nox -s bench -- --quick`` for a smoke run)."""
    _install(session, "bench", "jax", "torch", "dask", "scipy")
    session.run("python", "-m", "benchmarks", *session.posargs)


@nox.session
def accuracy(session):
    """LRE table on the NIST StRD datasets against numpy, scipy and scikit-learn."""
    _install(session, "bench", "jax", "torch", "scipy", "strict")
    session.run("python", "-m", "benchmarks.accuracy", *session.posargs)


# CI: every CPU backend's tests, then the benchmark as a smoke test (--quick: shrunken shapes,
# one timed call; not asserted on speed).
nox.options.sessions = [f"tests(backend='{b}')" for b in CPU_BACKENDS] + ["bench_quick"]


@nox.session
def bench_quick(session):
    """``bench --quick``: a smoke test of the benchmark session on every installed backend."""
    _install(session, "bench", "jax", "torch", "dask", "scipy")
    session.run("python", "-m", "benchmarks", "--quick", "--no-memory")
