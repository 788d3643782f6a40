"""The lean route's dispatch cost: a PyTorch fit against the bare refined pipeline and ``torch.linalg.lstsq``.

``python -m benchmarks.lean [--repeat R]``: a 2000 x 20 float64 fit (cond 100, small residual) on one thread,
the library's ``normal`` and ``auto`` (the lean route), the same with an intercept, and ``ridge``, each as a
ratio to the bare refined pipeline (X^T X, X^T y, ``cholesky_ex``, solve, residual, X^T r, solve) timed in the
same run, interleaved, minimum of R rounds of 200 calls; and ``torch.linalg.lstsq`` of the same X. Also the
200000 x 50 fit against a bare ``X.T @ X``. CPU figures: on a GPU each of the fit's operators is a kernel
launch, which ``benchmarks.gpu`` measures.

``python -m benchmarks.lean --jax``: the same for JAX (float64, CPU): a jitted 500 x 10 ``normal`` fit against the
bare refined pipeline jitted, with the fusions of each compiled program (the fit's holds both branches of its
``lax.cond``; the taken branch is counted on its own), and the floor of a certified fit beside them (the pipeline
with its rss, which the bare pipeline does not compute, then with the inverse its certificate needs); and the
first call of a new shape, compile included, of
``normal`` at 300 x 6, eager and under ``jax.jit``, against the bare pipeline's.

``python -m benchmarks.lean --offsets-accuracy``: the errors of PyTorch intercept fits of 4000 x 32 data with columns
offset by 0 to 1.7e9 (cond 1e2 and 1e5), against the fit of the data centered in extended precision.

``python -m benchmarks.lean --numpy``: NumPy, an intercept with columns offset by 1e8 and 1e9 against the same fit
without offsets (200000 x 50), and float32 ``normal`` against float64 ``normal`` and float32 ``qr`` (20000 x 400).
"""

from __future__ import annotations

import argparse
import functools
import time


