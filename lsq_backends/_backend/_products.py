"""Matrix products at the full precision of the dtype, and the vector kernels around them (the
Krylov solvers' columns, dot products, the lean route's certificate): part of the :mod:`._compat`
layer.

``matmul``: on GPUs and TPUs JAX multiplies float32 matrices in TF32/bfloat16 passes by default.
That destroys a Gram matrix (~3 correct digits), so the product asks for ``Precision.HIGHEST``.
PyTorch and CuPy take the precision from process-wide settings a user may have lowered (TF32,
bfloat16). It is forced to full float32 around the call and put back (:mod:`._precision`).

``cross``: XLA's CPU backend computed ``X^T @ y`` with one column (a matrix-vector product) from
a transposed copy of X. That is an X-sized temporary in every compiled fit (on sharded X, one
shard a device). Written ``(y^T @ X)^T`` it reads X as laid out: the same sums, n x k
transposed. Elsewhere ``a^T @ b`` as it reads.

**Vector kernels.** An iteration of LSMR or LSQR on a sparse X is a pair of sparse products and a dozen passes
over vectors of length m and n. On NumPy, where nothing fuses, each pass is memory traffic: on
a large sparse X the passes cost as much as the products (design notes). Three NumPy quirks,
all about reading values, which costs nothing in host memory:

- A column norm scaled against underflow (max, divide, square, sum: four passes and two
  temporaries) is needed only when the plain sum of squares leaves the normal range.
  :func:`column_norms` keeps the plain sum (one pass, ``einsum``: no temporary, no BLAS
  threads) where every column's lies in ``[p * tiny / eps, max]``. There the squares that
  underflow can lose at most eps of it, and none overflows.
- A masked update (``where`` over the whole state, a copy of every vector) is needed only
  while some columns have stopped and others run (:func:`select`).
- A scale of the products by a power of two (the problem put at unit scale) is applied only
  where it is not 1 (:func:`known_ones`). A multiplication of a long vector by 1 is a pass over
  it, and an allocation, for nothing.

And one about memory traffic: NumPy writes ``a * c`` whole into a new array and reads it back,
and the sum into another. On the Krylov solvers' vectors of length m these are passes over
memory (and writes to memory not in cache) that the update does not need. So
:func:`multiply_add` multiplies a 2-D ``a`` block of rows by block into a small buffer that
stays in cache. It adds each block into the result (``b`` itself where it is fresh).

And two functions whose array-api-compat wrappers write through boolean masks, whose counts CuPy
reads on the host: ``sign`` (on PyTorch too, with a NaN built from host data) and ``clip``
(:func:`sign`, :func:`clip`).

Elsewhere (traced JAX, GPUs, Dask) nothing is read: a read would wait for the device or break
tracing. The scaled norm, ``where`` and the scale are always applied, and ``a * c + b`` is the
expression (fusion makes them cheap). On NumPy the recurrences on tiny arrays (the per-column
scalars) use the NumPy module itself (:func:`plain_namespace`). There array-api-compat's
wrappers cost more than the operation (design notes).
"""

from __future__ import annotations

import array_api_compat as _aac
import numpy as _numpy

from ._precision import full_float32


def matmul(xp, a, b):
    """``a @ b`` at the full precision of the dtype: JAX's ``Precision.HIGHEST``; PyTorch's and
    CuPy's process-wide settings forced around the call (module docstring)."""
    if _aac.is_numpy_namespace(xp):
        return a @ b  # the same product, without the namespace wrapper's dispatch
    if _aac.is_torch_namespace(xp) and a.dtype == b.dtype and a.dtype != _torch_float32():
        # float64: no precision to force, and no wrapper's type promotion (about 10 us a call); a stack's
        # product is ``bmm`` itself, where ``matmul`` folds and unfolds the batch (two more operators)
        if a.ndim == 3 == b.ndim and a.shape[0] == b.shape[0]:
            import torch

            return torch.bmm(a, b)
        return a @ b
    if _aac.is_jax_namespace(xp):
        import jax

        return xp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)
    with full_float32(xp, a, b):
        return xp.matmul(a, b)


