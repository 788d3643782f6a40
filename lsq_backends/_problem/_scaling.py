"""Scaling by powers of two: every fit is solved at unit scale, whatever the scale of X, y,
sample_weight and alpha.

The solvers form squares (Gram matrices, column norms, LSQR's norms, weighted means). X with
entries around 1e200 overflowed them (ridge returned exactly 0, LSQR NaN). Entries around
1e-200 underflowed (LSQR returned 0 after 0 iterations), and so did ordinary X next to weights
near 1e+-300 (``sqrt(w) X`` and the weighted means). Least squares and ridge are homogeneous.
With the weighted data ``A = sqrt(w) X`` and ``B = sqrt(w) Y``, dividing

    X by 2**kx,  column j of Y by 2**ky_j,  sqrt(w) by 2**kr,  alpha by 2**(2 kA),

(``kA = kr + kx``, ``kB = kr + ky``) gives a problem whose fit maps back exactly:

    coef = coef' 2**(ky - kx),  intercept = intercept' 2**ky,  rss = rss' 2**(2 kB),
    singular values = s' 2**kA,  weighted means of squared errors = ' 2**(2 ky),

rank and iteration counts unchanged (the weighted means of X and Y do not change when all
weights are multiplied by one factor). With powers of two every one of these products is exact
(short of overflow or underflow). Scaling changes no rounding; it only keeps the squares in
range. So a scaled fit returns the unscaled fit's answer multiplied out.

The exponents are chosen on the device, without a host read, from magnitudes taken in log2
(so that no product of two magnitudes can overflow): ``kr`` from ``max sqrt(w)``, ``kA`` from
``max sqrt(w) * max |X|`` (for ridge the larger of that and ``sqrt(min alpha)``), ``kB`` per
target from ``max sqrt(w) * max |Y_j|``; then ``kx = kA - kr``, ``ky = kB - kr``. That bounds
the weighted data from above. They reach unit scale unless the rows holding X's largest
entries carry weights below ``2**(-2 safe)`` of the largest (1e-154 in float64). Each exponent
is 0 while its magnitude lies within ``2**(+-emax/4)`` (1e77 in float64, 4e9 in float32). There
the solvers' squares cannot overflow or lose bits to the subnormal range, so data at ordinary
scales are not touched (bitwise the unscaled fit). Beyond, it is ``floor(log2(magnitude))``.
``kx`` is one exponent for the whole of X (a penalty is shared by the columns and by a stack).
``ky`` is one per column of y (one per problem with ``shared_y``: leave-one-out compares
targets' errors). On NumPy the choice is read (free in host memory), and nothing is copied when
every exponent is 0. Elsewhere X is multiplied by its (exact) factor, one elementwise pass. The
factors cost a few dozen operations on arrays of k + 3 numbers.

The same exponents and factors serve every entry point: :func:`scale_problem` for the fits
that ``_prepare.prepare`` builds, :func:`unscale` / :func:`unscale_cv` for their results,
:func:`make_scale` and :func:`powers` for the diagnostics and the accumulators' running
scales (``_stream``).

``powers``: each ``2**k`` is made exactly, from its bits where the library can reinterpret them,
else as a product of the exact constants 2**(+-2**b) that the bits of |k| select
(``_compat.exact_powers``). The standard has no ``ldexp``, and ``pow`` is not promised exact.

``flushed``: XLA flushes subnormal numbers to zero on CPUs and GPUs (JAX). Flushed subnormals
matter where the largest magnitude of the array is below ``smallest_normal / eps``: zeroing them
then changes it by more than a rounding. Any subnormal penalty matters (``each``). They are found
from the bits, which flushing leaves alone. No scaling can rescue what the device reads as zero,
so such input is refused.

``gram_certificate``: for fits without weights, on namespaces that read while solving
(``_compat.traits(xp).reads_while_solving``). Column j's sum of squares d_j (A_jj + offset_sq_j) bounds
max |X|**2 within [max d / m, max d]. When both ends lie within 2**(+-2 safe) (and, for ridge,
sqrt(min alpha) <= 2**safe), the ``max |X|`` passes would have chosen 1 too. So ordinary data
never pay those two read-only passes over X (their cost: design notes). The rest (NaN, overflow,
extreme scales) takes them, as before, and decides the same.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from .._backend import _compat
from .._result import LstsqResult


class Scale(NamedTuple):
    """What X, Y and sqrt(w) were divided by (exponents), and the exact factors that map results
    back (tuples of factors where the exponent may exceed the exponent range; see :func:`times`)."""

    alpha: Any  # the penalty as validated, before scaling (None for least squares)
    kx: Any  # exponents, float arrays: kx (), ky (k,) or (), kr ()
    ky: Any
    kr: Any
    coef: Any  # 2**(ky - kx)
    target: Any  # 2**ky: intercepts
    square: Any  # 2**(2 (kr + ky)): weighted sums of squares (rss, leave-one-out errors)
    mean_square: Any  # 2**(2 ky): weighted means of squares (held-out errors)
    x: Any  # 2**(kr + kx): singular values


def limits(xp, dtype):
    """(safe, limit): magnitudes within 2**(+-safe) are solved as given; an exponent applied to
    data stays within +-limit (2**limit and 2**-limit are normal numbers). Remembered per
    namespace and dtype (twice per small fit)."""
    return _compat.memo(("scaling limits", xp, dtype), lambda: _limits_of(_compat.finfo(xp, dtype)))


def _limits_of(dtype_info):
    emax = round(math.log2(float(dtype_info.max)))
    return emax // 4, emax - 2


def empty_exponent(xp, dtype):
    """The exponent of "no data yet" (an all-zero column, no weight): below every exponent
    that data can have, so that a running maximum ignores it (``_stream``)."""
    return -4.0 * limits(xp, dtype)[1]


def _magnitude(xp, A, axis):
    """max |A| over ``axis`` (no |A| temporary)."""
    return xp.maximum(_compat.reduce_max(xp, A, axis=axis), -_compat.reduce_min(xp, A, axis=axis))


def log2_abs(xp, a):
    """log2 |a|, and -inf (no magnitude) where ``a`` is zero, NaN or infinite: those are left
    to the value checks and the solvers."""
    a = xp.abs(a)
    ok = (a > 0) & xp.isfinite(a)
    return xp.where(ok, xp.log2(xp.where(ok, a, xp.ones_like(a))), xp.full_like(a, -math.inf))


def exponent(xp, log2_big, empty=0.0):
    """The exponent k of the scale 2**k of a magnitude whose log2 is ``log2_big`` (an array). It is
    floor(log2_big) where that lies outside the safe range, else 0; ``empty`` where there is no
    magnitude (-inf). Kept within +-limit."""
    safe, limit = limits(xp, log2_big.dtype)
    has = xp.isfinite(log2_big)
    k = xp.floor(xp.where(has, log2_big, xp.zeros_like(log2_big)))
    k = _compat.clip(xp, xp.where(xp.abs(k) > safe, k, xp.zeros_like(k)), -limit, limit)
    return xp.where(has, k, xp.full_like(k, empty))


def flushed(xp, a, name, each=False):
    """``(ok, message)``: ``ok`` a 0-d bool array, False where ``a`` holds subnormal numbers that matter
    and that the library computes with as zeros. With ``each`` (penalties) any one matters. ``(None,
    None)`` where nothing is flushed (every library but JAX) or nothing can be read (module docstring)."""
    if a is None or not _compat.traits(xp).flushes_subnormals or _compat.is_lazy(a) or math.prod(a.shape) == 0:
        return None, None
    import jax

    info = _compat.finfo(xp, a.dtype)
    wide = info.bits >= 64
    bits = jax.lax.bitcast_convert_type(a, xp.int64 if wide else xp.int32) & (2 ** (info.bits - 1) - 1)
    subnormal = (bits > 0) & (bits < 2 ** (52 if wide else 23))
    ok = ~xp.any(subnormal) if each else ~(xp.any(subnormal) & (xp.max(xp.abs(a)) < info.smallest_normal / info.eps))
    where = "" if each else f", and no entry of {name} is large enough for that not to matter"
    msg = (
        f"{name} holds subnormal numbers (nonzero, below {info.smallest_normal:.3g}), which JAX computes with "
        f"as zeros{where}: multiply {name} by a power of two first (the fit scales back exactly: coef by 1/c "
        "for X times c, coef and intercept by c for y, nothing for sample_weight; alpha goes with "
        "sample_weight and X**2)"
    )
    return ok, msg


def powers(xp, requests):
    """``2**k`` for each ``(k, parts)`` of ``requests`` (integer-valued float arrays), exactly, all in one small
    array (module docstring; on Dask one task, ``_compat.one_task``). ``parts`` > 1 gives a tuple of that many
    factors, each within the exponent range. |k| may reach ``parts`` times the range; beyond, the result over- or
    underflows, and so would the true one."""
    parts = tuple(p for _, p in requests)
    out = [(tuple(k.shape), k.dtype) for k, p in requests for _ in range(p)]
    flat = _compat.one_task(xp, _powers, [k for k, _ in requests], out, parts=parts)
    grouped, i = [], 0
    for p in parts:
        grouped.append(flat[i] if p == 1 else tuple(flat[i : i + p]))
        i += p
    return grouped


def _powers(xp, *ks, parts):
    """:func:`powers`' factors, one flat tuple (each request's parts in order). Requests of equal ``parts``
    are split together, and every factor is made in one call: a few dozen operations in all."""
    _, limit = limits(xp, ks[0].dtype)
    steps, layout = [], []  # layout: (request, shape, size, offset of its first part in the steps)
    offset = 0
    for p in sorted(set(parts)):
        members = [j for j, q in enumerate(parts) if q == p]
        k = xp.concat([xp.reshape(ks[j], (-1,)) for j in members])
        k = _compat.clip(xp, k, -float(p * limit), float(p * limit))
        done = None
        for i in range(1, p + 1):
            upto = k if i == p else xp.trunc(k * i / p)  # exact: |k i| < 2**53, and trunc of an exact quotient
            steps.append(upto if done is None else upto - done)
            done = upto
        within = offset
        for j in members:
            size = math.prod(tuple(ks[j].shape))
            layout.append((j, tuple(ks[j].shape), size, within, k.shape[0]))
            within += size
        offset += p * k.shape[0]
    factors = _compat.exact_powers(xp, xp.concat(steps) if len(steps) > 1 else steps[0], limit)  # no host data
    flat = [None] * sum(parts)
    first = [sum(parts[:j]) for j in range(len(parts))]
    for j, shape, size, at, stride in layout:
        for i in range(parts[j]):
            flat[first[j] + i] = xp.reshape(factors[at + i * stride : at + i * stride + size], shape)
    return tuple(flat)


def times(xp, a, factor):
    """``a * 2**k``, ``factor`` as :func:`powers` gave it. A tuple holds exact steps of one sign, so no
    partial product leaves the range that ``a`` and the result span. A factor of fewer dimensions is
    aligned with the trailing axes of ``a``. One of another float dtype is cast to ``a``'s, exactly
    (float32 ``ridge_cv`` maps float64 results back with float32 factors)."""
    for f in factor if isinstance(factor, tuple) else (factor,):
        if 0 < f.ndim < a.ndim:
            f = xp.reshape(f, (1,) * (a.ndim - f.ndim) + tuple(f.shape))
        a = a * (f if f.dtype == a.dtype else xp.astype(f, a.dtype))
    return a


class Rescale(Exception):  # noqa: N818 (a signal to prepare again, not an error)
    """Raised by :func:`gram_certificate`'s check: X's scale is not certified by its Gram
    matrix; the fit is prepared again with the ``max |X|`` passes."""


def _rescale():
    raise Rescale


def gram_certificate(xp, X, alpha, checks, free):
    """With ``scale_problem(..., skip_x=True)``: ``certify(A, offset_sq)``, run on the Gram matrix A = X^T X of tall
    X before it is factorized (X centered where ``offset_sq``, what centering removed, is given). Unless X's factor
    is certainly 1 it raises :class:`Rescale`. NumPy raises at once; elsewhere ``checks`` raises it when the fit
    reads its route decision (no read of its own; ``free``: as :func:`scale_problem`). Module docstring."""
    safe, _ = limits(xp, X.dtype)
    m = X.shape[-2]

    def certify(A, offset_sq=None):
        d = _compat.diagonal(xp, A)
        if offset_sq is not None:
            d = d + offset_sq
        if free:
            if d.ndim == 1:  # one problem's diagonal as floats: NaN reaches the sum, Python's max may skip it
                c = d.tolist()
                big = max(c) if math.isfinite(sum(c)) else math.nan
            else:
                big = float(d.max())
            ok = m * 2.0 ** (-2 * safe) <= big <= 2.0 ** (2 * safe)
            if alpha is not None and alpha.shape[0] > 0:
                ok = ok and min(alpha.tolist()) <= 2.0 ** (2 * safe)  # validated: finite
            if not ok:
                raise Rescale
            return
        big = xp.max(d)  # NaN (a non-finite X) fails both comparisons
        ok = (big >= m * 2.0 ** (-2 * safe)) & (big <= 2.0 ** (2 * safe))
        if alpha is not None and alpha.shape[0] > 0:
            ok = ok & (xp.min(alpha) <= 2.0 ** (2 * safe))
        checks.add(ok, _rescale)

    return certify


def _choice(xp, X, Y, root, alpha, shared_y):
    """(kx, ky, kr), see the module docstring; ``root`` (..., m, 1) is sqrt(w) or None. The magnitudes are
    reductions of the data; the exponents, from them, one task on Dask (``_compat.one_task``)."""
    big_x = _magnitude(xp, X, None)
    big_y = _magnitude(xp, Y, None if shared_y else tuple(range(Y.ndim - 1)))
    # The weighted data's scale from max sqrt(w) times max |X| (max |y| per target): two
    # reductions, where max_i sqrt(w_i) max_j |X_ij| took a pass along X's rows (design notes).
    big_r = None if root is None else xp.max(root)
    low_alpha = None if alpha is None else xp.min(alpha)
    x_out, y_out = (tuple(big_x.shape), big_x.dtype), (tuple(big_y.shape), big_y.dtype)
    return _compat.one_task(
        xp, _exponents, (big_x, big_y, big_r, low_alpha), [x_out, y_out, x_out], limit=limits(xp, X.dtype)[1]
    )


def _exponents(xp, big_x, big_y, big_r, low_alpha, *, limit):
    """:func:`_choice`'s (kx, ky, kr) from max |X|, max |Y| (per target), max sqrt(w) and min alpha (None: none)."""
    lx, ly = log2_abs(xp, big_x), log2_abs(xp, big_y)
    kr = None
    if big_r is not None:
        lr = log2_abs(xp, big_r)
        kr, lx, ly = exponent(xp, lr), lx + lr, ly + lr
    if low_alpha is not None:
        # Ridge factors [A; sqrt(alpha) I]: its scale is the larger of the two blocks (the
        # smallest penalty's, for a path or per-target penalties). Scaled by X alone, a
        # penalty far above ||X||**2 (X ~ 1e-200, alpha = 1) overflowed to infinity.
        lx = xp.maximum(lx, log2_abs(xp, low_alpha) / 2)
    ka, kb = exponent(xp, lx), exponent(xp, ly)
    if kr is None:
        return ka, kb, xp.zeros_like(ka)
    return _compat.clip(xp, ka - kr, -limit, limit), _compat.clip(xp, kb - kr, -limit, limit), kr


