"""A ridge path and leave-one-out alpha selection against one fit and scikit-learn, in one process.

``python -m benchmarks.ridge_path [--m 20000] [--n 200] [--alphas 50] [--repeat 5] [--threads 0]``

Times (best of ``--repeat`` interleaved rounds, NumPy, float64, y a vector):

- ``lsq.ridge(X, y, alphas)``: the whole path from one factorization (auto/normal: Gram eigh;
  svd: QR + SVD of R), against one ``lsq.ridge(X, y, alpha)`` fit and against 50 fits of
  ``sklearn.linear_model.Ridge`` (its default solver, Cholesky, one fit per alpha);
- ``lsq.ridge_cv(X, y, alphas)`` against ``sklearn.linear_model.RidgeCV(alphas)`` (leave-one-out,
  ``gcv_mode`` auto: the eigendecomposition of X^T X for tall X, then O(m n^2) per alpha).

Prints each time and its ratio to its peers measured in the same run (the machine may be shared:
compare ratios, not absolute times).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import lsq_backends as lsq


def best_of(fns, repeat):
    """Best time of each function over ``repeat`` interleaved rounds: on a shared machine a burst
    of load then hits every candidate alike instead of one of them."""
    for fn in fns.values():
        fn()  # warm-up: first-call costs (imports, allocations) are not what is measured
    times = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name] = min(times[name], time.perf_counter() - t0)
    return times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=20_000)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--alphas", type=int, default=50)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="BLAS threads (0: library default)")
    args = p.parse_args(argv)
    if args.threads:
        from .backends import limit_threads

        limit_threads(args.threads)
    from sklearn.linear_model import Ridge, RidgeCV

    rng = np.random.default_rng(0)
    m, n = args.m, args.n
    X = rng.standard_normal((m, n)) + 1.0
    y = X @ rng.standard_normal(n) + rng.standard_normal(m)
    alphas = np.logspace(-2, 4, args.alphas)
    mid = float(alphas[len(alphas) // 2])

    def sk_path():
        return [Ridge(alpha=float(a)).fit(X, y).coef_ for a in alphas]

    t = {
        "lsq.ridge path, auto": lambda: lsq.ridge(X, y, alphas),
        "lsq.ridge path, svd": lambda: lsq.ridge(X, y, alphas, method="svd"),
        "lsq.ridge one fit, auto": lambda: lsq.ridge(X, y, mid),
        "lsq.ridge one fit, normal": lambda: lsq.ridge(X, y, mid, method="normal"),
        f"sklearn Ridge x{len(alphas)}": sk_path,
        "lsq.ridge_cv": lambda: lsq.ridge_cv(X, y, alphas),
        "sklearn RidgeCV": lambda: RidgeCV(alphas=alphas).fit(X, y),
    }
    # The path must agree with the per-alpha fits before its time means anything.
    path = lsq.ridge(X, y, alphas).coef
    ref = np.stack(sk_path())
    err = float(np.max(np.abs(path - ref)) / np.max(np.abs(ref)))
    cv, sk = lsq.ridge_cv(X, y, alphas), RidgeCV(alphas=alphas).fit(X, y)
    assert float(cv.alpha) == sk.alpha_, (cv.alpha, sk.alpha_)
    times = best_of(t, args.repeat)
    print(
        f"# ridge path and LOO-CV, NumPy float64, X {m}x{n}, {len(alphas)} alphas, best of {args.repeat} interleaved rounds"
    )
    print(f"# path vs sklearn Ridge coef: max rel diff {err:.1e}; ridge_cv alpha == RidgeCV alpha_")
    print("| timing | ms |")
    print("|---|---:|")
    for name, s in times.items():
        print(f"| {name} | {1e3 * s:.1f} |")
    one = times["lsq.ridge one fit, auto"]
    sk_fits = times[f"sklearn Ridge x{len(alphas)}"]
    print()
    print("| ratio | value |")
    print("|---|---:|")
    print(f"| path (auto) / one fit (auto) | {times['lsq.ridge path, auto'] / one:.2f} |")
    print(f"| path (svd) / one fit (auto) | {times['lsq.ridge path, svd'] / one:.2f} |")
    print(f"| sklearn Ridge x{len(alphas)} / path (auto) | {sk_fits / times['lsq.ridge path, auto']:.1f} |")
    print(f"| sklearn RidgeCV / lsq.ridge_cv | {times['sklearn RidgeCV'] / times['lsq.ridge_cv']:.1f} |")
    print(f"| lsq.ridge_cv / one fit (auto) | {times['lsq.ridge_cv'] / one:.2f} |")


if __name__ == "__main__":
    main()
