"""Full float32 precision for matrix products, whatever the user set globally: part of the
:mod:`._compat` layer (reached through ``_compat.matmul``, the one place products are made).

A Gram matrix or a ``Q^T y`` formed in TF32 (10 explicit mantissa bits) or bfloat16 (7) keeps
about 3 (or 2) correct digits. The factorization after it cannot recover them. PyTorch and CuPy
read the precision of float32 products from process-wide settings, which a user may have
lowered for their own network training:

- PyTorch: ``torch.set_float32_matmul_precision("high"/"medium")``,
  ``torch.backends.cuda.matmul.allow_tf32 = True`` or, from torch 2.9 on,
  ``torch.backends.cuda.matmul.fp32_precision = "tf32"`` (CUDA, cuBLAS) and
  ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"`` (CPU, oneDNN on CPUs with bfloat16
  units; ``set_float32_matmul_precision("medium")`` sets it). The setting is read when the
  product is dispatched. So it is forced to full precision around that call, and put back after.
  cuBLAS's triangular solve (trsm) runs on the handle torch switches to TF32 math as well. So
  the float32 triangular solves of ``_factorizations`` are guarded the same way.
- CuPy: ``CUPY_TF32=1`` makes float32 products use ``CUBLAS_COMPUTE_32F_FAST_TF32``. CuPy keeps
  the compute type per dtype in ``cupy._core._routines_linalg`` (private, but the only handle).
  Where it is TF32, BF16 or FP16, ``COMPUTE_TYPE_PEDANTIC`` (``CUBLAS_COMPUTE_32F_PEDANTIC``,
  full float32 in every phase) is set around the call. CuPy's default (full float32) is left
  alone. Where that private API is missing the product runs unguarded.

Only float32 is affected (float64 products never use reduced precision). Nothing is changed when
the settings already are full precision, so the common case costs a read of two flags. The
override is counted across threads. The user's settings are put back when the last product that
needed them finishes; meanwhile another thread's own float32 products also run at full
precision. ``tests/backend/test_precision_guards.py`` checks every guard on the devices of the session
(torch on the CPU and CUDA, CuPy), and with stand-ins where the library cannot run.

``torch_force``: one decision for all devices. Products on the CPU and on a GPU in two threads
share the override (``OVERRIDES["torch"]``), so whoever forces first forces every backend.
Quirk (torch >= 2.9): the legacy global precision (``set_float32_matmul_precision``,
``allow_tf32``) and the per-backend ``fp32_precision`` knobs are separate state. The legacy
getters raise ("mix of the legacy and new APIs") while they disagree. Forcing a knob alone under
a legacy "high" made ``torch.backends.cuda.matmul.allow_tf32`` raise in every other thread for
as long as a product ran. So the settings are forced through the API the user set. A lowered
legacy precision is set to "highest" (which sets the knobs to full precision too) and put back.
Knobs lowered through the new API alone are set to "ieee" and put back. Either way every getter
answers meanwhile.
"""

from __future__ import annotations

import contextlib
import threading

import array_api_compat as _aac

__all__ = ["Override", "cupy_force", "full_float32", "torch_force"]


class Override:
    """A process-wide setting forced for the duration of a ``with`` block, nested and across
    threads. The first block in forces it: ``force()`` returns the function that restores the
    user's value, or None when nothing had to change. The last one out restores it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._depth = 0
        self._restore = None

    @contextlib.contextmanager
    def __call__(self, force):
        with self._lock:
            if self._depth == 0:
                self._restore = force()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._restore is not None:
                    restore, self._restore = self._restore, None
                    restore()


# One per process-wide state: torch's precision settings (the global one and the per-backend
# knobs are forced and restored together, see ``torch_force`` in the module docstring), CuPy's
# float32 compute type.
OVERRIDES = {"torch": Override(), "cupy": Override()}

# Values of torch's per-backend ``fp32_precision`` (torch >= 2.9) that mean full float32:
# "none" is what every knob reads when nothing was set (the backend's full-precision default).
_FULL = ("ieee", "none")


def _torch_knobs(torch):
    """torch's per-backend float32 matmul knobs (torch >= 2.9: cuBLAS and oneDNN), or None."""
    if not hasattr(torch.backends, "fp32_precision"):
        return None
    knobs = {"cuda": torch.backends.cuda.matmul}
    mkldnn = getattr(getattr(torch.backends, "mkldnn", None), "matmul", None)
    if mkldnn is not None:
        knobs["cpu"] = mkldnn
    return knobs


