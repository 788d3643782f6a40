"""k-fold ridge cross-validation against scikit-learn's ``RidgeCV(alphas, cv=k)``, in one process.

``python -m benchmarks.ridge_cv [--m 20000] [--n 200] [--alphas 50] [--folds 5] [--targets 1] [--repeat 3]``

``lsq.ridge_cv(X, y, alphas, cv=k, scoring="r2")`` factorizes each fold's training rows once
(the eigendecomposition of their Gram matrix) for all penalties; scikit-learn's ``RidgeCV`` with
``cv=k`` runs ``GridSearchCV``: one ``Ridge`` fit per fold and penalty. Both use scikit-learn's
default k-fold score (R^2 averaged over folds); the chosen penalties must agree. Times are
medians of ``--repeat`` interleaved rounds (NumPy, float64); compare the ratio, not absolute
times, on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import lsq_backends as lsq


def median_times(fns, repeat):
    """Median time of each function over ``repeat`` interleaved rounds (after one warm-up)."""
    out = {name: fn() for name, fn in fns.items()}
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}, out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.ridge_cv", description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, default=20000)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--alphas", type=int, default=50)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--targets", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    from sklearn.linear_model import RidgeCV

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.m, args.n)) * np.geomspace(1, 0.01, args.n)
    shape = (args.m,) if args.targets == 1 else (args.m, args.targets)
    y = X @ rng.standard_normal((args.n,) + shape[1:]) + rng.standard_normal(shape)
    alphas = np.logspace(-3, 4, args.alphas)
    fns = {
        "lsq.ridge_cv": lambda: float(np.mean(lsq.ridge_cv(X, y, alphas, cv=args.folds, scoring="r2").alpha)),
        "sklearn RidgeCV": lambda: float(np.mean(RidgeCV(alphas=alphas, cv=args.folds).fit(X, y).alpha_)),
    }
    times, chosen = median_times(fns, args.repeat)
    load = os.getloadavg()[0]
    print(f"X {args.m}x{args.n}, {args.targets} target(s), {args.alphas} alphas, {args.folds} folds; "
          f"median of {args.repeat}; load average {load:.1f}")
    for name, t in times.items():
        print(f"  {name:16s} {t * 1e3:10.1f} ms   alpha {chosen[name]:.4g}")
    print(f"  sklearn / lsq: {times['sklearn RidgeCV'] / times['lsq.ridge_cv']:.1f}x; same alpha: "
          f"{np.isclose(chosen['lsq.ridge_cv'], chosen['sklearn RidgeCV'])}")


if __name__ == "__main__":
    main()
