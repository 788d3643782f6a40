"""Run by ``test_sharded_jax.py`` in a fresh process: JAX must see 4 CPU devices, which
``XLA_FLAGS`` sets only before JAX is imported, so the rest of the suite keeps one device.

Fits jitted ``normal`` (and ridge, and a rank-deficient X that takes the fallback branch)
with X sharded by rows over 4 devices and on one device; prints JSON with the results, the
collectives of the compiled HLO, grouped by where they sit: in the fallback branch of a
``conditional`` (branch 0, lax.cond's false branch) or anywhere else, and the compiled fits'
temporaries per device (``memory_analysis``) at a second, larger size.
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


def data(m, n, k):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, n)) @ np.diag(np.logspace(0, -1, n)) + 3.0
    return X, rng.standard_normal((m, k)), rng.uniform(0.5, 2.0, m)


def rank_deficient(X):
    """X with its last column a copy of the first: rank n - 1, the fallback branch runs."""
    X = X.copy()
    X[:, -1] = X[:, 0]
    return X


CASES = {
    "lstsq": lambda X, Y, w: lsq.lstsq(X, Y, method="normal"),
    "ridge_intercept": lambda X, Y, w: lsq.ridge(X, Y, 2.0, method="normal", sample_weight=w),
    "rank_deficient": lambda X, Y, w: lsq.lstsq(X, Y, method="normal"),
}


def main(m, n, k, m_mem, n_mem):
    X, Y, w = data(m, n, k)
    mesh = Mesh(np.array(jax.devices()), ("rows",))
    rows, vec = NamedSharding(mesh, P("rows", None)), NamedSharding(mesh, P("rows"))
    one = jax.devices()[0]
    out = {"devices": len(jax.devices()), "memory": {}}
    for name, f in CASES.items():
        fit = jax.jit(f)
        Xc = rank_deficient(X) if name == "rank_deficient" else X
        args = (jax.device_put(Xc, rows), jax.device_put(Y, rows), jax.device_put(w, vec))
        hlo = fit.lower(*args).compile().as_text()
        found, fallback = collectives(hlo)
        sharded = fit(*args)
        single = fit(*(jax.device_put(a, one) for a in (Xc, Y, w)))
        out[name] = {
            "collectives": found,
            "fallback": fallback,
            "sharded": [np.asarray(a).tolist() for a in (sharded.coef, sharded.intercept, sharded.rss)],
            "single": [np.asarray(a).tolist() for a in (single.coef, single.intercept, single.rss)],
            "rank": [int(sharded.rank), int(single.rank)],
            "shard_rows": sorted({s.data.shape[0] for s in args[0].addressable_shards}),
        }
    # Temporaries of the compiled fits per device, against one shard of X (k = 1: a vector y).
    X, Y, w = data(m_mem, n_mem, 1)
    args = (jax.device_put(X, rows), jax.device_put(Y[:, 0], vec), jax.device_put(w, vec))
    for name in ("lstsq", "ridge_intercept"):
        stats = jax.jit(CASES[name]).lower(*args).compile().memory_analysis()
        out["memory"][name] = {"temp": stats.temp_size_in_bytes, "shard": X.nbytes // len(jax.devices())}
    print(json.dumps(out))


if __name__ == "__main__":
    main(*map(int, sys.argv[1:6]))
