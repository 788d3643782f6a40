"""Benchmark grid for ``lsq_backends``: cases, deterministic data, backends, peers and timing.

Each case is solved by ``lsq_backends`` on every selected backend with every method, and in the
same run by peer solvers (NumPy, SciPy, scikit-learn, JAX, PyTorch, CuPy, Dask), next to the
LIMIT row: one bare Gram product (``X.T @ X``, or ``X @ X.T`` for wide X) on the same backend,
a single pass over X. Every output is checked against a float64 SciPy ``gelsd`` reference on
its warm-up call, before the timed calls.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Any

import numpy as np
import scipy.linalg

import lsq_backends as lsq

from .backends import Backend
from .grad import grad_specs
from .progress import Progress

METHODS = ("auto", "normal", "qr", "svd", "lsqr")
DTYPES = ("float64", "float32")
COND = 100.0  # condition number of every design matrix
NOISE = 1e-2  # noise standard deviation, relative to that of X @ w
SEED = 20240601
TOL = {"float64": 1e-8, "float32": 1e-3}  # relative coefficient error above which a row is flagged
# method="lsqr" stops at its default atol = btol (1e-6; float32 1.2e-5), not at rounding: its
# error is up to ~COND * sqrt(n) * atol (n <= 1000 in the grid).
TOL_LSQR = {dt: COND * math.sqrt(1000) * max(1e-6, 100 * float(np.finfo(dt).eps)) for dt in DTYPES}
# method="normal" errs like eps * COND**2 (float32: 1.2e-3, times a modest dimension factor).
TOL_NORMAL = {dt: max(TOL[dt], 10 * float(np.finfo(dt).eps) * COND**2) for dt in DTYPES}
JAX_STATIC = ("method", "rcond", "fit_intercept", "check_finite")


@dataclass(frozen=True)
class Case:
    """One benchmark problem.

    Attributes
    ----------
    name : str
        Name used by ``--cases`` (unchanged by ``--quick``).
    m, n : int
        Rows and columns of X.
    batch : int
        Number of stacked problems, X of shape (batch, m, n); 0 for a single X.
    k : int
        Number of targets, y of shape (..., m, k); 0 for a vector y.
    alphas : int
        Length of a ridge path (that many ``ridge`` fits); 0 for least squares.
    sweep : str
        ``"m"`` or ``"n"`` for the scaling sweeps plotted by ``--plots``, else ``""``.
    eager : bool
        Call every solver as a user would outside ``jax.jit`` (JAX: un-jitted calls of
        ``lsq.lstsq`` and ``jnp.linalg.lstsq``, each after its first, compiling, call).
    grad : bool
        Also time the gradient of ``c^T coef`` with respect to X (``benchmarks.grad``).
    """

    name: str
    m: int
    n: int
    batch: int = 0
    k: int = 0
    alphas: int = 0
    sweep: str = ""
    eager: bool = False
    grad: bool = False

    def quick(self) -> Case:
        """The same case about 100x smaller: batch / 100, or m / 10 and n / 10 (and alphas / 20)."""
        if self.batch:
            return replace(self, batch=max(1, self.batch // 100))
        return replace(self, m=max(2, self.m // 10), n=max(1, self.n // 10), alphas=-(-self.alphas // 20))

    @property
    def wide(self) -> bool:
        return self.m < self.n

    @property
    def shape(self) -> str:
        dims = ([self.batch] if self.batch else []) + [self.m, self.n]
        text = "x".join(map(str, dims))
        text += f", k={self.k}" if self.k else ""
        return text + (f", {self.alphas} alphas" if self.alphas else "")


GRID = (
    Case("tall_200000x50", 200_000, 50),
    Case("tall_100000x200", 100_000, 200),
    Case("square_20000x1000", 20_000, 1000),
    Case("wide_200x5000", 200, 5000),
    Case("batched_10000x64x8", 64, 8, batch=10_000),
    Case("multi_100000x200x10", 100_000, 200, k=10),
    Case("ridgepath_20000x200x50", 20_000, 200, alphas=50),
    Case("eager_2000x20", 2000, 20, eager=True),
    Case("grad_20000x50", 20_000, 50, grad=True),
)
SWEEPS = tuple(Case(f"sweep_m_{m}x50", m, 50, sweep="m") for m in (2_000, 10_000, 50_000, 200_000)) + tuple(
    Case(f"sweep_n_20000x{n}", 20_000, n, sweep="n") for n in (25, 50, 100, 200, 400)
)


def make_problem(case):
    """Deterministic float64 data with a known spectrum.

    ``X = U diag(s) V^T`` with orthonormal U, V drawn from a seeded generator and singular values
    spaced geometrically from ``sqrt(max(m, n))`` down by a factor ``COND``; ``y = X w + noise``.

    Returns
    -------
    X : ndarray, shape (m, n) or (batch, m, n)
    y : ndarray, shape (..., m) or (..., m, k)
    alphas : ndarray of shape (case.alphas,), or None
        Ridge penalties, spaced geometrically over ``s_max**2 * [1e-6, 1]``.
    """
    rng = np.random.default_rng([SEED, case.batch, case.m, case.n, case.k])
    lead, p = ((case.batch,) if case.batch else ()), min(case.m, case.n)
    U = np.linalg.qr(rng.standard_normal(lead + (case.m, p)))[0]
    V = np.linalg.qr(rng.standard_normal(lead + (case.n, p)))[0]
    s = np.geomspace(1.0, 1.0 / COND, p) * math.sqrt(max(case.m, case.n))
    X = (U * s) @ np.swapaxes(V, -1, -2)
    signal = X @ rng.standard_normal(lead + (case.n, max(case.k, 1)))
    y = signal + NOISE * signal.std() * rng.standard_normal(signal.shape)
    alphas = np.geomspace(1e-6, 1.0, case.alphas) * s[0] ** 2 if case.alphas else None
    return X, (y if case.k else y[..., 0]), alphas


def reference(case, X, y, alphas):
    """Float64 reference coefficients from SciPy ``gelsd``, shape (..., n, t) (t = max(k, 1)).

    For a ridge path: one ``gelsd`` per alpha on ``[Xc; sqrt(alpha) I]``, ``[yc; 0]`` with X and
    y centered (the unpenalized intercept), stacked on a leading axis.
    """
    Y = y if case.k else y[..., None]
    if alphas is None:
        return scipy.linalg.lstsq(X, Y, lapack_driver="gelsd")[0]
    Xc, Yc = X - X.mean(axis=0), Y - Y.mean(axis=0)
    pad = np.zeros((case.n, Y.shape[1]))
    rows = [np.vstack([Xc, math.sqrt(a) * np.eye(case.n)]) for a in alphas]
    return np.stack([scipy.linalg.lstsq(A, np.vstack([Yc, pad]), lapack_driver="gelsd")[0] for A in rows])


def rel_err(coef, ref):
    """Worst relative error ``||c - r|| / ||r||`` over problems, targets and alphas."""
    c = np.asarray(coef, dtype=np.float64).reshape(ref.shape)
    return float(np.max(np.linalg.norm(c - ref, axis=-2) / np.linalg.norm(ref, axis=-2)))


@dataclass
class Spec:
    """One solver to time on a case.

    Attributes
    ----------
    label, method, backend, role : str
        As shown in the tables; NumPy, SciPy and scikit-learn run on ``"numpy"``; role is
        ``"lsq"`` (this package), ``"peer"`` or ``"limit"``.
    make : callable
        ``make(X, y, alphas)`` with inputs already on the backend, returns the zero-argument
        callable that is timed.
    coef : callable or None
        Output -> coefficients (an array, or a list of arrays stacked on a leading axis);
        None: nothing to check.
    pick : callable or None
        ``pick(ref, out)``: the part of the reference to compare with; None: all of it.
    jitted : bool
        Compiled on its first call (that call is reported separately).
    """

    label: str
    method: str
    backend: str
    role: str
    make: Callable[..., Callable[[], Any]]
    coef: Callable | None = itemgetter(0)
    pick: Callable | None = None
    jitted: bool = False


def _vec(case, y):
    """y as a (..., m, 1) matrix for the batched peers that need one."""
    return y[..., None] if case.batch and not case.k else y


def limit_spec(case, be):
    """The LIMIT row: the Gram product of X on ``be``, one pass over X."""

    def gram(X):
        Xt = X.swapaxes(-1, -2)
        return X @ Xt if case.wide else Xt @ X

    g = be.jit(gram)
    label = "LIMIT X@X.T" if case.wide else "LIMIT X.T@X"
    return Spec(label, "", be.name, "limit", lambda X, y, a: lambda: (g(X),), coef=None, jitted=be.name == "jax")


def lsq_specs(case, be, methods):
    """``lsq_backends`` on ``be`` with each method (jitted on JAX); ridge paths get the whole
    path (one ``ridge`` call with the 1-D alpha array: one factorization), a single fit at the
    middle alpha, and ``ridge_cv`` over the path (leave-one-out, as sklearn's RidgeCV)."""
    jitted = be.name == "jax" and not case.eager
    if be.name == "dask" and case.m >= case.n:
        # Dask's LSQR builds each iteration's graph (~10 ms per operation, hundreds of
        # iterations): 73 s for --quick's 2000 x 100 square case. It is for wide problems.
        methods = [m for m in methods if m != "lsqr"]
    if not case.alphas:
        fit = lsq.lstsq if case.eager else be.jit(lsq.lstsq, static_argnames=JAX_STATIC)
        fits = [
            Spec("lsq.lstsq", m, be.name, "lsq", lambda X, y, a, m=m: lambda: tuple(fit(X, y, method=m)), jitted=jitted)
            for m in methods
        ]
        return grad_specs(case, be, methods, Spec, fits) if case.grad else fits
    ridge, mid = be.jit(lsq.ridge, static_argnames=JAX_STATIC[:1] + JAX_STATIC[2:]), case.alphas // 2
    put = lambda a, X: be.asarray(a.astype(str(X.dtype).split(".")[-1]))  # noqa: E731 -- alphas in X's dtype
    specs = []
    for m in methods:
        path = lambda X, y, a, m=m: (lambda al: lambda: tuple(ridge(X, y, al, method=m)))(put(a, X))  # noqa: E731
        one = lambda X, y, a, m=m: lambda: tuple(ridge(X, y, float(a[mid]), method=m))  # noqa: E731
        specs.append(Spec("lsq.ridge x1", m, be.name, "lsq", one, pick=lambda ref, o: ref[mid], jitted=jitted))
        if m != "lsqr":  # a path needs a direct method (lsq.ridge says so)
            specs.append(Spec(f"lsq.ridge path({case.alphas})", m, be.name, "lsq", path, jitted=jitted))

    def cv(X, y, a):
        al = put(a, X)

        def run():
            r = lsq.ridge_cv(X, y, al)
            return r.coef, int(be.to_numpy(r.best_index))

        return run

    if be.name != "jax":  # ridge_cv reads values (eager only): unjitted JAX would time dispatch
        specs.append(
            Spec(f"lsq.ridge_cv({case.alphas} alphas)", "loo", be.name, "lsq", cv, pick=lambda ref, o: ref[o[1]])
        )
    return specs


def _sklearn_specs(case):
    from sklearn.linear_model import LinearRegression, Ridge, RidgeCV

    if not case.alphas:
        fit = lambda X, y, a: lambda: (LinearRegression(fit_intercept=False).fit(X, y).coef_.T,)  # noqa: E731
        return [] if case.batch else [Spec("sklearn LinearRegression", "", "numpy", "peer", fit)]
    mid = case.alphas // 2

    def cv(X, y, a):
        def run():
            model = RidgeCV(alphas=a).fit(X, y)
            return model.coef_.T, int(np.argmin(np.abs(a - model.alpha_)))

        return run

    path = lambda X, y, a: lambda: [Ridge(alpha=t).fit(X, y).coef_.T for t in a]  # noqa: E731
    one = lambda X, y, a: lambda: (Ridge(alpha=a[mid]).fit(X, y).coef_.T,)  # noqa: E731
    return [
        Spec(f"sklearn Ridge x{case.alphas}", "auto", "numpy", "peer", path, coef=lambda o: o),
        Spec("sklearn Ridge x1", "auto", "numpy", "peer", one, pick=lambda ref, o: ref[mid]),
        Spec(f"sklearn RidgeCV({case.alphas} alphas)", "gcv", "numpy", "peer", cv, pick=lambda ref, o: ref[o[1]]),
    ]


def peer_specs(case, backends):
    """Peers of ``case``: NumPy, SciPy and scikit-learn always (on the NumPy data), the JAX,
    PyTorch, CuPy and Dask solvers when that backend is selected. Sweeps get numpy only."""
    if case.batch:
        loop = lambda X, y, a: lambda: (np.stack([np.linalg.lstsq(Xi, yi)[0] for Xi, yi in zip(X, y, strict=False)]),)  # noqa: E731
        specs = [Spec("numpy.linalg.lstsq", "python loop", "numpy", "peer", loop)]
    else:
        fit = lambda X, y, a: lambda: np.linalg.lstsq(X, y)  # noqa: E731
        # On a ridge path: the unpenalized fit, a timing yardstick only (nothing to check).
        specs = [Spec("numpy.linalg.lstsq", "gelsd", "numpy", "peer", fit, coef=None if case.alphas else itemgetter(0))]
    if case.sweep:
        return specs
    if case.alphas:
        return specs + _sklearn_specs(case)
    for d in ("gelsd", "gelsy"):
        fit = lambda X, y, a, d=d: lambda: scipy.linalg.lstsq(X, _vec(case, y), lapack_driver=d)  # noqa: E731
        specs.append(Spec("scipy.linalg.lstsq", d, "numpy", "peer", fit))
    specs += _sklearn_specs(case)
    for be in backends:
        mod = be.mod
        if be.name == "jax":
            import jax

            solve = jax.vmap(mod.linalg.lstsq) if case.batch else mod.linalg.lstsq
            solve = solve if case.eager else jax.jit(solve)
            make = lambda X, y, a, f=solve: lambda: f(X, y)  # noqa: E731
            specs.append(
                Spec(
                    "jax.numpy.linalg.lstsq", "eager" if case.eager else "", "jax", "peer", make, jitted=not case.eager
                )
            )
        elif be.name == "torch":
            make = lambda X, y, a, mod=mod: lambda: tuple(mod.linalg.lstsq(X, _vec(case, y)))  # noqa: E731
            specs.append(Spec("torch.linalg.lstsq", "gels" if be.cuda else "gelsy", "torch", "peer", make))
        elif be.name == "cupy" and not case.batch:
            make = lambda X, y, a, mod=mod: lambda: mod.linalg.lstsq(X, y)  # noqa: E731
            specs.append(Spec("cupy.linalg.lstsq", "", "cupy", "peer", make))
        elif be.name == "dask" and not (case.batch or case.wide):
            make = lambda X, y, a, mod=mod: lambda: mod.linalg.lstsq(X, y)  # noqa: E731
            specs.append(Spec("dask.array.linalg.lstsq", "tsqr", "dask", "peer", make))
    return specs


def plan(cases, dtypes, backends, methods):
    """Every (case, dtype, spec) in run order: per case and backend, LIMIT, peers, this package."""
    limit_on = {"numpy": Backend("numpy")} | {b.name: b for b in backends}  # NumPy peers need NumPy's
    chosen = {b.name for b in backends}
    tasks = []
    for case in cases:
        peers, specs = peer_specs(case, backends), []
        for b in limit_on.values():  # by backend: one library's idle threads rarely compete with another's
            specs.append(limit_spec(case, b))
            specs += [p for p in peers if p.backend == b.name]
            specs += lsq_specs(case, b, methods) if b.name in chosen else []
        tasks += [(case, dtype, spec) for dtype in dtypes for spec in specs]
    return tasks, limit_on


def peak_memory(fn):
    """Peak bytes allocated (as traced by ``tracemalloc``, which NumPy reports to) during ``fn()``."""
    gc.collect()
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    return peak


def measure(case, dtype, spec, be, inputs, ref, repeat, memory):
    """Check then time one spec; return its row (``error`` set instead when it raised)."""
    X = inputs[0]
    nbytes = math.prod(X.shape) * np.dtype(dtype).itemsize
    row = dict(case=case.name, shape=case.shape, sweep=case.sweep, m=case.m, n=case.n, dtype=dtype,
               backend=spec.backend, solver=spec.label, method=spec.method, role=spec.role, jitted=spec.jitted,
               x_nbytes=nbytes, time_s=None, first_s=None, rel_err=None, mem_x=None, error=None)  # fmt: skip
    try:
        fn = spec.make(*inputs)
        gc.collect()
        t0 = time.perf_counter()
        out = be.finish(fn())
        row["first_s"] = time.perf_counter() - t0
        if spec.coef is not None:
            coef = spec.coef(out)
            coef = np.stack([be.to_numpy(c) for c in coef]) if isinstance(coef, list) else be.to_numpy(coef)
            row["rel_err"] = rel_err(coef, ref if spec.pick is None else spec.pick(ref, out))
        del out
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            be.finish(fn())
            times.append(time.perf_counter() - t0)
        row["time_s"] = statistics.median(times)
        if memory and spec.backend == "numpy":
            row["mem_x"] = peak_memory(fn) / nbytes
    except Exception as exc:  # noqa: BLE001 -- reported in the table, the run goes on
        row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
    return row


def run(cases, dtypes, backends, methods=METHODS, repeat=5, memory=True, progress=True):
    """Run the grid and return one row (a dict) per (case, dtype, solver).

    Parameters
    ----------
    cases : sequence of Case
    dtypes : sequence of str
        ``"float64"`` and/or ``"float32"``.
    backends : sequence of Backend
        Where ``lsq_backends`` runs (NumPy-side peers always run).
    methods : sequence of str
        ``lsq_backends`` methods.
    repeat : int
        Timed calls per row (the median is reported); one warm-up call comes first.
    memory : bool
        Measure peak memory of the NumPy rows with one more call under ``tracemalloc``.
    progress : bool
        Show the progress on stderr (:class:`Progress`).
    """
    tasks, on = plan(cases, dtypes, backends, methods)
    gc.freeze()  # the libraries' own objects: keeps every gc.collect() below at ~1 ms instead of ~150
    rows, data, inputs = [], None, {}
    shown = Progress(len(tasks), progress)
    for case, dtype, spec in tasks:
        label = f"{case.name} {dtype} {spec.backend} {spec.label} {spec.method}".strip()
        shown.start(label)
        if data is None or data[0] != case:
            inputs.clear()
            X, y, alphas = make_problem(case)
            data = (case, X, y, alphas, reference(case, X, y, alphas))
        be = on[spec.backend]
        if (dtype, be.name) not in inputs:
            put = (be.asarray(a.astype(dtype, copy=False)) for a in data[1:3])
            inputs[dtype, be.name] = (*put, data[3])
        rows.append(measure(case, dtype, spec, be, inputs[dtype, be.name], data[4], repeat, memory and not case.sweep))
        shown.done(label, rows[-1])
    shown.close()
    return rows