def _torch_float32():
    import torch

    return torch.float32


def cross(xp, a, b):
    """``a^T @ b`` at full precision (``a^T`` the matrix transpose), for tall ``a`` (..., m, n) and
    thin ``b`` (..., m, k). These are the cross products X^T y and X^T r of the Gram route. On
    JAX ``(b^T @ a)^T``, which reads X as laid out (module docstring)."""
    if _aac.is_numpy_namespace(xp):
        return a.swapaxes(-1, -2) @ b  # as ``matmul``, without the wrappers
    if _aac.is_jax_namespace(xp):
        return xp.linalg.matrix_transpose(matmul(xp, xp.linalg.matrix_transpose(b), a))
    if _aac.is_torch_namespace(xp):
        return matmul(xp, a.mT, b)  # the tensor's own transpose (the namespace's is a wrapper around it)
    return matmul(xp, xp.linalg.matrix_transpose(a), b)


# Vector kernels


def _scaled_norms(xp, a):
    """Column norms (..., 1, k), scaled by the largest entry. Unscaled, the squares of a vector near
    the underflow threshold summed to 0, and a norm of 0 stops the iteration at once. (X^T u for
    ridge on X ~ 1e-200 next to sqrt(alpha) ~ 1, which the problem's scaling leaves tiny.)"""
    big = xp.maximum(xp.max(a, axis=-2, keepdims=True), -xp.min(a, axis=-2, keepdims=True))
    c = xp.where(big != 0, big, xp.ones_like(big))
    b = a / c
    return c * xp.sqrt(xp.sum(b * b, axis=-2, keepdims=True))


def column_norms(xp, a):
    """The 2-norms of the columns of ``a`` (..., p, k), as (..., 1, k), safe from underflow and
    overflow (see :func:`_scaled_norms`). NumPy keeps the plain sum of squares where that is
    safe (module docstring)."""
    if _aac.is_numpy_namespace(xp) and a.shape[-2] > 0:
        import numpy as np

        ss = np.einsum("...ij,...ij->...j", a, a)[..., None, :]
        info = np.finfo(a.dtype)
        low = a.shape[-2] * float(info.smallest_normal) / float(info.eps)
        if bool(np.all((ss >= low) & (ss <= info.max))):
            return np.sqrt(ss)
    return _scaled_norms(xp, a)


def column_squares(xp, a):
    """The sums of squares of the columns of ``a`` (..., p, k), as (..., k), unscaled: :func:`dots` of ``a`` with
    itself (NumPy's ``a * a`` would be a temporary of ``a``'s size, a second copy of a centered X)."""
    return dots(xp, a, a)


def select(xp, pick, a, b):
    """``where(pick, a, b)``, or field by field for two NamedTuples of arrays (a solver's
    state). Quirk: on NumPy ``a`` or ``b`` itself where ``pick`` is all True or all False (no
    copy of either, and one test for all fields)."""
    if _aac.is_numpy_namespace(xp):
        if pick.all():
            return a
        if not pick.any():
            return b
    if isinstance(a, tuple):
        return type(a)(*(xp.where(pick, x, y) for x, y in zip(a, b, strict=True)))
    return xp.where(pick, a, b)


def known_ones(xp, factor):
    """True where every entry of ``factor`` (a scale, e.g. a power of two) is known to be 1. Then the
    multiplication by it may be skipped. Only NumPy reads it (free); elsewhere it is always False,
    and the factor is applied (module docstring)."""
    return _aac.is_numpy_namespace(xp) and bool((factor == 1).all())


_BLOCK = 1 << 15  # elements of a block of rows in multiply_add: 256 KiB of float64, in cache


def add_product(xp, b, a, c, sign=1):
    """``b + sign * a * c`` (``sign`` a number: 1 and -1 exactly), broadcast: PyTorch's ``addcmul``, one operator where
    the product and the sum took two (its CPU kernel rounds them once: not bit for bit the two)."""
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.addcmul(b, a, c, value=sign)
    if sign == 1 or sign == -1:
        return b + a * c if sign == 1 else b - a * c
    return b + (sign * a) * c


