"""Control flow that survives tracing: value-dependent branches, loops, compilation.

Part of the backend-quirk layer (re-exported by :mod:`lsq_backends._backend._compat`, through which
solvers call it). A robust solver must branch on values it computed (Cholesky failed, R is
singular) and iterate until converged. Each array library needs its own way to do that without
breaking ``jax.jit`` or computing a Dask graph early.

``branch``: the value-dependent branch every robust solver needs (Cholesky failed, R is
singular, X is ill conditioned), made so that it never breaks tracing.

- JAX, traced: ``lax.cond``, a traced branch. Under ``jax.jit`` nothing leaves the device;
  under ``vmap`` it becomes a select. A concrete (eager) JAX predicate is read like the eager
  libraries' below: a ``lax.cond`` outside ``jit`` is traced and compiled anew on every call.
- Dask: both branches are built into the graph and selected with ``where``, so nothing is
  computed before the user asks. The operands of each branch are gated by ``pred``. So the
  pass over X that a fallback needs (the tree QR of ``qr_apply``) is skipped at compute time
  when the branch is not taken. Only its O(n^3) small-factor work runs.
- Eager libraries (NumPy, CuPy, PyTorch, array-api-strict): one scalar is read to choose the
  branch, together with the value checks still pending (see :class:`Checks`). Only one branch
  runs.

``loop``: ``body`` must leave a finished state unchanged (mask its updates with ``where``). The
loop may run it a few more times, so when it stops is not a result, only a saving.

- JAX, traced (under ``jax.jit``, ``vmap``): ``lax.while_loop``; under ``vmap`` it runs until
  every problem is done. XLA:GPU reads the loop's predicate on the host every trip. So on
  accelerators each trip runs 10 iterations (a ``fori_loop``, whose known trip count needs no
  read), then ``max_iter % 10`` more. Not reverse-mode differentiable. Eager JAX takes the
  Python loop below: a ``while_loop`` outside ``jit`` is traced and compiled anew on every
  call (seconds), each eager operation only once.
- Eager libraries: a Python loop that reads ``done`` (one boolean) every few iterations. It
  reads every iteration where arrays live in host memory (NumPy, array-api-strict, PyTorch on
  the CPU): the read is free. On a GPU it reads every 10th, as each read waits for the queued
  kernels.
- Dask: a lazy loop would grow the graph by one iteration's tasks each time round, and would
  only ever be computed whole. So every 10 iterations the state is persisted (computed, kept
  in memory, the graph cut) and ``done`` read. The fit computes, and its results are Dask
  arrays backed by persisted chunks. ``operands`` are persisted once, first; otherwise every
  block of iterations would recompute them (X centered and weighted) from their graph.
  Building each iteration's graph costs time per array operation, hundreds per LSQR iteration
  (design notes). That pays where a product with X takes longer.

``over_columns``: peak memory is one block's.

- JAX, traced: ``lax.map`` over the blocks, each cut with ``dynamic_slice``. The columns are
  padded with zeros to a whole number of blocks, and the padding is cut from the outputs. One
  compiled body, whatever the number of blocks, and one block live at a time.
- Elsewhere: a Python loop over slices (views on NumPy; lazy slices on Dask).

``one_task``: on Dask every array operation is a graph layer, and building a graph costs
milliseconds per layer, more as the graph grows (each layer copies the mapping of the layers
below it). Work on a handful of small arrays (a scale's exponents and factors, a rank
certificate on an n x n factor) would add dozens of layers to each fit for microseconds of
arithmetic: it runs as one NumPy task instead (``dask.delayed``), whose results come back as
Dask arrays of the shapes the caller states. Each array goes in as its one block (a
``Delayed`` from ``to_delayed(optimize_graph=False)``: ``delayed`` on the array itself
optimizes a copy of its whole graph, design notes), gathered into that task (small by
contract). Elsewhere the function runs as it is.

``jit``: eager JAX compiles every operation for each new shape. A function of many small
operations called on chunks (streaming updates) is far faster as one compiled call. Inside a
caller's ``jax.jit`` the inner one is simply inlined. The library's own compiled calls (these and
``compiled``'s) take ``compile_options``: XLA's older CPU code generator (fusion emitters off), where
the jaxlib has it, compiles an eager fit in about two thirds of the time for the same run time (a
new shape's first call is mostly compilation); a caller's ``jax.jit`` keeps the caller's options.
"""

