"""Sessions: lint, type check, the test suite once per backend, the docs, the benchmark.

``nox`` runs what CI runs: ``lint`` (ruff), ``typecheck`` (mypy), the tests of every CPU
backend (NumPy, array-api-strict, JAX, PyTorch, Dask), ``docs`` (the site, warnings as
errors) and a smoke run of the benchmark. ``nox -s "tests(backend='cupy')"`` runs CuPy; it
skips cleanly where no CUDA device is usable.
"""

from __future__ import annotations

import os
import shutil

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


def _jax_cheap_compile(session):
    """XLA's cheap compile mode and its older CPU code generator (fusion emitters off): the JAX
    session is dominated by single-threaded compilation of small programs, and the two together
    halve its time (333 s against 631 s for the suite, two workers); runtime is irrelevant at
    these sizes, and every result stays within its tolerance. jaxlib 0.11 no longer has the
    fusion-emitter flag, and XLA aborts the process on an unknown flag: it is set only before.
    Appended to the caller's own XLA_FLAGS (a device count, say), which a session's env replaces.
    For the benchmark's smoke run; the test suite sets the same in tests/conftest.py, for nox
    and plain pytest alike."""
    version = session.run("python", "-c", "import jaxlib; print(jaxlib.__version__)", silent=True)
    flags = os.environ.get("XLA_FLAGS", "")
    if tuple(int(p) for p in version.strip().split(".")[:2]) < (0, 11):
        flags += " --xla_cpu_use_fusion_emitters=false"
    return {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1", "XLA_FLAGS": flags.strip()}


def _install(session, *extras):
    # --no-compile: byte-compiling every installed module (SciPy, pandas, PyTorch...) was half
    # of each session's install time; Python compiles what the session imports.
    pins = [p for e in extras for p in PINS.get(e, [])]
    if pins:
        session.install("--no-compile", *pins)
    extras = ",".join(e for e in extras if e)
    session.install("--no-compile", "-e", f".[{extras}]")


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
    env = {"LSQ_BACKENDS": backend}
    # Two workers on every backend: the suite is Python-bound (graph building on Dask, small
    # programs compiled on JAX with tests/conftest.py's cheap settings, small fits elsewhere),
    # one process per core of a 2-core machine.
    workers = ["-n", "2"]
    # The slowest tests, named in the log: where the session's time goes.
    codes = [0, 5] if session.posargs else [0]  # a filter may select no test
    session.run("pytest", "-q", "--durations=15", *workers, *session.posargs, env=env, success_codes=codes)


@nox.session
def bench(session):
    """The benchmark session (``nox -s bench -- --quick`` for a smoke run)."""
    _install(session, "bench", "jax", "torch", "dask", "scipy")
    session.run("python", "-m", "benchmarks", *session.posargs)


@nox.session
def gram_speed(session):
    """The Gram-speed rows, each against its peer in the same run (one BLAS thread): refined
    normal equations, intercept, ill-conditioned ``qr``, small and batched fits."""
    _install(session, "bench", "torch", "scipy")
    session.run("python", "-m", "benchmarks.gram_speed", *session.posargs)


@nox.session
def accuracy(session):
    """LRE table on the NIST StRD datasets against numpy, scipy and scikit-learn."""
    _install(session, "bench", "jax", "torch", "scipy", "strict")
    session.run("python", "-m", "benchmarks.accuracy", *session.posargs)


@nox.session
def econometrics(session):
    """Cluster covariances against statsmodels, absorbed fixed effects against pyfixest's demeaners and
    linearmodels, in one run (``nox -s econometrics -- --full`` for 10^7 x 20 and a 10^6-row panel)."""
    _install(session, "bench")
    session.install("--no-compile", "statsmodels>=0.14", "pyfixest>=0.60", "linearmodels>=6")
    session.run("python", "-m", "benchmarks.econometrics", *session.posargs)


@nox.session
def lint(session):
    """ruff: the rule set of pyproject.toml, and the formatting."""
    session.install("ruff>=0.6")
    paths = ["lsq_backends", "tests", "benchmarks", "noxfile.py", "docs/hooks"]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session
def typecheck(session):
    """mypy on the package (settings in pyproject.toml)."""
    _install(session, "lint")
    session.run("mypy")


def _chromium(session):
    """Chromium and its driver for the browser check of the site: Debian's packages, installed
    on CI (``CI`` set: .ci/run sets it) as root with ``apt-get``, about 70 s; there the check
    must run (``LSQ_SITE_BROWSER=required``: a missing browser fails it). Elsewhere the check
    is skipped, saying why, unless a browser is installed. Returns the check's environment."""
    if not os.environ.get("CI"):
        return {}
    if not shutil.which("chromedriver") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run("apt-get", "update", "-qq", external=True, env=env)
        session.run("apt-get", "install", "-y", "-qq", "chromium", "chromium-driver", external=True, env=env)
    return {"LSQ_SITE_BROWSER": "required"}


@nox.session
def docs(session):
    """The documentation site from docs/ and the docstrings, warnings as errors; the built site
    in a headless browser from the file system (``tests/house/test_site.py``); then the docstring
    examples of every public module."""
    _install(session, "docs", "test")
    browser = _chromium(session)
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env={"NO_MKDOCS_2_WARNING": "1"})
    site = ["pytest", "-q", "-rs", "-n", "0", "tests/house/test_site.py", "-p", "no:cacheprovider"]
    session.run(*site, env={"LSQ_SITE_DIR": "site", **browser})
    session.run("pytest", "-q", "-n", "0", "--doctest-modules", "lsq_backends", "-p", "no:cacheprovider")


@nox.session
def bench_quick(session):
    """``bench --quick``: a smoke test of the benchmark session: every case on NumPy, and on
    each other backend the tall, batched and ridge-path cases in float32."""
    _install(session, "bench", "jax", "torch", "dask", "scipy")
    session.run("python", "-m", "benchmarks", "--quick", "--no-memory", "--backends", "numpy")
    # A smoke test, not a timing: JAX compiles in its cheap mode, as in the JAX tests.
    session.run(
        "python", "-m", "benchmarks", "--quick", "--no-memory", "--backends", "jax,torch,dask", "--dtype", "float32",
        "--cases", "tall_200000x50,batched*,ridgepath*", env=_jax_cheap_compile(session),
    )  # fmt: skip


# CI: lint, type check, every CPU backend's tests, the docs, then the benchmark as a smoke test
# (--quick: shrunken shapes, one timed call; not asserted on speed).
nox.options.sessions = ["lint", "typecheck"] + [f"tests(backend='{b}')" for b in CPU_BACKENDS] + ["docs", "bench_quick"]
