"""Dask at scale: ``normal`` and ``qr`` fits of a tall X that never exists on the client.

``python -m benchmarks.dask_scale`` (defaults: 10^7 x 20 float64, 40 row chunks, 1, 2 and 4
worker processes of one thread each on a ``LocalCluster``). Each chunk of X and y is generated
on a worker from its own seed; the data are persisted on the workers (generation timed apart),
then each fit is built lazily and computed. Peers in the same run, on the same cluster:
``X.T @ X`` alone (the one-pass limit) and ``dask.array.linalg.lstsq`` (Dask's TSQR, no
intercept). The reference is NumPy's: the same chunks regenerated one at a time on the client,
their sums and Gram matrix accumulated (memory O(n^2)), the normal equations solved in float64.
Reports times, ratios to the peers, and the relative error of each fit against the reference.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _chunk(seed, rows, n):
    """Chunk ``seed`` of X (rows, n) and y (rows,): y = 1 + X w + noise, w = 1..n / n."""
    rng = np.random.default_rng([seed, 2026])
    X = rng.standard_normal((rows, n)) + np.linspace(0.0, 1.0, n)
    y = 1.0 + X @ (np.arange(1, n + 1) / n) + 0.1 * rng.standard_normal(rows)
    return X, y


def _x_block(seeds, rows, n):
    return _chunk(int(seeds[0]), rows, n)[0]


def _y_block(seeds, rows, n):
    return _chunk(int(seeds[0]), rows, n)[1]


def data(rows, n, chunk):
    """Lazy X, y: one task per chunk, each generating its rows from its seed."""
    import dask.array as da

    nchunks = rows // chunk
    seeds = da.arange(nchunks, chunks=1)
    X = seeds.map_blocks(_x_block, chunk, n, chunks=((chunk,) * nchunks, (n,)), new_axis=1, dtype=np.float64)
    y = seeds.map_blocks(_y_block, chunk, n, chunks=((chunk,) * nchunks,), dtype=np.float64)
    return X, y


def reference(rows, n, chunk):
    """Coefficients and intercept from chunk-wise sums in NumPy (Chan's pairwise update of
    means and centered cross-products, so the offsets cost no digits)."""
    count, mean, C = 0, np.zeros(n + 1), np.zeros((n + 1, n + 1))
    for seed in range(rows // chunk):
        X, y = _chunk(seed, chunk, n)
        A = np.column_stack([X, y])
        mu = A.mean(0)
        D = A - mu
        delta = mu - mean
        total = count + chunk
        C += D.T @ D + np.outer(delta, delta) * count * chunk / total
        mean += delta * chunk / total
        count = total
    coef = np.linalg.solve(C[:n, :n], C[:n, n])
    return coef, mean[n] - mean[:n] @ coef


def _time(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run(rows, n, chunk, workers, methods):
    import dask
    import dask.array as da
    import distributed

    import lsq_backends as lsq

    t_ref, (ref_coef, ref_icpt) = _time(lambda: reference(rows, n, chunk))
    print(f"X: {rows} x {n} float64 ({rows * n * 8 / 1e9:.2f} GB), {rows // chunk} row chunks of {chunk}")
    print(f"NumPy reference (chunks regenerated on the client, Gram accumulated): {t_ref:.1f} s\n")
    print(
        "| workers | generate + persist (s) | X.T@X (s) | dask lstsq (s) | method | fit (s) | x X.T@X | x dask lstsq "
        "| rel. error vs NumPy |"
    )
    print("|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for w in workers:
        with (
            distributed.LocalCluster(
                n_workers=w, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            X, y = data(rows, n, chunk)
            t0 = time.perf_counter()
            X, y = dask.persist(X, y)
            distributed.wait([X, y])
            t_gen = time.perf_counter() - t0
            t_gram, _ = _time(lambda: (X.T @ X).compute())
            t_dask, _ = _time(lambda: da.linalg.lstsq(X, y[:, None])[0].compute())
            for method in methods:

                def fit(method=method):
                    with dask.config.set(scheduler=_fail):
                        res = lsq.lstsq(X, y, method=method, fit_intercept=True)
                    return client.compute([res.coef, res.intercept], sync=True)

                t_fit, (coef, icpt) = _time(fit)
                err = np.linalg.norm(np.r_[coef - ref_coef, icpt - ref_icpt]) / np.linalg.norm(
                    np.r_[ref_coef, ref_icpt]
                )
                print(
                    f"| {w} | {t_gen:.1f} | {t_gram:.2f} | {t_dask:.2f} | {method} | {t_fit:.2f} | "
                    f"{t_fit / t_gram:.2f} | {t_fit / t_dask:.2f} | {err:.1e} |"
                )


def _fail(*args, **kwargs):
    raise AssertionError("the fit computed something before compute()")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.dask_scale", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=float, default=1e7)
    p.add_argument("--cols", type=int, default=20)
    p.add_argument("--chunk", type=int, default=250_000)
    p.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    p.add_argument("--methods", default="normal,qr")
    a = p.parse_args(argv)
    run(int(a.rows), a.cols, a.chunk, [int(w) for w in a.workers.split(",")], a.methods.split(","))


if __name__ == "__main__":
    main()
