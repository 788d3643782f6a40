"""The lean route's dispatch cost: a PyTorch fit against the bare refined pipeline and ``torch.linalg.lstsq``.

``python -m benchmarks.lean [--repeat R]``: a 2000 x 20 float64 fit (cond 100, small residual) on one thread,
the library's ``normal`` and ``auto`` (the lean route), the same with an intercept, and ``ridge``, each as a
ratio to the bare refined pipeline (X^T X, X^T y, ``cholesky_ex``, solve, residual, X^T r, solve) timed in the
same run, interleaved, minimum of R rounds of 200 calls; and ``torch.linalg.lstsq`` of the same X. Also the
200000 x 50 fit against a bare ``X.T @ X``. CPU figures: on a GPU each of the fit's operators is a kernel
launch, which ``benchmarks.gpu`` measures.
"""

from __future__ import annotations

import argparse
import time


def _problem(torch, m, n, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((m, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    X = (U * np.geomspace(1.0, 1e-2, n)) @ V.T
    y = X @ rng.standard_normal(n) + 1e-3 * rng.standard_normal(m)
    return torch.asarray(X), torch.asarray(y)[:, None]


def bare(torch, X, Y):
    """The bare refined pipeline: the floor of a certified fit's arithmetic."""
    L, _ = torch.linalg.cholesky_ex(X.T @ X)
    W = torch.cholesky_solve(X.T @ Y, L)
    R = Y - X @ W
    return W + torch.cholesky_solve(X.T @ R, L)


def _best(fn, calls, rounds):
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds; the minimum of each is reported")
    args = parser.parse_args(argv)
    import torch

    import lsq_backends as lsq

    torch.set_num_threads(1)
    X, Y = _problem(torch, 2000, 20)
    y = Y[:, 0]
    cases = {
        "bare refined pipeline": lambda: bare(torch, X, Y),
        "torch.linalg.lstsq": lambda: torch.linalg.lstsq(X, Y),
        "normal": lambda: lsq.lstsq(X, y, method="normal"),
        "auto": lambda: lsq.lstsq(X, y),
        "auto, intercept": lambda: lsq.lstsq(X, y, fit_intercept=True),
        "ridge(X, y, 1.0)": lambda: lsq.ridge(X, y, 1.0),
    }
    for fn in cases.values():
        fn()
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(args.repeat):  # interleaved rounds
        for name, fn in cases.items():
            best[name] = min(best[name], _best(fn, 200, 1))
    floor = best["bare refined pipeline"]
    print("2000 x 20 float64, PyTorch on the CPU, one thread (minimum of interleaved rounds):")
    for name, t in best.items():
        print(f"  {name:24s} {t * 1e6:8.1f} us  {t / floor:5.2f}x bare  {t / best['torch.linalg.lstsq']:5.2f}x lstsq")
    Xb, Yb = _problem(torch, 200000, 50)
    yb = Yb[:, 0]
    big = {"X.T @ X": lambda: Xb.T @ Xb, "normal": lambda: lsq.lstsq(Xb, yb, method="normal")}
    for fn in big.values():
        fn()
    best = dict.fromkeys(big, float("inf"))
    for _ in range(args.repeat):
        for name, fn in big.items():
            best[name] = min(best[name], _best(fn, 3, 1))
    print(f"200000 x 50: normal {best['normal'] * 1e3:.2f} ms = {best['normal'] / best['X.T @ X']:.2f}x X.T @ X")


if __name__ == "__main__":
    main()
