"""What the econometrics features cost: cluster-robust covariances against a nonrobust ``diagnostics`` call and
statsmodels, and an absorbed two-way fixed-effects fit against pyfixest and linearmodels, in one process.

``python -m benchmarks.econometrics [--m M] [--panel-m P] [--repeat R] [--threads T] [--full] [--part P]``

Clusters (``--part cluster``): X (M, 20) and y, float64 (M = 10^6; 10^7 with ``--full``), one-way cluster
codes with 10^2 and 10^5 clusters. ``lsq.diagnostics(X, y, cov_type="cluster", groups=g)`` against the
nonrobust ``lsq.diagnostics(X, y)`` of the same data, and statsmodels'
``OLS(y, add_constant(X)).fit(cov_type="cluster", cov_kwds={"groups": g})`` (the constant added once,
outside the timings); its nonrobust fit too. The standard errors are compared with statsmodels'.

Absorbed fixed effects (``--part absorb``): a worker-firm panel of P rows (10^5; 10^6 with ``--full``),
P/10 workers seen 10 times each, P/1000 firms; each worker has a home firm and half of them move once,
to a random firm, at a random period. Five regressors correlated with both effects. ``lsq.lstsq(X, y,
absorb=codes)`` and ``lsq.diagnostics(X, y, absorb=codes, cov_type="cluster", groups=firm)`` against
pyfixest's ``feols("y ~ x0 + ... + x4 | worker + firm", vcov={"CRV1": "firm"}, fixef_rm="none")`` with
each of its demeaners that runs here (MAP on Rust, Numba, JAX; LSMR on its Rust ``within``, PyTorch on
the CPU, SciPy), each at its default tolerance, and linearmodels'
``AbsorbingLS(y, X, absorb=...).fit(cov_type="clustered", clusters=firm, debiased=True)``. The largest
relative difference of each peer's coefficients and standard errors from ``lsq.diagnostics``' is printed.

Times are medians of ``--repeat`` interleaved rounds after one first call (printed as it ends: compilation
included), every library on ``--threads`` threads (1 by default: stable on a shared machine; 0: each
library's default), with the load average before and after. A peer that is not installed is skipped with a
printed line. Compare ratios within one run, not seconds across runs. Where the kernel's page faults are
slow, the call after a smaller one pays for new memory (the order of the rows moves the cluster ratios at
10^6: docs/econometrics.md, "Cost"; ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` keep it).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
import warnings

import numpy as np

import lsq_backends as lsq

N_CLUSTER_COLS = 20
N_PANEL_COLS = 5
CLUSTER_COUNTS = (100, 100_000)


def medians(fns, repeat):
    """``({name: median seconds}, {name: result of the untimed call})`` over ``repeat`` interleaved rounds; a
    function whose untimed call raises is dropped with a printed line."""
    out = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        try:
            out[name] = fn()
        except Exception as exc:  # a peer that cannot run this size or version is skipped, not fatal
            print(f"  {name}: skipped ({type(exc).__name__}: {str(exc)[:200]})")
        else:
            print(f"  {name}: first call {time.perf_counter() - t0:.3f} s", flush=True)
    times = {name: [] for name in out}
    for _ in range(repeat):
        for name in out:
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}, out


def _rel(a, b):
    """Largest relative difference of ``a`` from ``b`` (both 1-D)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _load():
    return "load average " + ", ".join(f"{v:.1f}" for v in os.getloadavg())


def cluster_data(m, n=N_CLUSTER_COLS, seed=0):
    """X (m, n), y (m,) float64 with a cluster effect, and ``{G: codes (m,)}`` for each count of clusters."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    codes = {g: rng.integers(0, g, m) for g in CLUSTER_COUNTS}
    y = X @ rng.standard_normal(n) + rng.standard_normal(CLUSTER_COUNTS[0])[codes[CLUSTER_COUNTS[0]]]
    y += rng.standard_normal(m)
    return X, y, codes


def cluster_rows(X, y, codes, with_statsmodels=True):
    """``{name: callable}``: the nonrobust and cluster ``diagnostics`` calls, then statsmodels' if installed."""
    fns = {"lsq diagnostics nonrobust": lambda: lsq.diagnostics(X, y)}
    for g, c in codes.items():
        fns[f"lsq diagnostics cluster G={g}"] = lambda c=c: lsq.diagnostics(X, y, cov_type="cluster", groups=c)
    if not with_statsmodels:
        return fns
    try:
        import statsmodels.api as sm
    except ImportError:
        print("  statsmodels: not installed, skipped")
        return fns
    Xc = sm.add_constant(X)
    fns["statsmodels OLS nonrobust"] = lambda: sm.OLS(y, Xc).fit()
    for g, c in codes.items():
        fns[f"statsmodels OLS cluster G={g}"] = lambda c=c: sm.OLS(y, Xc).fit(
            cov_type="cluster", cov_kwds={"groups": c}
        )
    return fns


