"""``python -m benchmarks.gpu``, the one GPU command, checked on the CPU: its plan fits the
device budget and knows every test file, and its runner keeps what a killed job had written.
Static and stdlib-only: runs in the numpy session only."""

from __future__ import annotations

import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from benchmarks.gpu import plan, summary
from benchmarks.gpu.runner import Runner
from benchmarks.progress import Progress

pytestmark = pytest.mark.usefixtures("numpy_reference")
TESTS = Path(__file__).resolve().parents[1]


def test_worst_case_fits_the_device_budget():
    stages = plan.stages(sys.executable, "WORK", wheels=("a.whl",), site="SITE")
    assert plan.worst_case(stages) <= plan.BUDGET_S
    assert [s.name for s in stages] == ["install", "env", "probes", "check", "bench", "tests"]


def test_every_test_file_is_run_on_the_gpu_or_said_why_not():
    files = {p.name for p in TESTS.rglob("test_*.py")}
    named = set(plan.GPU_TESTS) | set(plan.JAX_TESTS) | set(plan.CPU_ONLY)
    assert files - named == set(), "new test files: add them to GPU_TESTS/JAX_TESTS or CPU_ONLY"
    assert named - files == set(), "named test files that do not exist"
    assert not (set(plan.GPU_TESTS) | set(plan.JAX_TESTS)) & set(plan.CPU_ONLY)


def test_dry_run_takes_the_cpu_stand_ins():
    stages = plan.stages(sys.executable, "WORK")
    gpu_jobs = [j for s in stages for j in s.jobs if j.needs]
    assert {j.needs for j in gpu_jobs} == {"cupy", "torch-cuda", "jax-gpu"}
    assert all(j.cpu is not None and j.cpu.needs is None for j in gpu_jobs)
    backends = {_backend(j) for j in gpu_jobs}
    assert {_backend(j.cpu) for j in gpu_jobs} == {"numpy", "torch", "jax", "torch-cpu", "jax-cpu"}
    assert backends == {"cupy", "torch-cuda", "jax", "jax-gpu"}


def _backend(job):
    """The backend a job runs on: its pytest session's, or its ``--backends``."""
    return job.env.get("LSQ_BACKENDS") or job.cmd[job.cmd.index("--backends") + 1]


def _job(name, code, limit):
    return plan.Job(name, (sys.executable, "-c", code), limit)


