"""The route of one small call through the library: how many of its modules, functions and
calls one fit runs through, and how deep its own frames nest; and the cost of that route on a
small problem, against ``numpy.linalg.lstsq``.

``python -m benchmarks.route [--repeat N]`` (one BLAS thread):

- ``lstsq(X, y)``, ``ridge(X, y, 1.0)`` and ``lstsq(X, y, method="qr")`` on a 200 x 5 NumPy array, followed with
  ``sys.setprofile`` (after a warm-up call): distinct ``lsq_backends`` modules and functions
  entered, calls made, and the deepest nesting of ``lsq_backends`` frames (frames of NumPy and
  other libraries in between are not counted); the whole route, and the pipeline without the
  backend layer (``lsq_backends._backend``, the package's adapter to each array library, which
  plays the part array-api-compat plays for the standard: its frames not counted, as NumPy's);
  a comprehension is part of the function that holds it, not a function of its own (Python 3.12
  runs list, set and dict comprehensions inline, PEP 709; 3.11 gave them frames of their own);
- one 442 x 10 ``lstsq`` (``auto``, ``normal``, ``auto`` with an intercept) and ``ridge`` (with
  its default intercept) per call against ``numpy.linalg.lstsq``, 200
  calls per timing, interleaved, medians over ``--repeat`` rounds; and the floor, the
  normal equations refined once with none of the checks (:func:`bare_normal`).

``tests/budgets/test_route.py`` holds the route figures to their ceilings with :func:`measure`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NamedTuple

import numpy as np


class Route(NamedTuple):
    modules: int
    functions: int
    calls: int
    depth: int


BACKEND_LAYER = "lsq_backends._backend"
# Comprehensions, counted with the function that holds them (module docstring)
INLINED = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})


def measure(call, skip=None):
    """The :class:`Route` of ``call()`` through ``lsq_backends`` (call it once before, so that
    imports and caches are not counted); ``skip``: a module prefix whose frames are not counted
    (:data:`BACKEND_LAYER`: the pipeline without the backend layer)."""
    modules, functions = set(), set()
    calls = depth = deepest = 0
    counted = []  # one flag per open lsq_backends frame

    def profile(frame, event, arg):
        nonlocal calls, depth, deepest
        name = frame.f_globals.get("__name__", "")
        if not name.startswith("lsq_backends"):
            return
        if event == "call":
            own = (skip is None or not name.startswith(skip)) and frame.f_code.co_name not in INLINED
            counted.append(own)
            if own:
                calls += 1
                modules.add(name)
                functions.add((name, frame.f_code.co_name))
                depth += 1
                deepest = max(deepest, depth)
        elif event == "return" and counted.pop():
            depth -= 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(previous)
    return Route(len(modules), len(functions), calls, deepest)


def small_problem(m=200, n=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, n)), rng.standard_normal(m)


def routes(lsq, skip=None):
    """``{"lstsq": Route, "ridge": Route, "qr": Route}`` on the 200 x 5 problem (``qr``: ``lstsq(X, y,
    method="qr")``, a method without a lean route; ``skip``: as :func:`measure`)."""
    X, y = small_problem()
    calls = {
        "lstsq": lambda: lsq.lstsq(X, y),
        "ridge": lambda: lsq.ridge(X, y, 1.0),
        "qr": lambda: lsq.lstsq(X, y, method="qr"),
    }
    out = {}
    for name, call in calls.items():
        call()
        out[name] = measure(call, skip)
    return out


def bare_normal(X, y):
    """The floor of a small fit: the normal equations refined once, by SciPy's LAPACK on the
    column-equilibrated Gram matrix, with no validation, rank certificate or condition test
    (what ``normal`` does on a well-conditioned problem, without its checks)."""
    from scipy.linalg import lapack

    G, b = X.T @ X, X.T @ y
    s = 1 / np.sqrt(np.diagonal(G))
    c, _ = lapack.dpotrf(G * s[:, None] * s, lower=0)
    w = lapack.dpotrs(c, b * s, lower=0)[0] * s
    r = y - X @ w
    w = w + lapack.dpotrs(c, (X.T @ r) * s, lower=0)[0] * s
    r = y - X @ w
    return w, r @ r


def main(argv=None):
    from .backends import limit_threads
    from .gram_speed import _rounds, make_problem

    p = argparse.ArgumentParser(prog="python -m benchmarks.route", description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    limit_threads(1)
    import lsq_backends as lsq

    print(f"load: {os.getloadavg()}, one thread, medians of {args.repeat}")
    for title, skip in (("lsq_backends only", None), ("without the backend layer", BACKEND_LAYER)):
        print(f"\nroute of one call on 200 x 5 ({title}):")
        print(f"  {'call':16s} {'modules':>8s} {'functions':>10s} {'calls':>6s} {'depth':>6s}")
        for name, r in routes(lsq, skip).items():
            label = "lstsq(X, y, qr)" if name == "qr" else name + "(X, y)"
            print(f"  {label:16s} {r.modules:8d} {r.functions:10d} {r.calls:6d} {r.depth:6d}")
    _, _, X, y = make_problem(442, 10, 100.0, seed=3)
    calls = {
        "numpy.linalg.lstsq": lambda: np.linalg.lstsq(X, y, rcond=None),
        "auto": lambda: lsq.lstsq(X, y),
        "normal": lambda: lsq.lstsq(X, y, method="normal"),
        "auto, intercept": lambda: lsq.lstsq(X, y, fit_intercept=True),
        "ridge(X, y, 1.0)": lambda: lsq.ridge(X, y, 1.0),
        "bare normal (floor)": lambda: bare_normal(X, y),
    }
    med = _rounds({k: (lambda f=f: [f() for _ in range(200)]) for k, f in calls.items()}, args.repeat)
    base = med["numpy.linalg.lstsq"]
    print("\n442 x 10, one call (200 per timing):")
    for k, t in med.items():
        print(f"  {k:20s} {t / 200 * 1e6:8.1f} us   {t / base:5.2f}x numpy.linalg.lstsq")


if __name__ == "__main__":
    main()
