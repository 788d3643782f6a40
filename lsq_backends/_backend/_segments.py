"""Sums over segments (groups of rows given by integer codes), which the array API standard lacks:
part of the backend layer (re-exported by :mod:`lsq_backends._backend._compat`).

A cluster-robust covariance sums each observation's scores over its cluster: ``out[..., g, :] =
sum of values[..., i, :] over the rows i with codes[i] == g``. Each library has its own scatter-add;
every branch takes O(m k + G k) memory, none an m x G indicator matrix (G up to m):

- NumPy: one ``bincount`` over the flattened values, the bin of entry (i, j) being
  ``codes[i] * k + j``: one pass, summed in row order within each bin (as statsmodels'
  column-wise ``bincount``), 2-3 times faster than ``np.add.at`` or a loop of ``bincount`` over
  the columns (design notes).
- PyTorch: ``index_add`` (differentiable; one kernel on CUDA).
- JAX: ``jax.ops.segment_sum``, whose number of segments is static under ``jax.jit``.
- CuPy: ``cupyx.scatter_add`` (atomic adds) into zeros.
- Dask: the NumPy kernel on each block of rows, the blocks' (G, k) partial sums then added.
- Any other library (array-api-strict): an indicator product, ``1[codes == g]^T values``, one block
  of at most ``_BLOCK`` rows of the indicator at a time (O(m G k) operations: for tests and small G).

Codes outside ``[0, n_segments)`` are the caller's to refuse (NumPy and PyTorch raise, JAX and the
indicator product drop them).
"""

from __future__ import annotations

import array_api_compat as _aac

from ._products import matmul

__all__ = ["prepare_segments", "segment_sum"]

_BLOCK = 1 << 20  # entries of one block of the indicator matrix (generic branch)


def _numpy_segment_sum(values, codes, n_segments):
    import numpy as np

    rows = np.moveaxis(values, -2, 0)  # (m, ..., k): a view; reshape copies only for a stack
    m, rest = rows.shape[0], rows.shape[1:]
    flat = rows.reshape(m, -1)
    k = flat.shape[1]
    bins = (np.asarray(codes, dtype=np.intp)[:, None] * k + np.arange(k)).ravel()
    out = np.bincount(bins, weights=flat.ravel(), minlength=n_segments * k)
    return np.moveaxis(out.reshape(n_segments, *rest), 0, -2).astype(values.dtype, copy=False)


class _Indicator:
    """NumPy codes (m,) prepared for many sums: the n x m indicator as a SciPy CSR matrix, made once (float64,
    whatever the values: ``bincount``'s accumulation), whose product sums each segment in row order."""

    def __init__(self, codes, n_segments):
        import numpy as np
        import scipy.sparse

        m = codes.shape[0]
        self.matrix = scipy.sparse.csr_array((np.ones(m), (codes, np.arange(m))), shape=(n_segments, m))

    def sums(self, values):
        import numpy as np

        rows = np.moveaxis(values, -2, 0)
        m, rest = rows.shape[0], rows.shape[1:]
        out = self.matrix @ rows.reshape(m, -1)
        return np.moveaxis(out.reshape(self.matrix.shape[0], *rest), 0, -2).astype(values.dtype, copy=False)


def prepare_segments(xp, codes, n_segments):
    """``codes`` for many :func:`segment_sum` calls with ``n_segments`` (a projection's every step): on NumPy
    with SciPy, their indicator as a sparse matrix, whose product is ~10 times faster than ``bincount``
    with its bins made anew (10^5 rows, 6 columns, 10^4 segments: 0.32 ms against 3.3 ms); elsewhere the
    codes as they are."""
    if not _aac.is_numpy_namespace(xp):
        return codes
    try:
        import scipy.sparse  # noqa: F401
    except ImportError:
        return codes
    import numpy as np

    return _Indicator(np.asarray(codes, dtype=np.intp), n_segments)


def _dask_block(values, codes, n_segments):
    """One block of rows' partial sums, as (..., 1, n_segments, k)."""
    return _numpy_segment_sum(values, codes, n_segments)[..., None, :, :]


def _dask_segment_sum(xp, values, codes, n_segments):
    import dask.array as da

    values = values.rechunk({values.ndim - 1: -1})
    codes = codes.rechunk((values.chunks[-2],))
    batch = "abcdefgh"[: values.ndim - 2]
    parts = da.blockwise(
        _dask_block, batch + "igk", values, batch + "ik", codes, "i", n_segments=n_segments,
        new_axes={"g": n_segments}, adjust_chunks={"i": 1}, dtype=values.dtype, concatenate=False,
    )  # fmt: skip
    return xp.sum(parts, axis=-3)


def segment_sum(xp, values, codes, n_segments):
    """Sums of the rows of ``values`` (..., m, k) over the segments of ``codes`` (m,) (integers in
    ``[0, n_segments)``), as (..., n_segments, k); an empty segment sums to zeros. ``n_segments``:
    a Python int; or :func:`prepare_segments`' answer for them. One library-specific branch each (module docstring)."""
    if isinstance(codes, _Indicator):
        return xp.asarray(codes.sums(values))
    if _aac.is_numpy_namespace(xp):
        return xp.asarray(_numpy_segment_sum(values, codes, n_segments))
    shape = (*values.shape[:-2], n_segments, values.shape[-1])
    if _aac.is_torch_namespace(xp):
        import torch

        zeros = torch.zeros(shape, dtype=values.dtype, device=values.device)
        return zeros.index_add(values.ndim - 2, codes.to(torch.int64), values)
    if _aac.is_jax_namespace(xp):
        import jax

        rows = xp.moveaxis(values, -2, 0)
        return xp.moveaxis(jax.ops.segment_sum(rows, codes, num_segments=n_segments), 0, -2)
    if _aac.is_cupy_namespace(xp):
        import cupy
        import cupyx

        out = cupy.zeros((n_segments, *shape[:-2], shape[-1]), dtype=values.dtype)
        cupyx.scatter_add(out, codes, cupy.moveaxis(values, -2, 0))
        return cupy.moveaxis(out, 0, -2)
    if _aac.is_dask_namespace(xp):
        return _dask_segment_sum(xp, values, codes, n_segments)
    # The standard alone: an indicator product, a block of segments at a time.
    m = values.shape[-2]
    step = max(1, _BLOCK // max(m, 1))
    ids = xp.arange(n_segments, dtype=codes.dtype, device=_aac.device(values))
    blocks = []
    for start in range(0, n_segments, step):
        hit = codes[:, None] == ids[None, start : min(start + step, n_segments)]  # (m, block)
        blocks.append(matmul(xp, xp.matrix_transpose(xp.astype(hit, values.dtype)), values))
    return xp.concat(blocks, axis=-2) if blocks else xp.zeros(shape, dtype=values.dtype, device=_aac.device(values))