from __future__ import annotations

import contextvars
import functools
import weakref

import array_api_compat as _aac
import numpy as _np

from ._dask_blocks import dask_gate, numpy_task

__all__ = [
    "Checks",
    "branch",
    "deferred",
    "flush_checks",
    "is_lazy",
    "jit",
    "lapack_in_order",
    "loop",
    "one_task",
    "over_columns",
    "read_now",
]


def _eager_types():
    import numpy as np

    # and Python's scalars (a route decision read as a Python bool, ``rank.bounded``)
    return frozenset({np.ndarray, np.bool_, np.float64, np.float32, np.int64, np.int32, bool, int, float})


_EAGER_TYPES = _eager_types()


_JAX_TYPES: dict = {}


def is_jax_array(x) -> bool:
    """``array_api_compat.is_jax_array``, remembered per type: its answer is an ``isinstance`` test against
    ``jax.Array`` after a look at ``sys.modules``, about a microsecond a call and a dozen calls a fit. Asked anew of
    NumPy arrays (a float0 array is a JAX zero gradient)."""
    t = type(x)
    found = _JAX_TYPES.get(t)
    if found is None:
        found = _aac.is_jax_array(x)
        if t is not _np.ndarray:  # a type JAX did not define cannot become JAX's when JAX is imported later
            _JAX_TYPES[t] = found
    return found


def is_lazy(x) -> bool:
    """True for arrays whose values cannot be read now: JAX tracers (under ``jax.jit``, ``vmap``, ``grad``) and
    Dask graphs; concrete JAX arrays are readable (array-api-compat calls every JAX array lazy). Remembered per
    type for :data:`TYPED_LIBRARIES`; other arrays are asked each time (array-api-compat may read a value)."""
    t = type(x)
    if t in _EAGER_TYPES:  # NumPy arrays and scalars: the common case, decided at once
        return False
    found = _LAZY_TYPES.get(t)
    if found is not None:
        return found
    if is_jax_array(x):
        import jax

        found = isinstance(x, jax.core.Tracer)
    elif t.__module__.startswith("array_api_strict"):
        found = False  # array-api-compat would find out by reading a value (a host read)
    else:
        found = _aac.is_lazy_array(x)
    if t.__module__.partition(".")[0] in TYPED_LIBRARIES:
        _LAZY_TYPES[t] = found
    return found


# Libraries whose arrays' type alone decides what they are (their namespace, laziness): answers about them
# are remembered per type.
TYPED_LIBRARIES = frozenset({"numpy", "torch", "jax", "jaxlib", "cupy", "dask", "array_api_strict"})
_LAZY_TYPES: dict = {}


class Checks:
    """Value checks of a fit, answered together with its next host read.

    Every ``bool()`` of a device value is a device synchronization on CuPy and CUDA PyTorch.
    Validation records each check as a 0-d boolean array (``ok``) and a callable ``on_fail``.
    That raises the error, or, for a fast test that can give false alarms, runs the exact test.
    :meth:`read` packs all of them and the solver's route decision into one integer, read once.
    Checks of lazy arrays are never recorded (nothing can be read there).
    """

    def __init__(self):
        self.items = []

    def add(self, ok, on_fail):
        # A concrete JAX array used inside a caller's ``jax.jit`` gives traced results
        # (every operation is staged out): such a check cannot be read and is dropped.
        if not is_lazy(ok):
            self.items.append((ok, on_fail))

    def read(self, xp, pred=None):
        """Read the pending checks (raising the first that fails) and ``pred``, in one read."""
        items, self.items = self.items, []
        if not items:
            return None if pred is None else bool(pred)
        if _aac.is_numpy_namespace(xp):
            # Host memory: each flag is read as it is (free), no packed word of ~3 operations
            # per flag (a tenth of a small fit's time).
            for ok, on_fail in items:
                if not (ok if ok.ndim == 0 else ok.all()):  # 0-d: read as it is
                    on_fail()
            return None if pred is None else bool(pred)
        if len(items) > 30:
            msg = f"{len(items)} value checks do not fit one int32 read"
            raise RuntimeError(msg)
        flags = [ok for ok, _ in items] + ([] if pred is None else [pred])
        # int32: in every array-API library (JAX without x64 included); a fit has few checks.
        word = xp.zeros((), dtype=xp.int32, device=_aac.device(flags[0]))
        for i, ok in enumerate(flags):
            word = word + xp.astype(xp.all(ok), xp.int32) * (1 << i)
        bits = int(word)  # the one host read
        for i, (_, on_fail) in enumerate(items):
            if not bits >> i & 1:
                on_fail()
        return None if pred is None else bool(bits >> len(items) & 1)