def scale_problem(xp, X, Y, root, alpha, *, free, shared_y=False, skip_x=False):
    """``(X', Y', root', alpha', scale)`` at unit scale (see the module docstring); ``root``
    is sqrt(w) (..., m, 1) or None; ``scale`` None where nothing was scaled (read on NumPy,
    where reading is free). ``skip_x`` (NumPy, no weights): X and alpha are left as given,
    their factor 1 to be certified by the Gram matrix (:func:`gram_certificate`); ``free``: ``free_to_read``."""
    if 0 in tuple(X.shape) or 0 in tuple(Y.shape):
        return X, Y, root, alpha, None
    y_axes = None if shared_y else tuple(range(Y.ndim - 1))
    if skip_x:  # Y alone (k columns: no pass over X, and X is not copied)
        if free and _ordinary(xp, Y, y_axes):
            return X, Y, root, alpha, None
        ky = exponent(xp, log2_abs(xp, _magnitude(xp, Y, y_axes)))
        zero = xp.zeros_like(xp.reshape(ky, (-1,))[0])
        return _apply(xp, X, Y, root, alpha, (zero, ky, zero), scale_x=False)
    if root is None and alpha is None and free and _ordinary(xp, X, None) and _ordinary(xp, Y, y_axes):
        return X, Y, root, alpha, None  # the common case, decided on reads (free on NumPy)
    exponents = kx, ky, kr = _choice(xp, X, Y, root, alpha, shared_y)
    if free and not (bool(kx != 0) or bool(kr != 0) or bool(xp.any(ky != 0))):
        return X, Y, root, alpha, None  # data at ordinary scales: no copy
    return _apply(xp, X, Y, root, alpha, exponents)


