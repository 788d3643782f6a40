"""Array backends for the benchmarks: conversion from and to NumPy, ``jit``, and the
synchronization that makes a timing honest."""

from __future__ import annotations

import importlib

import numpy as np

BACKENDS = {"numpy": "numpy", "jax": "jax.numpy", "torch": "torch", "dask": "dask.array", "cupy": "cupy"}
DASK_CHUNKS = 4  # row blocks per Dask array


class Backend:
    """An array library to run on: conversions from and to NumPy, ``jit``, and ``finish``, the
    synchronization after which the work is really done (part of every timed call).

    Parameters
    ----------
    name : str
        A key of :data:`BACKENDS`.
    """

    def __init__(self, name):
        self.name = name
        if name == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)  # before any array exists
        self.mod = importlib.import_module(BACKENDS[name])
        self.cuda = name == "cupy" or (name == "torch" and self.mod.cuda.is_available())

    def put(self, a):
        """The NumPy array ``a`` as an array of this backend (row blocks for Dask)."""
        if self.name == "numpy":
            return a
        if self.name == "dask":
            return self.mod.from_array(a, chunks=(-(-a.shape[0] // DASK_CHUNKS),) + a.shape[1:])
        if self.name == "torch":
            t = self.mod.from_numpy(a)
            return t.cuda() if self.cuda else t
        return self.mod.asarray(a)

    def get(self, x):
        """A (finished) array of this backend as a NumPy array."""
        if self.name == "cupy":
            return x.get()
        if self.name == "torch":
            return x.detach().cpu().numpy()
        return np.asarray(x)

    def finish(self, out):
        """Wait for (JAX, CuPy, CUDA), or compute (Dask), everything in ``out``; return it."""
        if self.name == "jax":
            import jax

            return jax.block_until_ready(out)
        if self.name == "dask":
            import dask

            return dask.compute(out)[0]
        if self.name == "cupy":
            self.mod.cuda.get_current_stream().synchronize()
        elif self.cuda:
            self.mod.cuda.synchronize()
        return out

    def jit(self, fn, **kwargs):
        """``jax.jit(fn, **kwargs)`` on JAX; ``fn`` itself elsewhere."""
        if self.name != "jax":
            return fn
        import jax

        return jax.jit(fn, **kwargs)


# backend -> the extra of pyproject.toml that installs it
EXTRAS = {"numpy": "bench", "jax": "jax", "torch": "torch", "dask": "dask", "cupy": "cupy-cuda12"}


def unusable(name):
    """Why backend ``name`` cannot run here (not installed, or CuPy without a CUDA device), or
    None when it can. Imports that backend's library and no other."""
    try:
        mod = importlib.import_module(BACKENDS[name])
        if name == "cupy" and not mod.cuda.is_available():
            return "cupy is installed but no CUDA device is usable"
    except Exception as exc:  # noqa: BLE001 -- a broken install counts as absent
        return f'{BACKENDS[name]} cannot be imported ({type(exc).__name__}: {exc}); pip install -e ".[{EXTRAS[name]}]"'
    return None


def available_backends():
    """Names of the importable backends (CuPy only with a usable CUDA device). Imports every
    backend's library: only for a run that names none."""
    return [name for name in BACKENDS if unusable(name) is None]


def limit_threads(n, backends=None):
    """Run every library on at most ``n`` threads: OpenBLAS and OpenMP pools (``threadpoolctl``),
    PyTorch, Dask's thread pool and XLA's CPU client (effective only before JAX creates it).
    ``backends``: the names of the backends that will run (default: all); PyTorch and Dask are
    imported to be configured only when named, since importing them takes seconds.

    On a small shared machine two busy-waiting thread pools (NumPy's OpenBLAS next to Dask's
    workers, or another process) can turn a 1 ms call into a 100 ms one; ``n = 1`` keeps
    timings comparable at the price of measuring single-threaded speed.
    """
    import os

    import threadpoolctl

    threadpoolctl.threadpool_limits(n)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    if n == 1:
        flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()
    if backends is None or "torch" in backends:
        try:
            import torch

            torch.set_num_threads(n)
        except ImportError:
            pass
    if backends is None or "dask" in backends:
        try:
            import dask

            dask.config.set(num_workers=n)
        except ImportError:
            pass
