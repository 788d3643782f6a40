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


def available_backends():
    """Names of the importable backends (CuPy only with a usable CUDA device)."""
    names = []
    for name, module in BACKENDS.items():
        try:
            mod = importlib.import_module(module)
            if name == "cupy" and not mod.cuda.is_available():
                continue
        except Exception:  # noqa: BLE001 -- a broken install counts as absent
            continue
        names.append(name)
    return names