def _ordinary(xp, A, axis):
    """NumPy: every magnitude max |A| over ``axis`` (None: all of A) is within the safe range (its exponent is
    0). One magnitude is read as a float: of one column, max |A| (one reduction); of all of X, its largest and
    smallest entries (two, and no X-sized temporary). NaN: not ordinary."""
    safe, _ = limits(xp, A.dtype)
    if A.shape[-1] == 1:
        lo = hi = float(abs(A).max())
    elif axis is None:
        lo = hi = max(float(A.max()), -float(A.min()))
    else:
        big = _magnitude(xp, A, axis)
        lo, hi = float(big.min()), float(big.max())
    return 2.0**-safe <= lo and hi < 2.0 ** (safe + 1)


def make_scale(xp, alpha, kx, ky, kr, *requests):
    """The :class:`Scale` of exponents ``kx``, ``ky``, ``kr`` (and ``alpha`` as given), and
    the factors of ``requests`` (as :func:`powers` takes them), from one :func:`powers` call."""
    ka, kb = kx + kr, ky + kr
    factors = powers(xp, [(ky - kx, 2), (ky, 1), (2 * kb, 4), (2 * ky, 2), (ka, 2), *requests])
    return Scale(alpha, kx, ky, kr, *factors[:5]), factors[5:]


