"""Run by ``test_sharded_jax.py`` in a fresh process: JAX must see 4 CPU devices, which
``XLA_FLAGS`` sets only before JAX is imported, so the rest of the suite keeps one device.

Fits jitted ``normal`` (and ridge) with X sharded by rows over 4 devices and on one device;
prints JSON with the results and the collectives of the compiled HLO, grouped by where they
sit: in the fallback branch of a ``conditional`` (branch 0, lax.cond's false branch) or
anywhere else.
"""

from __future__ import annotations

import json
import re
import sys

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import lsq_backends as lsq  # noqa: E402

COLLECTIVE = re.compile(r"= (.*?) (all-reduce|all-gather|all-to-all|collective-permute|reduce-scatter)(-start)?\(")


def collectives(hlo):
    """[(computation, kind, result shapes, line)] and the names of fallback branches."""
    comp, found, fallback = None, [], set()
    for line in hlo.splitlines():
        if line and not line.startswith(" ") and line.rstrip().endswith("{"):
            comp = line.split()[1] if line.startswith("ENTRY") else line.split()[0]
        branches = re.search(r"branch_computations=\{([^}]*)\}", line)
        if branches:
            fallback.add(branches.group(1).split(",")[0].strip())  # branch 0 = false branch
        hit = COLLECTIVE.search(line)
        if hit:
            shapes = [[int(d) for d in s.split(",") if d] for s in re.findall(r"\[([\d,]*)\]", hit.group(1))]
            found.append((comp, hit.group(2), shapes, line.strip()[:160]))
    return found, sorted(fallback)


def main(m, n, k):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, n)) @ np.diag(np.logspace(0, -1, n)) + 3.0
    Y = rng.standard_normal((m, k))
    w = rng.uniform(0.5, 2.0, m)
    mesh = Mesh(np.array(jax.devices()), ("rows",))
    rows, vec = NamedSharding(mesh, P("rows", None)), NamedSharding(mesh, P("rows"))
    one = jax.devices()[0]
    cases = {
        "lstsq": lambda X, Y, w: lsq.lstsq(X, Y, method="normal"),
        "ridge_intercept": lambda X, Y, w: lsq.ridge(X, Y, 2.0, method="normal", sample_weight=w),
    }
    out = {"devices": len(jax.devices())}
    for name, f in cases.items():
        fit = jax.jit(f)
        args = (jax.device_put(X, rows), jax.device_put(Y, rows), jax.device_put(w, vec))
        hlo = fit.lower(*args).compile().as_text()
        found, fallback = collectives(hlo)
        sharded = fit(*args)
        single = fit(*(jax.device_put(a, one) for a in (X, Y, w)))
        out[name] = {
            "collectives": found,
            "fallback": fallback,
            "sharded": [np.asarray(a).tolist() for a in (sharded.coef, sharded.intercept, sharded.rss)],
            "single": [np.asarray(a).tolist() for a in (single.coef, single.intercept, single.rss)],
            "shard_rows": sorted({s.data.shape[0] for s in args[0].addressable_shards}),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(*map(int, sys.argv[1:4]))
