"""Full float32 precision for matrix products, whatever the user set globally: part of the
:mod:`._compat` layer (reached through ``_compat.matmul``, the one place products are made).

A Gram matrix or a ``Q^T y`` formed in TF32 (10 explicit mantissa bits) or bfloat16 (7) keeps
about 3 (or 2) correct digits, and the factorization after it cannot recover them. PyTorch and
CuPy read the precision of float32 products from process-wide settings a user may have lowered
for their own network training:

- PyTorch: ``torch.set_float32_matmul_precision("high"/"medium")``,
  ``torch.backends.cuda.matmul.allow_tf32 = True`` or, from torch 2.9 on,
  ``torch.backends.cuda.matmul.fp32_precision = "tf32"`` (CUDA, cuBLAS) and
  ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"`` (CPU, oneDNN on CPUs with bfloat16
  units; ``set_float32_matmul_precision("medium")`` sets it). The setting is read when the
  product is dispatched, so it is forced to full precision around that call and put back after.
- CuPy: ``CUPY_TF32=1`` makes float32 products use ``CUBLAS_COMPUTE_32F_FAST_TF32``; CuPy keeps
  the compute type per dtype in ``cupy._core._routines_linalg`` (private, but the only handle):
  ``COMPUTE_TYPE_PEDANTIC`` (``CUBLAS_COMPUTE_32F_PEDANTIC``, full float32 in every phase) is set
  around the call. Where that private API is missing the product runs unguarded. Not exercised on
  a GPU by the test suite (CuPy needs one); the logic is unit-tested with stand-ins.

Only float32 is affected (float64 products never use reduced precision). Nothing is changed when
the setting is already full precision, so the common case costs one read of a flag. The override
is counted across threads: the user's setting is put back when the last product that needed it
finishes (another thread's own float32 products meanwhile also run at full precision).
"""

from __future__ import annotations

import contextlib
import threading

import array_api_compat as _aac

__all__ = ["Override", "cupy_force", "full_float32", "torch_force"]


class Override:
    """A process-wide setting forced for the duration of a ``with`` block, nested and across
    threads: the first block in forces it (``force()`` returns the function that restores the
    user's value, or None when nothing had to change), the last one out restores it."""

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


# One per process-wide setting: torch's "cuda" (cuBLAS) and "cpu" (oneDNN) knobs, the single
# global precision of torch before 2.9 ("torch"), CuPy's float32 compute type.
OVERRIDES = {"cuda": Override(), "cpu": Override(), "torch": Override(), "cupy": Override()}

# Values of torch's per-backend ``fp32_precision`` (torch >= 2.9) that mean full float32:
# "none" is what every knob reads when nothing was set (the backend's full-precision default).
_FULL = ("ieee", "none")


def torch_force(torch, kind):
    """Force full float32 products on torch's ``kind`` ("cuda" or "cpu") backend; returns the
    function that restores the previous setting, or None when it was already full precision."""
    backend = torch.backends.cuda if kind == "cuda" else getattr(torch.backends, "mkldnn", None)
    knob = getattr(backend, "matmul", None)
    try:
        current = knob.fp32_precision  # torch >= 2.9: per-backend setting
    except AttributeError:  # older torch: only the global matmul precision
        current = None
    if current is not None:
        if current in _FULL:
            return None
        # The getter resolves an unset knob to the generic setting: put back "unset" then, so
        # that the knob keeps following later changes of torch.backends.fp32_precision.
        back = "none" if current == getattr(torch.backends, "fp32_precision", None) else current
        knob.fp32_precision = "ieee"
        return lambda: setattr(knob, "fp32_precision", back)
    # Before 2.9 one setting drives both backends (allow_tf32 is the same flag as precision !=
    # "highest"), so it is forced whatever the device: products on the CPU and on a GPU in two
    # threads share the override (OVERRIDES["torch"]).
    precision = torch.get_float32_matmul_precision()
    if precision == "highest":
        return None
    torch.set_float32_matmul_precision("highest")
    return lambda: torch.set_float32_matmul_precision(precision)


def cupy_force(cupy, dtype):
    """Force ``CUBLAS_COMPUTE_32F_PEDANTIC`` for CuPy's products of ``dtype``; returns the
    function that restores the previous compute type, or None (already pedantic, or CuPy
    without the private ``_routines_linalg`` compute-type API: left as it is)."""
    try:
        from cupy._core import _routines_linalg as linalg

        pedantic = linalg.COMPUTE_TYPE_PEDANTIC
        current = linalg.get_compute_type(dtype)  # resolves CUPY_TF32 on first use
    except (ImportError, AttributeError):
        return None
    if current == pedantic:
        return None
    linalg.set_compute_type(dtype, pedantic)
    return lambda: linalg.set_compute_type(dtype, current)


def full_float32(xp, a, b):
    """A context in which ``xp``'s product of ``a`` and ``b`` runs in full float32 precision
    (a no-op context for other dtypes and libraries: JAX takes ``precision=`` per call)."""
    if _aac.is_torch_namespace(xp):
        import torch

        kind = a.device.type
        if torch.float32 in (a.dtype, b.dtype) and kind in ("cuda", "cpu"):
            key = kind if hasattr(torch.backends, "fp32_precision") else "torch"  # 2.9 added both
            return OVERRIDES[key](lambda: torch_force(torch, kind))
    elif _aac.is_cupy_namespace(xp):
        import cupy

        if cupy.float32 in (a.dtype, b.dtype):
            return OVERRIDES["cupy"](lambda: cupy_force(cupy, cupy.float32))
    return contextlib.nullcontext()
