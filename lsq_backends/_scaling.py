"""Scaling by powers of two: every fit is solved at unit scale, whatever the scale of X and y.

The solvers form squares (Gram matrices, column norms, LSQR's norms): X with entries around
1e200 overflowed them (ridge returned exactly 0, LSQR NaN) and entries around 1e-200
underflowed (LSQR returned 0 after 0 iterations). Least squares and ridge are homogeneous:

    X = s X',  Y = Y' diag(t),  alpha = s**2 alpha'  =>  coef = coef' diag(t) / s,
    intercept = intercept' diag(t),  rss = rss' t**2,  singular values = s s',

rank and iteration counts unchanged. With s and t powers of two every one of these products is
exact (short of overflow or underflow), so a scaled fit returns the unscaled fit's answer
multiplied out: scaling changes no rounding, it only keeps the squares in range.

``s`` is one power of two for the whole of X (one for all problems of a stack: a penalty is
shared by the stack), ``t`` one per column of y (one penalty serves columns of any scale; a
column's LSQR norms are its own); with ``shared_y`` a single ``t`` (leave-one-out compares
targets' errors). Both are chosen on the device (no host read) from ``max |X|`` and
``max |y|`` (for ridge, the larger of ``max |X|`` and the square root of the smallest
penalty): 1 while that magnitude lies within ``2**(+-emax/4)`` (1e77 in float64, 4e9 in
float32), where the solvers' squares cannot overflow or lose bits to the subnormal range, so
data at ordinary scales are not touched (bitwise the unscaled fit); else ``2**floor(log2(max))``.
On NumPy the choice is read (free in host memory) and X is not copied when it is 1; elsewhere
X is multiplied by the (exact) factor, one elementwise pass, and the factors cost a few dozen
operations on arrays of k + 1 numbers (~0.4 ms per eager PyTorch call on the CPU).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, NamedTuple

import array_api_compat as _aac

from . import _compat
from ._result import LstsqResult


class Scale(NamedTuple):
    """What X and Y were divided by, and the exact factors that map results back (pairs of
    factors where the exponent may exceed the exponent range; see :func:`_times`)."""

    alpha: Any  # the penalty as validated, before scaling (None for least squares)
    coef: Any  # pair: 2**(ky - kx), (k,) or 0-d
    target: Any  # 2**ky: intercepts
    square: Any  # pair: 2**(2 ky): rss, leave-one-out errors
    x: Any  # 2**kx: singular values


def _limits(dtype_info):
    """(safe, limit): magnitudes within 2**(+-safe) are solved as given; exponents are kept
    within +-limit (2**limit and 2**-limit are normal numbers)."""
    return _compat.memo(("scaling limits", float(dtype_info.max)), lambda: _limits_of(dtype_info))


def _limits_of(dtype_info):
    emax = round(math.log2(float(dtype_info.max)))
    return emax // 4, emax - 2


def _magnitude(xp, A, axis):
    """max |A| over ``axis`` (no |A| temporary)."""
    if _aac.is_numpy_namespace(xp):
        return xp.maximum(A.max(axis=axis), -A.min(axis=axis))  # methods: no Python wrapper
    return xp.maximum(xp.max(A, axis=axis), -xp.min(A, axis=axis))


def _exponent(xp, big):
    """floor(log2(big)) where that lies outside the safe range, else 0 (also for zero, NaN or
    infinite ``big``: those are left to the value checks and the solvers)."""
    safe, limit = _limits(_compat.finfo(xp, big.dtype))
    ok = (big > 0) & xp.isfinite(big)
    k = xp.floor(xp.log2(xp.where(ok, big, xp.ones_like(big))))
    k = xp.minimum(xp.maximum(k, xp.full_like(k, -limit)), xp.full_like(k, limit))
    return xp.where(xp.abs(k) > safe, k, xp.zeros_like(k))


def _powers(xp, requests):
    """``2**k`` for each ``(k, split)`` of ``requests`` (integer-valued float arrays), exactly:
    products of the exact constants 2**(+-2**b) that the bits of |k| select (the standard has
    no ``ldexp``, and ``pow`` is not promised exact), all in one small array. With ``split``
    (|k| up to twice the exponent range) a pair of factors, each within range."""
    like = requests[0][0]
    _, limit = _limits(_compat.finfo(xp, like.dtype))
    parts, layout = [], []
    for k, split in requests:
        shape = tuple(k.shape)
        k = xp.reshape(k, (-1,))
        if split:
            h = xp.trunc(k / 2)
            parts += [h, k - h]
        else:
            parts.append(k)
        layout.append((shape, math.prod(shape), split))
    k = xp.concat(parts)[:, None]  # (r, 1)
    nbits = limit.bit_length()
    step, up, down = _compat.powers_of_two(xp, nbits, like)  # made on the device (no host copy)
    bit = xp.remainder(xp.floor(xp.abs(k) / step), 2) == 1  # (r, nbits)
    p = xp.prod(xp.where(bit, xp.where(k < 0, down, up), xp.ones_like(up)), axis=-1)
    out, i = [], 0
    for shape, size, split in layout:
        first = xp.reshape(p[i : i + size], shape)
        if split:
            out.append((first, xp.reshape(p[i + size : i + 2 * size], shape)))
        else:
            out.append(first)
        i += size * (2 if split else 1)
    return out


def _times(a, factor):
    """``a * 2**k``, ``factor`` as :func:`_powers` gave it (a pair: two exact steps)."""
    return a * factor[0] * factor[1] if isinstance(factor, tuple) else a * factor


class Rescale(Exception):  # noqa: N818 (a signal to prepare again, not an error)
    """Raised by :func:`gram_certificate`'s check: X's scale is not certified by its Gram
    matrix; the fit is prepared again with the ``max |X|`` passes."""


def gram_certificate(xp, X, alpha):
    """With ``scale_problem(..., skip_x=True)`` (NumPy, no weights): ``certify(A, offset_sq)``,
    run on the Gram matrix A = X^T X of tall X (centered when ``offset_sq``, what centering
    removed, is given) before it is factorized, raising :class:`Rescale` unless X's factor is
    certainly 1.

    Column j's sum of squares d_j (A_jj + offset_sq_j) bounds max |X|**2 within
    [max d / m, max d]: when both ends lie within 2**(+-2 safe) (and, for ridge, sqrt(min
    alpha) <= 2**safe), the ``max |X|`` passes would have chosen 1 too. Ordinary data never
    pay those two read-only passes over X (a quarter of ``normal``'s time at 100000 x 20);
    the rest (NaN, overflow, extreme scales) takes them, as before, and decides the same."""
    safe, _ = _limits(_compat.finfo(xp, X.dtype))
    m = X.shape[-2]

    def certify(A, offset_sq=None):
        d = xp.linalg.diagonal(A)
        if offset_sq is not None:
            d = d + offset_sq
        big = float(d.max())  # NumPy: free to read
        ok = m * 2.0 ** (-2 * safe) <= big <= 2.0 ** (2 * safe)
        if alpha is not None and alpha.shape[0] > 0:
            ok = ok and float(xp.min(alpha)) <= 2.0 ** (2 * safe)
        if not ok:
            raise Rescale

    return certify


def uncertified(X):
    """Context for a fit whose X scale may await :func:`gram_certificate` (X a NumPy array or
    a list): a Gram matrix that overflows only sends the fit back to the ``max |X|`` passes,
    so NumPy's overflow warnings are silenced there (the fit prepared again warns as before)."""
    if _aac.is_numpy_array(X) or not _aac.is_array_api_obj(X):
        import numpy as np

        return np.errstate(over="ignore", invalid="ignore")
    return contextlib.nullcontext()


def scale_problem(xp, X, Y, alpha, *, shared_y=False, skip_x=False):
    """``(X', Y', alpha', scale)`` with X', Y' at unit scale (see the module docstring);
    ``scale`` None where nothing was scaled (read on NumPy, where reading is free).
    ``skip_x`` (NumPy): X and alpha are left as given, their factor 1 to be certified by
    the Gram matrix (:func:`gram_certificate`)."""
    if 0 in tuple(X.shape) or 0 in tuple(Y.shape):
        return X, Y, alpha, None
    if skip_x:
        big_y = _magnitude(xp, Y, None if shared_y else tuple(range(Y.ndim - 1)))
        safe, _ = _limits(_compat.finfo(xp, Y.dtype))
        lo, hi = float(big_y.min()), float(big_y.max())  # NumPy: free to read
        if 2.0**-safe <= lo and hi < 2.0 ** (safe + 1):  # every exponent 0 (see _exponent)
            return X, Y, alpha, None
        ky = _exponent(xp, xp.reshape(big_y, (-1,)))
        if not bool(xp.any(ky != 0)):
            return X, Y, alpha, None
        return _apply(xp, X, Y, alpha, xp.zeros_like(ky[0]), ky[0] if shared_y else ky)
    big = _magnitude(xp, X, None)
    if alpha is not None:
        # Ridge factors [X; sqrt(alpha) I]: its scale is the larger of the two blocks (the
        # smallest penalty's, for a path or per-target penalties). Scaled by X alone, a
        # penalty far above ||X||**2 (X ~ 1e-200, alpha = 1) overflowed to infinity.
        amin = xp.min(alpha)  # a negative one is refused by the value checks
        big = xp.maximum(big, xp.sqrt(xp.maximum(amin, xp.zeros_like(amin))))
    big_y = _magnitude(xp, Y, None if shared_y else tuple(range(Y.ndim - 1)))
    k = _exponent(xp, xp.concat([xp.reshape(big, (1,)), xp.reshape(big_y, (-1,))]))
    kx, ky = k[0], (k[1] if shared_y else k[1:])
    if _aac.is_numpy_namespace(xp) and not bool(xp.any(k != 0)):
        return X, Y, alpha, None  # data at ordinary scales: no copy
    return _apply(xp, X, Y, alpha, kx, ky)


def _apply(xp, X, Y, alpha, kx, ky):
    requests = [(-kx, False), (-ky, False), (-2 * kx, True), (ky - kx, True), (ky, False), (2 * ky, True), (kx, False)]
    fx, fy, fa, fc, ft, fs, fv = _powers(xp, requests)
    X, Y = X * fx, Y * fy
    scaled_alpha = alpha
    if alpha is not None:
        scaled_alpha = _times(alpha, fa)
        # A positive penalty stays positive (rank n), however small next to X'**2.
        tiny = xp.full_like(alpha, xp.finfo(alpha.dtype).smallest_normal)
        scaled_alpha = xp.where(alpha > 0, xp.maximum(scaled_alpha, tiny), scaled_alpha)
    return X, Y, scaled_alpha, Scale(alpha, fc, ft, fs, fv)


def _squeezed(xp, factor):
    """A factor (1,) of a vector y as 0-d (results of a vector y lost their target axis)."""
    if isinstance(factor, tuple):
        return tuple(_squeezed(xp, f) for f in factor)
    return xp.reshape(factor, ()) if factor.ndim else factor


def unscale(xp, result, scale, y_was_vector):
    """The fit of the unscaled problem from that of the scaled one (exact multiplications)."""
    if scale is None:
        return result
    fc, ft, fs = scale.coef, scale.target, scale.square
    if y_was_vector:
        fc, ft, fs = _squeezed(xp, fc), _squeezed(xp, ft), _squeezed(xp, fs)
    s = result.singular_values
    return LstsqResult(
        _times(result.coef, fc), _times(result.intercept, ft), result.rank, _times(result.rss, fs),
        None if s is None else _times(s, scale.x), result.n_iter, result.istop,
    )  # fmt: skip


def unscale_cv(xp, scale, best, coef, intercept, alpha, cv, scores, *, squared=True):
    """``ridge_cv``'s results in the units of the problem given (``scale`` from a "shared"
    scaling: one factor for all targets, so the choice made on scaled errors is the same);
    the chosen penalty is taken from the penalties as given, not multiplied back. ``squared``:
    ``cv`` and ``scores`` are squared errors (scaled back by y's factor squared); otherwise
    (R^2, a callable's scores) they are returned as they are."""
    if scale is None:
        return coef, intercept, alpha, cv, scores
    alpha = xp.reshape(xp.take(scale.alpha, xp.reshape(best, (-1,)), axis=0), tuple(best.shape))
    if squared:
        cv = None if cv is None else _times(cv, scale.square)
        scores = _times(scores, scale.square)
    return _times(coef, scale.coef), _times(intercept, scale.target), alpha, cv, scores
