"""Matrix products at the full precision of the dtype: part of the :mod:`._compat` layer.

``matmul``: on GPUs and TPUs JAX multiplies float32 matrices in TF32/bfloat16 passes by default.
That destroys a Gram matrix (~3 correct digits), so the product asks for ``Precision.HIGHEST``.
PyTorch and CuPy take the precision from process-wide settings a user may have lowered (TF32,
bfloat16). It is forced to full float32 around the call and put back (:mod:`._precision`).

``cross``: XLA's CPU backend computed ``X^T @ y`` with one column (a matrix-vector product) from
a transposed copy of X. That is an X-sized temporary in every compiled fit (on sharded X, one
shard a device). Written ``(y^T @ X)^T`` it reads X as laid out: the same sums, n x k
transposed. Elsewhere ``a^T @ b`` as it reads.
"""

from __future__ import annotations

import array_api_compat as _aac

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
