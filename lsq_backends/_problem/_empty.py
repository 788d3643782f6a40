"""A batch with no problems in it (X of shape (0, m, n), or (2, 0, m, n)).

Eager libraries solve it as they would any batch, but Dask's block functions meet zero-size
reductions and batched triangular solves and fail at compute time. Such a batch is solved as
a batch of zero problems of size one instead (every 0 of the batch shape made a 1), and each
result cut back to the empty batch: the same fields, dtypes and trailing shapes as any fit.
"""

from __future__ import annotations

from .._backend import _compat

__all__ = ["pad_empty_batch"]


def _grow(xp, a, tail, fill=0):
    """``fill`` shaped as ``a`` with each 0 among its batch dimensions (all but the last ``tail``)
    made a 1; an array without batch dimensions (a weight vector shared by the batch) is kept."""
    if a is None or a.ndim <= tail:
        return a
    shape = tuple(1 if s == 0 else s for s in a.shape[:-tail]) + tuple(a.shape[-tail:])
    return _compat.full(xp, shape, fill, a.dtype, a)


def pad_empty_batch(problem):
    """``(problem, cut)``: for a batch with no problems, the problem made a batch of zero
    problems and ``cut(field, lead=0)`` to slice a result field (its batch axes after ``lead``
    leading axes: 1 for the alpha axis of a path) back; otherwise the problem and identity."""
    xp, X = problem.xp, problem.X
    batch = tuple(X.shape[:-2])
    if 0 not in batch:
        return problem, lambda field, lead=0: field

    def grow(a, tail=2):
        return _grow(xp, a, tail)

    original = problem.original
    if original is not None:
        original = tuple(grow(a) for a in original)
    padded = problem._replace(
        X=grow(X), Y=grow(problem.Y), x_offset=grow(problem.x_offset), y_offset=grow(problem.y_offset),
        offset_sq=grow(problem.offset_sq, 1), original=original, check=None,
        root=_grow(xp, problem.root, 2, 1),  # the Gram route's weights (a zero sum has no mean)
    )  # fmt: skip
    index = tuple(slice(0, 0) if b == 0 else slice(None) for b in batch)

    def cut(field, lead=0):
        if field is None:
            return None
        return field[(slice(None),) * lead + index + (...,)]

    return padded, cut