def _problem(asarray, m, n, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((m, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    X = (U * np.geomspace(1.0, 1e-2, n)) @ V.T
    y = X @ rng.standard_normal(n) + 1e-3 * rng.standard_normal(m)
    return asarray(X), asarray(y)[:, None]


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


def _fusions(compiled):
    """Fusions and custom calls (the cuSOLVER/LAPACK kernels) of a compiled JAX program, the taken branch of
    its conditional (the first computation a ``conditional`` names) counted on its own."""
    import re

    text = compiled.as_text()
    blocks = dict(re.findall(r"\n(?:ENTRY )?%?([\w.\-]+) [^\n]*\{\n(.*?)\n\}", text, re.S))

    def count(body, seen=()):
        n = body.count(" fusion(") + body.count("custom-call(")
        for call in re.findall(r"(?:calls|branch_computations=\{|to_apply)=?%?([\w.\-]+)", body):
            if call in blocks and call not in seen:
                n += count(blocks[call], (*seen, call))
        return n

    entry = re.search(r"ENTRY %?([\w.\-]+)", text).group(1)
    whole = count(blocks[entry])
    branches = re.findall(r"branch_computations=\{%?([\w.\-]+), %?([\w.\-]+)\}", text)
    taken = None
    if branches:  # lax.cond(pred, true, false) lowers to branches (false, true)
        outside = whole - sum(count(blocks[b]) for pair in branches for b in pair if b in blocks)
        taken = outside + sum(count(blocks[pair[1]]) for pair in branches if pair[1] in blocks)
    return whole, taken


def jax_main(repeat):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import lsq_backends as lsq

    X, Y = _problem(jnp.asarray, 500, 10)
    y = Y[:, 0]

    def bare_jax(X, Y):
        L = jnp.linalg.cholesky(X.T @ X)
        W = jax.scipy.linalg.cho_solve((L, True), X.T @ Y)
        return W + jax.scipy.linalg.cho_solve((L, True), X.T @ (Y - X @ W))

    def with_rss(X, Y, inverse=False):  # the floor of a certified fit: the pipeline, its rss, the certificate's inverse
        A = X.T @ X
        L = jnp.linalg.cholesky(A)
        W = jax.scipy.linalg.cho_solve((L, True), X.T @ Y)
        R = Y - X @ W
        out = (W + jax.scipy.linalg.cho_solve((L, True), X.T @ R), jnp.sum(R * R, axis=0))
        if inverse:
            Li = jax.scipy.linalg.solve_triangular(L, jnp.eye(X.shape[-1], dtype=X.dtype), lower=True)
            out += (jnp.sum(jnp.diagonal(A) * jnp.sum(Li * Li, axis=0)),)
        return out

    fit = jax.jit(lambda X, y: lsq.lstsq(X, y, method="normal").coef)
    pipe = jax.jit(bare_jax)
    floors = jax.jit(with_rss), jax.jit(functools.partial(with_rss, inverse=True))
    cases = {
        "bare refined pipeline": lambda: pipe(X, Y).block_until_ready(),
        "normal": lambda: fit(X, y).block_until_ready(),
        "pipeline + rss": lambda: jax.block_until_ready(floors[0](X, Y)),
        "+ certificate's inverse": lambda: jax.block_until_ready(floors[1](X, Y)),
    }
    for fn in cases.values():
        fn()
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(repeat):
        for name, fn in cases.items():
            best[name] = min(best[name], _best(fn, 200, 1))
    kernels = {
        "bare refined pipeline": _fusions(pipe.lower(X, Y).compile()),
        "normal": _fusions(fit.lower(X, y).compile()),
        "pipeline + rss": _fusions(floors[0].lower(X, Y).compile()),
        "+ certificate's inverse": _fusions(floors[1].lower(X, Y).compile()),
    }
    print("500 x 10 float64, JAX jitted on the CPU (minimum of interleaved rounds):")
    for name, t in best.items():
        whole, taken = kernels[name]
        held = f"{whole} fusions and custom calls" + ("" if taken is None else f", {taken} in the taken branch")
        print(f"  {name:24s} {t * 1e6:8.1f} us  {t / best['bare refined pipeline']:5.2f}x bare  ({held})")
    rng = np.random.default_rng(1)
    firsts = {"bare refined pipeline, jitted": [], "normal, eager": [], "normal, jitted": []}
    for i in range(repeat):  # a new shape each time: the compile is included
        Xs = jnp.asarray(rng.standard_normal((300 + i, 6)))
        ys = jnp.asarray(rng.standard_normal(300 + i))
        for name, fn in (
            ("bare refined pipeline, jitted", lambda: jax.jit(bare_jax)(Xs, ys[:, None])),
            ("normal, eager", lambda: lsq.lstsq(Xs, ys, method="normal").coef),
            ("normal, jitted", lambda: jax.jit(lambda X, y: lsq.lstsq(X, y, method="normal").coef)(Xs, ys)),
        ):
            t = time.perf_counter()
            fn().block_until_ready()
            firsts[name].append(time.perf_counter() - t)
    print("300 x 6 float64, the first call of a new shape (compile included), median:")
    for name, times in firsts.items():
        print(f"  {name:30s} {sorted(times)[len(times) // 2]:.3f} s")


def numpy_main(repeat):
    """The two cliffs the lean route removes, on NumPy (one BLAS thread where the caller sets it): an intercept
    with columns offset by 1e8 and 1e9 against the same fit without offsets (200000 x 50), and float32 ``normal``
    against float64 ``normal`` and float32 ``qr`` (20000 x 400); medians of interleaved rounds."""
    import os

    import numpy as np

    import lsq_backends as lsq

    from .ridge_cv import median_times

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200000, 50))
    y = X @ rng.standard_normal(50) + 0.1 * rng.standard_normal(200000) + 3.0
    W = rng.standard_normal((20000, 400))
    v = W @ rng.standard_normal(400) + 0.1 * rng.standard_normal(20000)
    W32, v32 = W.astype(np.float32), v.astype(np.float32)
    cases = {}
    for offset in (0.0, 1e8, 1e9):
        Xo = X + offset
        for method in ("normal", "auto"):
            fit = lambda Xo=Xo, method=method: lsq.lstsq(Xo, y, method=method, fit_intercept=True)  # noqa: E731
            cases[f"{method}, intercept, offset {offset:g}"] = fit
    cases["float64 normal 20000 x 400"] = lambda: lsq.lstsq(W, v, method="normal")
    cases["float32 normal 20000 x 400"] = lambda: lsq.lstsq(W32, v32, method="normal")
    cases["float32 qr 20000 x 400"] = lambda: lsq.lstsq(W32, v32, method="qr")
    median = median_times(cases, repeat)[0]
    print(f"NumPy, medians of {repeat} interleaved rounds, load {os.getloadavg()}:")
    for name, t in median.items():
        base = median[f"{name.split(',')[0]}, intercept, offset 0"] if "offset" in name else median[
            "float64 normal 20000 x 400"]  # fmt: skip
        print(f"  {name:32s} {t * 1e3:8.1f} ms  {t / base:5.2f}x " + ("no offset" if "offset" in name else "float64"))


def offsets_accuracy(seeds=8, weighted=False):
    """Errors of PyTorch intercept fits (the whole-array Gram route) of 4000 x 32 data whose columns are offset,
    against the fit of the data centered in extended precision (``numpy.longdouble``), refined twice: the median
    and largest relative error of the coefficients and of the intercept over ``seeds`` problems. ``weighted``:
    with sample weights drawn from [0.5, 2] (the reference centered by the weighted means)."""
    import numpy as np
    import torch

    import lsq_backends as lsq

    torch.set_num_threads(1)
    m, n = 4000, 32
    print(("weighted, " if weighted else "") + "offset    cond   coef: median, max     intercept: median, max")
    for offset in (0.0, 1e4, 1e8, 1.7e9):
        for cond in (1e2, 1e5):
            errs = []
            for seed in range(seeds):
                rng = np.random.default_rng(seed)
                U, V = np.linalg.qr(rng.standard_normal((m, n)))[0], np.linalg.qr(rng.standard_normal((n, n)))[0]
                X = (U * np.geomspace(1, 1 / cond, n)) @ V.T * np.sqrt(m) + offset * (1 + rng.random(n))
                y = X @ rng.standard_normal(n) + 3.0 + 0.1 * rng.standard_normal(m)
                wts = rng.uniform(0.5, 2.0, m) if weighted else np.ones(m)
                Xl, yl, wl = X.astype(np.longdouble), y.astype(np.longdouble), wts.astype(np.longdouble)
                xm, ym = (wl @ Xl) / wl.sum(), (wl @ yl) / wl.sum()
                root = np.sqrt(wl)[:, None]
                Xc = (root * (Xl - xm)).astype(np.float64)
                yc = (root[:, 0] * (yl - ym)).astype(np.float64)
                w = np.linalg.lstsq(Xc, yc, rcond=None)[0]
                for _ in range(2):
                    r = root[:, 0] * ((yl - ym) - (Xl - xm) @ w.astype(np.longdouble))
                    g = ((root * (Xl - xm)).T @ r).astype(np.float64)
                    w = w + np.linalg.solve(Xc.T @ Xc, g)
                b = float(ym - xm @ w.astype(np.longdouble))
                sw = torch.asarray(wts) if weighted else None
                fit = lsq.lstsq(torch.asarray(X), torch.asarray(y), sample_weight=sw, fit_intercept=True)
                errs.append(
                    (np.linalg.norm(fit.coef.numpy() - w) / np.linalg.norm(w), abs(float(fit.intercept) - b) / abs(b))
                )
            e = np.array(errs)
            print(f"{offset:8.1e} {cond:6.0e}   {np.median(e[:, 0]):.1e}, {e[:, 0].max():.1e}"
                  f"            {np.median(e[:, 1]):.1e}, {e[:, 1].max():.1e}")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds; the minimum of each is reported")
    parser.add_argument("--jax", action="store_true", help="JAX (jitted and eager) instead of PyTorch")
    parser.add_argument("--numpy", action="store_true", help="NumPy: columns offset by 1e8 and 1e9, float32 width")
    parser.add_argument("--offsets-accuracy", action="store_true", help="PyTorch intercept fits of offset columns")
    parser.add_argument("--weighted", action="store_true", help="with --offsets-accuracy: with sample weights")
    args = parser.parse_args(argv)
    if args.offsets_accuracy:
        offsets_accuracy(weighted=args.weighted)
        return
    if args.jax:
        jax_main(args.repeat)
        return
    if args.numpy:
        numpy_main(args.repeat)
        return
    import torch

    import lsq_backends as lsq

    torch.set_num_threads(1)
    X, Y = _problem(torch.asarray, 2000, 20)
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
    Xb, Yb = _problem(torch.asarray, 200000, 50)
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
