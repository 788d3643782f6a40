"""Sparse least squares: ``lsq_backends`` LSMR and LSQR against ``scipy.sparse.linalg``'s.

``python -m benchmarks.sparse`` (default 10^6 x 10^5, float64, NumPy, one BLAS thread): a
two-way fixed-effects design, one-hot columns for two factors (workers and firms, each row one
of each, firms drawn with a skewed popularity) and three continuous covariates, 5 non-zeros a
row, CSR. Each solver runs from zero at SciPy's defaults (atol = btol = 1e-6) with SciPy's
conlim switched off (``conlim=0``, as ``lsq_backends``' default), every call of a round
interleaved with the others, medians over ``--repeat`` rounds; ``lsq_backends``' two methods
also with ``precondition="columns"`` (unit columns, a different iteration: its own count).
``--scaled`` multiplies the covariates by 1e3, 1 and 1e-3 (badly scaled columns). Reports time,
iterations, peak memory (traced, in a separate untimed call), the solution's distance to
SciPy's and the error in the fitted values ``X x`` against a converged fit (preconditioned LSMR
at atol = btol = 1e-13), both relative. The design is rank-deficient (each factor's columns
sum to the intercept direction): the coefficients differ by a null-space component where the
iterations differ (a preconditioned fit is minimum-norm in the scaled coordinates), the fitted
values do not.

Examples
--------
::

    python -m benchmarks.sparse                                  # 10^6 x 10^5, 5 rounds
    python -m benchmarks.sparse --m 100000 --n 10000 --repeat 3  # a smaller run
    python -m benchmarks.sparse --scaled
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc

import numpy as np

import lsq_backends as lsq

COVARIATES = 3


def fixed_effects(m, n, scaled=False, seed=0):
    """(X CSR (m, n), y): n - 3 one-hot columns split 4:1 between workers and firms (firm sizes
    Zipf-like), three N(0, 1) covariates (scaled 1e3, 1, 1e-3 with ``scaled``), y = X beta +
    noise."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    levels = n - COVARIATES
    workers = (4 * levels) // 5
    firms = levels - workers
    worker = rng.integers(0, workers, m)
    popularity = 1.0 / np.arange(1, firms + 1) ** 0.8
    firm = workers + rng.choice(firms, size=m, p=popularity / popularity.sum())
    cov = rng.standard_normal((m, COVARIATES))
    if scaled:
        cov *= np.array([1e3, 1.0, 1e-3])
    rows = np.repeat(np.arange(m), 2 + COVARIATES)
    cols = np.column_stack([worker, firm, np.broadcast_to(np.arange(levels, n), (m, COVARIATES))]).ravel()
    data = np.column_stack([np.ones(m), np.ones(m), cov]).ravel()
    X = sp.csr_array((data, (rows, cols)), shape=(m, n))
    beta = rng.standard_normal(n)
    return X, X @ beta + rng.standard_normal(m)


def solvers(X, y):
    import scipy.sparse.linalg as sl

    tol = {"atol": 1e-6, "btol": 1e-6}
    limit = 4 * min(X.shape)
    pc = {"precondition": "columns", **tol}
    return {
        "lsq lsmr": lambda: _ours(lsq.lstsq(X, y, method="lsmr", **tol)),
        "scipy lsmr": lambda: _theirs(sl.lsmr(X, y, conlim=0, maxiter=limit, **tol)),
        "lsq lsmr, columns": lambda: _ours(lsq.lstsq(X, y, method="lsmr", **pc)),
        "lsq lsqr": lambda: _ours(lsq.lstsq(X, y, method="lsqr", **tol)),
        "scipy lsqr": lambda: _theirs(sl.lsqr(X, y, conlim=0, iter_lim=limit, **tol)),
        "lsq lsqr, columns": lambda: _ours(lsq.lstsq(X, y, method="lsqr", **pc)),
    }


def _ours(r):
    return r.coef, int(r.n_iter)


def _theirs(out):
    return out[0], int(out[2])


def peak_memory(fn):
    """Peak traced memory (bytes) of one call, beyond what existed before it."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(m, n, repeat, scaled):
    """{solver: (seconds per round, iterations, coef, peak bytes)}, every round interleaved."""
    X, y = fixed_effects(m, n, scaled)
    fits = solvers(X, y)
    peaks = {name: peak_memory(fn) for name, fn in fits.items()}
    times = {name: [] for name in fits}
    out = {}
    for r in range(repeat):
        for name, fn in fits.items():
            t0 = time.perf_counter()
            out[name] = fn()
            times[name].append(time.perf_counter() - t0)
            print(f"round {r + 1}: {name} {times[name][-1]:.2f} s, {out[name][1]} iterations", file=sys.stderr)
    return {name: (times[name], out[name][1], out[name][0], peaks[name]) for name in fits}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.sparse", description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, default=1_000_000)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5, help="interleaved rounds, medians reported")
    p.add_argument("--scaled", action="store_true", help="covariates scaled by 1e3, 1, 1e-3")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with threadpool_limits(1):
        rows = run(args.m, args.n, args.repeat, args.scaled)
    X, y = fixed_effects(args.m, args.n, args.scaled)
    converged = X @ lsq.lstsq(X, y, method="lsmr", precondition="columns", atol=1e-13, btol=1e-13).coef
    kind = ", covariates scaled 1e3/1/1e-3" if args.scaled else ""
    print(f"### {args.m} x {args.n} fixed effects{kind}, 5 non-zeros a row, float64, one BLAS thread\n")
    print(f"{args.repeat} interleaved rounds, medians; {platform.machine()}, {os.cpu_count()} cores, load {load:.2f}")
    dense = 8 * args.m * args.n / 1e6
    print("at the start. Error in X x: against a converged fit (preconditioned LSMR, atol = btol = 1e-13);")
    print(f"peak memory traced in one untimed call (one dense copy of X: {dense:.0f} MB).")
    print("The ratio is to SciPy's same method, unpreconditioned, in the same round (median, and range).\n")
    head = "| solver | time | iterations | time / iteration | × SciPy's (range) | peak memory | distance to SciPy's"
    print(f"{head} x | error in X x |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (times, it, coef, peak) in rows.items():
        peer_times, _, ref, _ = rows["scipy " + name.split()[1].rstrip(",")]
        ratios = [a / b for a, b in zip(times, peer_times, strict=True)]
        t = statistics.median(times)
        dist = np.linalg.norm(coef - ref) / np.linalg.norm(ref)
        fitted = np.linalg.norm(X @ coef - converged) / np.linalg.norm(converged)
        spread = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        row = f"| {name} | {t:.3g} s | {it} | {1e3 * t / max(it, 1):.0f} ms | {spread} | {peak / 1e6:.0f} MB"
        print(f"{row} | {dist:.1e} | {fitted:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
