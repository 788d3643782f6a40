"""``python -m lsq_backends.check``: the command line, the Markdown report and the JSON file."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import textwrap
import time

import numpy as np

import lsq_backends

from .backends import ALL_NAMES, find_backends, unknown_names
from .problems import make_problems
from .progress import Progress, stall_watch
from .runner import SLOW, TIME_BUDGET, Timer, cases, run_case

__all__ = ["legend", "main", "parse_args"]

DISTRIBUTIONS = (
    "numpy", "scipy", "array-api-compat", "array-api-strict", "dask", "jax", "jaxlib", "jax-cuda12-plugin",
    "jax-cuda13-plugin", "torch", "cupy", "cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x",
)  # fmt: skip
COLUMNS = (
    "backend", "mode", "problem", "shape", "method", "dtype", "error", "threshold", "result", "placement",
    "host reads", "time", "× native lstsq", "× X.T@X",
)  # fmt: skip


#: What each form costs, for --help (measured with NumPy, JAX and PyTorch on a 2-core CPU).
COST = (
    "Time on a quiet 2-core CPU with NumPy, JAX, PyTorch and Dask: --quick under a minute (JAX compiles "
    "each of its few cases); the full check about 5 minutes. Its test problems take seconds to make, each "
    "JAX case compiles, and LSQR and LSMR take seconds a call at 200000 x 50 (minutes on Dask, which "
    "builds each iteration's graph anew): so it leaves out LSQR and LSMR in float32 and on Dask, JAX's "
    "float32 cases but the default method's, and JAX's eager cases but the default method's in float64 "
    "(--quick runs all but Dask's at small sizes; the test suite runs every one), and times a case for at "
    "most about a second of calls. Each backend adds its share; --backends chooses. A line per case on "
    "standard error says how far the check is and about how long it has left."
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m lsq_backends.check",
        description=(
            "Self-check of lsq_backends on every array backend this machine can run: accuracy against a "
            "float64 NumPy reference, results on the input's device/namespace/dtype, device-to-host reads "
            "per call, and time against each backend's own lstsq and a bare X.T @ X. Exit status 0 when "
            "every check passes, 1 otherwise."
        ),
        epilog=COST,
    )
    parser.add_argument("--quick", action="store_true", help="small shapes, one timed call (timings not meaningful)")
    parser.add_argument(
        "--backends", default=None, help=f"comma-separated subset of {','.join(ALL_NAMES)} (default: all that can run)"
    )
    parser.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON to PATH")
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"timed calls per case (median; default 5, 1 with --quick; fewer once they took {TIME_BUDGET:g} s)",
    )
    parser.add_argument("--dtypes", default="float64,float32", help="comma-separated: float64,float32")
    args = parser.parse_args(argv)
    if args.backends is not None:
        args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        unknown = unknown_names(args.backends)
        if unknown or not args.backends:
            parser.error(f"unknown backend(s) {unknown}; choose from {','.join(ALL_NAMES)}")
    args.dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if not args.dtypes or set(args.dtypes) - {"float64", "float32"}:
        parser.error(f"--dtypes takes float64 and/or float32, got {args.dtypes}")
    if args.repeat is None:
        args.repeat = 1 if args.quick else 5
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args, parser


def versions(backends):
    found = {"python": platform.python_version(), "lsq_backends": lsq_backends.__version__}
    for dist in DISTRIBUTIONS:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    for backend in backends:
        found.setdefault(backend.library, backend.version)
    return found


def _num(value, spec=".1e"):
    return "—" if value is None else format(value, spec)


def _time(ms):
    if ms is None:
        return "—"
    return f"{ms:.3g} ms" if ms < 1e3 else f"{ms / 1e3:.3g} s"


def table(rows):
    align = ["---:" if c in ("error", "threshold", "time") or c.startswith("×") else "---" for c in COLUMNS]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        cells = (
            r.backend, r.mode, r.problem, r.shape, r.method, r.dtype, _num(r.error), _num(r.threshold),
            "pass" if r.status == "pass" else "**FAIL**", r.placement, r.host_reads, _time(r.time_ms),
            _num(r.x_native, ".3g"), _num(r.x_gram, ".3g"),
        )  # fmt: skip
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def summary(rows, skipped, failed, left_out):
    passed = sum(r.status == "pass" for r in rows)
    bad = sum(r.status != "pass" for r in rows) + len(failed)
    line = f"{passed} passed, {bad} failed, {len(skipped)} skipped"
    notes = []
    if skipped:
        notes.append("backends skipped: " + ", ".join(name for name, _ in skipped))
    if failed:
        notes.append("backends that cannot run: " + ", ".join(name for name, _ in failed))
    if left_out:
        notes.append(f"{sum(left_out.values())} cases of {', '.join(left_out)} left out (see --help)")
    return line + (f" ({'; '.join(notes)})" if notes else ""), passed, bad


def legend(repeat, *, quick, width):
    """What the table's columns mean, as a Markdown list wrapped to ``width`` characters."""
    items = [
        "error: relative error of coef against float64 numpy.linalg.lstsq (ridge: the closed form from an "
        "SVD) on the data as rounded to the dtype, worst problem of a stack or alpha of a path.",
        "threshold: the perturbation bound for the method (c eps kappa for qr/svd, c eps kappa^2 for "
        "normal/auto, lsqr's tolerance times kappa, plus the residual term).",
        "placement: every field of the result in the input's namespace, device and float dtype.",
        "host reads: device-to-host reads in the first call (lsq_backends.check.count_host_reads; n/a on "
        "NumPy); on torch-cuda '+N hidden' are synchronizations inside torch's operators (svd/eigh read "
        "their error flag), caught by CUDA's sync debug mode; on jax-gpu the predicates XLA copies to the "
        "host inside the compiled call (one per lax.cond executed, one per while_loop trip of 10 "
        "iterations) are not counted: see the capability table.",
        f"time: median of up to {repeat} synchronized call(s) after a warm-up (fewer once they have taken "
        f"{TIME_BUDGET:g} s).",
        "x native: over the backend's own lstsq of the same X (ridge rows too).",
        "x X.T@X: over a bare Gram product on the same device.",
    ]
    if quick:
        slow = " and ".join(sorted(SLOW))
        items.append(
            f"--quick: tiny shapes and one timed call: the timings are not meaningful ({slow}: a few cases, untimed)."
        )
    return "\n".join(fill(f"- {item}", width) for item in items)