_PENDING = contextvars.ContextVar("lsq_backends_pending_checks", default=None)


class deferred:  # noqa: N801 (a context manager, named as one: ``with deferred(checks)``)
    """Within this block, :func:`branch` and :func:`loop` answer ``checks`` with their first
    host read; what is still pending at the end is read then (one read). A class, not a
    generator: entered once per fit, where ``contextlib.contextmanager`` costs ~2 µs."""

    def __init__(self, checks):
        self.checks = checks

    def __enter__(self):
        self.token = _PENDING.set(self.checks)
        return self.checks

    def __exit__(self, *exc):
        _PENDING.reset(self.token)


def flush_checks(xp):
    """Read the pending checks now (one host read, none if there are none). For use before work
    that would fail on bad values with a library's own error (an SVD of NaN raises in LAPACK)."""
    checks = _PENDING.get()
    if checks is not None and checks.items:
        checks.read(xp)


def read_now(xp, pred):
    """``bool(pred)``, read together with the value checks still pending (:func:`deferred`):
    the host read of an eager route decision."""
    checks = _PENDING.get()
    if checks is not None and checks.items:
        return checks.read(xp, pred)
    return bool(pred)


def one_task(xp, fn, args, out, **static):
    """``fn(xp, *args, **static)``. Dask: one NumPy task on ``args`` (small arrays, None or numbers), its result a
    Dask array of ``out = (shape, dtype)``, or for a list of them a tuple of results (module docstring)."""
    if not _aac.is_dask_namespace(xp):
        return fn(xp, *args, **static)
    import functools

    import dask
    import dask.array as da

    def block(a):  # the array as its one block: a Delayed that refers to the graph (not optimized: cheap)
        if not isinstance(a, da.Array):
            return a
        a = a.rechunk(tuple(a.shape)) if a.npartitions > 1 else a
        return a.to_delayed(optimize_graph=False).ravel()[0]

    specs = out if isinstance(out, list) else [out]
    task = dask.delayed(functools.partial(numpy_task, fn, static), nout=len(specs), pure=True)(*map(block, args))
    results = tuple(da.from_delayed(task[i], tuple(shape), dtype=dtype) for i, (shape, dtype) in enumerate(specs))
    return results if isinstance(out, list) else results[0]


def jit(xp, fn):
    """``fn`` compiled on JAX (once per input shape), unchanged elsewhere (module docstring: ``jit``)."""
    return jax_jit(fn) if _aac.is_jax_namespace(xp) else fn


def jax_jit(fn, **kwargs):
    """``jax.jit(fn, **kwargs)``, with :func:`compile_options` where it is called outside any trace (JAX refuses
    options on a jit nested in another; there the caller's apply)."""
    import jax

    plain, options = jax.jit(fn, **kwargs), compile_options()
    if options is None:
        return plain
    own = jax.jit(fn, compiler_options=options, **kwargs)
    return lambda *args, **kw: (own if type(current_trace(None)).__name__ == "EvalTrace" else plain)(*args, **kw)


@functools.cache
def compile_options():
    """XLA options of the library's own compiled calls (module docstring: ``jit``): fusion emitters off where this
    jaxlib knows the option (one small compile asks it, once), else None."""
    import jax

    options = {"xla_cpu_use_fusion_emitters": False}
    try:
        jax.jit(lambda a: a + 1).lower(jax.ShapeDtypeStruct((), "float32")).compile(compiler_options=options)
    except Exception:  # noqa: BLE001 - an unknown option (jaxlib 0.11 removed it): XLA's defaults
        return None
    return options


