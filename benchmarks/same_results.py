"""Do two versions of the package give bitwise the same results? For a change meant to leave
every number as it was (a faster route, a moved module).

``python -m benchmarks.same_results save OUT.npz [--package DIR]`` fits a fixed set of 6,900
small problems (``lstsq`` and ``ridge``; ``auto``, ``normal``, ``qr``, ``svd``; float32 and
float64; tall and wide; graded columns, 1e8 offsets, rank deficiency, scales from 1e-300 to
1e300; with and without an intercept, several targets, sample weights) and saves every result array (``coef``,
``rank``, ``rss``, ``intercept``, or the error raised). ``--package DIR`` imports
``lsq_backends`` from DIR (another checkout, e.g. a ``git worktree`` of the commit before).
``python -m benchmarks.same_results compare A.npz B.npz`` counts the arrays that differ.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np


def _graded(lsq, rng, t, out):
    m, n = int(rng.integers(2, 120)), int(rng.integers(1, 17))
    if t % 7 == 0:
        m, n = n, m  # wide
    dtype = np.float32 if t % 5 == 0 else np.float64
    k = min(m, n)
    U = np.linalg.qr(rng.standard_normal((m, k)))[0]
    V = np.linalg.qr(rng.standard_normal((n, k)))[0]
    s = np.geomspace(1, 10.0 ** -rng.uniform(0, 16), k)
    if t % 11 == 3:
        s[-1] = 0  # rank-deficient
    X = (U * s) @ V.T
    if t % 3 == 1:
        X = X * 10.0 ** rng.uniform(-30, 30, n)  # graded columns
    if t % 13 == 5:
        X = X * 1e150
    if t % 17 == 6:
        X = X + 1e8  # offsets
    y = (rng.standard_normal(m) + X @ rng.standard_normal(n)).astype(dtype)
    X = X.astype(dtype)
    intercept, rcond = bool(t % 2), [None, None, None, 1e-10, 0.0][t % 5]
    for method in ("auto", "normal", "qr"):
        if t % 4 == 3:
            alpha = float(10.0 ** rng.uniform(-6, 2))
            fit = lambda: lsq.ridge(X, y, alpha, method=method, fit_intercept=intercept)  # noqa: B023, E731
        else:
            fit = lambda: lsq.lstsq(X, y, method=method, fit_intercept=intercept, rcond=rcond)  # noqa: B023, E731
        _record(out, f"graded{t}_{method}", fit)


def _scaled(lsq, rng, t, out):
    m, n, k = int(rng.integers(5, 60)), int(rng.integers(1, 8)), int(rng.integers(1, 4))
    X = rng.standard_normal((m, n)) * (10.0 ** rng.uniform(-300, 300) if t % 2 else 1.0)
    Y = rng.standard_normal((m, k)) * 10.0 ** rng.uniform(-300, 300, k if t % 3 else 1)
    if t % 5 == 0:
        Y = Y[:, 0]
    dtype = np.float32 if t % 7 == 0 else np.float64
    X, Y = X.astype(dtype), Y.astype(dtype)
    for method in ("auto", "normal", "svd"):
        if t % 3:
            fit = lambda: lsq.lstsq(X, Y, method=method, fit_intercept=bool(t % 4 < 2))  # noqa: B023, E731
        else:
            fit = lambda: lsq.ridge(X, Y, 1e-3, method=method)  # noqa: B023, E731
        _record(out, f"scaled{t}_{method}", fit)


def _weighted(lsq, rng, t, out):
    m, n = int(rng.integers(3, 80)), int(rng.integers(1, 9))
    dtype = np.float32 if t % 6 == 0 else np.float64
    X = rng.standard_normal((m, n)) * 10.0 ** rng.uniform(-3, 3, n) + (1e6 if t % 5 == 1 else 0.0)
    y = rng.standard_normal(m) + X @ rng.standard_normal(n)
    w = rng.uniform(0, 3, m) * (10.0 ** rng.uniform(-100, 100) if t % 7 == 2 else 1.0)
    if t % 9 == 4:
        w[: m // 3] = 0  # rows left out
    X, y, w = X.astype(dtype), y.astype(dtype), w.astype(dtype)
    for method in ("auto", "normal", "qr", "svd"):
        if t % 3 == 0:
            fit = lambda: lsq.ridge(X, y, 0.1, method=method, sample_weight=w)  # noqa: B023, E731
        else:
            fit = lambda: lsq.lstsq(X, y, method=method, sample_weight=w, fit_intercept=bool(t % 2))  # noqa: B023, E731
        _record(out, f"weighted{t}_{method}", fit)


def _record(out, key, fit):
    try:
        r = fit()
    except Exception as exc:  # noqa: BLE001 -- the error is a result too
        out[f"{key}_error"] = np.array(f"{type(exc).__name__}: {exc}"[:120])
        return
    for field in ("coef", "rank", "rss", "intercept"):
        value = getattr(r, field)
        out[f"{key}_{field}"] = np.asarray(np.nan if value is None else value)


def save(path, package=None):
    if package is not None:
        sys.path.insert(0, package)
    import lsq_backends as lsq

    warnings.simplefilter("ignore")
    out = {}
    rng = np.random.default_rng(123)
    for t in range(1500):
        _graded(lsq, rng, t, out)
    rng = np.random.default_rng(5)
    for t in range(400):
        _scaled(lsq, rng, t, out)
    rng = np.random.default_rng(9)
    for t in range(300):
        _weighted(lsq, rng, t, out)
    np.savez(path, **out)
    print(f"{path}: {len(out)} arrays from {lsq.__file__}")


def compare(a, b):
    A, B = np.load(a), np.load(b)
    if set(A.files) != set(B.files):
        print(f"different fits or errors: {sorted(set(A.files) ^ set(B.files))[:10]}")
    common = sorted(set(A.files) & set(B.files))
    differ = [k for k in common if A[k].shape != B[k].shape or A[k].tobytes() != B[k].tobytes()]
    print(f"{len(common) - len(differ)} of {len(common)} arrays bitwise the same")
    for k in differ[:20]:
        print(f"  {k}: {A[k].ravel()[:3]} / {B[k].ravel()[:3]}")
    return not differ and set(A.files) == set(B.files)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.same_results", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save")
    s.add_argument("path")
    s.add_argument("--package", help="the folder holding the lsq_backends to import")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = p.parse_args(argv)
    if args.command == "save":
        save(args.path, args.package)
    else:
        sys.exit(0 if compare(args.a, args.b) else 1)


if __name__ == "__main__":
    main()