def clusters(args):
    t0 = time.perf_counter()
    X, y, codes = cluster_data(args.m)
    print(
        f"\nCluster covariance: X {args.m}x{N_CLUSTER_COLS} float64 (+ intercept), "
        f"{args.threads or 'default'} thread(s), median of {args.repeat}; data in {time.perf_counter() - t0:.1f} s; "
        f"{_load()}"
    )
    times, out = medians(cluster_rows(X, y, codes, not args.no_peers), args.repeat)
    base = times["lsq diagnostics nonrobust"]
    for name, t in times.items():
        line = f"  {name:36s} {t:9.3f} s  {t / base:6.2f}x lsq nonrobust"
        peer = name.replace("statsmodels OLS", "lsq diagnostics")
        if name.startswith("statsmodels") and peer in out:
            d, r = out[peer], out[name]
            se = np.concatenate([[d.intercept_stderr], d.stderr])
            line += f"  {t / times[peer]:6.2f}x lsq's  (stderr rel. diff. {_rel(se, r.bse):.1e})"
        print(line)
    print(f"  after: {_load()}")
    return times


def panel_data(m, n=N_PANEL_COLS, seed=0):
    """A worker-firm panel: X (m, n), y (m,), codes (m, 2) of m // 10 workers (10 rows each) and m // 1000
    firms; half of the workers move once from their home firm to a random one."""
    rng = np.random.default_rng(seed)
    n_workers, n_firms = m // 10, max(m // 1000, 2)
    worker = np.arange(m) // 10
    home, other = rng.integers(0, n_firms, n_workers), rng.integers(0, n_firms, n_workers)
    move_at = np.where(rng.random(n_workers) < 0.5, rng.integers(1, 10, n_workers), 10)
    firm = np.where(np.arange(m) % 10 < move_at[worker], home[worker], other[worker])
    a, f = rng.standard_normal(n_workers)[worker], rng.standard_normal(n_firms)[firm]
    X = rng.standard_normal((m, n)) + np.outer(a, np.linspace(0.5, -0.5, n)) + np.outer(f, np.linspace(-0.3, 0.3, n))
    y = X @ np.linspace(1.0, -1.0, n) + a + f + rng.standard_normal(m)
    return X, y, np.column_stack([worker, firm])


def _pyfixest_demeaners():
    """``{label: feols keywords}`` of pyfixest's demeaners that can run here (skips printed)."""
    import importlib.util

    try:
        from pyfixest.demeaners import LsmrDemeaner, MapDemeaner
    except ImportError:  # before pyfixest 0.60: the string option
        return {f"{b}": {"demeaner_backend": b} for b in ("rust", "numba", "jax")}
    out = {"MAP rust": {"demeaner": MapDemeaner(backend="rust")}}
    for backend, module in (("numba", "numba"), ("jax", "jax")):
        if importlib.util.find_spec(module) is None:
            print(f"  pyfixest MAP {backend}: {module} not installed, skipped")
        else:
            out[f"MAP {backend}"] = {"demeaner": MapDemeaner(backend=backend)}
    out["LSMR within"] = {"demeaner": LsmrDemeaner(backend="within")}
    if importlib.util.find_spec("torch") is None:
        print("  pyfixest LSMR torch: torch not installed, skipped")
    else:
        out["LSMR torch cpu"] = {"demeaner": LsmrDemeaner(backend="torch", device="cpu")}
    out["LSMR scipy"] = {"demeaner": LsmrDemeaner(backend="cupy", device="cpu")}
    print("  pyfixest: no CUDA here, its CuPy and CUDA PyTorch demeaners skipped")
    return out


def _quiet(fn):
    def call():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()

    return call


