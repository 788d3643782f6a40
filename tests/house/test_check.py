"""The self-check ``python -m lsq_backends.check`` and its host-read counter."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._solvers import METHODS
from lsq_backends.check import count_host_reads, main
from lsq_backends.check.backends import find_backends
from lsq_backends.check.problems import KAPPA, design, make_problems, score, threshold

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped", re.MULTILINE)


def _quick(*args):
    return ["--quick", "--dtypes", "float64", *args]


def test_quick_run_passes_and_writes_json(tmp_path, numpy_reference):
    out = tmp_path / "check.json"
    cmd = [
        sys.executable,
        "-m",
        "lsq_backends.check",
        "--quick",
        "--backends",
        "numpy,array_api_strict",
        "--json",
        str(out),
    ]
    proc = subprocess.run(cmd, check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "| backend | mode | problem | shape | method | dtype | error | threshold |" in proc.stdout
    passed, failed, skipped = map(int, SUMMARY.findall(proc.stdout)[-1])
    assert passed > 0 and failed == 0 and skipped == 0
    report = json.loads(out.read_text())
    assert {"command", "versions", "backends", "rows", "summary", "quick", "platform", "wall_s"} <= set(report)
    assert report["quick"] is True and "--quick" in report["command"]
    assert {"python", "numpy", "lsq_backends"} <= set(report["versions"])
    assert [b["name"] for b in report["backends"]] == ["numpy", "array_api_strict"]
    assert all(b["device"] for b in report["backends"])
    assert report["summary"]["passed"] == passed == len(report["rows"])
    row_keys = {
        "backend",
        "mode",
        "problem",
        "method",
        "dtype",
        "error",
        "threshold",
        "status",
        "placement",
        "host_reads",
    }
    for row in report["rows"]:
        assert row_keys <= set(row)
        assert row["status"] == "pass" and row["placement"] == "ok" and row["error"] <= row["threshold"]
    # Every problem, method and dtype ran on both backends.
    cases = {(r["problem"], r["method"], r["dtype"]) for r in report["rows"] if r["backend"] == "array_api_strict"}
    assert {"tall", "wide", "rank-deficient", "batched", "ridge", "ridge-path"} == {c[0] for c in cases}
    assert set(METHODS) == {c[1] for c in cases}  # every method of the registry
    assert {"float32", "float64"} == {c[2] for c in cases}
    assert {r["host_reads"] for r in report["rows"] if r["backend"] == "numpy"} == {"n/a"}
    assert all(r["host_read_count"] >= 0 for r in report["rows"] if r["backend"] == "array_api_strict")


def test_progress_and_width(monkeypatch, capsys, numpy_reference):
    """A progress line per case on standard error, each with an estimate of the time left;
    the report's prose (not its table rows) within ``COLUMNS``."""
    monkeypatch.setenv("COLUMNS", "60")
    assert main(_quick("--backends", "numpy")) == 0
    captured = capsys.readouterr()
    passed = int(SUMMARY.findall(captured.out)[-1][0])
    progress = [line for line in captured.err.splitlines() if line.startswith("[")]
    assert len(progress) == passed
    assert all(re.search(r"about \d+:\d\d left$", line) for line in progress[:-1])
    assert progress[-1].startswith(f"[{passed}/{passed}]") and progress[-1].endswith("done")
    long = [line for line in captured.out.splitlines() if len(line) > 60 and not line.startswith("|")]
    assert long == []


def test_a_slow_case_is_timed_once(monkeypatch):
    from lsq_backends.check.runner import Timer

    clock = iter(range(0, 1000, 2))  # every call takes 2 s
    monkeypatch.setattr("lsq_backends.check.runner.time.perf_counter", lambda: next(clock))
    calls = []
    backend = find_backends(["numpy"])[0][0]
    assert Timer(5, budget=1.0).time(backend, lambda: calls.append(1), warm=True) == 2
    assert len(calls) == 1


