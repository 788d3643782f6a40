"""k-fold ridge cross-validation against scikit-learn's ``RidgeCV(alphas, cv=k)``, in one process;
and, with ``--himalaya``, many targets with per-target penalties against himalaya's ``RidgeCV``.

``python -m benchmarks.ridge_cv [--m 20000] [--n 200] [--alphas 50] [--folds 5] [--targets 1] [--repeat 3]``

``python -m benchmarks.ridge_cv --himalaya [--m 3000] [--n 1000] [--targets 10000] [--alphas 20]
[--folds 3] [--target-batch 1000] [--backends numpy,torch] [--threads 0]``: ``lsq.ridge_cv(X, Y, alphas,
cv=folds, alpha_per_target=True, fit_intercept=False, target_batch=b)`` against himalaya's
``RidgeCV(alphas, cv=folds, solver_params={"n_targets_batch": b})`` on its numpy and torch
backends (float64, CPU), both scoring minus the held-out squared error over the same
``KFold(folds)`` splits. Each fit runs in a fresh subprocess, which reports its time and peak
resident memory above the data (Linux: ``VmHWM`` after resetting it through
``/proc/self/clear_refs``) and saves its chosen penalties; the parent compares them.

``python -m benchmarks.ridge_cv --sparse 0.01 [--m 20000] [--n 500] [--alphas 13]``: a SciPy CSR X of that
density (plus 0.1 on its diagonal) against scikit-learn's ``RidgeCV``; and the held-out folds fitted from each fold's
Gram matrix against the same folds by LSMR, whatever the columns (``FOLD_COLUMNS`` set for the call): the line
``FOLD_COLUMNS`` draws.

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


def _many_targets_data(m, n, k, seed=0):
    """X (m, n) and Y (m, k), float64, with signal-to-noise varying over targets (so that the
    best penalty varies too); generated in blocks of targets (no (n, k) temporary beyond one)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) * np.geomspace(1, 0.1, n)
    Y = np.empty((m, k))
    amp = np.geomspace(0.02, 2.0, k)
    for j in range(0, k, 1000):
        b = slice(j, min(j + 1000, k))
        Y[:, b] = X @ (rng.standard_normal((n, b.stop - j)) * amp[b] / np.sqrt(n)) + rng.standard_normal(
            (m, b.stop - j)
        )
    return X, Y


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _child(lib, backend, m, n, k, a, folds, batch, out):
    """One fit in this (fresh) process: prints time and peak memory, saves the penalties."""
    import json

    X, Y = _many_targets_data(m, n, k)
    alphas = np.logspace(-2, 5, a)
    if backend == "torch":
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
        X, Y, alphas = torch.asarray(X), torch.asarray(Y), torch.asarray(alphas)
    if lib == "himalaya":
        from himalaya.backend import set_backend
        from himalaya.ridge import RidgeCV

        set_backend(backend, on_error="raise")
        est = RidgeCV(alphas=alphas, cv=folds, solver_params={"n_targets_batch": batch, "n_targets_batch_refit": batch})

        def fit():
            return est.fit(X, Y).best_alphas_
    else:

        def fit():
            return lsq.ridge_cv(
                X, Y, alphas, cv=folds, alpha_per_target=True, fit_intercept=False, target_batch=batch
            ).alpha

    base = _status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak (VmHWM) to the current resident size
    except OSError:
        pass
    t0 = time.perf_counter()
    chosen = fit()
    dt = time.perf_counter() - t0
    peak = _status_kib("VmHWM") - base
    chosen = chosen.numpy() if hasattr(chosen, "numpy") else np.asarray(chosen)
    np.save(out, np.asarray(chosen, dtype=np.float64))
    print(json.dumps({"time": dt, "peak_mib": peak / 1024}))


