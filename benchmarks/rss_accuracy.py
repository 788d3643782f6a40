"""Accuracy of the residual sum of squares: from the residual (what ``lsq_backends`` does) or
from the Gram matrix (which would save one pass over X), against an 80-bit reference.

Run: ``python -m benchmarks.rss_accuracy [m n]`` (default 200000 50). For each noise level,
prints ||r||^2 / ||y||^2 and the relative error of rss computed as ``r @ r`` with
``r = y - X @ w``, as ``y'y - 2 b'w + w'A w`` and as ``y'y - b'w`` (A = X'X, b = X'y).
The Gram forms lose digits in proportion to ||y||^2 / ||r||^2: on nearly exact fits, all.
"""

from __future__ import annotations

import sys

import numpy as np


def main(m=200_000, n=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    w0 = rng.standard_normal(n)
    XL = X.astype(np.longdouble)
    print("| noise | rss / y'y | residual | y'y - 2b'w + w'Aw | y'y - b'w |")
    print("|---:|---:|---:|---:|---:|")
    for noise in (1.0, 1e-2, 1e-4, 1e-6, 1e-8):
        y = X @ w0 + noise * rng.standard_normal(m)
        A, b = X.T @ X, X.T @ y
        w = np.linalg.solve(A, b)
        r = y - X @ w
        rL = y.astype(np.longdouble) - XL @ w.astype(np.longdouble)
        ref = rL @ rL
        yy = y @ y

        def err(v):
            return abs(float((np.longdouble(v) - ref) / ref))

        gram_full, gram_short = yy - 2 * b @ w + w @ A @ w, yy - b @ w
        print(
            f"| {noise:.0e} | {float(ref / yy):.1e} | {err(r @ r):.1e} | {err(gram_full):.1e} | {err(gram_short):.1e} |"
        )


if __name__ == "__main__":
    main(*map(int, sys.argv[1:3]))