def absorb_rows(X, y, codes, with_peers=True):
    """``{name: callable}``: ``lsq.lstsq`` and ``lsq.diagnostics`` with ``absorb``, then the peers installed;
    each returns (coefficients, standard errors or None)."""
    firm = codes[:, 1]

    def diag():
        d = lsq.diagnostics(X, y, absorb=codes, cov_type="cluster", groups=firm)
        return d.coef, d.stderr

    fns = {"lsq lstsq absorb": lambda: (lsq.lstsq(X, y, absorb=codes).coef, None), "lsq diagnostics absorb": diag}
    if not with_peers:
        return fns
    import pandas as pd

    n = X.shape[1]
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(n)]).assign(y=y, worker=codes[:, 0], firm=firm)
    try:
        import pyfixest as pf
    except ImportError:
        print("  pyfixest: not installed, skipped")
    else:
        fml = "y ~ " + " + ".join(f"x{j}" for j in range(n)) + " | worker + firm"
        for label, kw in _pyfixest_demeaners().items():

            def fit(kw=kw):
                r = pf.feols(fml, data=df, vcov={"CRV1": "firm"}, fixef_rm="none", copy_data=False, **kw)
                return r.coef().to_numpy(), r.se().to_numpy()

            fns[f"pyfixest feols {label}"] = _quiet(fit)
    try:
        from linearmodels.iv.absorbing import AbsorbingLS
    except ImportError:
        print("  linearmodels: not installed, skipped")
    else:
        cats = pd.DataFrame({"worker": pd.Categorical(codes[:, 0]), "firm": pd.Categorical(firm)})

        def lm():
            r = AbsorbingLS(y, X, absorb=cats).fit(cov_type="clustered", clusters=firm, debiased=True)
            return np.asarray(r.params), np.asarray(r.std_errors)

        fns["linearmodels AbsorbingLS"] = _quiet(lm)
    return fns


def absorbed(args):
    t0 = time.perf_counter()
    X, y, codes = panel_data(args.panel_m)
    moved = np.mean(codes[::10, 1] != codes[9::10, 1])
    print(
        f"\nAbsorbed two-way fixed effects: {args.panel_m} rows, {args.panel_m // 10} workers, "
        f"{max(args.panel_m // 1000, 2)} firms ({moved:.0%} of workers move), {N_PANEL_COLS} regressors, float64, "
        f"clusters by firm; {args.threads or 'default'} thread(s), median of {args.repeat}; "
        f"data in {time.perf_counter() - t0:.1f} s; {_load()}"
    )
    times, out = medians(absorb_rows(X, y, codes, not args.no_peers), args.repeat)
    coef, se = out["lsq diagnostics absorb"]
    peers = [t for name, t in times.items() if not name.startswith("lsq")]
    for name, t in times.items():
        c, s = out[name]
        line = f"  {name:36s} {t:9.3f} s  {t / times['lsq diagnostics absorb']:6.2f}x lsq diagnostics"
        line += f"  coef rel. diff. {_rel(c, coef):.1e}"
        if s is not None:
            line += f", stderr {_rel(s, se):.1e}"
        print(line)
    if peers:
        fastest = min(peers)
        print(
            f"  fastest peer / lsq diagnostics absorb: {fastest / times['lsq diagnostics absorb']:.2f}x; "
            f"/ lsq lstsq absorb: {fastest / times['lsq lstsq absorb']:.2f}x"
        )
    print(f"  after: {_load()}")
    return times


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.econometrics", description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, help="rows of the cluster problem (default 10^6; --full: 10^7)")
    p.add_argument("--panel-m", type=int, help="rows of the worker-firm panel (default 10^5; --full: 10^6)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="threads per library (0: each library's default)")
    p.add_argument("--full", action="store_true", help="the sizes of the targets: 10^7 x 20 and a 10^6-row panel")
    p.add_argument("--part", choices=("cluster", "absorb", "both"), default="both")
    p.add_argument("--no-peers", action="store_true", help="time lsq_backends only")
    args = p.parse_args(argv)
    args.m = args.m or (10**7 if args.full else 10**6)
    args.panel_m = args.panel_m or (10**6 if args.full else 10**5)
    if args.threads:
        from .backends import limit_threads

        limit_threads(args.threads, ["torch"])  # before JAX starts (pyfixest's JAX demeaner)
        os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))  # pyfixest's Rust demeaners
        os.environ.setdefault("NUMBA_NUM_THREADS", str(args.threads))
    logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)  # "no TPU", from pyfixest's JAX demeaner
    print(f"lsq_backends {lsq.__version__}; numpy {np.__version__}; {os.cpu_count()} CPUs")
    if args.part in ("cluster", "both"):
        clusters(args)
    if args.part in ("absorb", "both"):
        absorbed(args)


if __name__ == "__main__":
    main()