def many_targets(args):
    import json
    import subprocess
    import sys
    import tempfile

    load = os.getloadavg()[0]
    print(
        f"X {args.m}x{args.n}, {args.targets} targets, {args.alphas} alphas, {args.folds} folds, per-target "
        f"penalties, target batch {args.target_batch}, float64 CPU, threads {args.threads or 'default'}; one fit each, "
        f"fresh process; load average {load:.1f}"
    )
    for backend in args.backends.split(","):
        res = {}
        with tempfile.TemporaryDirectory() as tmp:
            for lib in ("lsq", "himalaya"):
                out = os.path.join(tmp, f"{lib}.npy")
                cmd = [
                    sys.executable,
                    "-m",
                    "benchmarks.ridge_cv",
                    "--child",
                    lib,
                    backend,
                    str(args.m),
                    str(args.n),
                    str(args.targets),
                    str(args.alphas),
                    str(args.folds),
                    str(args.target_batch),
                    out,
                ]
                env = dict(os.environ)
                if args.threads:
                    env.update(
                        {v: str(args.threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
                    )
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
                if proc.returncode:
                    print(f"  {backend} {lib}: failed\n{proc.stderr[-2000:]}")
                    break
                res[lib] = (json.loads(proc.stdout.strip().splitlines()[-1]), np.load(out))
        if len(res) < 2:
            continue
        (a, pa), (b, pb) = res["lsq"], res["himalaya"]
        same = float(np.mean(np.isclose(pa, pb, rtol=1e-6)))
        print(
            f"  {backend:6s} lsq.ridge_cv {a['time']:8.2f} s {a['peak_mib']:8.0f} MiB | himalaya RidgeCV "
            f"{b['time']:8.2f} s {b['peak_mib']:8.0f} MiB | himalaya / lsq {b['time'] / a['time']:.2f}x; "
            f"same penalty for {100 * same:.2f}% of targets ({len(np.unique(pa))} distinct chosen)"
        )


def main(argv=None):
    argv = list(__import__("sys").argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        lib, backend, *nums, out = argv[1:]
        return _child(lib, backend, *map(int, nums), out)
    p = argparse.ArgumentParser(prog="python -m benchmarks.ridge_cv", description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, default=20000)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--alphas", type=int, default=50)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--targets", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sparse", type=float, default=None, help="a SciPy CSR X of this density")
    p.add_argument("--himalaya", action="store_true", help="many targets against himalaya (defaults below)")
    p.add_argument("--target-batch", type=int, default=1000)
    p.add_argument("--backends", default="numpy,torch")
    p.add_argument(
        "--threads", type=int, default=0, help="BLAS/torch threads of the --himalaya fits (0: library default)"
    )
    args = p.parse_args(argv)
    if args.himalaya:
        given = set(argv)
        for name, value in (("--m", 3000), ("--n", 1000), ("--targets", 10000), ("--alphas", 20), ("--folds", 3)):
            if name not in given:
                setattr(args, name[2:], value)
        return many_targets(args)
    from sklearn.linear_model import RidgeCV

    rng = np.random.default_rng(0)
    if args.sparse is not None:
        import scipy.sparse as sp

        X = sp.csr_array(sp.random(args.m, args.n, density=args.sparse, format="csr", random_state=0)
                         + 0.1 * sp.eye(args.m, args.n))  # fmt: skip
    else:
        X = rng.standard_normal((args.m, args.n)) * np.geomspace(1, 0.01, args.n)
    shape = (args.m,) if args.targets == 1 else (args.m, args.targets)
    y = X @ rng.standard_normal((args.n,) + shape[1:]) + rng.standard_normal(shape)
    alphas = np.logspace(-3, 4, args.alphas)
    fns = {
        "lsq.ridge_cv": lambda: float(np.mean(lsq.ridge_cv(X, y, alphas, cv=args.folds, scoring="r2").alpha)),
        "sklearn RidgeCV": lambda: float(np.mean(RidgeCV(alphas=alphas, cv=args.folds).fit(X, y).alpha_)),
    }
    if args.sparse is not None:
        fns["folds from Gram"] = lambda: _folds(X, y, alphas, args.folds, X.shape[1])
        fns["folds by LSMR"] = lambda: _folds(X, y, alphas, args.folds, 0)
    times, chosen = median_times(fns, args.repeat)
    load = os.getloadavg()[0]
    print(
        f"X {args.m}x{args.n}, {args.targets} target(s), {args.alphas} alphas, {args.folds} folds; "
        f"median of {args.repeat}; load average {load:.1f}"
    )
    for name, t in times.items():
        print(f"  {name:16s} {t * 1e3:10.1f} ms   alpha {chosen[name]:.4g}")
    print(
        f"  sklearn / lsq: {times['sklearn RidgeCV'] / times['lsq.ridge_cv']:.1f}x; same alpha: "
        f"{np.isclose(chosen['lsq.ridge_cv'], chosen['sklearn RidgeCV'])}"
    )
    if args.sparse is not None:
        print(f"  folds by LSMR / from Gram matrices: {times['folds by LSMR'] / times['folds from Gram']:.2f}x")


def _folds(X, y, alphas, folds, columns):
    """``ridge_cv``'s held-out folds of a sparse X with ``FOLD_COLUMNS`` set to ``columns`` for the call: from the
    folds' Gram matrices up to it, by LSMR past it."""
    from lsq_backends._ridge import _operator_cv

    kept, _operator_cv.FOLD_COLUMNS = _operator_cv.FOLD_COLUMNS, columns
    try:
        return float(np.mean(lsq.ridge_cv(X, y, alphas, cv=folds, scoring="r2").alpha))
    finally:
        _operator_cv.FOLD_COLUMNS = kept


if __name__ == "__main__":
    main()
