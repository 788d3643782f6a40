"""Input validation and preprocessing shared by every fit.

Validation looks at shapes, dtypes and devices first, then (eagerly, when ``check_finite``) at
values; all of it happens before any factorization starts. Value checks are skipped for lazy
arrays (JAX tracers under ``jax.jit``, Dask graphs), where reading a value would force a
computation or fail.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import array_api_compat as _aac

from . import _compat

METHODS = ("auto", "normal", "qr", "svd", "lsqr")


class Problem(NamedTuple):
    """A validated problem, centered and weighted, ready for a solver."""

    xp: Any
    X: Any  # (..., m', n) scaled by sqrt(sample_weight), intercept eliminated (m' = m - 1 for wide X;
    #   tall X keeps m rows, the first one zero: see _eliminate_intercept; m with eliminate=False)
    Y: Any  # (..., m', k), same treatment
    alpha: Any  # None (least squares) or array (kα,) with kα in {1, k}
    x_offset: Any  # (..., 1, n) or None
    y_offset: Any  # (..., 1, k) or None
    y_was_vector: bool
    offset_sq: Any  # (..., n) what centering removed from the squared column norms, or None
    original: Any  # (X, Y, root): validated, uncentered, unweighted (root = sqrt(weights) or
    # None), kept for ``refine`` only; else None (with a cast input it would hold a copy of X)
    check: Any = None  # X's finiteness test deferred to the Gram matrix (``gram_check``), or None


def _as_array(xp, a, name, dev):
    if _aac.is_array_api_obj(a):
        return a
    try:
        return xp.asarray(a, device=dev)
    except Exception as exc:
        msg = f"{name} must be an array or convertible to one; got {type(a).__name__}"
        raise TypeError(msg) from exc


def _namespace(X, y, sample_weight):
    named = {"X": X, "y": y, "sample_weight": sample_weight}
    arrays = {k: v for k, v in named.items() if _aac.is_array_api_obj(v)}
    if not arrays:
        import numpy as np

        return _compat.array_namespace(np.empty(0))
    try:
        return _compat.array_namespace(*arrays.values())
    except TypeError as exc:
        kinds = ", ".join(f"{k}: {type(v).__module__}.{type(v).__name__}" for k, v in arrays.items())
        msg = f"X, y and sample_weight must come from one array library; got {kinds}"
        raise TypeError(msg) from exc


def _check_dtype(xp, a, name):
    dt = a.dtype
    if dt == xp.bool:
        msg = f"{name} has a boolean dtype; least squares needs real numbers (cast it first)"
        raise TypeError(msg)
    if xp.isdtype(dt, "complex floating"):
        msg = f"{name} is complex ({dt}); complex least squares is not supported"
        raise TypeError(msg)
    if not xp.isdtype(dt, ("real floating", "integral")):
        msg = f"{name} must have a real numeric dtype; got {dt}"
        raise TypeError(msg)


def _check_finite(xp, a, name):
    if a is None or _compat.is_lazy(a) or math.prod(a.shape) == 0:
        return
    # Fast path: NaN and infinity propagate through a product with a vector of ones (one
    # matrix-vector pass, no boolean temporary of the size of ``a``); only a non-finite sum,
    # which overflow of huge finite values could also give, needs the exact test.
    flat = xp.reshape(a, (-1, a.shape[-1])) if a.ndim > 1 else xp.reshape(a, (1, -1))
    ones = xp.ones((flat.shape[-1],), dtype=flat.dtype, device=_compat.device(a))
    if not bool(xp.all(xp.isfinite(_compat.matmul(xp, flat, ones)))):
        _exact_finite(xp, a, name)


def gram_check(xp, X, check_finite):
    """The finiteness test of X deferred to its Gram matrix (``normal`` and ``auto``), or None.

    The diagonal of the Gram matrix of the prepared X (centered, weighted, intercept
    eliminated: NaN and infinity propagate through all of it) holds each column's (or, for
    wide X, row's) sum of squares, non-finite exactly when that column holds NaN or infinity
    (a non-finite entry is never zero, so no BLAS can skip it), or when huge finite values
    overflow; only then is X itself tested. That saves the separate pass over X, and the
    error still comes before any factorization. The returned ``check(A)`` raises like
    ``prepare`` would have.
    """
    if not check_finite or _compat.is_lazy(X) or math.prod(X.shape) == 0:
        return None

    def check(A):
        if not bool(xp.all(xp.isfinite(xp.linalg.diagonal(A)))):
            _exact_finite(xp, X, "X")

    return check


def _exact_finite(xp, a, name):
    if not bool(xp.all(xp.isfinite(a))):
        msg = (
            f"{name} contains NaN or infinity; remove those rows or pass check_finite=False "
            "to skip this check (the result is then undefined)"
        )
        raise ValueError(msg)


def _check_devices(arrays):
    devs = {name: _compat.device(a) for name, a in arrays.items() if a is not None}
    # JAX tracers (under grad/vmap) report no device: nothing to compare.
    devs = {name: d for name, d in devs.items() if d is not None}
    if len({repr(d) for d in devs.values()}) > 1:
        where = ", ".join(f"{k} on {d!r}" for k, d in devs.items())
        msg = f"X, y and sample_weight must be on one device; got {where}"
        raise ValueError(msg)


def check_method(method, rcond):
    if method not in METHODS:
        msg = f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}"
        raise ValueError(msg)
    if rcond is not None:
        if isinstance(rcond, bool) or not isinstance(rcond, (int, float)) or not 0 <= rcond < 1:
            msg = f"rcond must be None or a number in [0, 1); got {rcond!r}"
            raise ValueError(msg)


def check_bool(value, name):
    """Flags are Python bools (static under ``jax.jit``): ``1`` or an array is refused."""
    if not isinstance(value, bool):
        msg = f"{name} must be a bool; got {value!r}"
        raise TypeError(msg)


def _validate_alpha(xp, alpha, k, dtype, dev, per_target):
    """alpha as an array: (1,) for one penalty, (k,) for one per target (``per_target``), or
    (a,) for a path (a 1-D alpha otherwise). The meaning follows the shape and the flag only,
    never the values, so a path of k penalties is not mistaken for per-target penalties."""
    if _aac.is_array_api_obj(alpha):
        if _compat.array_namespace(alpha) is not xp and not _aac.is_numpy_array(alpha):
            msg = "alpha must come from the same array library as X"
            raise TypeError(msg)
        a = alpha
    elif isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        msg = f"alpha must be a non-negative number or a 1-D array of them; got {type(alpha).__name__}"
        raise TypeError(msg)
    else:
        a = alpha
    given = a
    same = _aac.is_array_api_obj(a) and _compat.array_namespace(a) is xp and a.dtype == dtype
    # A NumPy alpha next to Dask X becomes a Dask array too (mixed, it was left NumPy and its
    # checks below went through Dask, a compute inside the fit).
    a = a if same else xp.asarray(a, dtype=dtype, device=dev)
    if per_target:
        if a.ndim != 1 or a.shape[0] != k:
            msg = f"alpha must have shape ({k},) with per_target=True, one penalty per column of y; got shape {tuple(a.shape)}"
            raise ValueError(msg)
    elif a.ndim == 0:
        a = xp.reshape(a, (1,))
    elif a.ndim != 1 or a.shape[0] == 0:
        msg = f"alpha must be a scalar or a non-empty 1-D array (a path of penalties); got shape {tuple(a.shape)}"
        raise ValueError(msg)
    # Values are read as given (a number, or an eager array in its own namespace), never from
    # a lazy array.
    if not _aac.is_array_api_obj(given):
        finite, negative = math.isfinite(given), given < 0
    elif not _compat.is_lazy(given):
        ns = _compat.array_namespace(given)
        finite, negative = bool(ns.all(ns.isfinite(given))), bool(ns.any(given < 0))
    else:
        finite, negative = True, False
    if not finite:
        msg = "alpha must be finite"
        raise ValueError(msg)
    if negative:
        msg = "alpha must be non-negative"
        raise ValueError(msg)
    return a


def prepare(
    X,
    y,
    sample_weight,
    *,
    fit_intercept,
    check_finite,
    alpha=None,
    ridge=False,
    per_target=False,
    eliminate=True,
    defer_x_check=False,
    keep_original=False,
) -> Problem:
    """Validate, cast, center and weight. Raises before any heavy work.

    ``eliminate=False`` keeps the centered, weighted rows (m of them, one per sample) instead of
    reflecting the intercept direction away: leave-one-out needs per-sample rows. With
    ``defer_x_check`` the solver tests X's finiteness on its Gram matrix instead
    (``Problem.check``, see :func:`gram_check`); ``keep_original`` keeps the validated inputs
    (for ``refine`` and leave-one-out)."""
    xp = _namespace(X, y, sample_weight)
    dev = None
    for a in (X, y, sample_weight):
        if _aac.is_array_api_obj(a):
            dev = _compat.device(a)
            break
    X = _as_array(xp, X, "X", dev)
    y = _as_array(xp, y, "y", dev)
    if sample_weight is not None:
        sample_weight = _as_array(xp, sample_weight, "sample_weight", dev)
    _check_devices({"X": X, "y": y, "sample_weight": sample_weight})

    if X.ndim < 2:
        msg = f"X must have shape (m, n) or (..., m, n); got shape {tuple(X.shape)}"
        raise ValueError(msg)
    batch, m = tuple(X.shape[:-2]), X.shape[-2]
    if y.ndim == X.ndim - 1:
        y_was_vector = True
    elif y.ndim == X.ndim:
        y_was_vector = False
    else:
        msg = f"y must have shape {batch + (m,)} or {batch + (m, 'k')} to match X of shape {tuple(X.shape)}; got shape {tuple(y.shape)}"
        raise ValueError(msg)
    if tuple(y.shape[: len(batch)]) != batch or y.shape[len(batch)] != m:
        msg = f"y must have {m} rows (and batch shape {batch}) to match X of shape {tuple(X.shape)}; got shape {tuple(y.shape)}"
        raise ValueError(msg)
    if sample_weight is not None and tuple(sample_weight.shape) not in ((m,), batch + (m,)):
        msg = f"sample_weight must have shape ({m},) or {batch + (m,)}; got shape {tuple(sample_weight.shape)}"
        raise ValueError(msg)
    for name, a in (("X", X), ("y", y), ("sample_weight", sample_weight)):
        if a is not None:
            _check_dtype(xp, a, name)

    float_default, _ = _compat.default_dtypes(xp, dev)
    floats = [a.dtype for a in (X, y) if xp.isdtype(a.dtype, "real floating")]
    dtype = xp.result_type(*floats) if floats else float_default
    X = xp.astype(X, dtype, copy=False) if X.dtype != dtype else X
    y = xp.astype(y, dtype, copy=False) if y.dtype != dtype else y
    if sample_weight is not None and sample_weight.dtype != dtype:
        sample_weight = xp.astype(sample_weight, dtype, copy=False)
    Y = _compat.align_rows(xp, y[..., None] if y_was_vector else y, X)
    k = Y.shape[-1]

    if ridge:
        alpha = _validate_alpha(xp, alpha, k, dtype, dev, per_target)
    if fit_intercept and m == 0:
        msg = "fit_intercept=True needs at least one sample (X has 0 rows)"
        raise ValueError(msg)
    if check_finite:
        if not defer_x_check:
            _check_finite(xp, X, "X")
        _check_finite(xp, y, "y")
        _check_finite(xp, sample_weight, "sample_weight")
    if sample_weight is not None and not _compat.is_lazy(sample_weight) and m > 0:
        if bool(xp.any(sample_weight < 0)):
            msg = "sample_weight must be non-negative"
            raise ValueError(msg)
        if fit_intercept and bool(xp.any(xp.sum(sample_weight, axis=-1) <= 0)):
            msg = "sample_weight must have a positive sum to fit an intercept"
            raise ValueError(msg)

    check = gram_check(xp, X, check_finite) if defer_x_check else None
    root = None if sample_weight is None else _compat.align_rows(xp, xp.sqrt(sample_weight[..., None]), X)  # (..., m, 1)
    original = (X, Y, root) if keep_original else None
    x_offset = y_offset = offset_sq = None
    if fit_intercept:
        X, Y, x_offset, y_offset, offset_sq = _eliminate_intercept(xp, X, Y, root, eliminate)
    elif root is not None:
        X, Y = root * X, root * Y
    return Problem(xp, X, Y, alpha if ridge else None, x_offset, y_offset, y_was_vector, offset_sq, original, check)


def _eliminate_intercept(xp, X, Y, root, eliminate=True):
    """Center and weight X and Y and drop the intercept direction, in one X-sized result.

    Centered data weighted by ``root`` (sqrt of the weights, or None) are orthogonal to the
    unit vector ``v = root / sqrt(total)``. A Householder reflection H with H v = -e1 maps them
    to rows whose first one is v^T A = 0 up to rounding; dropping it leaves the same
    least-squares problem (same solution, same residual norm) exactly one row shorter. Left
    in, that row of rounding noise makes rank decisions a coin toss: wide centered X (m <= n)
    is rank deficient by one, and its noise singular value sits right at NumPy's default
    cutoff. Centering first (rather than reflecting raw data) keeps the offsets out of the
    reflection's rounding, and the reflection removes the rounding error of the mean itself
    (its v^T A term is that error: centered twice, in effect).

    Tall problems (m - 1 >= n) keep all m rows with the first one set to exactly zero (a zero
    row changes no Gram matrix, R factor or residual): rows of X sharded across devices stay
    where they are, where ``A[1:]`` shifted every shard by one row (XLA moved a row between
    neighbouring devices and re-laid out each shard). The zero comes from the weights'
    multiplication (the first weight replaced by 0), or without weights from an in-place write
    on NumPy (``_compat.zero_first_row``), so no extra X-sized array is made. Wide problems
    drop the row.

    With ``Ac = A - mean``, rows 1: of ``H (root * Ac)`` are ``root[1:] * (Ac[1:] - c / s)``,
    ``s = sqrt(total)``, ``c = (w^T Ac / s + root[0] Ac[0]) / (1 + root[0] / s)``: a row
    vector subtracted from the centered data, then the weights. On NumPy both updates
    overwrite the centered copy (``_compat.update_fresh``), so one X-sized array is made
    where centering, weighting and reflecting in turn made three.

    Returns
    -------
    X, Y : the reduced data, (..., m - 1, n) and (..., m - 1, k) for wide X, (..., m, n) and
        (..., m, k) with a zero first row for tall X; with ``eliminate=False``
        the centered, weighted data, (..., m, n) and (..., m, k)
    x_offset, y_offset : the weighted means, (..., 1, n) and (..., 1, k)
    offset_sq : (..., n), what centering removed from the squared column norms
    """
    m, n = X.shape[-2:]
    ones = _compat.align_rows(xp, xp.ones((m, 1), dtype=X.dtype, device=_compat.device(X)), X)
    w = ones if root is None else root * root
    total = xp.sum(w, axis=-2, keepdims=True)  # (..., 1, 1)
    wt = xp.linalg.matrix_transpose(w)
    scale = xp.sqrt(total)
    r0 = ones[:1, :] if root is None else root[..., :1, :]

    def reduce(A):
        # Weighted sums as matrix products: BLAS-blocked, and no weighted copy of A.
        mean = _compat.matmul(xp, wt, A) / total
        Ac = A - mean
        if not eliminate:
            return mean, Ac if root is None else _compat.update_fresh(xp, Ac, "multiply", root)
        c = (_compat.matmul(xp, wt, Ac) / scale + r0 * Ac[..., :1, :]) / (1 + r0 / scale)
        if tall:
            D = _compat.update_fresh(xp, Ac, "subtract", c / scale)
            if root is None:
                return mean, _compat.zero_first_row(xp, D, first)
            return mean, _compat.update_fresh(xp, D, "multiply", row_weights)
        D = _compat.update_fresh(xp, Ac[..., 1:, :], "subtract", c / scale)
        return mean, D if root is None else _compat.update_fresh(xp, D, "multiply", root[..., 1:, :])

    tall = eliminate and m - 1 >= n
    if tall:
        first = _compat.align_rows(xp, xp.arange(m, device=_compat.device(X))[:, None] == 0, X)  # (m, 1)
        zero = xp.zeros((), dtype=X.dtype, device=_compat.device(X))
        row_weights = None if root is None else xp.where(first, zero, root)

    x_offset, Xe = reduce(X)
    y_offset, Ye = reduce(Y)
    offset_sq = (total * x_offset * x_offset)[..., 0, :]
    return Xe, Ye, x_offset, y_offset, offset_sq