def _legacy_precision(torch):
    """``torch.get_float32_matmul_precision()``, or None where torch refuses to answer (a state
    the per-backend knobs set that the legacy setting cannot represent)."""
    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:
        return None


def torch_force(torch):
    """Force full float32 products on every torch backend (cuBLAS and oneDNN), through the API the
    user lowered them with (module docstring). Returns the function that restores the user's
    settings, or None when they already are full precision."""
    knobs = _torch_knobs(torch)
    if knobs is None:  # before 2.9 one global setting drives both backends
        precision = torch.get_float32_matmul_precision()
        if precision == "highest":
            return None
        torch.set_float32_matmul_precision("highest")
        return lambda: torch.set_float32_matmul_precision(precision)
    current = {name: knob.fp32_precision for name, knob in knobs.items()}
    lowered = [name for name, value in current.items() if value not in _FULL]
    if not lowered:
        return None
    # The getter resolves an unset knob to the generic setting: put back "unset" then, so that
    # the knob keeps following later changes of torch.backends.fp32_precision.
    generic = getattr(torch.backends, "fp32_precision", None)
    saved = {name: "none" if value == generic else value for name, value in current.items()}
    legacy = _legacy_precision(torch)
    if legacy not in (None, "highest"):
        torch.set_float32_matmul_precision("highest")

        def restore_legacy():
            torch.set_float32_matmul_precision(legacy)
            for name, knob in knobs.items():  # a knob the user set apart from the legacy value
                if knob.fp32_precision != current[name]:
                    knob.fp32_precision = saved[name]

        return restore_legacy
    for name in lowered:
        knobs[name].fp32_precision = "ieee"

    def restore_knobs():
        for name in lowered:
            knobs[name].fp32_precision = saved[name]

    return restore_knobs


# CuPy's compute types that lower float32 products (cupy/_core/_routines_linalg.pyx): TF32
# (CUPY_TF32=1), BF16, FP16. DEFAULT (CUBLAS_COMPUTE_32F), FP32 and PEDANTIC are full float32.
_CUPY_LOWERED = ("COMPUTE_TYPE_TF32", "COMPUTE_TYPE_BF16", "COMPUTE_TYPE_FP16")


def cupy_force(cupy, dtype):
    """Force ``CUBLAS_COMPUTE_32F_PEDANTIC`` for CuPy's products of ``dtype`` where a lowered compute
    type (TF32, BF16, FP16) was asked for. Returns the function that restores it, or None: already
    full precision (CuPy's default, left alone), or no private ``_routines_linalg`` API (left as it is)."""
    try:
        from cupy._core import _routines_linalg as linalg

        pedantic = linalg.COMPUTE_TYPE_PEDANTIC
        current = linalg.get_compute_type(dtype)  # resolves CUPY_TF32 on first use
    except (ImportError, AttributeError):
        return None
    if current not in {getattr(linalg, name, None) for name in _CUPY_LOWERED} - {None}:
        return None
    linalg.set_compute_type(dtype, pedantic)
    return lambda: linalg.set_compute_type(dtype, current)


def full_float32(xp, a, b):
    """A context in which ``xp``'s product of ``a`` and ``b`` runs in full float32 precision
    (a no-op context for other dtypes and libraries: JAX takes ``precision=`` per call)."""
    if _aac.is_torch_namespace(xp):
        import torch

        if torch.float32 in (a.dtype, b.dtype) and a.device.type in ("cuda", "cpu"):
            return OVERRIDES["torch"](lambda: torch_force(torch))
    elif _aac.is_cupy_namespace(xp):
        import cupy

        if cupy.float32 in (a.dtype, b.dtype):
            return OVERRIDES["cupy"](lambda: cupy_force(cupy, cupy.float32))
    return contextlib.nullcontext()
