"""The whole GPU check in one command of at most ~9 minutes.

From the repository root::

    python -m benchmarks.gpu                  # results in $OUT (else ./gpu-results)
    python -m benchmarks.gpu --plan           # the stages, their limits and the worst case
    python -m benchmarks.gpu --dry-run --scale 0.05   # on a CPU: the CPU stand-ins, tiny limits

Stages: install the wheels the GPU image lacks (``--wheels``, default ``.gpu/wheels``), the
environment, the probes (``benchmarks/gpu/probe.py``), the self-check at full size on CuPy and
torch-cuda, the benchmark on JAX, and the tests on CuPy, torch-cuda and JAX with the JAX
self-check beside them (:mod:`benchmarks.gpu.plan`). Every job runs under ``timeout``, writes
its own file as it goes, and after each job the results folder is packed into
``$OUT/results.tgz``; ``$OUT/summary.txt`` and standard output get a one-screen summary.
Two files come back. ``--only`` reruns some stages.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import shutil
import signal
import sys
import tempfile

from . import plan
from .runner import Runner, pack
from .summary import summary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WHEEL_DIRS = (".gpu/wheels", "../shared/gpu/wheels", "shared/gpu/wheels")


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.environ.get("OUT") or "gpu-results", help="results folder (default: $OUT)")
    p.add_argument("--wheels", help=f"folder of wheels to install first (default: the first of {WHEEL_DIRS} with any)")
    p.add_argument("--dry-run", action="store_true", help="where a GPU library is unusable, run its CPU stand-in")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every time limit (a dry run's tiny budget)")
    p.add_argument("--only", help="comma-separated stages to run (default: all)")
    p.add_argument("--plan", action="store_true", help="print the stages and their limits, run nothing")
    args = p.parse_args(argv)
    if args.scale <= 0:
        p.error("--scale must be positive")
    return p, args


def find_wheels(folder):
    for d in [folder] if folder else WHEEL_DIRS:
        found = sorted(glob.glob(os.path.join(ROOT, d, "*.whl")))
        if found:
            return found
    return []


def show_plan(stages):
    for s in stages:
        how = "at once" if s.parallel else "in turn"
        print(f"{s.name:8s} {s.limit:6.0f} s  ({len(s.jobs)} job{'s' * (len(s.jobs) != 1)} {how})")
        for j in s.jobs:
            print(f"    {j.name:18s} {j.limit:5.0f} s  {' '.join(j.cmd[1:])[:90]}")
    print(f"worst case {plan.worst_case(stages):.0f} s of a {plan.BUDGET_S} s budget")


def main(argv=None):
    parser, args = parse_args(argv)
    os.chdir(ROOT)
    wheels = find_wheels(args.wheels)
    # the results folder that the archive holds, and the installed wheels (not packed)
    work, site = ("WORK", "SITE") if args.plan else (tempfile.mkdtemp(prefix=f"gpu-{d}-") for d in ("check", "site"))
    xdist = importlib.util.find_spec("xdist") is not None
    stages = plan.scaled(plan.stages(sys.executable, work, wheels, site, xdist), args.scale)
    if args.only:
        names = {n.strip() for n in args.only.split(",")}
        unknown = names - {s.name for s in stages}
        if unknown:
            parser.error(f"unknown stage(s) {sorted(unknown)}; choose from {[s.name for s in stages]}")
        stages = [s for s in stages if s.name in names or s.name == "install"]
    if args.plan:
        show_plan(stages)
        return 0
    os.makedirs(args.out, exist_ok=True)
    archive = os.path.join(args.out, "results.tgz")
    env = dict(os.environ, PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (site if wheels else "", ROOT, env.get("PYTHONPATH", "")) if p)
    runner = Runner(work, archive, env, dry_run=args.dry_run)
    runner.note(f"python -m benchmarks.gpu {' '.join(argv if argv is not None else sys.argv[1:])}")
    runner.note(
        f"worst case {plan.worst_case(stages):.0f} s; wheels: {[os.path.basename(w) for w in wheels] or 'none'}"
    )
    # SIGTERM (the command's own limit) ends the jobs under way and still writes the summary
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        for stage in stages:
            runner.stage(stage)
    finally:  # the summary and the archive, whatever happened above
        runner.stop()
        text = "\n".join(summary(work, runner.records)) + "\n"
        for folder in (work, args.out):
            with open(os.path.join(folder, "summary.txt"), "w", encoding="utf-8") as f:
                f.write(text)
        runner.note(f"done; results in {archive}")
        pack(work, archive)
        shutil.rmtree(site, ignore_errors=True)
        print(text, end="")
    failed = [r for r in runner.records if r["status"] not in ("ok",) and not r["status"].startswith("skipped")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