def branch(xp, pred, true_fn, false_fn, operands):
    """``true_fn(*operands)`` if the scalar boolean ``pred`` holds, else ``false_fn(*operands)``.

    Traced JAX: ``lax.cond``. Dask: both branches (operands gated by ``pred``), joined by ``where``.
    Eager libraries, concrete JAX included: one host read, one branch runs (module docstring: ``branch``)."""
    if not is_lazy(pred):  # the eager case first: one read, one branch
        return true_fn(*operands) if read_now(xp, pred) else false_fn(*operands)
    if _aac.is_jax_namespace(xp):
        import jax

        if all(a is None or _aac.is_array_api_obj(a) for a in operands):
            return jax.lax.cond(pred, true_fn, false_fn, *operands)
        # lax.cond takes JAX types as operands: another object (a sparse X known by its products) is closed over
        return jax.lax.cond(pred, lambda: true_fn(*operands), lambda: false_fn(*operands))
    if _aac.is_dask_namespace(xp):
        # Both branches go into the graph, each on operands gated by ``pred``: at compute time
        # the blocks of the branch not taken become zero-stride constants (no memory, no
        # copy), on which the one-pass QR below (the only pass over X inside a branch of a
        # 2-D problem) costs O(n^2) per chunk. The small-factor work of both branches runs.
        ops_t = tuple(dask_gate(a, pred) for a in operands)
        ops_f = tuple(dask_gate(a, ~pred) for a in operands)
        return _select(xp, pred, true_fn(*ops_t), false_fn(*ops_f))
    return _select(xp, pred, true_fn(*operands), false_fn(*operands))


def _select(xp, pred, a, b):
    """``a`` where ``pred`` holds, else ``b``: leaf by leaf through tuples (a ``Solution`` and its operators
    included, as ``lax.cond`` takes them), None where both branches give None."""
    if a is None:
        return None
    if isinstance(a, tuple):
        parts = (_select(xp, pred, x, y) for x, y in zip(a, b, strict=True))
        return type(a)(*parts) if hasattr(a, "_fields") else tuple(parts)
    return xp.where(pred, a, b)


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


def steps_per_trip(jax):
    """Iterations per trip of a traced :func:`loop`: 1 where JAX compiles for the CPU (a
    predicate read there is free), 10 on accelerators."""
    return 1 if jax.default_backend() == "cpu" else 10


def loop(xp, body, state, max_iter, done, operands=()):
    """``state = body(state, *operands)`` up to ``max_iter`` times, stopping once the scalar ``done(state)`` holds.

    ``state``: a NamedTuple of arrays whose shapes ``body`` keeps; ``operands``: the arrays each iteration reads (X).
    ``body`` must leave a finished state unchanged: it may run a few more times (module docstring: ``loop``)."""
    if _aac.is_jax_namespace(xp) and any(_is_tracer(a) for a in (*state, *operands)):
        import jax

        def step(s):
            return body(s, *operands)

        def below(k):  # room for k more iterations, and not done
            return lambda c: (c[0] + k <= max_iter) & ~done(c[1])

        k = steps_per_trip(jax)
        if k == 1:
            return jax.lax.while_loop(below(1), lambda c: (c[0] + 1, step(c[1])), (0, state))[1]

        # Quirk: XLA:GPU copies a while_loop's predicate to the host on every trip (a
        # synchronization). Trips of k steps, as the eager loop below reads every 10th test:
        # an inner loop of known trip count reads no predicate. The loop stops done (the
        # remaining steps then change nothing) or at the last whole trip before max_iter,
        # which leaves max_iter % k steps, a static count.
        def trip(c):
            return c[0] + k, jax.lax.fori_loop(0, k, lambda _, s: step(s), c[1])

        state = jax.lax.while_loop(below(k), trip, (0, state))[1]
        return jax.lax.fori_loop(0, max_iter % k, lambda _, s: step(s), state)
    lazy = _aac.is_dask_namespace(xp)
    if lazy:
        import dask

        operands = dask.persist(*operands)
    every = 1 if _in_host_memory(xp, state[0]) else 10
    i = 0
    while i < max_iter:
        if lazy:
            state = type(state)(*dask.persist(*state))
        if read_now(xp, done(state)):
            break
        for _ in range(min(every, max_iter - i)):
            state = body(state, *operands)
        i += every
    return state


