"""Stacks of small triangles (n <= ``SMALL_STACK``) on libraries without a batched triangular solve of their own
(NumPy, CuPy before 14, array-api-strict): part of the :mod:`._compat` layer, used by :mod:`._factorizations`.

Their own routes pay per matrix: NumPy's batched LU (``linalg.solve``, ``linalg.inv``) a few microseconds each,
SciPy's ``solve_triangular`` of a stack a Python loop. Here the work runs over the whole stack at once:

- ``substitute``: forward or back substitution, elementwise (n**2 / 2 array operations in all); backward stable.
- ``batch_last``: NumPy's elementwise operations on a strided entry ``a[..., i, j]`` of a stack are far slower
  than on a contiguous vector (design notes). Flattening the stack, problems last, forces one copy instead.
- ``stack_inverse``: the inverse a row at a time, n - 1 products of (..., 1, i) by (..., i, i) over the stack:
  10000 factors of 8 x 8 in 2.5 ms where ``numpy.linalg.inv`` took 6.2 ms (one thread).
- ``small_inverse``: that inverse where a fit solves with its factor twice and needs its inverse's diagonal too
  (the lean route's refinement and certificate): the solves are then two products each, where substitution
  needed ``batch_last``'s copies (10000 problems of 64 x 8: 5.4 ms for the two solves, 8.6 ms for the inverse's
  diagonal through ``inv``; ``python -m cProfile``). Like the explicit inverse of any triangle, its products are
  not backward stable row by row, but their error is bounded by ``n eps cond(L)`` as substitution's forward
  error is (Higham, ch. 8 and 14), which is what the refinement step's convergence and its certificate assume.
"""

from __future__ import annotations

import array_api_compat as _aac

from ._products import matmul

# Stacks of triangles up to this size are solved by substitution vectorized over the stack.
SMALL_STACK = 16


def cupy_batched_solve():
    import cupy

    return int(cupy.__version__.split(".")[0]) >= 14


def _small_stack_without_solver(xp, a):
    """``a`` is a stack of small triangles on a library without a batched triangular solve of its own (NumPy,
    CuPy before 14, array-api-strict)."""
    own = _aac.is_torch_namespace(xp) or _aac.is_dask_namespace(xp) or _aac.is_jax_namespace(xp)
    own = own or (_aac.is_cupy_namespace(xp) and cupy_batched_solve())
    return not own and a.ndim > 2 and a.shape[-1] <= SMALL_STACK


def substitutes(xp, a, b):
    """Stacks of small triangles and one right-hand side, on libraries without a batched
    triangular solve of their own (NumPy, CuPy before 14, array-api-strict): substitution."""
    return _small_stack_without_solver(xp, a) and b.shape[-1] == 1


def substitute(xp, a, b, lower, *, at=None, transpose=False):
    """Forward (or back) substitution for a stack of small triangles and one right-hand side,
    elementwise over the whole stack (module docstring). ``transpose`` solves with ``a^T`` (``lower``
    then describes ``a^T``); ``at`` is ``batch_last(a)`` if the caller already has it."""
    n = a.shape[-1]
    batch = tuple(a.shape[:-2]) if a.ndim >= b.ndim else tuple(b.shape[:-2])
    if at is None or tuple(a.shape[:-2]) != batch:
        at = batch_last(xp, xp.broadcast_to(a, batch + (n, n)))
    bt = batch_last(xp, xp.broadcast_to(b, batch + (n, 1)))
    entry = (lambda i, j: at[j, i, ...]) if transpose else (lambda i, j: at[i, j, ...])  # noqa: E731
    rows = [None] * n
    for i in range(n) if lower else range(n - 1, -1, -1):
        s = bt[i, 0, ...]
        for j in range(i) if lower else range(i + 1, n):
            s = s - entry(i, j) * rows[j]
        rows[i] = s / at[i, i, ...]
    return xp.reshape(xp.stack(rows, axis=-1), batch + (n, 1))


def batch_last(xp, a):
    """The stack ``a`` (..., p, q) as a (p, q, N) array, the N = prod(...) problems along its last,
    contiguous axis. One copy, for code that works entry by entry over a whole stack (module
    docstring)."""
    p, q = a.shape[-2:]
    flat = xp.reshape(a, (-1, p, q))
    return xp.reshape(xp.reshape(xp.permute_dims(flat, (1, 2, 0)), (-1,)), (p, q, flat.shape[0]))


def stack_inverse(xp, a, *, lower):
    """The inverse of the stack of triangles ``a`` (..., n, n), a row at a time over the stack (module docstring):
    row i of a lower one's is ``-(a[i, :i] @ inv[:i, :i]) / a[i, i]`` beside ``1 / a[i, i]``."""
    if not lower:
        return xp.linalg.matrix_transpose(stack_inverse(xp, xp.linalg.matrix_transpose(a), lower=True))
    n = a.shape[-1]
    out = xp.zeros_like(a)
    for i in range(n):
        d = 1.0 / a[..., i, i]
        if i:
            out[..., i, :i] = -matmul(xp, a[..., i : i + 1, :i], out[..., :i, :i])[..., 0, :] * d[..., None]
        out[..., i, i] = d
    return out


def inverts_by_rows(xp, a):
    """Whether :func:`stack_inverse` inverts the triangles ``a``: a stack of small ones where the library has no
    batched triangular solve (NumPy's batched ``inv`` is LU per matrix, and costs more)."""
    return _small_stack_without_solver(xp, a)


def small_inverse(xp, L):
    """``L^-1`` of a stack of small lower factors where a fit that solves with ``L`` and needs its inverse's diagonal
    does best through it (module docstring), else None."""
    return stack_inverse(xp, L, lower=True) if inverts_by_rows(xp, L) else None