def test_a_stalled_case_is_reported_and_ends_the_check():
    """A case with no answer (a call stuck inside a library) ends the check with status 1,
    naming the case, with the report so far."""
    code = (
        "import time, lsq_backends.check.cli as cli, lsq_backends.check.progress as p\n"
        "real = p.stall_watch\n"
        "cli.stall_watch = lambda what, report, stream=None: real(what, report, stream, seconds=2)\n"
        "cli.run_case = lambda *a, **k: time.sleep(60)\n"
        "raise SystemExit(cli.main(['--quick', '--backends', 'numpy', '--dtypes', 'float64']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "numpy eager tall float64 auto: no answer after 2 s" in proc.stderr
    assert "| backend | mode |" in proc.stdout and "stalled, **FAIL**" in proc.stdout


def test_a_wrong_answer_fails(monkeypatch, capsys, numpy_reference):
    real = lsq.lstsq

    def off_by_half(*args, **kwargs):
        r = real(*args, **kwargs)
        return r._replace(coef=1.5 * r.coef)

    monkeypatch.setattr(lsq, "lstsq", off_by_half)
    assert main(_quick("--backends", "numpy")) == 1
    text = capsys.readouterr().out
    failed = [line for line in text.splitlines() if "**FAIL**" in line]
    # Every lstsq case fails (tall, wide, rank-deficient, batched x every method); ridge is untouched.
    assert len(failed) == 4 * len(METHODS) and not any("ridge" in line for line in failed)
    assert "above the threshold" in text
    assert SUMMARY.findall(text)[-1][1] == str(4 * len(METHODS))


def test_a_result_off_the_device_or_in_the_wrong_dtype_fails(monkeypatch, capsys, numpy_reference):
    strict = pytest.importorskip("array_api_strict")
    real = lsq.ridge
    home = strict.asarray(0.0).device  # the default device; the check's inputs are on another

    def misplaced(*args, **kwargs):
        r = real(*args, **kwargs)
        return r._replace(coef=r.coef.to_device(home), rank=strict.astype(r.rank, strict.float64))

    monkeypatch.setattr(lsq, "ridge", misplaced)
    assert main(_quick("--backends", "array_api_strict")) == 1
    text = capsys.readouterr().out
    flat = " ".join(text.split())  # the failures are wrapped to the terminal's width
    assert "placement: coef on " in flat and re.search(r"rank is \S*float64, not an integer", flat)
    assert not any("**FAIL**" in line and "| tall |" in line for line in text.splitlines())


def test_an_exception_is_a_failed_row(monkeypatch, capsys, numpy_reference):
    def broken(*args, **kwargs):
        msg = "solver exploded"
        raise RuntimeError(msg)

    monkeypatch.setattr(lsq, "ridge", broken)
    assert main(_quick("--backends", "numpy")) == 1
    assert "RuntimeError: solver exploded" in capsys.readouterr().out


def _without(monkeypatch, *missing):
    """Make the check's imports of ``missing`` libraries fail, as where they are not installed."""
    real = importlib.import_module

    def import_module(name, *args):
        if name.split(".")[0] in missing:
            msg = f"No module named {name!r} (hidden by the test)"
            raise ImportError(msg)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", import_module)


def test_a_requested_backend_that_cannot_run_fails(monkeypatch, capsys, numpy_reference):
    _without(monkeypatch, "cupy")
    assert main(_quick("--backends", "numpy,cupy")) == 1
    text = capsys.readouterr().out
    assert "cupy: **requested but cannot run**" in text
    passed, failed, _ = SUMMARY.findall(text)[-1]
    assert int(passed) > 0 and failed == "1"


def test_a_missing_library_is_skipped_when_not_requested(monkeypatch):
    _without(monkeypatch, "cupy", "torch")
    backends, skipped, failed = find_backends()
    names = [b.name for b in backends]
    assert "numpy" in names and not any(n.startswith(("torch", "cupy")) for n in names)
    assert {"cupy", "torch-cpu", "torch-cuda"} <= {name for name, _ in skipped}
    assert failed == []


def test_unknown_backend_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--backends", "numpy,nonsense"])
    assert info.value.code == 2
    assert "nonsense" in capsys.readouterr().err


def test_importing_the_check_imports_no_backend():
    code = (
        "import sys, lsq_backends.check; "
        "print([m for m in ('jax', 'torch', 'cupy', 'dask', 'sklearn', 'array_api_strict') if m in sys.modules])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_problems_have_the_condition_number_asked_for():
    for p in make_problems(quick=True):
        if p.kind == "lstsq":
            assert np.allclose(p.kappa, KAPPA[p.dtype], rtol=1e-3), (p.name, p.dtype, p.kappa)
        assert score(p, "qr", p.ref)[0] == 0.0
        assert threshold("normal", p.dtype, 100.0, 10, 5) > threshold("qr", p.dtype, 100.0, 10, 5)


def test_full_size_references_keep_every_direction(numpy_reference):
    """At full size too the reference of a full-rank problem is the full-rank solution: NumPy's
    float32 cutoff ``eps * max(m, n)`` is 0.024 at m = 200000 and dropped the directions below it
    of the tall problem (kappa 50), which every method then missed by 25%. NumPy alone, whatever
    the session's backend: 8-10 s that each backend's session repeated."""
    for p in make_problems(quick=False, dtypes=("float32",)):
        if p.kind == "lstsq" and p.name != "rank-deficient":
            assert np.allclose(p.kappa, KAPPA[p.dtype], rtol=1e-3), (p.name, p.kappa)


# -- the host-read counter ------------------------------------------------------------------


def test_torch_reads_are_counted_and_the_methods_restored():
    torch = pytest.importorskip("torch")
    names = ("__bool__", "__float__", "__int__", "__index__", "item", "tolist", "numpy", "cpu")
    before = {n: (n in torch.Tensor.__dict__, getattr(torch.Tensor, n)) for n in names}
    t = torch.arange(3.0)
    with count_host_reads("torch-cpu") as reads:
        assert bool(t[1] > 0)
    assert reads.count == 1 and reads.events == ["Tensor.__bool__"]
    with count_host_reads("torch") as reads:
        float(t[0]), t[1].item(), t.tolist(), t.numpy(), t.cpu(), int(t[2]), t + 1
        with pytest.raises(RuntimeError):  # an exception inside the block still restores
            raise RuntimeError
    assert reads.count == 6
    bool(t[1] > 0)  # not counted: the block is over
    assert reads.count == 6
    after = {n: (n in torch.Tensor.__dict__, getattr(torch.Tensor, n)) for n in names}
    assert after == before


def test_torch_fit_reads_go_through_counted_methods():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    X, y = torch.from_numpy(rng.standard_normal((50, 4))), torch.from_numpy(rng.standard_normal(50))
    with count_host_reads("torch-cpu") as reads:
        lsq.lstsq(X, y)
    assert reads.count == len(reads.events) and isinstance(reads.count, int)
    assert set(reads.events) <= {
        f"Tensor.{n}"
        for n in ("__bool__", "__float__", "__int__", "__index__", "item", "tolist", "numpy", "cpu", "__complex__")
    }


def _sync_debug_on_cpu(monkeypatch, torch):
    """CUDA's sync debug mode, emulated on CPU torch for ``count_host_reads("torch-cuda")``:
    ``set_sync_debug_mode`` gives torch's one-time notice on its first call (as in a fresh
    process), and in "warn" the returned dispatch mode warns as CUDA does for each operator that
    synchronizes there (an ``item`` of any kind, a ``nonzero``)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    state = {"mode": 0, "noticed": False}
    syncs = (torch.ops.aten._local_scalar_dense.default, torch.ops.aten.nonzero.default)

    def set_sync_debug_mode(mode):
        if not state["noticed"]:
            state["noticed"] = True
            warnings.warn(
                "Synchronization debug mode is a prototype feature and does not yet detect all synchronizing operations",
                UserWarning,
                stacklevel=2,
            )
        state["mode"] = {"default": 0, "warn": 1, "error": 2}.get(mode, mode)

    class SyncDebug(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if state["mode"] == 1 and func in syncs:
                warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=2)
            return func(*args, **(kwargs or {}))

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: state["mode"])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", set_sync_debug_mode)
    return SyncDebug


def test_torch_cuda_hidden_counts_synchronizations_only(monkeypatch):
    """``hidden`` counts the synchronizations made inside torch operators, not torch's one-time
    notice of the first block of a process (which counted one hidden for the first fit of every
    GPU run: ``auto`` in benchmarks/gpu/probe.py and in the self-check); the notice goes back to
    the caller."""
    torch = pytest.importorskip("torch")
    SyncDebug = _sync_debug_on_cpu(monkeypatch, torch)
    rng = np.random.default_rng(0)
    X = torch.from_numpy(design(rng, (400, 20), 100.0))  # over 16 columns: the power iteration runs
    y = X @ torch.from_numpy(rng.standard_normal(20)) + 1e-3 * torch.from_numpy(rng.standard_normal(400))
    with pytest.warns(UserWarning, match="prototype feature"):
        with count_host_reads("torch-cuda") as reads, SyncDebug():
            lsq.lstsq(X, y, method="auto")
    assert (reads.count, reads.hidden) == (1, 0), reads
    with count_host_reads("torch-cuda") as reads, SyncDebug():
        torch.nonzero(torch.arange(3.0))  # inside an operator: hidden
        int(torch.arange(3)[1])  # a counted read
    assert (reads.count, reads.hidden) == (1, 1), reads


def test_array_api_strict_reads_are_counted():
    strict = pytest.importorskip("array_api_strict")
    array = type(strict.asarray(0.0))
    before = {n: array.__dict__.get(n) for n in ("__bool__", "__float__", "__array__", "to_device")}
    x = strict.asarray([1.0, 2.0])
    home = x.device
    with count_host_reads("array_api_strict") as reads:
        assert bool(x[0] > 0)
    assert reads.count == 1
    with count_host_reads("array_api_strict") as reads:
        float(x[0]), int(x[1] > 0), x.to_device(home), x * 2
        other = x.to_device(strict.Device("device1"))  # device to device: not a host read
    assert reads.count == 3 and other.device != home
    assert {n: array.__dict__.get(n) for n in before} == before


def test_dask_computations_are_counted_once():
    da = pytest.importorskip("dask.array")
    x = da.ones(10, chunks=5)
    with count_host_reads("dask") as reads:
        bool(x[0] > 0)  # computes inside: one read, not two
        x.sum().compute()
        y = x + 1  # building the graph reads nothing
    assert reads.count == 2 and y.shape == (10,)


def test_numpy_has_nothing_to_count():
    with count_host_reads("numpy") as reads:
        bool(np.ones(1)[0])
    assert reads.count is None and str(reads) == "n/a"
    with pytest.raises(ValueError, match="unknown backend"), count_host_reads("fortran"):
        pass