def kept(xp, a):
    """``a``, persisted on Dask (computed and kept in memory), else as it is. For a product that
    every iteration reads inside a closure, which the loop cannot persist."""
    if _aac.is_dask_namespace(xp):
        return a.persist()
    return a


def over_columns(xp, fn, arrays, batch):
    """``fn`` on consecutive blocks of ``batch`` columns (the last axis) of ``arrays``, all as many columns wide.

    ``fn`` returns a tuple of arrays whose last axis runs over the block's columns; these are joined along it.
    Peak memory is one block's. Traced JAX: ``lax.map``; elsewhere a Python loop (module docstring)."""
    k = arrays[0].shape[-1]
    batch = max(1, min(batch, k))
    if _aac.is_jax_namespace(xp) and any(_is_tracer(a) for a in arrays):
        import jax

        blocks = -(-k // batch)
        pad = blocks * batch - k

        def padded(a):
            if not pad:
                return a
            return xp.concat([a, xp.zeros((*a.shape[:-1], pad), dtype=a.dtype)], axis=-1)

        full = [padded(a) for a in arrays]

        def one(j):
            return fn(*(jax.lax.dynamic_slice_in_dim(a, j * batch, batch, axis=a.ndim - 1) for a in full))

        outs = jax.lax.map(one, xp.arange(blocks))  # each (blocks, ..., batch)
        joined = []
        for o in outs:
            o = xp.moveaxis(o, 0, -2)  # (..., blocks, batch)
            joined.append(xp.reshape(o, (*o.shape[:-2], blocks * batch))[..., :k])
        return tuple(joined)
    parts = [fn(*(a[..., j : min(j + batch, k)] for a in arrays)) for j in range(0, k, batch)]
    return tuple(xp.concat(list(p), axis=-1) for p in zip(*parts, strict=False))


_LAPACK_LAST: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a JAX trace -> its last LAPACK result


def lapack_in_order(xp, fn, a, *args, **kwargs):
    """``fn(a, ...)``, a LAPACK routine, after the previous one of the JAX program being built on a CPU (stacks):
    ``a`` made to depend on its result, by a selection that holds at run time. jaxlib's batched kernels split their
    batch over the pool they run on and wait; two at once on two workers wait for good (the JAX page's known
    limits). Elsewhere ``fn`` is called as it is."""
    stack = a.ndim > 2 or any(getattr(b, "ndim", 0) > 2 for b in args)
    if not (stack and _aac.is_jax_namespace(xp) and _is_tracer(a)):
        return fn(a, *args, **kwargs)
    import jax

    if jax.default_backend() != "cpu":
        return fn(a, *args, **kwargs)
    trace = current_trace(a)  # a branch's own, where ``a`` is closed over from outside it
    if type(trace).__name__ != "DynamicJaxprTrace":  # a program being built (jit, a branch), not differentiated
        return fn(a, *args, **kwargs)
    last = _LAPACK_LAST.get(trace)
    if last is not None and last.size:
        s = xp.reshape(last, (-1,))[0]
        a = xp.where((s == s) | (s != s), a, xp.zeros_like(a))  # ``a`` itself, once ``last`` is computed
    out = fn(a, *args, **kwargs)
    _LAPACK_LAST[trace] = jax.tree_util.tree_leaves(out)[0]
    return out


def current_trace(a):
    """The JAX trace being built (JAX's internal ``trace_ctx``; ``a``'s own where that is missing)."""
    try:
        from jax._src.core import trace_ctx

        return trace_ctx.trace
    except (ImportError, AttributeError):  # pragma: no cover - another JAX's internals
        return getattr(a, "_trace", None)