def fill(text, width):
    """``text`` wrapped to ``width`` (at least 40) characters; a Markdown list item (``- ``)
    continues indented under its text."""
    indent = "  " if text.startswith("- ") else ""
    return textwrap.fill(
        text, width=max(width, 40), subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


def terminal_width():
    """``COLUMNS`` where set, else the terminal's width; 100 where the output is not a terminal."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size((100, 24)).columns
    return 100


def run(args, out=print, *, progress_stream=None, width=None):
    """Run the checks ``args`` ask for; print the report through ``out`` (its prose wrapped to
    ``width``, default the terminal's) and a progress line per case to ``progress_stream``
    (default standard error); return the report as a dict (the JSON document)."""
    width = terminal_width() if width is None else width
    start = time.perf_counter()
    backends, skipped, failed = find_backends(args.backends)
    out(f"# lsq_backends self-check{' (--quick)' if args.quick else ''}\n")
    out(f"python {platform.python_version()}, numpy {np.__version__}, lsq_backends {lsq_backends.__version__}\n")
    for b in backends:
        modes = " and ".join(b.modes)
        out(fill(f"- {b.name}: {b.device_name} ({b.library} {b.version}; {modes})", width))
    for name, reason in skipped:
        out(fill(f"- {name}: skipped: {reason}", width))
    for name, reason in failed:
        out(fill(f"- {name}: **requested but cannot run**: {reason}", width))
    out("")
    stream = sys.stderr if progress_stream is None else progress_stream
    print("Making the test problems ...", file=stream, flush=True)
    problems = make_problems(quick=args.quick, dtypes=tuple(args.dtypes))
    timer = Timer(args.repeat)
    plan, left_out = [], {}
    for backend in backends:
        chosen, left_out[backend.name] = cases(backend, problems, quick=args.quick)
        plan += [(backend.name, backend, *case) for case in chosen]
    out(f"{len(plan)} cases; a line per case on standard error as it finishes.\n")
    progress = Progress(plan, stream=stream)
    rows = []
    for done, (_, backend, mode, problem, method) in enumerate(plan, 1):
        timed = timer if not (args.quick and backend.library in SLOW) else None
        what = f"{backend.name} {mode} {problem.name} {problem.dtype} {method}"
        watch = stall_watch(
            what, lambda what=what: out(table(rows) + "\n\n" + fill(f"- {what}: stalled, **FAIL**", width))
        )
        rows.append(run_case(backend, mode, problem, method, timer=timed))
        watch.cancel()
        progress.case(done, rows[-1])
    out(table(rows))
    out("")
    out(legend(args.repeat, quick=args.quick, width=width))
    bad_rows = [r for r in rows if r.status != "pass"]
    if bad_rows or failed:
        out("\n## Failures\n")
        for r in bad_rows:
            out(fill(f"- {r.backend} {r.mode} {r.problem} {r.method} {r.dtype}: {r.message}", width))
        for name, reason in failed:
            out(fill(f"- {name}: requested but cannot run: {reason}", width))
    line, passed, bad = summary(rows, skipped, failed, {k: v for k, v in left_out.items() if v})
    wall = time.perf_counter() - start
    out("\n" + fill(f"{line} in {wall:.1f} s", width))
    return {
        "command": [sys.executable, "-m", "lsq_backends.check", *sys.argv[1:]] if args.argv is None else args.argv,
        "quick": args.quick,
        "repeat": args.repeat,
        "versions": versions(backends),
        "platform": platform.platform(),
        "backends": [
            {"name": b.name, "device": b.device_name, "version": b.version, "modes": list(b.modes), "status": "run"}
            for b in backends
        ]
        + [{"name": n, "status": "skipped", "reason": why} for n, why in skipped]
        + [{"name": n, "status": "failed", "reason": why} for n, why in failed],
        "rows": [r.as_dict() for r in rows],
        "left_out": left_out,
        "summary": {"passed": passed, "failed": bad, "skipped": len(skipped), "line": line},
        "wall_s": wall,
    }


def main(argv=None):
    """Run the self-check; the exit status: 0 when every check passed, 1 otherwise, 2 for a
    usage error."""
    args, _ = parse_args(argv)
    args.argv = None if argv is None else ["python", "-m", "lsq_backends.check", *argv]
    report = run(args)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, default=str)
    return 0 if report["summary"]["failed"] == 0 else 1
