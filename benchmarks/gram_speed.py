"""NumPy float64 timings of the Gram-speed rows, each as a ratio to a peer timed in the same run.

``python -m benchmarks.gram_speed [--rows ROW,...] [--repeat N]`` (one BLAS thread). Rows:

- ``tall``: ``normal`` and ``auto``, without and with an intercept (columns offset by 1e8), on
  200000 x 50 and 100000 x 200 (cond 100), against a bare ``X.T @ X``; the intercept fits'
  error against a float64 reference of the centered problem.
- ``accuracy``: ``auto``'s error at cond 100 against ``numpy.linalg.lstsq``'s.
- ``illcond``: ``qr`` at cond 1e8 and 1e12 (200000 x 50, rcond 1e-15), against ``X.T @ X``
  and ``numpy.linalg.lstsq`` (time, and error against a double-double refined reference).
- ``small``: one 442 x 10 fit per call, ``normal``/``auto`` against ``numpy.linalg.lstsq``.
- ``batched``: 10000 x (64 x 8) ``auto`` against a Python loop of ``numpy.linalg.lstsq``
  (and ``torch.linalg.lstsq``'s batched call, where PyTorch is installed), beside the floor of a
  refined fit's arithmetic on NumPy: the products X^T X, X^T y, X w and X^T r and the batched
  Cholesky factorization, without any solve or certificate.

Calls of a row are interleaved (one of each per round), medians of the rounds reported.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np

from .backends import limit_threads

RCOND = 1e-15  # illcond: below 1/cond, so that cond 1e12 at m = 200000 is full rank (the default is 4.4e-11)


def make_problem(m, n, cond, seed=0, offset=0.0, batch=()):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal(batch + (m, n)))[0]
    V = np.linalg.qr(rng.standard_normal(batch + (n, n)))[0]
    s = np.geomspace(1.0, 1.0 / cond, n) * math.sqrt(m)
    X = (U * s) @ np.swapaxes(V, -1, -2)
    w = rng.standard_normal(batch + (n,))
    y = (X @ w[..., None])[..., 0] + 1e-2 * rng.standard_normal(batch + (m,))
    return X + offset, y + offset, X, y


def _rounds(calls, repeat):
    """Median seconds of each call, interleaved over ``repeat`` rounds (one warm-up)."""
    for f in calls.values():
        f()
    times = {k: [] for k in calls}
    for _ in range(repeat):
        for k, f in calls.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def _err(a, ref):
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))


def _print(title, med, base):
    print(f"\n{title}")
    for k, v in med.items():
        print(f"  {k:32s} {v * 1e3:9.3f} ms  {v / med[base]:6.2f}x")


def tall(lsq, repeat):
    for m, n in ((200_000, 50), (100_000, 200)):
        Xo, yo, X, y = make_problem(m, n, 100.0, offset=1e8)
        Xs, ys = Xo - 1e8, yo - 1e8  # exact: the data as given, offsets removed
        ref = np.linalg.lstsq(Xs - Xs.mean(0), ys - ys.mean(), rcond=None)[0]
        calls = {
            "X.T @ X": lambda X=X: X.T @ X,
            "normal": lambda X=X, y=y: lsq.lstsq(X, y, method="normal"),
            "auto": lambda X=X, y=y: lsq.lstsq(X, y, method="auto"),
            "normal, intercept": lambda X=Xo, y=yo: lsq.lstsq(X, y, method="normal", fit_intercept=True),
            "auto, intercept": lambda X=Xo, y=yo: lsq.lstsq(X, y, method="auto", fit_intercept=True),
        }
        _print(f"tall {m}x{n} (cond 100; intercept rows: offsets 1e8)", _rounds(calls, repeat), "X.T @ X")
        for meth in ("normal", "auto"):
            r = lsq.lstsq(Xo, yo, method=meth, fit_intercept=True)
            print(f"  {meth}, intercept: coef error {_err(r.coef, ref):.2e}")


def accuracy(lsq, repeat):
    for m, n in ((200_000, 50), (100_000, 200), (2000, 50)):
        _, _, X, y = make_problem(m, n, 100.0, seed=1)
        ref = np.linalg.solve(X.T @ X, X.T @ y)  # replaced by a refined reference below
        q, r = np.linalg.qr(X)
        ref = np.linalg.solve(r, q.T @ y)
        e_np = _err(np.linalg.lstsq(X, y, rcond=None)[0], ref)
        e_auto = _err(lsq.lstsq(X, y, method="auto").coef, ref)
        e_norm = _err(lsq.lstsq(X, y, method="normal").coef, ref)
        print(
            f"accuracy {m}x{n} cond 100: lstsq {e_np:.1e}  auto {e_auto:.1e} ({e_auto / e_np:.1f}x)  normal {e_norm:.1e}"
        )


def illcond(lsq, repeat):
    for cond in (1e8, 1e12):
        _, _, X, y = make_problem(200_000, 50, cond, seed=2)
        calls = {
            "X.T @ X": lambda X=X: X.T @ X,
            "qr": lambda X=X, y=y: lsq.lstsq(X, y, method="qr", rcond=RCOND),
            "numpy.linalg.lstsq": lambda X=X, y=y: np.linalg.lstsq(X, y, rcond=RCOND),
        }
        _print(f"ill-conditioned 200000x50, cond {cond:.0e}", _rounds(calls, repeat), "X.T @ X")
        ref = lsq.lstsq(X, y, method="svd", rcond=1e-17, refine=4).coef  # double-double residuals
        for name, c in (
            ("qr", lsq.lstsq(X, y, method="qr", rcond=RCOND).coef),
            ("numpy", np.linalg.lstsq(X, y, rcond=RCOND)[0]),
        ):
            print(f"  {name} error {_err(c, ref):.1e}")


def small(lsq, repeat):
    _, _, X, y = make_problem(442, 10, 100.0, seed=3)
    calls = {
        "numpy.linalg.lstsq": lambda: np.linalg.lstsq(X, y, rcond=None),
        "normal": lambda X=X, y=y: lsq.lstsq(X, y, method="normal"),
        "auto": lambda X=X, y=y: lsq.lstsq(X, y, method="auto"),
        "auto, intercept": lambda: lsq.lstsq(X, y, method="auto", fit_intercept=True),
    }

    def many(f):
        return lambda: [f() for _ in range(200)]

    med = _rounds({k: many(f) for k, f in calls.items()}, repeat)
    _print("442x10, 200 calls per timing", med, "numpy.linalg.lstsq")


def batched(lsq, repeat):
    _, _, X, y = make_problem(64, 8, 100.0, seed=4, batch=(10_000,))
    XT, yc = np.swapaxes(X, -1, -2), y[..., None]

    def floor():  # the arithmetic every refined fit does: the two products, Cholesky, residual, X^T r
        np.linalg.cholesky(XT @ X)
        return XT @ (yc - X @ (XT @ yc))

    calls = {
        "loop of numpy.linalg.lstsq": lambda: [np.linalg.lstsq(a, b, rcond=None) for a, b in zip(X, y, strict=True)],
        "auto": lambda X=X, y=y: lsq.lstsq(X, y, method="auto"),
        "normal": lambda X=X, y=y: lsq.lstsq(X, y, method="normal"),
        "floor: products, Cholesky": floor,
    }
    try:  # PyTorch's batched LAPACK lstsq (gelsy on the CPU), where PyTorch is installed
        import torch

        Xt, yt = torch.asarray(X), torch.asarray(y)[..., None]
        calls["torch.linalg.lstsq"] = lambda: torch.linalg.lstsq(Xt, yt)
    except ImportError:
        pass
    med = _rounds(calls, repeat)
    _print("batched 10000 x (64x8), cond 100", med, "loop of numpy.linalg.lstsq")
    for k in ("auto", "normal", "floor: products, Cholesky", "torch.linalg.lstsq"):
        if k in med:
            print(f"  speed-up {k}: {med['loop of numpy.linalg.lstsq'] / med[k]:.1f}x")
    q, r = np.linalg.qr(X)
    ref = np.linalg.solve(r, np.swapaxes(q, -1, -2) @ y[..., None])[..., 0]
    e_np = _err(np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, y, strict=True)]), ref)
    print(f"  error: loop {e_np:.1e}  auto {_err(lsq.lstsq(X, y).coef, ref):.1e}")


ROWS = {"tall": tall, "accuracy": accuracy, "illcond": illcond, "small": small, "batched": batched}


def run(prog, doc, rows, argv=None):
    """The command line of a program of rows (``--rows``, ``--repeat``): each row called as
    ``rows[name](lsq, repeat)``, on one thread."""
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    p.add_argument("--rows", default=",".join(rows))
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    limit_threads(1)
    import lsq_backends as lsq

    print(f"load: {os.getloadavg()}, one thread, medians of {args.repeat}")
    for row in args.rows.split(","):
        rows[row](lsq, args.repeat)


def main(argv=None):
    run("python -m benchmarks.gram_speed", __doc__, ROWS, argv)


if __name__ == "__main__":
    main()
