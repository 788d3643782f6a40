"""Namespaces, devices, dtypes and the library traits, and the small whole-array operations the
standard lacks or some library gets wrong: part of the :mod:`._compat` layer (re-exported there).

The quirks of the functions here (the figures behind them are in the design notes):

``compiled``: eager JAX dispatches each operation on its own. It traces and compiles each
``lax.cond`` or ``while_loop`` outside ``jit`` anew on every call. Public entry points called on
concrete JAX arrays run as one compiled call instead. It is compiled once per static
configuration and input shape (JAX's own cache).

``Traits.branches_share_memory``: XLA reserves the temporaries of both branches of a ``conditional``,
taken or not. So a fallback that needs a copy of X costs that memory in every fit, run or not
(design notes). Such a fallback is a QR of X, which on sharded X also gathers all of X onto
every device. The sharding of X is not visible while tracing, and the copy is X-sized on one
device too. So the answer depends on the library alone.

``finite_test``: NaN and infinity propagate through a sum. The other libraries multiply by a
vector of ones. On NumPy a sum over the rows does better: one read, a result of one row (design
notes).

``arg_best``: Dask's argmin and argmax graphs hold ``dask.array.chunk.argmin``/``argmax``. These
name themselves ``numpy.argmin``/``argmax`` without being them, so plain pickle refuses the
result and every fitted estimator holding it. On Dask: one block along the axis, NumPy's
function on it.

``normal_products``: on NumPy each product is a separate pass over X from memory. For narrow X
(n <= 64) the cross-product X^T Y is nearly all memory traffic (design notes). Both are formed
block by block over the rows, so the second product reads each block from cache. Elsewhere:
two products (XLA fuses; GPUs are not memory-bound the same way).

``update_fresh`` (and ``minus_fresh``, ``sum_of_squares``, ``zero_first_row``): NumPy evaluates
eagerly and fuses nothing. So each step of a chain on an X-sized array allocates another
X-sized array; writing into a temporary the caller made keeps one. ``zero_first_row`` writes
the row in place where a ``where`` would allocate. Other libraries get the standard
out-of-place operation: in-place writes break ``jax.jit``, and XLA fuses the chain (and the
select into its producer) anyway.

``diagonal``: NumPy returns a strided view. Elementwise work on it over a stack of small
matrices is slower than on a copy, copy included (design notes).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from typing import Any, NamedTuple

import array_api_compat as _aac
import numpy as _np

from ._control import TYPED_LIBRARIES, current_trace, is_jax_array, is_lazy, jax_jit
from ._dask_blocks import numpy_arg_best
from ._products import (
    cross,
    dots,
    matmul,
)

# An array of any array-API library, and the namespace of one: the standard has no common
# static type for them, so both are Any to a type checker; docstrings give the shapes.
Array = Any
Namespace = Any


def device(x):
    """``array_api_compat.device``; "cpu" at once for a plain NumPy array and a PyTorch tensor's own
    device (the common cases: the general lookup tests for a dozen libraries' array types first, a few
    microseconds a call, several calls a fit)."""
    t = type(x)
    if t is _np.ndarray:
        return "cpu"
    if t.__name__ == "Tensor" and t.__module__ == "torch":
        return x.device
    return _aac.device(x)


def plain_numpy(*arrays) -> bool:
    """True when every argument is None or a plain NumPy array (no subclass). Such inputs are
    neither JAX nor PyTorch arrays, need no conversion, and live on the CPU. (A loop, not
    ``all`` over a generator: called several times per fit, on the small-fit route.)"""
    for a in arrays:
        if a is not None and type(a) is not _np.ndarray:
            return False
    return True


# The library's traits and named predicates: what the rest of the package asks of a library, by
# what it needs to know.
# Only ``_backend/`` and ``_autodiff/`` test a library by name (``tests/house/test_structure.py``).


class Traits(NamedTuple):
    """What the package asks of an array library, by what it needs to know, answered once per namespace by
    :func:`traits` (a field, where each question was a function call: a small fit asks a dozen times)."""

    # Values are read at no cost (NumPy: eager, in host memory). So code may read them as it
    # goes, and skip the work they show to be needless.
    free_to_read: bool
    # SciPy's BLAS and LAPACK take its 2-D arrays as they are (NumPy). Each product is a pass
    # over X from memory, so row blocks that stay in cache pay.
    host_blas: bool
    # Its arrays may carry derivatives (JAX; PyTorch autograd): only then may a fit need the
    # solution's derivative rule (``_autodiff``).
    carries_derivatives: bool
    # A fit may read values while it solves: the eager libraries. Not JAX (an eager call runs
    # compiled, no read inside it) nor Dask (nothing is computed before the graph runs).
    reads_while_solving: bool
    # Subnormal numbers read as zero: XLA flushes them on CPUs and GPUs (JAX).
    flushes_subnormals: bool
    # Both branches of a value-dependent :func:`branch` are compiled into one program whose
    # memory holds the buffers of each (JAX: ``lax.cond``; public entry points always run
    # compiled, see :func:`compiled`). A fallback that copies X then costs memory in every fit
    # (module docstring).
    branches_share_memory: bool
    # A factorization reports its failure per matrix, without a synchronization (PyTorch's ``cholesky_ex``
    # ``info``), where elsewhere it shows as NaN in the factor (:func:`cholesky_ex`).
    reports_failures: bool


_TRAITS: dict = {}


def traits(xp) -> Traits:
    """The :class:`Traits` of namespace ``xp``, made once."""
    try:
        return _TRAITS[xp]
    except KeyError:
        numpy, jax = _aac.is_numpy_namespace(xp), _aac.is_jax_namespace(xp)
        torch, dask = _aac.is_torch_namespace(xp), _aac.is_dask_namespace(xp)
        found = _TRAITS[xp] = Traits(numpy, numpy, jax or torch, not (jax or dask), jax, jax, torch)
        return found


def is_array(a) -> bool:
    """``a`` is an array of some array library (not a list, a Python scalar or a sparse matrix). Remembered per type
    (``array_api_compat.is_array_api_obj`` asks a dozen libraries' types: a microsecond, several calls a fit)."""
    found = _ARRAY_TYPES.get(type(a))
    if found is None:
        found = _ARRAY_TYPES[type(a)] = _aac.is_array_api_obj(a)
    return found


_ARRAY_TYPES: dict = {}


def is_host_array(a) -> bool:
    """``a`` is a NumPy array or scalar: its values are in host memory, free to read."""
    return type(a) is _np.ndarray or _aac.is_numpy_array(a)


def choice_is_free(xp, a) -> bool:
    """A value-dependent choice on ``a`` costs no host read: NumPy, or a traced JAX array (the
    choice is compiled)."""
    return _aac.is_numpy_namespace(xp) or (_aac.is_jax_namespace(xp) and is_lazy(a))


def is_dense_tensor(X) -> bool:
    """``X`` is a strided (dense) ``torch.Tensor`` itself (no subclass): no operator, no sparse matrix, no CuPy
    device to make current. Decided from its type and layout at once (the entry points' common case)."""
    t = type(X)
    if t.__name__ == "Tensor" and t.__module__ == "torch":
        import torch

        return X.layout == torch.strided
    return False


def plain_tensors(*arrays):
    """``(namespace, device)`` where every argument is None or a dense PyTorch tensor (:func:`is_dense_tensor`),
    all on one device, at least one given; else None. Such arguments pass the checks of kind, known shape and
    device by construction, as plain NumPy arrays do (:func:`plain_numpy`)."""
    dev = None
    for a in arrays:
        if a is None:
            continue
        if not is_dense_tensor(a) or (dev is not None and a.device != dev):
            return None
        dev = a.device
    return None if dev is None else (array_namespace(*arrays), dev)


def is_torch_sparse(X) -> bool:
    """``X`` is a PyTorch sparse tensor (COO, CSR, ...)."""
    if not _aac.is_torch_array(X):
        return False
    import torch

    return X.layout != torch.strided


def finite_test(xp, a):
    """A 0-d boolean array, True where ``a`` (..., m, k) or (m,) holds no NaN or infinity. False can also
    mean huge finite values overflowed the test: only an exact test can tell. One pass over ``a``, no
    boolean temporary of its size (NumPy: a sum over the rows; module docstring)."""
    if _aac.is_numpy_namespace(xp):
        if a.ndim == 1 or a.shape[-1] == 1:  # one column: one sum, tested as a float
            return _np.True_ if math.isfinite(a.sum()) else _np.False_
        return _np.isfinite(a.reshape(-1, a.shape[-1]).sum(axis=0)).all()
    flat = xp.reshape(a, (-1, a.shape[-1])) if a.ndim > 1 else xp.reshape(a, (1, -1))
    ones = xp.ones((flat.shape[-1],), dtype=flat.dtype, device=device(a))
    return xp.all(xp.isfinite(matmul(xp, flat, ones)))


def array_namespace(*arrays):
    """The namespace of the arrays, ignoring ``None`` and Python scalars."""
    # type(), not isinstance: NumPy scalars (np.float64 subclasses float) are arrays here.
    # A loop, not a generator expression: called a dozen times on the small-fit route.
    kept = []
    for a in arrays:
        if a is not None and type(a) not in (int, float, bool):
            kept.append(a)
    # Remembered per tuple of types where the libraries' own types decide it (array-api-compat's answer for
    # them: ten microseconds a call); other arrays (``__array_namespace__`` of their own) asked each time.
    key = tuple(type(a) for a in kept)
    found = _NAMESPACES.get(key)
    if found is None:
        found = _aac.array_namespace(*kept)
        if all(t.__module__.partition(".")[0] in TYPED_LIBRARIES for t in key):
            _NAMESPACES[key] = found
    return found


_NAMESPACES: dict = {}


def eager_jax(*arrays) -> bool:
    """True when the arguments hold concrete JAX arrays and no tracer: an eager JAX call."""
    if plain_numpy(*arrays):
        return False
    found = False
    for a in arrays:
        if a is not None and type(a) not in _PLAIN and is_jax_array(a):
            if is_lazy(a):
                return False
            found = True
    return found


def call_kind(*arrays) -> str:
    """``"numpy"`` (None, Python numbers and plain NumPy arrays only), ``"jax-eager"`` (concrete JAX arrays among
    them, nothing else: :func:`eager_jax`), ``"jax-traced"`` (a JAX tracer among them: under ``jax.jit``, ``grad``,
    ``vmap``) or ``"other"``. One loop: called on the small-fit route."""
    kind = "numpy"
    for a in arrays:
        if a is None or type(a) in _PLAIN:
            continue
        if not is_jax_array(a):
            return "other"
        if is_lazy(a):
            kind = "jax-traced"
        elif kind == "numpy":
            kind = "jax-eager"
    return kind


_PLAIN = (_np.ndarray, float, int, bool)
_COMPILED: dict = {}
_OWN_TRACE = contextvars.ContextVar("lsq_backends_own_trace", default=False)


def compiled(fn, static_argnames):
    """``jax.jit(fn, static_argnames=...)`` (``jax_jit``: the library's compile options), made once per function:
    what an entry point called on concrete JAX arrays runs, one compiled call (module docstring). While it traces,
    :func:`own_trace` is True."""
    if fn not in _COMPILED:
        jitted = jax_jit(fn, static_argnames=static_argnames)

        def run(*args, **kwargs):
            token = _OWN_TRACE.set(True)
            try:
                return jitted(*args, **kwargs)
            finally:
                _OWN_TRACE.reset(token)

        _COMPILED[fn] = run
    return _COMPILED[fn]


def outside_jit() -> bool:
    """True where JAX differentiates or vmaps a call outside any ``jax.jit`` (no trace below builds a program)."""
    trace = top = current_trace(None)
    while type(trace).__name__ not in ("EvalTrace", "DynamicJaxprTrace", "NoneType"):
        trace = getattr(trace, "parent_trace", None)
    return type(trace).__name__ == "EvalTrace" and trace is not top


def own_trace() -> bool:
    """True while an entry point traces its own compiled call (:func:`compiled`): an eager JAX call, whose
    choices were made before it (the lean route's gate, read), not a caller's ``jax.jit``."""
    return _OWN_TRACE.get()


def is_readable(x) -> bool:
    """True when the values of ``x`` can be read now: not a JAX tracer, not a Dask graph
    (see :func:`is_lazy`)."""
    return not is_lazy(x)


def as_rank(xp, a, ndim):
    """``a`` with leading axes of length 1 up to ``ndim`` axes (0-d arrays as they are).

    Quirk: JAX with ``jax_numpy_rank_promotion="raise"`` (as its own test harness and many JAX
    libraries run) refuses to broadcast arrays of different ranks, which the standard allows."""
    extra = ndim - a.ndim
    return xp.reshape(a, (1,) * extra + tuple(a.shape)) if extra > 0 and a.ndim > 0 else a


def align_rows(xp, a, like):
    """``a`` (..., m, k) with its rows laid out as those of ``like`` (..., m, n)."""
    if _aac.is_dask_namespace(xp):
        # Quirk: a new (m, 1) array (ones, arange) or the caller's y and weights may be chunked
        # unlike X; combining them made Dask split and re-merge X's chunks (a copy of X in
        # every pass, design notes). Rechunk the thin one instead.
        return a.rechunk({a.ndim - 2: like.chunks[-2]})
    return a


def take_rows(xp, a, idx):
    """Rows ``idx`` (a NumPy integer array, e.g. a cross-validation fold) of ``a`` (..., m, c).

    Quirk: Dask takes NumPy indices as they are (a Dask index array would make the selection
    lazy in its shape). Every other library needs them as its own array on ``a``'s device."""
    if not _aac.is_dask_namespace(xp):
        idx = xp.asarray(idx, device=device(a))
    return xp.take(a, idx, axis=-2)


def arg_best(xp, x, axis, largest=False):
    """Index of the first minimum (with ``largest``, maximum) along ``axis`` of a small array
    (penalties by targets, an active set's candidates). On Dask a graph that plain pickle takes
    (module docstring)."""
    if _aac.is_dask_namespace(xp):
        ax = axis % x.ndim
        kernel = functools.partial(numpy_arg_best, axis=ax, largest=largest)
        return x.rechunk({ax: -1}).map_blocks(kernel, drop_axis=ax, dtype=_np.intp)
    return xp.argmax(x, axis=axis) if largest else xp.argmin(x, axis=axis)


_MEMO: dict = {}


def memo(key, make):
    """``make()``, remembered under ``key`` (per-namespace constants: dtype kinds, finfo,
    default dtypes: a dozen queries per small fit, design notes). Keys that cannot be hashed
    are computed every time."""
    try:
        return _MEMO[key]
    except KeyError:
        value = _MEMO[key] = make()
        return value
    except TypeError:
        return make()


def isdtype(xp, dtype, kind):
    """``xp.isdtype(dtype, kind)``, remembered per namespace, dtype and kind."""
    return memo(("isdtype", xp, dtype, kind), lambda: xp.isdtype(dtype, kind))


_FINFO: dict = {}


def finfo(xp, dtype):
    """``xp.finfo(dtype)``, remembered per namespace and dtype (a dozen queries per small fit)."""
    try:
        return _FINFO[xp, dtype]
    except KeyError:
        info = _FINFO[xp, dtype] = xp.finfo(dtype)
        return info
    except TypeError:  # a dtype that cannot be hashed
        return xp.finfo(dtype)


def eps(xp, a):
    """The machine epsilon of ``a``'s dtype (:func:`finfo`'s, read at once where remembered)."""
    try:
        return _FINFO[xp, a.dtype].eps
    except (KeyError, TypeError):
        return finfo(xp, a.dtype).eps


def default_dtypes(xp, dev):
    """(default real float, default integer) of ``xp`` on ``dev``. JAX's follow its x64 flag
    and PyTorch's ``torch.set_default_dtype``, which may change between calls: JAX is asked
    every time, PyTorch remembered per default dtype."""
    if _aac.is_jax_namespace(xp):
        return _default_dtypes(xp, dev)
    if _aac.is_torch_namespace(xp):
        import torch

        return memo(("default_dtypes", xp, dev, torch.get_default_dtype()), lambda: _default_dtypes(xp, dev))
    try:  # :func:`memo`, spelled out: once per fit, on the small-fit route
        return _MEMO["default_dtypes", xp, dev]
    except KeyError:
        dtypes = _MEMO["default_dtypes", xp, dev] = _default_dtypes(xp, dev)
        return dtypes
    except TypeError:  # a device that cannot be hashed
        return _default_dtypes(xp, dev)


def _default_dtypes(xp, dev):
    info = xp.__array_namespace_info__()
    try:
        d = info.default_dtypes(device=dev)
    except TypeError:  # some wrapped namespaces take no device argument
        d = info.default_dtypes()
    return d["real floating"], d["integral"]


def float64_for(xp, dev):
    """``xp.float64`` where the library has it on ``dev``, else None (JAX without x64, and
    devices without double precision, whose namespace info leaves float64 out)."""
    info = xp.__array_namespace_info__()
    try:
        floats = info.dtypes(device=dev, kind="real floating")
    except TypeError:  # some wrapped namespaces take no device argument
        floats = info.dtypes(kind="real floating")
    return floats.get("float64")


def reduce_sum(xp, a, axis=None, keepdims=False):
    """``xp.sum`` of a float array. Quirk: NumPy's ``sum`` (and the namespace's wrapper around
    it) costs more than the reduction on a small fit's small arrays. The method does not
    (design notes)."""
    if _aac.is_numpy_namespace(xp):
        return a.sum(axis=axis, keepdims=keepdims)
    return xp.sum(a, axis=axis, keepdims=keepdims)


def reduce_mean(xp, a, axis=None, keepdims=False):
    """``xp.mean`` over one axis (NumPy: the sum divided by the count, as ``numpy.mean``
    computes it, without its Python layers)."""
    if _aac.is_numpy_namespace(xp) and isinstance(axis, int) and a.dtype.kind == "f" and a.dtype.itemsize >= 4:
        return a.sum(axis=axis, keepdims=keepdims) / a.shape[axis]
    return xp.mean(a, axis=axis, keepdims=keepdims)


def mT(xp, a):
    """Matrix transpose of a stack, ``xp.linalg.matrix_transpose`` (a view; ``swapaxes`` on NumPy, without the wrapper)."""
    if _aac.is_numpy_namespace(xp):
        return a.swapaxes(-1, -2)
    return xp.linalg.matrix_transpose(a)


def reduce_max(xp, a, axis=None, keepdims=False):
    """``xp.max`` (the method on NumPy, as :func:`reduce_sum`)."""
    if _aac.is_numpy_namespace(xp):
        return a.max(axis=axis, keepdims=keepdims)
    return xp.max(a, axis=axis, keepdims=keepdims)


def reduce_min(xp, a, axis=None, keepdims=False):
    """``xp.min`` (the method on NumPy, as :func:`reduce_sum`)."""
    if _aac.is_numpy_namespace(xp):
        return a.min(axis=axis, keepdims=keepdims)
    return xp.min(a, axis=axis, keepdims=keepdims)


def reduce_all(xp, a, axis=None):
    """``xp.all`` (the method on NumPy, as :func:`reduce_sum`; a 0-d boolean there is its own
    answer, where a reduction would cost as much as one over a thousand entries)."""
    if _aac.is_numpy_namespace(xp):
        return a if a.ndim == 0 and a.dtype == _np.bool_ else a.all(axis=axis)
    return xp.all(a, axis=axis)


def full(xp, shape, value, dtype, like):
    """``xp.full`` on ``like``'s device (NumPy's and PyTorch's own: the namespace's wrapper
    checks the device first)."""
    if _aac.is_numpy_namespace(xp):  # a 0-d array or zeros: NumPy's faster constructors
        if shape == ():
            return _np.array(value, dtype=dtype)
        return _np.zeros(shape, dtype=dtype) if value == 0 else _np.full(shape, value, dtype=dtype)
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.full(shape, value, dtype=dtype, device=device(like))
    return xp.full(shape, value, dtype=dtype, device=device(like))


def positive_or_zero(xp, a):
    """``a`` where positive, else 0 (NaN too), as :func:`positive_or_one`."""
    if _aac.is_numpy_namespace(xp):
        return xp.where(a > 0, a, 0.0)
    return xp.where(a > 0, a, xp.zeros_like(a))


def positive_or_one(xp, a):
    """``a`` where positive, else 1 (a safe divisor). NumPy: a Python 1.0 in ``where`` keeps
    the dtype (NEP 50) without a ``ones_like`` array."""
    if _aac.is_numpy_namespace(xp):
        return xp.where(a > 0, a, 1.0)
    return xp.where(a > 0, a, xp.ones_like(a))


def diagonal(xp, a):
    """Diagonal of a stack of square matrices, shape (..., p): a copy on a NumPy stack (module docstring)."""
    if _aac.is_numpy_namespace(xp):
        d = a.diagonal(axis1=-2, axis2=-1)  # a read-only view, as xp.linalg.diagonal's
        return d.copy() if a.ndim > 2 else d
    if _aac.is_jax_namespace(xp):  # a strided slice of the flattened matrices: XLA fuses it, where the gather of
        p = a.shape[-1]  # xp.linalg.diagonal is a kernel of its own, with another for its indices
        return xp.reshape(a, (*a.shape[:-2], p * p))[..., :: p + 1]
    return xp.linalg.diagonal(a)


# Row block of ``normal_products`` on NumPy: ~1 MB of float64, so X^T Y reads the block from
# cache (the block size that measured best, design notes).
GRAM_BLOCK_ELEMENTS = 1 << 17
GRAM_BLOCK_MAX_COLUMNS = 64


def normal_products(xp, X, Y):
    """``(X^T X, X^T Y)`` for tall X. NumPy (2-D X, n <= 64): both formed block by block over the rows,
    the second product reading each block from cache (module docstring). Elsewhere two products."""
    m, n = X.shape[-2:]
    rows = max(GRAM_BLOCK_ELEMENTS // max(n, 1), 1)
    if not _aac.is_numpy_namespace(xp):
        return matmul(xp, xp.linalg.matrix_transpose(X), X), cross(xp, X, Y)
    # NumPy arrays: ``swapaxes`` and in-place sums (the namespace's wrappers, once per block,
    # add up)
    if X.ndim > 2 or n > GRAM_BLOCK_MAX_COLUMNS or m < 4 * rows:
        return X.swapaxes(-1, -2) @ X, cross(xp, X, Y)
    A, B = X[:rows].T @ X[:rows], X[:rows].T @ Y[:rows]
    for i in range(rows, m, rows):
        Xb = X[i : i + rows]
        A += Xb.T @ Xb
        B += Xb.T @ Y[i : i + rows]
    return A, B


def update_fresh(xp, a, op, b):
    """``op(a, b)``, ``op`` a standard elementwise function's name (e.g. "subtract"). ``a`` is (a view
    of) a temporary the caller made and holds no other reference to: NumPy writes the result into
    it, other libraries operate out of place (module docstring)."""
    if _aac.is_numpy_namespace(xp) and getattr(a, "flags", None) is not None and a.flags.writeable:
        return getattr(xp, op)(a, b, out=a)
    return getattr(xp, op)(a, b)


def minus_fresh(xp, b, a):
    """``b - a``, where ``a`` is a temporary the caller made: a product ``X @ W``, for the residual
    ``Y - X @ W``. As :func:`update_fresh`, NumPy writes it into ``a`` where the shapes allow (an
    X-sized temporary fewer)."""
    if (
        _aac.is_numpy_namespace(xp) and getattr(a, "flags", None) is not None and a.flags.writeable
        and (b.shape == a.shape or tuple(_np.broadcast_shapes(b.shape, a.shape)) == tuple(a.shape))
    ):  # fmt: skip
        return _np.subtract(b, a, out=a)
    return b - a


def sum_of_squares(xp, a, axis):
    """``sum(a * a, axis)`` where ``a`` is a temporary the caller no longer needs: squared in
    place on NumPy where it is writeable (:func:`update_fresh`'s rule, without its frame: on
    the small-fit route)."""
    if _aac.is_numpy_namespace(xp) and getattr(a, "flags", None) is not None and a.flags.writeable:
        return _np.multiply(a, a, out=a).sum(axis=axis)
    if axis == -2 and a.ndim >= 2:
        return dots(xp, a, a)  # PyTorch: one operator
    return reduce_sum(xp, a * a, axis=axis)


def zero_first_row(xp, a, first):
    """``a`` (..., m, k) with its first row set to zero; ``first`` (m, 1) is True on that row only.
    ``a`` is a temporary the caller made: NumPy writes the row in place (as :func:`update_fresh`),
    other libraries select (module docstring)."""
    if _aac.is_numpy_namespace(xp) and getattr(a, "flags", None) is not None and a.flags.writeable:
        a[..., :1, :] = 0
        return a
    return xp.where(first, xp.zeros((), dtype=a.dtype, device=device(a)), a)


def full_int(xp, batch_shape, value, like):
    """An integer array of shape ``batch_shape`` filled with ``value``, on ``like``'s device."""
    if _aac.is_numpy_namespace(xp):  # array-api-compat's default integer for NumPy (intp), at once
        return _np.full(batch_shape, value, dtype=_np.intp)
    _, int_dtype = default_dtypes(xp, device(like))
    return full(xp, batch_shape, value, int_dtype, like)


def all_true(xp, mask):
    """Scalar: every entry of ``mask`` (the whole batch takes one branch); a Python bool is its own answer."""
    return mask if type(mask) is bool else reduce_all(xp, mask)


def float_errors_ignored(X):
    """Context for a fit whose overflow or invalid value only fails a certificate (the lean route's, the Gram
    matrix's scale test), which then sends it back to a route that warns as before: NumPy's overflow, invalid and
    division warnings silenced where X computes with NumPy (a NumPy array, a list, array-api-strict)."""
    if (
        type(X) is _np.ndarray
        or is_host_array(X)
        or not is_array(X)
        or type(X).__module__.startswith("array_api_strict")
    ):
        return _np.errstate(over="ignore", invalid="ignore", divide="ignore")
    return contextlib.nullcontext()