def multiply_add(xp, a, c, b, fresh=False):
    """``a * c + b`` for ``a``, ``b`` (..., p, k) and ``c`` (..., 1, k) (one factor per column). Rounded as
    written (the product, then the sum): ``b - c * a`` is ``multiply_add(a, -c, b)`` bit for bit. ``fresh``:
    ``b`` is a temporary the caller made (``X @ V``), with no other reference. NumPy: by cache-sized row blocks."""
    shape = tuple(getattr(c, "shape", ()))
    if not (
        _aac.is_numpy_namespace(xp) and a.ndim == 2 and a.shape == b.shape and a.size > _BLOCK
        and (len(shape) < 2 or (len(shape) == 2 and shape[0] == 1))
    ):  # fmt: skip
        return a * c + b  # (short vectors: the expression costs less to call)
    import numpy as np

    dtype = np.result_type(a, c, b)
    own = fresh and b.dtype == dtype and b.flags.writeable and not np.may_share_memory(a, b)
    out = b if own else np.empty(a.shape, dtype=dtype)
    p, k = a.shape
    rows = max(1, _BLOCK // k)
    scratch = np.empty((min(rows, p), k), dtype=dtype)
    for i in range(0, p, rows):
        j = min(i + rows, p)
        np.add(np.multiply(a[i:j], c, out=scratch[: j - i]), b[i:j], out=out[i:j])
    return out


def nonzero_or_one(xp, d):
    """``d`` where nonzero, else 1: a safe divisor. NumPy: a Python 1.0 in ``where`` keeps the
    dtype (NEP 50) without a ``ones_like`` array (the recurrences' scalars take a dozen a step)."""
    if _aac.is_numpy_namespace(xp):
        import numpy as np

        return np.where(d != 0, d, 1.0)
    return xp.where(d != 0, d, xp.ones_like(d))


def plain_namespace(xp):
    """The namespace for a recurrence of many operations on tiny arrays (the Krylov solvers'
    per-column scalars, a hundred operations an iteration). On NumPy the NumPy module itself,
    without array-api-compat's wrappers (design notes): the functions the solvers use behave the same."""
    if _aac.is_numpy_namespace(xp):
        import numpy as np

        return np
    return xp


def clip(xp, a, low, high):
    """``a`` clipped to the Python numbers ``[low, high]``, NaN kept. Quirk: the standard's ``clip``
    in array-api-compat writes through boolean masks on CuPy (each a host read) and ``maximum`` and
    ``minimum`` need two fills of ``a``'s shape; each library's own takes the numbers in one
    operation."""
    if _aac.is_numpy_namespace(xp):
        import numpy as np

        return np.clip(a, low, high)
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.clamp(a, low, high)
    if _aac.is_cupy_namespace(xp):
        import cupy

        return cupy.clip(a, low, high)
    if _aac.is_jax_namespace(xp):
        import jax.numpy as jnp

        return jnp.clip(a, low, high)
    return xp.minimum(xp.maximum(a, xp.full_like(a, low)), xp.full_like(a, high))


def sign(xp, a):
    """The sign of a real ``a``, NaN kept. Quirk: array-api-compat's CuPy and PyTorch ``sign`` put NaN
    back through a boolean mask (``out[isnan(x)] = nan``: CuPy reads the mask's count on the host, a
    synchronization per call, four per LSMR iteration; PyTorch builds the NaN from host data). ``where``
    reads nothing."""
    if _aac.is_cupy_namespace(xp):
        import cupy

        return cupy.where(cupy.isnan(a), a, cupy.sign(a))
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.where(torch.isnan(a), a, torch.sign(a))
    return xp.sign(a)


# Targets up to which a column's dot product is a matrix product on PyTorch (one operator, k**2 dots).
DOT_TARGETS = 16
_VECDOT = getattr(_numpy, "vecdot", None)  # NumPy 2


def dots(xp, a, b):
    """``sum(a * b, axis=-2)`` (..., k) for ``a``, ``b`` (..., m, k): each column's dot product. PyTorch,
    with few columns: the diagonal of ``a^T b``, one operator where the product and the sum took two (each a
    kernel launch on a GPU)."""
    if _aac.is_torch_namespace(xp) and a.shape[-1] <= DOT_TARGETS:
        import torch

        if a.ndim == 2 and a.dtype == torch.float64 == b.dtype:  # no precision to force, no batch: the product
            return torch.linalg.diagonal(a.mT @ b)
        return torch.linalg.diagonal(matmul(xp, a.mT, b))  # float32 at full precision (TF32: a user's setting)
    if _aac.is_numpy_namespace(xp):
        if a.ndim == 2 and a.shape[-1] <= DOT_TARGETS and _VECDOT is not None:  # NumPy 2's gufunc: BLAS dots,
            return _VECDOT(a, b, axis=-2)  # half einsum's call cost on a small fit, faster on tall columns
        return _numpy.einsum("...ij,...ij->...j", a, b)  # no product temporary, no wrapper (stacks: faster)
    return xp.sum(a * b, axis=-2)


def within(xp, q, lo, hi):
    """0-d boolean: every entry of ``q`` within ``[lo, hi]`` (arrays of its shape); NaN is not. PyTorch: one
    ``clamp`` and its comparison, where the two comparisons and their conjunction took three."""
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.all(torch.clamp(q, lo, hi) == q)
    if _aac.is_numpy_namespace(xp):
        return ((q >= lo) & (q <= hi)).all()  # the method: no wrapper
    if q.ndim > 1:  # a stack's q: JAX (with rank promotion refused) needs the bounds at its rank
        lo, hi = (xp.reshape(b, (1,) * (q.ndim - 1) + tuple(b.shape)) for b in (lo, hi))
    return xp.all((q >= lo) & (q <= hi))


def flat_concat(xp, arrays, batch=(), dtype=None):
    """The arrays' entries per problem of a stack of shape ``batch``, side by side: (*batch, total), of ``dtype``
    where given (an integer array among floats cast to it: by PyTorch's and NumPy's own concatenation, which
    promote in one operator, where a cast of its own is another kernel on a GPU). NumPy and PyTorch: their own
    ``reshape`` and concatenation, without the wrappers (a microsecond each)."""
    rank = len(batch) + 1  # parts already laid out as (*batch, p) are taken as they are (a reshape: ~1 us)
    if _aac.is_numpy_namespace(xp):
        return _numpy.concatenate(
            [a if a.ndim == rank else a.reshape(*batch, -1) for a in arrays], axis=-1, dtype=dtype
        )
    if _aac.is_torch_namespace(xp):
        import torch

        out = torch.cat([a if a.ndim == rank else a.reshape(*batch, -1) for a in arrays], dim=-1)
        return out if dtype is None or out.dtype == dtype else out.to(dtype)
    if dtype is not None:
        arrays = [a if a.dtype == dtype else xp.astype(a, dtype) for a in arrays]
    out = xp.concat([xp.reshape(a, (*batch, -1)) for a in arrays], axis=-1)
    return out if dtype is None or out.dtype == dtype else xp.astype(out, dtype)


def add_to_diagonal(xp, a, value):
    """``a + value I`` for a stack ``a`` (..., p, p) that the caller made and holds no other reference to, and a
    0-d ``value``: added in place on the diagonal's view where the library writes views (PyTorch, NumPy), one
    operator where the identity, its product and the sum took four."""
    if _aac.is_torch_namespace(xp):
        a.diagonal(dim1=-2, dim2=-1).add_(value)
        return a
    if _aac.is_numpy_namespace(xp) and a.flags.writeable:
        d = a.diagonal(axis1=-2, axis2=-1)
        d.setflags(write=True)
        d += value
        return a
    from ._devices import eye_like

    eye = eye_like(xp, a, a.shape[-1])
    return a + value * (xp.reshape(eye, (1,) * (a.ndim - 2) + tuple(eye.shape)) if a.ndim > 2 else eye)
