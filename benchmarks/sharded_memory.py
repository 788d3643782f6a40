"""Temporaries of a compiled JAX fit per device, X sharded by rows over simulated CPU devices.

``python -m benchmarks.sharded_memory`` (default 400000 x 50 float64, 4 devices, ``normal``):
``jax.jit(f).lower(X, y).compile().memory_analysis().temp_size_in_bytes`` of ``lstsq`` and of
``ridge`` with an intercept, and its ratio to one shard of X. XLA reserves the buffers of both
branches of every ``lax.cond``, so the figure counts each fallback whether it runs or not.
Nothing is fitted: only compiled.

Examples
--------
::

    python -m benchmarks.sharded_memory                            # normal, 4 devices
    python -m benchmarks.sharded_memory --methods normal,auto,qr,svd
    python -m benchmarks.sharded_memory --devices 1 --m 400000     # unsharded
"""

from __future__ import annotations

import argparse
import os


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=400000)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--methods", default="normal")
    args = parser.parse_args(argv)
    # Before JAX is imported: the device count is read once.
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    import lsq_backends as lsq

    jax.config.update("jax_enable_x64", True)
    mesh = Mesh(np.array(jax.devices()), ("rows",))
    rng = np.random.default_rng(0)
    X = jax.device_put(rng.standard_normal((args.m, args.n)), NamedSharding(mesh, P("rows", None)))
    y = jax.device_put(rng.standard_normal(args.m), NamedSharding(mesh, P("rows")))
    shard = args.m * args.n * 8 / len(jax.devices())
    print(f"X {args.m} x {args.n} float64 over {len(jax.devices())} devices: one shard {shard / 1e6:.1f} MB")
    for method in args.methods.split(","):
        fits = {
            "lstsq": lambda X, y, method=method: lsq.lstsq(X, y, method=method),
            "ridge, intercept": lambda X, y, method=method: lsq.ridge(X, y, 2.0, method=method),
        }
        for name, f in fits.items():
            temp = jax.jit(f).lower(X, y).compile().memory_analysis().temp_size_in_bytes
            print(f"{method:7s} {name:17s} temporaries {temp / 1e6:8.1f} MB a device = {temp / shard:5.2f} shards")


if __name__ == "__main__":
    main()
