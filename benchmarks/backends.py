"""The benchmarks' backends: the self-check's registry (:mod:`lsq_backends.check.backends`:
finders, devices, conversions from and to NumPy, the synchronization that makes a timing
honest), named by library as the benchmark's command line and reports spell them, each on the
best device this machine has (``torch``: CUDA where there is one)."""

from __future__ import annotations

import importlib

from lsq_backends.check.backends import find_backends

BACKENDS = {"numpy": "numpy", "jax": "jax.numpy", "torch": "torch", "dask": "dask.array", "cupy": "cupy"}
# The self-check's names of a library's devices, the best first (others are named as the library).
DEVICES = {"jax": ("jax-gpu", "jax-cpu"), "torch": ("torch-cuda", "torch-cpu")}


class Backend:
    """An array library to run on, as the self-check finds it: ``asarray`` and ``to_numpy``
    convert from and to NumPy, ``finish`` waits until the work is really done (part of every timed call),
    ``jit`` compiles on JAX.

    Parameters
    ----------
    name : str
        A key of :data:`BACKENDS` (or ``"array_api_strict"``).

    Raises
    ------
    ImportError
        Where the library cannot run here (not installed, or no CUDA device for CuPy).
    """

    def __init__(self, name):
        self.name = name
        found, _, failed = find_backends(list(DEVICES.get(name, (name,))))
        if not found:
            raise ImportError("; ".join(reason for _, reason in failed))
        self.checked = found[0]  # the best device: find_backends keeps the order asked
        self.mod = importlib.import_module(BACKENDS.get(name, name))
        self.cuda = self.checked.name in ("torch-cuda", "cupy")

    def __repr__(self):
        return f"Backend({self.name!r}, {self.checked.device_name!r})"

    def asarray(self, a):
        """The NumPy array ``a`` as an array of this backend, on its device (row blocks for Dask)."""
        return self.checked.asarray(a)

    def to_numpy(self, x):
        """A (finished) array of this backend as a NumPy array."""
        return self.checked.to_numpy(x)

    def finish(self, out):
        """Wait for (JAX, CuPy, CUDA), or compute (Dask), everything in ``out``; return it."""
        return self.checked.finish(out)

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
    found, _, failed = find_backends(list(DEVICES.get(name, (name,))))
    if found:
        return None
    reasons = "; ".join(reason for _, reason in failed)
    return f'{reasons}; pip install -e ".[{EXTRAS[name]}]"' if name in EXTRAS else reasons


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
