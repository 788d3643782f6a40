"""A stall of XLA's CPU runtime, reproduced without this library: ``lax.cond`` around a refined Cholesky solve
and a triangular inverse of a stack of 10000 problems of 64 x 8, compiled once and called repeatedly.

Every thread goes idle and the result is never ready. The program is plain JAX (no ``lsq_backends``), the
pattern of this library's ``normal``, ``qr`` and ``auto`` fits of stacks: the triangular solves of the
refinement and the triangular inverse of the rank test in one branch of a conditional. With jaxlib 0.10.2 on
2 cores it stalled in 7 of 8 runs of 200 calls (at calls 4 to 147). The same program without the conditional,
without the inverse, or without the refinement ran three runs of 200 calls each without a stall, and with the
branch reading the outer ``X^T`` rather than its own operand two runs; with the inverse ordered after the
refinement by an ``optimization_barrier`` one run in three stalled. With
``XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false`` set before JAX starts, none stalled in
four runs (900 calls). Each call has ``--wait`` seconds (the first also its compilation); a call past it is
reported as a stall and the process exits with status 3.

``--fit`` runs the self-check's case instead: a jitted float32 ``lstsq(X, y, method="auto")`` of its stack of
10000 problems of 64 x 8 (``lsq_backends.check.problems``, the "batched" problem). Before the library ran its
LAPACK routines one at a time, with jaxlib 0.10.2 on 2 cores it stalled with that flag on the first call in 4 of
4 runs, without it on the third call in 1 of 1; pinned to one core (``taskset -c 0``) it ran 30 calls with the
flag and 20 without. The threads' native stacks (``gdb -p PID -batch -ex "thread apply all bt"``) showed both
XLA workers inside jaxlib's batched LAPACK kernels (``lapack_strsm_ffi``, ``lapack_sorgqr_ffi``), each splitting
its batch over the pool it runs on (``jax::ParallelBatchMap``) and waiting for parts no free worker is left to
run. The library now runs those routines one at a time on JAX's CPU backend (``_control.lapack_in_order``):
the same command ran 60 calls without a stall, with or without the flag.

    python -m benchmarks.xla_stall [--calls 200] [--batch 10000] [--wait 30] [--fit]
"""

from __future__ import annotations

import argparse
import os
import threading
import time


def program(jax, jnp):
    """The jitted program: a Cholesky factor's refined solve and its scaled inverse's norm, in one branch."""
    solve = jax.scipy.linalg.solve_triangular

    def fit(X, y):
        Xt = jnp.swapaxes(X, -1, -2)
        G = Xt @ X
        L = jnp.linalg.cholesky(G)
        b = Xt @ y[..., None]
        n = X.shape[-1]

        def refined(X, y):
            Lt = jnp.swapaxes(L, -1, -2)
            z = solve(Lt, solve(L, b, lower=True), lower=False)
            h = jnp.swapaxes(X, -1, -2) @ (y[..., None] - X @ z)  # the branch's own X (the outer Xt: no stall seen)
            dz = solve(Lt, solve(L, h, lower=True), lower=False)
            d = jnp.diagonal(G, axis1=-2, axis2=-1)
            Li = solve(L, jnp.broadcast_to(jnp.eye(n), L.shape), lower=True) * jnp.sqrt(d)[..., None, :]
            return (z + dz) * jnp.sqrt(jnp.sum(Li * Li, axis=(-1, -2)))[..., None, None]

        def zeros(X, y):
            return jnp.zeros((*X.shape[:-2], n, 1), X.dtype)

        return jax.lax.cond(jnp.all(jnp.isfinite(L)), refined, zeros, X, y)

    return jax.jit(fit)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--batch", type=int, default=10000)
    parser.add_argument("--wait", type=float, default=30.0, help="seconds a call may take")
    parser.add_argument("--fit", action="store_true", help="the self-check's jitted float32 auto fit of its stack")
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    if args.fit:
        import lsq_backends
        from lsq_backends.check.problems import make_problems

        problem = next(p for p in make_problems(quick=False, dtypes=("float32",)) if p.name == "batched")
        lstsq = jax.jit(lsq_backends.lstsq, static_argnames=("method",))

        def fit(X, y):
            return lstsq(X, y, method="auto").coef

        X0, y0 = problem.X, problem.y
    else:
        fit = program(jax, jnp)
        rng = np.random.default_rng(0)
        X0, y0 = rng.standard_normal((args.batch, 64, 8)), rng.standard_normal((args.batch, 64))
    print(f"jax {jax.__version__}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}, {os.cpu_count()} CPUs", flush=True)
    for i in range(args.calls):
        X, y = jnp.asarray(X0 + X0.dtype.type(i * 1e-3)), jnp.asarray(y0)
        done, out = threading.Event(), {}

        def call(X=X, y=y, done=done, out=out):
            try:
                out["coef"] = np.asarray(fit(X, y))
            except Exception as exc:  # reported, not taken for a stall
                out["error"] = exc
            done.set()

        start = time.perf_counter()
        threading.Thread(target=call, daemon=True).start()
        if not done.wait(args.wait + (120 if i == 0 else 0)):
            print(f"STALL: call {i} gave no answer within {args.wait:g} s", flush=True)
            os._exit(3)
        if "error" in out:
            raise out["error"]
        if i % 50 == 0:
            print(f"call {i}: {time.perf_counter() - start:.2f} s", flush=True)
    print(f"no stall in {args.calls} calls", flush=True)


if __name__ == "__main__":
    main()
