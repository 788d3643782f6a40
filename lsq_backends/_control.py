"""Control flow that survives tracing: value-dependent branches, loops, compilation.

Part of the backend-quirk layer (re-exported by :mod:`lsq_backends._compat`, through which
solvers call it): a robust solver must branch on values it computed (Cholesky failed, R is
singular) and iterate until converged, and each array library needs its own way to do that
without breaking ``jax.jit`` or computing a Dask graph early.
"""

from __future__ import annotations

import array_api_compat as _aac

from ._dask_blocks import _dask_gate

__all__ = ["cond", "jit", "loop"]


def is_lazy(x) -> bool:
    return _aac.is_lazy_array(x)


def jit(xp, fn):
    """``fn`` compiled on JAX (once per input shape), unchanged elsewhere.

    Quirk: eager JAX compiles every operation for each new shape; a function of many small
    operations called on chunks (streaming updates) is far faster as one compiled call.
    Inside a caller's ``jax.jit`` the inner one is simply inlined.
    """
    if _aac.is_jax_namespace(xp):
        import jax

        return jax.jit(fn)
    return fn


def cond(xp, pred, true_fn, false_fn, operands):
    """``true_fn(*operands)`` if the scalar boolean ``pred`` holds, else ``false_fn(*operands)``.

    The value-dependent branch every robust solver needs (Cholesky failed, R is singular, X is
    ill conditioned), made so that it never breaks tracing:

    - JAX: ``lax.cond``, a traced branch; under ``jax.jit`` nothing leaves the device, under
      ``vmap`` it becomes a select.
    - Dask: both branches are built into the graph and selected with ``where``, so nothing is
      computed before the user asks. The operands of each branch are gated by ``pred``, so
      the pass over X that a fallback needs (the tree QR of ``qr_apply``) is skipped at
      compute time when the branch is not taken; only its O(n^3) small-factor work runs.
    - Eager libraries (NumPy, CuPy, PyTorch, array-api-strict): one scalar is read to choose the
      branch, the only device-to-host transfer in a fit (one boolean); only one branch runs.
    """
    if _aac.is_jax_namespace(xp):
        import jax

        return jax.lax.cond(pred, true_fn, false_fn, *operands)
    if _aac.is_dask_namespace(xp) and is_lazy(pred):
        # Both branches go into the graph, each on operands gated by ``pred``: at compute time
        # the blocks of the branch not taken become zero-stride constants (no memory, no
        # copy), on which the one-pass QR below (the only pass over X inside a branch of a
        # 2-D problem) costs O(n^2) per chunk. The small-factor work of both branches runs.
        ops_t = tuple(_dask_gate(a, pred) for a in operands)
        ops_f = tuple(_dask_gate(a, ~pred) for a in operands)
        a, b = true_fn(*ops_t), false_fn(*ops_f)
        return tuple(xp.where(pred, x, y) for x, y in zip(a, b))
    if is_lazy(pred):
        a, b = true_fn(*operands), false_fn(*operands)
        return tuple(xp.where(pred, x, y) for x, y in zip(a, b))
    return true_fn(*operands) if bool(pred) else false_fn(*operands)


def _is_tracer(x):
    import jax

    return isinstance(x, jax.core.Tracer)


def _in_host_memory(xp, x):
    """Whether reading a value of ``x`` costs nothing (no device to wait for)."""
    if _aac.is_numpy_namespace(xp) or _aac.is_array_api_strict_namespace(xp):
        return True
    if _aac.is_jax_namespace(xp):
        return all(d.platform == "cpu" for d in x.devices())
    if _aac.is_torch_namespace(xp):
        return x.device.type == "cpu"
    return False


def loop(xp, body, state, max_iter, done, operands=()):
    """``state = body(state, *operands)`` up to ``max_iter`` times, stopping once the scalar
    ``done(state)`` holds; ``state`` is a tuple of arrays (a NamedTuple) whose shapes ``body``
    keeps, ``operands`` the arrays every iteration reads (X).

    ``body`` must leave a finished state unchanged (mask its updates with ``where``): the loop
    may run it a few more times, so when it stops is not a result, only a saving.

    - JAX, traced (under ``jax.jit``, ``vmap``): ``lax.while_loop``, nothing leaves the
      device (under ``vmap`` it runs until every problem is done). Not reverse-mode
      differentiable. Eager JAX takes the Python loop below: a ``while_loop`` outside ``jit``
      is traced and compiled anew on every call (seconds), each eager operation only once.
    - Eager libraries: a Python loop that reads ``done`` (one boolean) every few iterations:
      every one where arrays live in host memory (NumPy, array-api-strict, PyTorch on the CPU;
      the read is free), every 10th on a GPU, where each read waits for the queued kernels.
    - Dask: a lazy loop would grow the graph by one iteration's tasks each time round and only
      ever be computed whole, so every 10 iterations the state is persisted (computed, kept in
      memory, the graph cut) and ``done`` read: the fit computes, and its results are Dask
      arrays backed by persisted chunks. ``operands`` are persisted once, first: otherwise
      every block of iterations would recompute them (X centered and weighted) from their
      graph. Building each iteration's graph costs ~10 ms per array operation here (hundreds
      per LSQR iteration): worth it when a product with X takes longer than that.
    """
    if _aac.is_jax_namespace(xp) and any(_is_tracer(a) for a in (*state, *operands)):
        import jax

        def cond_fun(carry):
            return (carry[0] < max_iter) & ~done(carry[1])

        return jax.lax.while_loop(cond_fun, lambda c: (c[0] + 1, body(c[1], *operands)), (0, state))[1]
    lazy = _aac.is_dask_namespace(xp)
    if lazy:
        import dask

        operands = dask.persist(*operands)
    every = 1 if _in_host_memory(xp, state[0]) else 10
    i = 0
    while i < max_iter:
        if lazy:
            state = type(state)(*dask.persist(*state))
        if bool(done(state)):
            break
        for _ in range(min(every, max_iter - i)):
            state = body(state, *operands)
        i += every
    return state
