"""The iterative methods' warm start ``x0``, checked and carried into the prepared (scaled) problem."""

from __future__ import annotations

import math

from .._backend import _compat
from ._input import as_array, check_dtype, check_finite_values

__all__ = ["check_start", "start_of"]


def check_start(xp, x0, shape, y_was_vector, like, check_finite=True):
    """``x0`` as an array ``shape`` (*batch, n, k) of ``like``'s namespace, device and dtype: given
    as (n,) or (*batch, n) for a vector y, (n, k) or (*batch, n, k) otherwise, broadcast to the
    batch. Raises ``ValueError``/``TypeError`` naming ``x0``."""
    *batch, n, k = shape = tuple(shape)
    dev, dtype = _compat.device(like), like.dtype
    x0 = as_array(xp, x0, "x0", dev, dtype)
    check_dtype(xp, x0, "x0")
    tail = (n,) if y_was_vector else (n, k)
    given = tuple(x0.shape)
    if given not in (tail, tuple(batch) + tail):
        want = " or ".join(str(s) for s in dict.fromkeys((tail, tuple(batch) + tail)))
        msg = f"x0 must have shape {want} (one start per coefficient of each target); got shape {given}"
        raise ValueError(msg)
    if _compat.device(x0) is not None and dev is not None and repr(_compat.device(x0)) != repr(dev):
        msg = f"x0 must be on the device of X and y ({dev!r}); got {_compat.device(x0)!r}"
        raise ValueError(msg)
    x0 = xp.astype(x0, dtype, copy=False) if x0.dtype != dtype else x0
    if check_finite and not _compat.is_lazy(x0):
        check_finite_values(xp, x0, "x0")
    if y_was_vector:
        x0 = x0[..., None]
    return xp.broadcast_to(x0, shape)


def start_of(problem, options, check_finite=True):
    """``options`` with ``x0`` checked and mapped into the prepared problem: divided by the
    exact powers of two the problem was scaled by (``_scaling``: ``coef = coef' * scale.coef``).
    Centering and weights leave the coefficients as they are. A fit with no targets or no
    problems (solved padded, see ``_api``) starts from zero."""
    x0 = options.get("x0")
    if x0 is None:
        return options
    xp, X, Y = problem.xp, problem.X, problem.Y
    batch, n, k = tuple(X.shape[:-2]), X.shape[-1], Y.shape[-1]
    if k == 0 or math.prod(batch) == 0:
        return {**options, "x0": None}
    x0 = check_start(xp, x0, (*batch, n, k), problem.y_was_vector, X, check_finite)
    if problem.scale is not None:
        for f in problem.scale.coef if isinstance(problem.scale.coef, tuple) else (problem.scale.coef,):
            x0 = x0 / _compat.as_rank(xp, f, x0.ndim)  # (k,) against (..., n, k)
    return {**options, "x0": x0}
