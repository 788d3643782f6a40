"""What ``python -m benchmarks.gpu`` runs: the stages, their time limits and the test files.

A stage is a list of jobs, run one after another (``parallel=False``) or all at once. Each job
is one command under its own time limit, whose output goes to its own file as it is written.
A job that needs a GPU library names it (``needs``); where that library has no CUDA device the
job is skipped, or, with ``--dry-run``, replaced by its CPU stand-in (``cpu``), which exercises
the same machinery on small problems.

The worst case (every job at its limit, plus the grace before SIGKILL) stays under
``BUDGET_S``; ``tests/house/test_gpu_plan.py`` checks it, and that every test file of the suite is
either run here or named in ``CPU_ONLY`` with the reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

BUDGET_S = 540  # one device command: at most ~9 minutes
GRACE_S = 3  # SIGTERM, then SIGKILL this much later (``timeout -k``)
TESTS_S = 180  # the tests stage: what the budget leaves

# Run on CuPy and on torch-cuda, most telling first (a run cut short by its limit still gives
# the first files, and ``-v`` names every test that finished).
GPU_TESTS = (
    "test_lean.py",
    "test_lstsq.py",
    "test_precision_guards.py",
    "test_host_reads.py",
    "test_stack_qr.py",
    "test_float32.py",
    "test_float32_tall.py",
    "test_shifted_cholqr.py",
    "test_gram_route.py",
    "test_accumulators.py",
    "test_cuda_quirks.py",
    "test_capabilities.py",
    "test_ridge_path.py",
    "test_ridge_cv.py",
    "test_ridge_cv_float32.py",
    "test_ridge_cv_batched.py",
    "test_ridge_kfold.py",
    "test_nnls.py",
    "test_lsqr.py",
    "test_scale.py",
    "test_homogeneity.py",
    "test_input_edges.py",
    "test_input.py",
    "test_bad_input.py",
    "test_perf_paths.py",
    "test_lapack_style.py",
    "test_rank.py",
    "test_lsmr.py",
    "test_sparse.py",
    "test_sparse_gram_backends.py",  # CuPy's and CUDA PyTorch's sparse Gram products run only here
    "test_diagnostics.py",
    "test_diagnostics_cluster.py",  # segment_sum: CuPy's scatter_add and CUDA index_add run only here
    "test_absorb.py",  # absorbed fixed effects: the steps' loop reads every 10th test on a GPU
    "test_absorb_convergence.py",  # the conjugate gradient's steps on a slowly mixing panel
    "test_estimators.py",
    "test_estimator_state.py",
    "test_nist.py",
    "test_derivatives_torch.py",
)
# Run on JAX on its default device (the GPU): every jitted case compiles, so fewer files.
JAX_TESTS = (
    "test_jax.py",
    "test_host_reads.py",
    "test_float32.py",
    "test_jax_path.py",
    "test_derivatives_jax.py",
    "test_precision.py",
    "test_accumulators.py",
    "test_lstsq.py",
)
# Not run on the GPU, and why.
CPU_ONLY = {
    "test_check.py": "the self-check's own tests; the check stage runs the self-check itself",
    "test_dask_lazy.py": "Dask only",
    "test_derivatives_extended_jax.py": "the extended derivative rules: device-independent algebra, CPU CI covers it",
    "test_derivatives_extended_torch.py": "the extended derivative rules: device-independent algebra, CPU CI covers it",
    "test_estimators_sklearn.py": "NumPy against scikit-learn",
    "test_properties.py": "Hypothesis searches: minutes of CPU time per backend",
    "test_readme.py": "NumPy",
    "test_sharded_jax.py": "simulated CPU devices",
    "test_structure.py": "static checks of the source",
    "test_registry.py": "the solver contract on NumPy (the records, the Solution of every branch)",
    "test_gpu_plan.py": "this plan and its runner, checked on the CPU",
    "test_suite_settings.py": "the test suite's own JAX compile settings",
    "test_site.py": "the documentation site",
    "test_input_numbers.py": "options given as Python and NumPy scalars: parsed before any array work",
    "test_refine_memory.py": "NumPy's allocations, measured with tracemalloc",
    "test_accumulators_sharing.py": "threads, pickling and copies of an accumulator: host-side locking",
    "test_sparse_estimators.py": "SciPy sparse X against scikit-learn (NumPy)",
    "test_sparse_gram.py": "SciPy sparse X by its Gram matrix: NumPy and SciPy only",
    "test_ridge_cv_scoring.py": "scikit-learn's scorers: callables on host arrays, parity with RidgeCV",
    "test_diagnostics_models.py": "statsmodels parity on edge designs: CPU CI covers it",
    "test_estimator_tol.py": "scikit-learn's tol mapped to LSQR's: covered by test_lsqr.py on the GPU",
    "test_pandas_input.py": "pandas frames (host data)",
    "test_benchmark_cli.py": "the benchmark's command line",
    "test_jax_lapack_order.py": "the order of LAPACK calls in JAX's CPU programs (it skips on a GPU)",
    "test_jax_compile_options.py": "XLA's CPU compile options of eager JAX calls (jaxlib 0.10's option)",
    "test_route.py": "the route of a NumPy call through the package",
    "test_passes.py": "passes over X counted by PyTorch's dispatcher: the same ops run on CUDA",
    "test_docs_text.py": "the README, the pages and the docstrings: static text",
    "test_cv_score_conventions.py": "ridge_cv's and RidgeCV's default fold scores on NumPy",
    "test_install.py": "the package imported from a folder that holds a clone",
}


@dataclass(frozen=True)
class Job:
    """One command under one time limit; its output goes to ``<name>.log``."""

    name: str
    cmd: tuple
    limit: float
    env: dict = field(default_factory=dict)
    needs: str | None = None  # "cupy", "torch-cuda" or "jax-gpu": skipped where unusable
    cpu: Job | None = None  # the --dry-run stand-in where ``needs`` is unusable


@dataclass(frozen=True)
class Stage:
    name: str
    jobs: tuple
    parallel: bool = False

    @property
    def limit(self):
        """Worst-case seconds of the stage, the grace before SIGKILL included."""
        times = [j.limit + GRACE_S for j in self.jobs]
        return max(times, default=0) if self.parallel else sum(times)


def worst_case(stages):
    return sum(s.limit for s in stages)


def suite_path(name):
    """``tests/<layer>/<name>``: the path, from the repository root, of the suite's test file ``name``."""
    root = Path(__file__).resolve().parents[2]
    found = sorted((root / "tests").rglob(name))
    return found[0].relative_to(root).as_posix() if found else f"tests/{name}"


