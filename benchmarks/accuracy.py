"""Certified accuracy on the NIST StRD linear-regression datasets (float64).

Prints a Markdown table of LRE (correct significant digits, minimum over all parameters) per
dataset, for every ``lsq_backends`` method on each requested backend, next to peers measured in
the same run on the same data: ``numpy.linalg.lstsq`` and ``scipy.linalg.lstsq`` (gelsd,
gelsy) on the design ``[1, X]`` a user would give them, and scikit-learn's
``LinearRegression``. ``expected`` is the digits a backward-stable solver can guarantee
(:func:`benchmarks.nist.expected_digits`); ``σ`` is the LRE of the residual standard deviation
from ``auto``.

Usage::

    python -m benchmarks.accuracy [--backends numpy,jax,torch,dask,array_api_strict] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys

import numpy as np

from . import backends, nist

METHODS = ("auto", "normal", "qr", "svd", "auto+r1")
BACKENDS = (*backends.BACKENDS, "array_api_strict")


def backend(name):
    """The backend called ``name`` (``asarray``/``to_numpy`` convert from/to NumPy; JAX gets x64).

    Raises
    ------
    ImportError
        If it is not installed.
    """
    if name not in BACKENDS:
        msg = f"unknown backend {name!r}; choose from {', '.join(BACKENDS)}"
        raise ValueError(msg)
    return backends.Backend(name)


def score(ds, result, get=np.asarray):
    """LRE of an :class:`lsq_backends.LstsqResult` fitted to ``ds``.

    The fields are packed into one array first: one transfer (one ``compute`` on Dask).

    Returns
    -------
    coef_lre : float
        LRE of the parameters (minimum, intercept included).
    resid_sd_lre : float
        LRE of the residual standard deviation.
    """
    import array_api_compat

    xp = array_api_compat.array_namespace(result.coef)
    parts = (result.coef, result.intercept, result.rss)
    values = get(xp.concat([xp.reshape(a, (-1,)) for a in parts]))
    coef, intercept, rss = values[:-2], values[-2], values[-1]
    return nist.coef_lre(ds, coef, intercept), nist.lre(nist.resid_sd(ds, rss), ds.resid_sd)


def _fit_one(lsq, X, y, spec, fit_intercept):
    """``spec`` is a method name, optionally with refinement steps: ``"auto+r1"``."""
    method, _, steps = spec.partition("+r")
    return lsq.lstsq(X, y, method=method, fit_intercept=fit_intercept, refine=int(steps or 0))


@functools.cache
def _jitted(fit_intercept, methods):
    import jax

    import lsq_backends

    def fit(X, y):
        return {m: _fit_one(lsq_backends, X, y, m, fit_intercept) for m in methods}

    return jax.jit(fit)


def lsq_fits(ds, methods=METHODS, put=np.asarray, get=np.asarray, *, jit=False):
    """Fit ``ds`` with ``lsq_backends.lstsq`` on one backend, once per method.

    Parameters
    ----------
    ds : nist.Dataset
    methods : tuple of str
        ``lstsq`` methods, optionally with refinement steps (``"auto+r1"``).
    put, get : callable
        Conversions from and to NumPy (see :func:`backend`).
    jit : bool
        JAX only: run all methods in one ``jax.jit``-compiled call (one compilation per
        shape instead of one per operation: much faster for a one-off fit).

    Returns
    -------
    dict
        ``{method: (coef_lre, resid_sd_lre)}``, see :func:`score`.
    """
    import lsq_backends

    X, y = put(ds.X), put(ds.y)
    if jit:
        results = _jitted(ds.fit_intercept, tuple(methods))(X, y)
    else:
        results = {m: _fit_one(lsq_backends, X, y, m, ds.fit_intercept) for m in methods}
    return {m: score(ds, r, get) for m, r in results.items()}


def _numpy_lstsq(ds):
    return nist.full_coef_lre(ds, np.linalg.lstsq(ds.design, ds.y, rcond=None)[0])


def _scipy_lstsq(driver):
    def fit(ds):
        import scipy.linalg

        return nist.full_coef_lre(ds, scipy.linalg.lstsq(ds.design, ds.y, lapack_driver=driver)[0])

    return fit


def _sklearn(ds):
    from sklearn.linear_model import LinearRegression

    model = LinearRegression(fit_intercept=ds.fit_intercept).fit(ds.X, ds.y)
    return nist.coef_lre(ds, model.coef_, model.intercept_)


#: Peer solvers with default settings, each ``f(ds) -> LRE``: NumPy and SciPy get
#: ``ds.design`` (``[1, X]``), scikit-learn gets ``X`` and ``fit_intercept``.
PEERS = {
    "numpy.lstsq": _numpy_lstsq,
    "gelsd": _scipy_lstsq("gelsd"),
    "gelsy": _scipy_lstsq("gelsy"),
    "sklearn": _sklearn,
}


def measure(bes, datasets=nist.DATASETS):
    """Every LRE of the table, as a JSON-ready nested dict keyed by dataset.

    Parameters
    ----------
    bes : list
        Backends, from :func:`backend`.
    datasets : tuple of str
        Names from :data:`benchmarks.nist.DATASETS`.
    """
    results = {}
    for name in datasets:
        ds = nist.load(name)
        row = {"expected": nist.expected_digits(ds), "lsq": {}, "peers": {p: fit(ds) for p, fit in PEERS.items()}}
        for be in bes:
            fits = lsq_fits(ds, METHODS, be.asarray, be.to_numpy)
            row["lsq"][be.name] = {m: fits[m][0] for m in METHODS} | {"auto_resid_sd": fits["auto"][1]}
        results[name] = row
    return results


def markdown(results, names):
    """Markdown table of :func:`measure`'s output, LRE to one decimal."""
    cols = [f"{b} {m}" for b in names for m in METHODS] + [f"{b} σ" for b in names]
    cols += list(PEERS) + ["expected"]
    lines = ["| dataset | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name, row in results.items():
        vals = [row["lsq"][b][m] for b in names for m in METHODS]
        vals += [row["lsq"][b]["auto_resid_sd"] for b in names]
        vals += [row["peers"][p] for p in PEERS] + [row["expected"]]
        lines.append(f"| {name} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
    return "\n".join(lines)


def summary_markdown(results, name="numpy"):
    """The table of the Accuracy page: one backend's methods next to the peers, LRE to one
    decimal (``expected``: the digits a backward-stable solver can guarantee)."""
    heads = {"auto": "auto", "normal": "normal", "qr": "qr", "svd": "svd", "auto+r1": "auto, refine=1"}
    peers = {"numpy.lstsq": "NumPy lstsq", "gelsd": "SciPy gelsd", "gelsy": "SciPy gelsy", "sklearn": "sklearn"}
    cols = [*heads.values(), *peers.values(), "expected"]
    lines = ["| dataset | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for dataset, row in results.items():
        vals = [row["lsq"][name][m] for m in heads] + [row["peers"][p] for p in peers] + [row["expected"]]
        lines.append(f"| {dataset} | " + " | ".join(f"{v:.1f}" for v in vals) + " |")
    return "\n".join(lines)


def _versions(names):
    mods = ["lsq_backends", "numpy", "scipy", "sklearn"] + [b for b in names if b != "numpy"]
    return {m: importlib.import_module(m).__version__ for m in mods}


def main(argv=None):
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.accuracy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="numpy", help=f"comma-separated, from {','.join(BACKENDS)}")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in names if b not in BACKENDS]
    if unknown:
        parser.error(f"unknown backend(s) {unknown}; choose from {', '.join(BACKENDS)}")
    if not nist.available():
        print(f"NIST StRD data not found in {nist.NIST_DIR or nist.BUNDLED}", file=sys.stderr)
        return 2
    bes = []
    for b in names:
        try:
            bes.append(backend(b))
        except ImportError as exc:
            print(f"skipping backend {b}: not installed ({exc})", file=sys.stderr)
    installed = [be.name for be in bes]
    results = measure(bes)
    print(markdown(results, installed))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"versions": _versions(installed), "backends": installed, "results": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
