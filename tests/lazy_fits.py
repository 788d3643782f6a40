"""Rerun a test module's fits lazily, in the spirit of array-api-extra's ``lazy_xp_function``.

A module opts in by naming the public functions it calls through ``lsq`` (``import
lsq_backends as lsq``)::

    lazy_fits = ("lstsq", "ridge")

and the ``be`` fixture (``conftest.py``) then replaces those functions for the duration of
each test:

- JAX: each call runs under ``jax.jit``, its JAX arrays traced and every other argument
  static, as a user's jitted code would call it (the eager JAX path, which checks values,
  is tested by ``tests/autodiff/test_jax.py``);
- Dask: each call runs under a scheduler that raises on any compute, and its result is then
  computed with a real one: the fit must only build a graph.

Only where the capability table (``lsq_backends.capabilities``) says the call supports it
(``jit``, ``dask_lazy``): a "no" runs as given, so that the module still checks its answer.
Other backends are left alone.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

import lsq_backends as lsq
from lsq_backends.capabilities import supports


def _entry(name, args, kwargs):
    """The capability-table entry of a call of ``lsq.<name>``."""
    method = kwargs.get("method", "auto")
    if name == "ridge":
        alpha = args[2] if len(args) > 2 else kwargs.get("alpha")
        if np.ndim(alpha) == 1 and not kwargs.get("per_target", False):
            return "ridge (path)"
    return f"lstsq:{method}" if name in ("lstsq", "ridge") else name


def _refuse(*args, **kwargs):
    raise AssertionError("a fit computed something before compute() was called")


def _jitted(func, name):
    import jax

    @functools.wraps(func)
    def call(*args, **kwargs):
        if not supports(_entry(name, args, kwargs), "jit"):
            return func(*args, **kwargs)
        values = list(args) + list(kwargs.values())
        traced = [i for i, v in enumerate(values) if isinstance(v, jax.Array)]

        def run(*arrays):
            filled = list(values)
            for i, a in zip(traced, arrays, strict=True):
                filled[i] = a
            return func(*filled[: len(args)], **dict(zip(kwargs, filled[len(args) :], strict=True)))

        return jax.jit(run)(*(values[i] for i in traced))

    return call


def _no_compute(func, name):
    import dask

    @functools.wraps(func)
    def call(*args, **kwargs):
        if not supports(_entry(name, args, kwargs), "dask_lazy"):
            return func(*args, **kwargs)
        with dask.config.set(scheduler=_refuse):
            out = func(*args, **kwargs)
        # every field in one persist: the fields share the fit's graph, which one persist each ran once per field
        done = iter(dask.persist(*(f for f in out if f is not None), scheduler="sync"))
        return type(out)(*(None if f is None else next(done) for f in out))

    return call


@contextlib.contextmanager
def patched(module, backend):
    """Within the block, ``lsq.<name>`` for each name of ``module.lazy_fits`` runs lazily on
    the JAX and Dask backends (see the module docstring)."""
    names = getattr(module, "lazy_fits", ())
    wrap = {"jax": _jitted, "dask": _no_compute}.get(backend)
    if not names or wrap is None:
        yield
        return
    originals = {name: getattr(lsq, name) for name in names}
    try:
        for name, func in originals.items():
            setattr(lsq, name, wrap(func, name))
        yield
    finally:
        for name, func in originals.items():
            setattr(lsq, name, func)