def _pytest(backend, files, workers, extra_env=None):
    # -p benchmarks.gpu.failures: each traceback as it happens (a job cut short keeps them)
    cmd = ("-m", "pytest", "-p", "no:cacheprovider", "-p", "benchmarks.gpu.failures", "-v", "--tb=short", "-rfE")
    cmd += ("--durations=15",)
    # One process without -n: a plain pytest takes xdist workers where xdist is there (conftest.py)
    cmd += (("-n", str(workers)) if workers else ("-p", "no:xdist")) + tuple(suite_path(f) for f in files)
    return cmd, {"LSQ_BACKENDS": backend, **(extra_env or {})}


def _check(backends, *flags):
    return ("-m", "lsq_backends.check", "--backends", backends, *flags)


def stages(py, work, wheels=(), site=None, xdist=True):
    """The stages, in order, for interpreter ``py`` writing under ``work``.

    ``wheels``: the wheel files to install into ``site`` (the first stage); ``work`` holds
    every job's output (``<job>.log``, and ``<job>.json`` where the command writes one);
    ``xdist``: pytest-xdist is installed (the tests then run on several workers each)."""

    def j(name, args, limit, env=None, needs=None, cpu=None):
        return Job(name, (py, *args), limit, env or {}, needs, cpu)

    def out(name):
        return os.path.join(work, f"{name}.json")

    install = ()
    if wheels:
        pip = ("-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--target", site, *wheels)
        install = (j("install", pip, 15),)
    env = j("env", ("benchmarks/gpu/env.py", "--json", out("env")), 25)
    # 81 s on the first run's H100, 57 s of it the first four probes' CuPy kernel compiles; the absorbed fit's
    # probe about 12 s more (NumPy's reference fits on the CPU 8 s of it, on this 2-core machine), and CuPy's
    # goal, last, a few seconds and one SVD of 10**6 x 256 per dtype (a cut-off one loses only its own lines)
    probes = j("probes", ("benchmarks/gpu/probe.py",), 110)

    # The self-check at full size, one process at a time on an otherwise idle GPU (its timings
    # are the ratios to cupy.linalg.lstsq, torch.linalg.lstsq and a bare X.T @ X), CuPy once per
    # dtype (the report is written at the end of a run: a timeout loses one dtype, not both).
    # The first run: CuPy at --repeat 3 passed 55 s per dtype with a cold kernel cache; at
    # --repeat 1 both dtypes took 48 s warm; torch-cuda at --repeat 3 took 67 s.
    timed = ("--repeat", "1", "--json")
    check = []
    for dt in ("float64", "float32"):
        cpu = j(f"check_numpy_{dt}", _check("numpy", "--quick", "--dtypes", dt, "--json", out(f"check_numpy_{dt}")), 55)
        cmd = _check("cupy", "--dtypes", dt, *timed, out(f"check_cupy_{dt}"))
        check.append(j(f"check_cupy_{dt}", cmd, 40, needs="cupy", cpu=cpu))
    cpu = j("check_torch_cpu", _check("torch-cpu", "--quick", "--json", out("check_torch_cpu")), 70)
    check.append(
        j("check_torch_cuda", _check("torch-cuda", *timed, out("check_torch_cuda")), 55, None, "torch-cuda", cpu)
    )

    # JAX's ratios to jnp.linalg.lstsq and to its bare X.T @ X (the self-check's --quick JAX rows
    # are untimed): the benchmark on one tall case, rows printed as they finish. NumPy's peers
    # run too (the reference): at 100000 x 200 they took most of the first run's 75 s.
    bench = ("-m", "benchmarks", "--cases", "tall_200000x50", "--methods", "auto,normal,qr,svd")
    cpu = j("bench_numpy", (*bench, "--backends", "numpy", "--quick", "--no-memory", "--json", out("bench_numpy")), 50)
    cmd = (*bench, "--backends", "jax", "--repeat", "3", "--no-memory", "--json", out("bench_jax"))
    bench_jax = j("bench_jax", cmd, 50, needs="jax-gpu", cpu=cpu)

    # The tests on three backends at once, and the JAX self-check (--quick: compiles, no
    # timings) beside them: 16 cores, and none of these is timed. The first run: CuPy's 1,410
    # tests took 129 s on 6 workers, torch-cuda's 99% of them in 145 s on 4, JAX's 49% of 524
    # in 145 s on 4 (its compiles; 98% in 200 s on 10 alone): JAX's most telling files first.
    jax_env = {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1", "XLA_FLAGS": _append_flag("--xla_gpu_autotune_level=0")}
    tests = []
    for backend, files, workers, needs, cpu_backend, env_ in (
        ("cupy", GPU_TESTS, 5, "cupy", "numpy", None),
        ("torch-cuda", GPU_TESTS, 4, "torch-cuda", "torch", None),
        ("jax", JAX_TESTS, 6, "jax-gpu", "jax", jax_env),
    ):
        name = f"tests_{backend.replace('-', '_')}"
        cmd, env_vars = _pytest(backend, files, workers if xdist else 0, env_)
        cpu_cmd, cpu_env = _pytest(cpu_backend, files, 0, env_)
        tests.append(j(name, cmd, TESTS_S, env_vars, needs, j(f"tests_{cpu_backend}_cpu", cpu_cmd, TESTS_S, cpu_env)))
    cpu = j("check_jax_cpu", _check("jax-cpu", "--quick", "--json", out("check_jax_cpu")), TESTS_S)
    tests.append(
        j("check_jax_gpu", _check("jax-gpu", "--quick", "--json", out("check_jax_gpu")), TESTS_S, None, "jax-gpu", cpu)
    )

    return [
        Stage("install", install),
        Stage("env", (env,)),
        Stage("probes", (probes,)),
        Stage("check", tuple(check)),
        Stage("bench", (bench_jax,)),
        Stage("tests", tuple(tests), parallel=True),
    ]


def _append_flag(flag):
    return f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()


def scaled(stages_, factor):
    """The same stages with every limit times ``factor`` (dry runs with a tiny budget)."""

    def job(jb):
        cpu = None if jb.cpu is None else job(jb.cpu)
        return replace(jb, limit=jb.limit * factor, cpu=cpu)

    return [replace(s, jobs=tuple(job(jb) for jb in s.jobs)) for s in stages_]
