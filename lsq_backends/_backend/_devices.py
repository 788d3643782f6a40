"""Where arrays are made: part of the :mod:`._compat` layer (solvers and entry points reach
these through it).

Two quirks of the GPU libraries decide how a fit makes its own arrays:

- **Constants made on the device.** ``xp.asarray(<Python number or list>, device=cuda)`` builds
  the array in host memory and copies it over. On PyTorch that is a blocking copy
  (``memcpy_and_sync``), on CuPy a synchronous ``cudaMemcpy`` from pageable memory. Either way
  it is a stream synchronization in the middle of a fit. On those two libraries
  :func:`constants` fills the array on the device instead (``xp.full``, no host data), and
  :func:`powers_of_two` computes its table there (:func:`exact_powers` needs none where the
  library reinterprets bits). PyTorch on the CPU takes the same code path as
  on CUDA, so that CPU tests see it. Elsewhere the values are taken as they are. JAX's transfers
  do not block (and under ``jit`` a constant is free); Dask and array-api-strict live in host
  memory.
- **The input's device entered (CuPy).** array-api-compat ignores ``device=`` in CuPy's creation
  functions (CuPy has no such argument: arrays land on the *current* device). So a fit of X on
  GPU 1 made its zeros, identities and constants on GPU 0. :func:`on_input_device` wraps every
  public entry point. It makes the device of the first CuPy array among the arguments current
  for the call (``with X.device:``); elsewhere it changes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import numbers

import array_api_compat as _aac
import numpy as _np

__all__ = [
    "FILL_MAX",
    "constants",
    "device_scope",
    "exact_powers",
    "eye_like",
    "on_input_device",
    "powers_of_two",
    "to_numpy",
]

# Up to this many values a sequence is assembled on the device, one fill per value; a longer
# one is copied (one synchronization, cheaper than that many launches).
FILL_MAX = 64


def _device_of(like):
    return _aac.device(like) if _aac.is_array_api_obj(like) else like


def _number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _copy_blocks(xp):
    """Whether ``xp.asarray`` of host data blocks a device's stream (PyTorch, CuPy)."""
    return _aac.is_torch_namespace(xp) or _aac.is_cupy_namespace(xp)


def constants(xp, values, dtype, like, shared=False):
    """Python numbers as an array of ``dtype`` on ``like``'s device (``like`` an array or a device): a number 0-d, a
    list or tuple 1-D, a NumPy array its shape. PyTorch and CuPy fill up to :data:`FILL_MAX` numbers, or runs of
    equal ones (a certificate's bounds, per column), on the device; the rest, and elsewhere: ``xp.asarray``.
    ``shared``, for a number its callers only read (a penalty): PyTorch and CuPy remember it (one fill a fit)."""
    if _aac.is_numpy_namespace(xp):
        return xp.asarray(values, dtype=dtype)
    dev = _device_of(like)
    if not _copy_blocks(xp):
        return xp.asarray(values, dtype=dtype, device=dev)
    if _aac.is_numpy_array(values) and values.ndim <= 1:
        values = values.tolist()  # host memory: read for free
    try:
        if _number(values):
            return _shared_number(xp, values, dtype, dev) if shared else xp.full((), values, dtype=dtype, device=dev)
        if isinstance(values, (list, tuple)) and len(values) > 0 and all(_number(v) for v in values):
            if len(values) <= FILL_MAX:
                return xp.stack([xp.full((), v, dtype=dtype, device=dev) for v in values])
            runs = []  # [value, count] (a plain loop: ``torch.compile`` traces it)
            for v in values:
                if runs and runs[-1][0] == v:
                    runs[-1][1] += 1
                else:
                    runs.append([v, 1])
            if len(runs) <= FILL_MAX:
                return xp.concat([xp.full((count,), v, dtype=dtype, device=dev) for v, count in runs])
    except (RuntimeError, OverflowError):
        pass  # a value beyond the dtype's range: torch's fill refuses it, asarray makes it inf
    return xp.asarray(values, dtype=dtype, device=dev)


def _shared_number(xp, value, dtype, dev):
    """:func:`constants` of one number, remembered (the last :data:`SHARED_MAX`, keyed also by PyTorch's
    ``inference_mode``, whose tensors autograd refuses to save)."""
    inference = False
    if _aac.is_torch_namespace(xp):
        import torch

        inference = torch.is_inference_mode_enabled()
    key = (xp.__name__, value, dtype, dev, inference)
    try:
        return _SHARED[key]
    except KeyError:
        if len(_SHARED) >= SHARED_MAX:
            _SHARED.clear()
        made = _SHARED[key] = xp.full((), value, dtype=dtype, device=dev)
        return made
    except TypeError:  # an unhashable device
        return xp.full((), value, dtype=dtype, device=dev)


SHARED_MAX = 256
_SHARED: dict = {}


def eye_like(xp, a, p):
    """The identity of size p in ``a``'s dtype on its device (NumPy's own ``eye``: the namespace's
    wrapper checks the device first)."""
    if _aac.is_numpy_namespace(xp):
        return _np.eye(p, dtype=a.dtype)
    return xp.eye(p, dtype=a.dtype, device=_aac.device(a))


