"""Dask's block kernels: the NumPy/SciPy code that runs inside Dask tasks.

Part of the backend-quirk layer: :mod:`lsq_backends._backend._compat` reaches here when the
caller's arrays are Dask arrays. Here are the factorizations Dask lacks or gets wrong, the
one-pass tree QR and the gates of a lazy branch. Nothing here imports Dask at module level.
"""

from __future__ import annotations


def numpy_safe_cholesky(a):
    import numpy as np

    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return np.full_like(a, np.nan)


def dask_solve_triangular(a, b, lower):
    import functools

    import dask.array as da

    batch = "abcdefgh"[: b.ndim - 2]
    # A module-level function (not a closure): the graph, kept by fitted estimators' lazy
    # attributes, must pickle with plain pickle.
    block = functools.partial(solve_triangular_block, lower=lower)
    return da.blockwise(block, batch + "ik", a, batch + "ij", b, batch + "jk", dtype=b.dtype, concatenate=True)


def solve_triangular_block(a_blk, b_blk, lower):
    import numpy as np
    import scipy.linalg

    # Both branches of a choice are computed on Dask (see ``_control.branch``): the branch not taken may
    # meet an exactly singular triangle, on which SciPy raises. NaN, like the other paths.
    try:
        return scipy.linalg.solve_triangular(a_blk, b_blk, lower=lower, check_finite=False)
    except scipy.linalg.LinAlgError:
        return np.full(np.broadcast_shapes(a_blk.shape[:-2], b_blk.shape[:-2]) + b_blk.shape[-2:], np.nan, b_blk.dtype)


def numpy_task(fn, static, *args):
    """The task of ``_control.one_task``: ``fn`` on NumPy (array-api-compat's namespace), its
    results a tuple of NumPy arrays."""
    import numpy as np
    from array_api_compat import numpy as xp

    out = fn(xp, *args, **static)
    return tuple(np.asarray(a) for a in (out if isinstance(out, tuple) else (out,)))


# The per-matrix NumPy functions of ``_compat`` (module level, so graphs pickle).
def numpy_arg_best(a, axis, largest):
    import numpy as np

    return np.argmax(a, axis=axis) if largest else np.argmin(a, axis=axis)


def numpy_qr(a):
    import numpy as np

    return tuple(np.linalg.qr(a))


def numpy_svd(a):
    import numpy as np

    return tuple(np.linalg.svd(a, full_matrices=False))


def numpy_eigh(a):
    import numpy as np

    return tuple(np.linalg.eigh(a))


def dask_per_matrix(func, signature, x, n_out, p):
    # Quirk: dask's qr/svd are 2-D only. A stack of small problems is solved one block of
    # whole matrices at a time with NumPy (the batch axes stay chunked).
    import dask.array as da

    x = x.rechunk({-2: -1, -1: -1})
    return da.apply_gufunc(func, signature, x, output_sizes={"p": p}, output_dtypes=(x.dtype,) * n_out)


_TREE = 8  # R factors stacked and re-factored per node of the Dask TSQR tree


def dask_tsqr_apply(x, y):
    """(R, Q^T y) of a row-chunked Dask X (m, n) from the R factor of [X | y]. One QR per row
    chunk, then QRs of stacks of ``_TREE`` triangles up a tree; Q is never formed."""
    import dask.array as da

    n, p = x.shape[1], x.shape[1] + y.shape[1]
    # Quirk: one chunk across the columns (a rechunk if the caller split them); y's row
    # chunks made to match X's.
    x = x.rechunk({1: -1})
    y = y.rechunk((x.chunks[0], -1))
    r = da.map_blocks(_block_r, x, y, chunks=((p,) * x.numblocks[0], (p,)), dtype=x.dtype)
    while r.numblocks[0] > 1:
        r = r.rechunk({0: _TREE * p})
        r = r.map_blocks(_block_r, chunks=((p,) * r.numblocks[0], (p,)), dtype=r.dtype)
    return r[:n, :n], r[:n, n:]


def _block_r(a, b=None):
    """R factor (p x p, zero rows appended if the block is short) of the block [a | b]."""
    import numpy as np

    rows = a.shape[0]
    if rows > 1 and a.strides[0] == 0 and (b is None or b.strides[0] == 0):
        # Every row is the same (a branch gated off by ``branch``, or constant data): the block
        # is 1 r^T, whose R is sqrt(rows) r^T. O(p) instead of a QR of the block.
        a = a[:1] * np.sqrt(rows)
        b = None if b is None else b[:1] * np.sqrt(rows)
    ab = a if b is None else np.concatenate([a, b], axis=1)
    p = ab.shape[1]
    # Householder QR of a skinny block is memory bound (one sweep of the block per column):
    # factor cache-sized slices (2048 rows x p), then their stacked R factors (design notes);
    # the same R up to signs.
    step = max(2048, 4 * p)
    if rows > step:
        ab = np.concatenate([_lapack_r(ab[i : i + step]) for i in range(0, rows, step)])
    r = _lapack_r(ab)
    return np.concatenate([r, np.zeros((p - r.shape[0], p), r.dtype)]) if r.shape[0] < p else r


def _lapack_r(a):
    """R factor (min(rows, p) x p) of a NumPy block: LAPACK's geqrf through SciPy (numpy's
    qr(mode="r") is slower, design notes), NumPy's qr without SciPy."""
    import numpy as np

    try:
        from scipy.linalg import get_lapack_funcs
    except ImportError:
        return np.linalg.qr(a, mode="r")
    if a.shape[0] == 0:  # LAPACK refuses an empty block (lda < 1)
        return np.zeros((0, a.shape[1]), a.dtype)
    (geqrf,) = get_lapack_funcs(("geqrf",), (a,))
    qr = geqrf(np.asfortranarray(a), overwrite_a=True)[0]
    return np.triu(qr[: min(a.shape)])


def dask_gate(a, keep):
    """``a``, whose blocks become zero-stride zeros at compute time unless ``keep`` (0-d)."""
    import dask.array as da

    ind = tuple(range(a.ndim))
    return da.blockwise(_keep_block, ind, a, ind, keep, (), dtype=a.dtype)


def _keep_block(block, keep):
    import numpy as np

    # A value read inside a task at compute time, not while the graph is built.
    return block if keep else np.broadcast_to(np.zeros((), dtype=block.dtype), block.shape)