def test_a_killed_job_keeps_its_output_and_the_next_job_runs(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    archive = out / "results.tgz"
    runner = Runner(str(work), str(archive), env=None, echo=lambda line: None)
    slow = _job("slow", "import time; print('first line', flush=True); time.sleep(60)", 1.0)
    fast = _job("fast", "print('done')", 30.0)
    runner.stage(plan.Stage("first", (slow,)))
    with tarfile.open(archive) as tar:  # packed after the killed job, before the next one
        assert "first line" in tar.extractfile("slow.log").read().decode()
    runner.stage(plan.Stage("second", (fast,)))
    assert [(r["job"], r["status"]) for r in runner.records] == [("slow", "timeout"), ("fast", "ok")]
    assert runner.records[0]["seconds"] < 1.0 + plan.GRACE_S + 2
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        assert {"slow.log", "fast.log", "stages.txt"} <= names
        assert "done" in tar.extractfile("fast.log").read().decode()
    assert summary.summary(str(work), runner.records)[0].startswith("== GPU check summary")


def test_a_job_whose_gpu_is_missing_is_skipped_or_replaced(tmp_path):
    (tmp_path / "env.json").write_text('{"usable": {"cupy": "no CUDA device"}}')
    stand_in = _job("numpy_twin", "print('cpu')", 30.0)
    job = plan.Job("cupy_job", (sys.executable, "-c", "raise SystemExit(3)"), 30.0, needs="cupy", cpu=stand_in)
    archive = tmp_path / "results.tgz"
    gpu = Runner(str(tmp_path), str(archive), env=None, echo=lambda line: None)
    gpu.stage(plan.Stage("s", (job,)))
    assert gpu.records[0]["status"].startswith("skipped: cupy unusable (no CUDA device)")
    dry = Runner(str(tmp_path), str(archive), env=None, dry_run=True, echo=lambda line: None)
    dry.stage(plan.Stage("s", (job,)))
    assert [(r["job"], r["status"]) for r in dry.records] == [("numpy_twin", "ok")]


def test_summary_counts_verbose_pytest_lines(tmp_path):
    (tmp_path / "tests_cupy.log").write_text(
        "[gw0] [ 10%] PASSED tests/test_a.py::test_x[cupy]\n"
        "[gw1] [ 20%] FAILED tests/test_a.py::test_y[cupy]\n"
        "tests/test_b.py::test_z[numpy] SKIPPED (why)                 [ 30%]\n"
        "FAILED tests/test_a.py::test_y[cupy] - AssertionError\n"
    )
    line, failed = summary.test_lines(str(tmp_path))[:2]
    assert "1 passed, 1 failed, 1 skipped" in line
    assert failed.strip() == "tests/test_a.py::test_y[cupy]"


def test_summary_reads_the_benchmark_progress_lines(tmp_path, capsys):
    """The benchmark's progress lines (no terminal, so no tqdm bar) are what the summary reads:
    a run cut short still gives the ratios of the rows it finished."""
    shown = Progress(4)
    rows = [("LIMIT X.T@X", 0.002, None), ("jax.numpy.linalg.lstsq", 0.010, 1e-9), ("lsq.lstsq normal", 0.005, 3e-6)]
    for label, t, err in rows:
        shown.done(f"tall_100000x200 float32 jax {label}", {"error": None, "time_s": t, "rel_err": err})
    shown.done("tall_100000x200 float32 jax lsq.lstsq qr", {"error": "RuntimeError: boom", "time_s": None})
    (tmp_path / "bench_jax.log").write_text(capsys.readouterr().err)
    text = " ".join(summary.bench_lines(str(tmp_path)))
    assert "own lstsq 10 ms, X.T@X 2 ms" in text
    assert "normal 0.5/2.5" in text and "qr FAILED" in text and "3.0e-06" in text
    assert "cut short after 4 rows" in text


def test_sigterm_stops_the_jobs_and_still_writes_the_summary(tmp_path):
    """The command's own limit (SIGTERM) ends the job under way; the summary and the archive
    are written all the same."""
    cmd = [sys.executable, "-m", "benchmarks.gpu", "--only", "env", "--out", str(tmp_path)]
    proc = subprocess.Popen(cmd, cwd=TESTS.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:  # the driver's own lines, flushed as they come
        lines.append(line)
        if ": started" in line:
            break
    proc.send_signal(signal.SIGTERM)
    lines += proc.stdout.readlines()
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM, "".join(lines)
    assert "== GPU check summary" in (tmp_path / "summary.txt").read_text()
    with tarfile.open(tmp_path / "results.tgz") as tar:
        assert ": stopped after" in tar.extractfile("stages.txt").read().decode()


def test_a_test_job_cut_short_still_says_why_its_tests_failed(tmp_path):
    """The tests' jobs print each traceback as it happens: the first run's torch-cuda job was
    killed by its limit after four failures, and pytest (which prints them at the end) lost why."""
    (tmp_path / "test_cut.py").write_text(
        "import time\n\ndef test_fails():\n    assert 1 == 2, 'the reason'\n\ndef test_hangs():\n    time.sleep(60)\n"
    )
    cmd, _ = plan._pytest("numpy", (), 0)
    cmd = [sys.executable, *cmd, "-p", "no:randomly", str(tmp_path / "test_cut.py")]
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=8)
    except subprocess.TimeoutExpired:
        proc.kill()  # as the job's limit would
        out, _ = proc.communicate()
    assert "FAILED" in out and "the reason" in out, out
    assert "short test summary" not in out, "the session was not cut short"
