"""Wide problems (p >= 1e4 columns): ``method="lsqr"`` against the direct methods, one run.

``python -m benchmarks.wide`` (default 2000 x 20000, float64, NumPy): least squares and ridge
with ``lsq_backends`` ``normal``, ``svd`` and ``lsqr`` and ``numpy.linalg.lstsq`` (the
unpenalized fit, as a yardstick, on the ridge rows too), timed in the same process on the same
data (``benchmarks.bench.make_problem``: condition number 100, 1% noise). The ridge penalty is
``alpha = --ridge * s_max**2``, which brings the condition number of the damped system down to
about ``1 / sqrt(--ridge)`` (10 by default). Errors are relative to
the ``svd`` answer; ratios are to ``normal`` (the fastest direct method here, O(m^2 n)).

Examples
--------
::

    python -m benchmarks.wide                              # 2000 x 20000
    python -m benchmarks.wide --m 500 --n 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import lsq_backends as lsq

from .bench import Case, make_problem


def _time(fn, repeat):
    out, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run(m, n, ridge, repeat, dtype):
    """Rows (problem, solver, seconds, ratio to normal, relative error, iterations)."""
    X, y, _ = make_problem(Case(f"wide_{m}x{n}", m, n))
    X, y = X.astype(dtype), y.astype(dtype)
    alpha = ridge * max(m, n)  # make_problem's largest singular value is sqrt(max(m, n))
    rows = []
    for problem in ("lstsq", f"ridge alpha={alpha:.3g}"):
        fits = {}
        for method in ("normal", "svd", "lsqr"):
            if problem == "lstsq":
                fits[f"lsq {method}"] = lambda method=method: lsq.lstsq(X, y, method=method)
            else:
                fits[f"lsq {method}"] = lambda method=method: lsq.ridge(X, y, alpha, method=method, fit_intercept=False)
        fits["numpy.linalg.lstsq"] = lambda: np.linalg.lstsq(X, y, rcond=None)
        results = {}
        for name, fn in fits.items():
            print(f"{problem}: {name} ...", file=sys.stderr, flush=True)
            results[name] = _time(fn, repeat)
        ref = np.asarray(results["lsq svd"][1][0], np.float64)
        for name, (t, out) in results.items():
            coef = np.asarray(out[0], np.float64)
            err = (
                np.linalg.norm(coef - ref) / np.linalg.norm(ref)
                if problem == "lstsq" or name != "numpy.linalg.lstsq"
                else None
            )
            n_iter = getattr(out, "n_iter", None)
            rows.append((problem, name, t, t / results["lsq normal"][0], err, None if n_iter is None else int(n_iter)))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.wide", description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, default=2000)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--ridge", type=float, default=1e-2, help="alpha / s_max**2 (default 1e-2)")
    p.add_argument("--repeat", type=int, default=1, help="timed calls per solver, median reported")
    p.add_argument("--dtype", default="float64")
    args = p.parse_args(argv)
    rows = run(args.m, args.n, args.ridge, args.repeat, args.dtype)
    print(f"### {args.m} x {args.n}, {args.dtype}, cond 100, median of {args.repeat}\n")
    print("| problem | solver | time | × lsq normal | rel. error vs svd | iterations |")
    print("|---|---|---:|---:|---:|---:|")
    for problem, name, t, ratio, err, it in rows:
        e = "" if err is None else f"{err:.1e}"
        print(f"| {problem} | {name} | {t:.3g} s | {ratio:.3g} | {e} | {'' if it is None else it} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