def _apply(xp, X, Y, root, alpha, exponents, scale_x=True):
    """The problem divided by the factors of the ``exponents`` ``(kx, ky, kr)``; ``scale_x=False``: kx is 0 and X
    is left as it is (no elementwise pass)."""
    kx, ky, kr = exponents
    ka = kx + kr
    scale, (fx, fy, fr, fa) = make_scale(xp, alpha, kx, ky, kr, (-kx, 1), (-ky, 1), (-kr, 1), (-2 * ka, 4))
    X, Y = (X * fx if scale_x else X), times(xp, Y, fy)
    root = None if root is None else root * fr
    return X, Y, root, None if alpha is None else penalty_times(xp, alpha, fa), scale


def penalty_times(xp, alpha, factor):
    """``alpha * 2**k`` (``factor`` as :func:`powers` gave it), a positive penalty kept positive
    (rank n), however small next to the scaled data's squares."""
    out = times(xp, alpha, factor)
    tiny = xp.full_like(alpha, xp.finfo(alpha.dtype).smallest_normal)
    return xp.where(alpha > 0, xp.maximum(out, tiny), out)


def scaled_alpha(xp, scale, alpha):
    """``alpha`` in the units of a problem scaled by ``scale`` (positive stays positive)."""
    (fa,) = powers(xp, [(-2 * (scale.kx + scale.kr), 4)])
    return penalty_times(xp, alpha, fa)


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
        times(xp, result.coef, fc), times(xp, result.intercept, ft), result.rank, times(xp, result.rss, fs),
        None if s is None else times(xp, s, scale.x), result.n_iter, result.istop,
    )  # fmt: skip


def unscale_cv(xp, scale, best, results, *, errors="sums"):
    """``ridge_cv``'s ``results`` ``(coef, intercept, alpha, cv, scores)`` in the given problem's units; ``scale`` is
    from a "shared" scaling (one factor for all targets: the choice on scaled errors stands). The chosen penalty is
    taken as given. ``errors``: ``cv`` and ``scores`` are weighted sums of squared errors ("sums": leave-one-out,
    GCV), weighted means of them ("means": held-out folds), or scale-free (None: R^2, a callable)."""
    if scale is None:
        return results
    coef, intercept, alpha, cv, scores = results
    alpha = xp.reshape(xp.take(scale.alpha, xp.reshape(best, (-1,)), axis=0), tuple(best.shape))
    if errors is not None:
        factor = scale.square if errors == "sums" else scale.mean_square
        cv = None if cv is None else times(xp, cv, factor)
        scores = times(xp, scores, factor)
    return times(xp, coef, scale.coef), times(xp, intercept, scale.target), alpha, cv, scores
