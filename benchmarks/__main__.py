"""Command line: ``python -m benchmarks [--quick] [--cases ...] [--backends ...] [--json P] [--plots D]``.

Examples
--------
Smoke test (every shape ~100x smaller, one timed call)::

    python -m benchmarks --quick

NumPy only, the two tall-skinny cases, float64::

    python -m benchmarks --cases tall_200000x50,tall_100000x200 --backends numpy --dtype float64

Scaling plots (adds the ``sweep_*`` cases)::

    python -m benchmarks --backends numpy,jax --dtype float64 --plots bench-plots
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import importlib
import os
import platform
import shlex
import sys
import time

from .needs import require

# What the main job needs beyond the package: pip install -e ".[bench]". Checked before the
# imports below, which would otherwise fail with a traceback.
require("python -m benchmarks", ["scipy", "threadpoolctl", "tqdm", "sklearn"])

from . import bench, report  # noqa: E402
from .backends import BACKENDS, Backend, available_backends, limit_threads, unusable  # noqa: E402


def _csv(text):
    return [t.strip() for t in text.split(",") if t.strip()]


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("--backends", type=_csv, help=f"comma-separated, of {','.join(BACKENDS)} (default: all importable)")
    p.add_argument("--methods", type=_csv, default=list(bench.METHODS), help="comma-separated lsq_backends methods")
    p.add_argument("--dtype", type=_csv, default=list(bench.DTYPES), help="float64,float32 (default both)")
    p.add_argument("--cases", type=_csv, help="comma-separated case names or glob patterns (see --list)")
    p.add_argument("--repeat", type=int, help="timed calls per row, median reported (default 5; 1 with --quick)")
    p.add_argument("--quick", action="store_true", help="every shape ~100x smaller, one timed call: a smoke test")
    p.add_argument("--json", metavar="PATH", help="write all rows and run metadata as JSON")
    p.add_argument("--plots", metavar="DIR", help="also run the scaling sweeps and write PNG plots there")
    p.add_argument(
        "--markdown",
        metavar="PATH",
        help="also write the tables as a Markdown page headed by the machine, versions, load and command",
    )
    p.add_argument("--title", default="Benchmark results", help="the title of the --markdown page")
    p.add_argument(
        "--threads",
        type=int,
        help="limit every library to this many threads (1: stable on a busy machine; --quick's default)",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the tracemalloc peak-memory call")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    args = p.parse_args(argv)
    bad = sorted(set(args.methods) - set(bench.METHODS)) + sorted(set(args.dtype) - set(bench.DTYPES))
    if bad:
        p.error(f"unknown method or dtype {bad}")
    if args.backends and set(args.backends) - set(BACKENDS):
        p.error(f"unknown backend(s) {sorted(set(args.backends) - set(BACKENDS))}; choose from {list(BACKENDS)}")
    return p, args


def select_cases(patterns, plots, quick):
    """The grid (plus the sweeps with ``--plots``), or the cases matching ``patterns``."""
    every = bench.GRID + bench.SWEEPS
    if patterns:
        cases = [c for c in every if any(fnmatch.fnmatchcase(c.name, pat) for pat in patterns)]
    else:
        cases = list(bench.GRID)
    if plots:  # the plots are drawn from the sweeps: add them to whatever was selected
        cases += [c for c in bench.SWEEPS if c not in cases]
    return [c.quick() for c in cases] if quick else cases


def select_backends(parser, names):
    """Backend objects for ``names`` (default: every importable one); unusable ones are errors.
    Only the named backends' libraries are imported (``--backends numpy`` imports no JAX,
    PyTorch, Dask or CuPy)."""
    if names is None:
        return [Backend(n) for n in available_backends()]
    for n in names:
        reason = unusable(n)
        if reason:
            parser.error(f"backend {n!r} cannot run here: {reason}")
    return [Backend(n) for n in names]


def metadata(args, backends, cases):
    """Versions, machine and arguments of the run, for the JSON output."""
    versions = {}
    for mod in ("numpy", "scipy", "sklearn", "lsq_backends", *(BACKENDS[b.name] for b in backends)):
        top = mod.split(".")[0]
        versions[top] = getattr(importlib.import_module(top), "__version__", "?")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "versions": versions,
        "argv": sys.argv[1:],
        "threads": args.threads,
        "cases": [c.name for c in cases],
        "cond": bench.COND,
        "noise": bench.NOISE,
        "seed": bench.SEED,
    }


def main(argv=None):
    parser, args = parse_args(argv)
    if args.list:
        for c in bench.GRID + bench.SWEEPS:
            print(f"{c.name:28s} {c.shape:28s} quick: {c.quick().shape}")
        return 0
    if args.plots:
        require("python -m benchmarks --plots", ["matplotlib"])
    cases = select_cases(args.cases, args.plots, args.quick)
    if not cases:
        parser.error(f"no case matches {args.cases}; see --list")
    args.threads = args.threads or (1 if args.quick else None)
    if args.threads:
        limit_threads(args.threads, args.backends)  # before any backend (XLA's thread pool) starts
    backends = select_backends(parser, args.backends)
    repeat = args.repeat or (1 if args.quick else 5)
    start = time.perf_counter()
    rows = bench.run(cases, args.dtype, backends, args.methods, repeat, memory=not args.no_memory)
    wall = time.perf_counter() - start
    report.add_ratios(rows)
    title = f"lsq_backends benchmarks{' (--quick)' if args.quick else ''}, median of {repeat}"
    print(report.markdown(rows, title))
    if args.json:
        report.write_json(args.json, rows, metadata(args, backends, cases))
        print(f"\nJSON: {args.json}", file=sys.stderr)
    if args.plots:
        for path in report.plots(rows, args.plots):
            print(f"plot: {path}", file=sys.stderr)
    if args.markdown:
        with open(args.markdown, "w") as f:
            meta = metadata(args, backends, cases) | {"title": args.title, "wall_s": wall}
            f.write(page_header(meta) + "\n" + report.markdown(rows, title) + "\n")
        print(f"Markdown: {args.markdown}", file=sys.stderr)
    return 0


def page_header(meta):
    """The header of a ``--markdown`` page: what ran, where, on what, under what load."""
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return "\n".join(
        [
            f"# {meta.get('title', 'Benchmark results')}",
            "",
            f"Machine: {meta['platform']}, {meta['cpu_count']} CPUs ({meta['processor'] or 'processor not reported'}); "
            f"Python {meta['python']}; {versions}. Threads per library: {meta['threads'] or 'library default'}. "
            f"Load average at the end of the run (1, 5, 15 min): {load}. "
            + (f"The run took {meta['wall_s']:.0f} s. " if "wall_s" in meta else "")
            + "Only ratios measured in one run compare.",
            "",
            "Command:",
            "",
            "```bash",
            "python -m benchmarks " + shlex.join(meta["argv"]),
            "```",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