def powers_of_two(xp, nbits, like):
    """``(2**b, 2**(2**b), 2**-(2**b))`` for ``b = 0 .. nbits - 1``, exactly, in ``like``'s dtype on its device.
    PyTorch and CuPy: from one running product of twos (each partial product a power of two, exact in any
    order), no host data. Elsewhere, or without the 2024.12 standard's ``cumulative_prod``: from host memory."""
    if not _copy_blocks(xp) or not hasattr(xp, "cumulative_prod"):
        dev = None if _aac.is_numpy_namespace(xp) else _aac.device(like)
        return tuple(
            xp.asarray(values, dtype=like.dtype, device=dev)
            for values in (
                [float(2**b) for b in range(nbits)],
                [2.0 ** (2**b) for b in range(nbits)],
                [2.0 ** -(2**b) for b in range(nbits)],
            )
        )
    dev = _aac.device(like)
    twos = xp.full((2 ** (nbits - 1),), 2.0, dtype=like.dtype, device=dev)
    powers = xp.cumulative_prod(twos, include_initial=True)  # 2**i, i = 0 .. 2**(nbits - 1)
    step = powers[:nbits]
    up = xp.take(powers, xp.astype(step, xp.int32), axis=0)
    return step, up, 1 / up


# float dtype -> (integer of its width, mantissa bits, exponent bias): IEEE 754 binary64 and binary32
_LAYOUT = {"float64": ("int64", 52, 1023), "float32": ("int32", 23, 127)}


def exact_powers(xp, k, limit):
    """``2**k`` for an integer-valued float array ``k`` with ``|k| <= limit`` (``2**+-limit`` normal numbers),
    exactly, in ``k``'s dtype on its device: the bits ``(k + bias) << mantissa`` where the library reinterprets
    bits, else a product of the exact constants ``2**(+-2**b)`` that the bits of ``|k|`` select (the standard
    has no ``ldexp`` and does not promise ``pow`` exact)."""
    name = str(k.dtype).rsplit(".", 1)[-1]
    if name in _LAYOUT and not (_aac.is_array_api_strict_namespace(xp) or _aac.is_dask_namespace(xp)):
        int_name, mantissa, bias = _LAYOUT[name]
        bits = (xp.astype(k, getattr(xp, int_name)) + bias) << mantissa
        if _aac.is_jax_namespace(xp):
            import jax

            return jax.lax.bitcast_convert_type(bits, k.dtype)
        return bits.view(k.dtype)
    nbits = limit.bit_length()
    step, up, down = (xp.reshape(v, (1, nbits)) for v in powers_of_two(xp, nbits, k))
    col = k[..., None]
    bit = xp.remainder(xp.floor(xp.abs(col) / step), 2) == 1  # (..., nbits)
    return xp.prod(xp.where(bit, xp.where(col < 0, down, up), xp.ones_like(up)), axis=-1)


_PLAIN = frozenset({bool, int, float, str, _np.ndarray})  # the common arguments, skipped at once


def _cupy_arrays(objs):
    for obj in objs:
        if obj is None or type(obj) in _PLAIN:
            continue
        if _aac.is_cupy_array(obj):
            yield obj
        elif isinstance(obj, tuple):  # a state (NamedTuple); not lists, which may hold a whole X
            yield from _cupy_arrays(obj)
        elif isinstance(getattr(obj, "state", None), tuple):  # an accumulator: its state's device
            yield from _cupy_arrays(obj.state)


def device_scope(*objs):
    """A context in which the device of the first CuPy array among ``objs`` is CuPy's current
    device; a no-op context where there is none. ``objs``: arrays, tuples of them, objects
    holding a tuple ``state`` of them."""
    for a in _cupy_arrays(objs):
        return a.device  # cupy.cuda.Device: entering it makes it current
    return contextlib.nullcontext()


def on_input_device(fn):
    """``fn`` run with the device of its CuPy arguments current (:func:`device_scope` of the
    positional and keyword arguments). So a public entry point's own arrays are made on X's
    device."""

    @functools.wraps(fn)
    def entered(*args, **kwargs):
        with device_scope(*args, *kwargs.values()):
            return fn(*args, **kwargs)

    return entered


def to_numpy(a):
    """An eager array of any library as a NumPy array (a copy to the host where it is elsewhere).

    Quirks: PyTorch tensors leave their device by ``.cpu()`` (``numpy.asarray`` refuses CUDA),
    CuPy arrays by ``.get()``, array-api-strict arrays on a named device by ``to_device``."""
    import numpy as np

    if _aac.is_torch_array(a):
        return a.detach().cpu().numpy()
    if _aac.is_cupy_array(a):
        return a.get()
    if type(a).__module__.startswith("array_api_strict"):
        import array_api_strict

        a = a.to_device(array_api_strict.Device("CPU_DEVICE"))
    return np.asarray(a)
