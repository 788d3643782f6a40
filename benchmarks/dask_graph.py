"""The Dask graph of one fit: how many high-level graph layers ``lstsq`` builds on a small
problem in four row blocks, per method, and how long building and computing it take, against a
bare ``X.T @ X``.

``python -m benchmarks.dask_graph [--repeat N]``: 40 x 5 float64, with and without an intercept;
times are medians of ``--repeat`` builds (and computes, threaded scheduler). Every array
operation is a layer, and Dask pays milliseconds per layer (``blockwise``, tokenizing, the
metadata of each result), whatever the data's size: this is the fixed cost of a fit on Dask.
``tests/backend/test_dask_lazy.py`` holds the layer counts to their ceilings with :func:`layers`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

METHODS = ("svd", "qr", "normal", "auto")


def problem(m=40, n=5, blocks=4, seed=0):
    """``(X, y)`` as Dask arrays of ``blocks`` row blocks."""
    import dask.array as da

    rng = np.random.default_rng(seed)
    X, y = rng.standard_normal((m, n)), rng.standard_normal(m)
    return da.from_array(X, chunks=(m // blocks, n)), da.from_array(y, chunks=m // blocks)


def layers(*arrays):
    """Distinct high-level graph layers behind the Dask ``arrays`` (None skipped)."""
    return len({name for a in arrays if a is not None for name in a.dask.layers})


def main(argv=None):
    import dask

    import lsq_backends as lsq

    parser = argparse.ArgumentParser(prog="python -m benchmarks.dask_graph", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    X, y = problem()
    bare = X.T @ X
    print(f"40 x 5 in 4 row blocks; medians of {args.repeat}\n")
    print(f"  {'fit':28s} {'layers':>7s} {'build':>9s} {'compute':>9s}")
    print(f"  {'bare X.T @ X':28s} {layers(bare):7d}")
    for method in METHODS:
        for intercept in (False, True):
            builds, computes = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                r = lsq.lstsq(X, y, method=method, fit_intercept=intercept)
                t1 = time.perf_counter()
                dask.compute(r.coef, r.intercept, r.rss)
                builds.append(t1 - t0)
                computes.append(time.perf_counter() - t1)
            label = f"lstsq {method}" + (", intercept" if intercept else "")
            count = layers(r.coef, r.intercept, r.rss)
            build, compute = statistics.median(builds) * 1e3, statistics.median(computes) * 1e3
            print(f"  {label:28s} {count:7d} {build:7.0f} ms {compute:7.0f} ms")


if __name__ == "__main__":
    main()
