"""What a triangular factor says about X: a cheap estimate of its condition number, and the
rank decision of the triangular-factor methods.

The condition estimate (``condition_estimate``), from the Cholesky factor of the Gram matrix,
chooses between the normal equations, CholeskyQR2 and Householder QR. O(p^2) per step
on the p x p factor: nothing next to forming the Gram matrix.

``condition_estimate``: for p > 16 the larger of the pivot ratio of the scaled factor and power
iteration on D A D and on its inverse (through the inverse factor), from a fixed start. That is
a lower bound, usually within a small factor of the truth. For p <= 16 it is the
Frobenius-norm bound instead: an upper bound, at most p times the truth. NumPy stacks compute it
by substitution entry by entry (``_stacked_inverse_norm``), other libraries by a batched
inverse.

The rank decision of the triangular-factor methods (``normal``, ``qr``, ``auto`` and the
streaming accumulators): may the triangular solve stand, or must the SVD of the factor decide?

A pivot of an unpivoted triangular factor bounds the smallest singular value from above and
does not reveal it: a 3 x 3 X whose first row is at rounding level, or a near-dependence
spread over several columns, keeps every pivot far from zero. The test here is a certificate
instead: with T the n x n factor (``T^T T = X^T X``, centered and penalized as solved) and
D the columns' norms before centering,

    s_min(X D^-1) >= 1 / ||(T D^-1)^-1||_F    and    s_min(X) >= 1 / ||T^-1||_F,

each at most sqrt(n) times too small, against the largest singular value bounded by
Frobenius norms (``max(||T||_F, max_j D_jj)``, the scale ``pinv.uncentered_scale`` gives the
SVD's cutoff). One triangular inverse of the column-scaled factor (O(n^3 / 3), the cost of
the Cholesky factorization; on NumPy stacks of small factors by substitution over the stack) gives
both. Where the certificate fails the caller solves through the SVD of the factor, which
decides the rank with the cutoff itself: the certificate only decides who decides.

- An explicit ``rcond`` is NumPy's rule: the solve stands where s_min(X) > rcond * scale is
  certified.
- The default cutoff c: certified as above, or where the column-scaled X clears it by a
  factor ``CLEAR`` (``||(T D^-1)^-1||_F`` times the scaled factor's Frobenius norm below
  1 / (CLEAR c)) and no pivot is below c times the largest column (a negligible column is
  NumPy's rank deficiency too). Householder QR and the Cholesky factor err relative to each
  column's norm, so such a factor determines every direction however differently the columns
  are scaled: graded designs (NIST's Filip, x .. x**10, whose s_min / s_max of 7e-16 is
  below NumPy's cutoff) keep their digits. Near the cutoff the SVD decides, as NumPy.
- ``resolution`` (factors of a formed Gram matrix): the column-scaled bound must also clear
  the Gram matrix's rounding, without which its factor's small singular values are noise.

``certified``'s other arguments: ``offset_sq`` (..., n) is what centering removed from the
columns' squared norms (None without an intercept). ``cutoff`` is the cutoff in effect (a
number or a 0-d array). ``resolution`` is the relative rounding of a formed Gram matrix's
factor (its Cholesky factor L, lower; None: T is an upper R): its column-scaled bound must
stay below ``1 / resolution``. ``wide``: T belongs to the rows of a wide X (mixed by
centering), so no column scaling, one scale for all. ``colsq``: the squared column norms of R
(the rows of L: the diagonal of the matrix factorized), if the caller has them.

``bounded``: the certificate's answer read off an upper bound it already has, where one is at
hand. For p <= 16 ``condition_estimate`` returns ``kappa = ||Ls||_F ||Ls^-1||_F`` with Ls the factor
scaled to unit rows (``||Ls||_F = sqrt(p)``), so ``K = 2 kappa / sqrt(p)`` bounds
``||Ls^-1||_F`` with a factor 2 to spare for the rounding of either inverse. The inverse the
certificate forms is ``Ls^-1 diag(u / sqrt(colsq))`` (u: the columns' norms before centering),
whose Frobenius norm is at most ``K sqrt(g)``, ``g = max(u**2 / colsq)`` (1 without an
intercept). Its weighted norm (NumPy's rule) is at most ``K W``, ``W**2 = scale**2 /
min(colsq)``; with a resolution, the norm it is held to is at most K. Where these bounds pass
every test of ``certified`` (no pivot at eps, no clipped entry, the resolution, the cutoff by
either rule), ``certified`` would answer True, and its ~40 operations are skipped. Elsewhere it
runs. A NaN (failed) factor fails every bound. Used where values are read for free (NumPy):
elsewhere the bound would cost a read.
"""

from __future__ import annotations

import math
import operator

from ..._backend import _compat
from ..._backend._compat import diagonal, eps, matmul, mT

POWER_STEPS = 4
SMALL = 16  # up to this size, a Frobenius-norm bound replaces power iteration


def _start_vector(xp, like, p):
    # A fixed +-1 pattern with no structure to be orthogonal to (sign of sin(j * golden ratio)).
    j = xp.arange(1, p + 1, dtype=like.dtype, device=_compat.device(like))
    v = _compat.sign(xp, xp.sin(j * 1.6180339887498949)) + 0.5
    shape = tuple(like.shape[:-2]) + (p, 1)
    return xp.broadcast_to(v[:, None], shape)


def _normalize(xp, v):
    # A zero vector stays zero (divided by the smallest normal number: one operation where a
    # selection of 1 took three, each a kernel launch on a GPU); NaN stays NaN.
    nrm = xp.linalg.vector_norm(v, axis=-2, keepdims=True)
    return v / _compat.clip(xp, nrm, float(_compat.finfo(xp, v.dtype).smallest_normal), math.inf)


def condition_estimate(xp, L, A, Lt=None):
    """Estimate of cond(X D) = sqrt(cond(D A D)), D equilibrating A = X^T X = L L^T (unit column norms); NaN where
    the factorization failed. p > 16: power iteration, a lower bound usually within a small factor; p <= 16: the
    Frobenius-norm bound, at most p times too large (see the module docstring). ``Lt``: ``_compat.batch_last(L)``
    for a stack, if the caller has it."""
    p = A.shape[-1]
    d = diagonal(xp, A)
    if p <= SMALL and L.ndim > 2 and _compat.plain_numpy(L):
        # Stacks of small problems: ||D L||_F ||(D L)^-1||_F, where ||D L||_F = sqrt(p) (row i
        # of L has squared norm A_ii), so only the inverse is computed, entry by entry over
        # the stack, without forming D L (half of auto's extra cost on 10000 8x8 problems).
        # NumPy only: p**3 / 6 elementwise operations (~700 at p = 16) are ~700 kernel
        # launches on a GPU, where the batched inverse below is a few.
        return math.sqrt(p) * _stacked_inverse_norm(xp, L, d, Lt)
    if p <= SMALL:
        # Small factors: ||Ls||_F ||Ls^-1||_F (Ls = D L, the Cholesky factor of D A D), an upper
        # bound on cond(X D) at most p times too large, for one reduction instead of 15 products;
        # ||Ls||_F = sqrt(p), as above. Ls^-1 = L^-1 D^-1 scales the columns of L^-1 by sqrt(d),
        # with no division (a factor that succeeded has d > 0; a failed one's NaN reaches L^-1).
        Li = _compat.triangular_inverse(xp, L, lower=True) * xp.sqrt(d)[..., None, :]
        return math.sqrt(p) * xp.sqrt(_compat.reduce_sum(xp, Li * Li, axis=(-2, -1)))
    dinv = 1 / xp.sqrt(_compat.positive_or_one(xp, d))
    Ls = dinv[..., :, None] * L  # Cholesky factor of D A D
    # One triangular solve for the inverse factor, then matrix products only: batched stacks
    # of small problems pay one call instead of ten (O(p^3 / 3), as much as the Cholesky).
    Linv = _compat.triangular_inverse(xp, Ls, lower=True)
    As = dinv[..., :, None] * A * dinv[..., None, :]
    v = w = _start_vector(xp, L, p)
    for _ in range(POWER_STEPS):
        v = _normalize(xp, matmul(xp, As, v))
        w = _normalize(xp, matmul(xp, mT(xp, Linv), matmul(xp, Linv, w)))
    lam_max = xp.linalg.vector_norm(matmul(xp, As, v), axis=(-2, -1))
    inv_min = xp.linalg.vector_norm(matmul(xp, mT(xp, Linv), matmul(xp, Linv, w)), axis=(-2, -1))
    piv = diagonal(xp, Ls)
    ratio = xp.max(piv, axis=-1) / xp.min(piv, axis=-1)
    return xp.maximum(xp.sqrt(lam_max * inv_min), ratio)


def _stacked_inverse_norm(xp, L, d=None, Lt=None):
    """||L^-1 diag(sqrt(d))||_F (``d`` None: ||L^-1||_F) for a stack of small lower triangles, by substitution
    vectorized over the stack: p**3 / 6 elementwise operations on (...,)-shaped arrays, the inverse never assembled
    (NumPy's batched ``inv`` costs more: design notes). ``Lt``: ``_compat.batch_last(L)``, if known."""
    p = L.shape[-1]
    Lt = _compat.batch_last(xp, L) if Lt is None else Lt
    if d is not None:
        dt = _compat.batch_last(xp, _compat.positive_or_one(xp, d)[..., None])  # (p, 1, N)
    rows = [[Lt[i, k, ...] for k in range(i + 1)] for i in range(p)]
    total = None
    for j in range(p):  # column j of L^-1: x_i = 0 for i < j
        x = {j: 1 / rows[j][j]}
        for i in range(j + 1, p):
            acc = rows[i][j] * x[j]
            for k in range(j + 1, i):
                acc = acc + rows[i][k] * x[k]
            x[i] = -acc / rows[i][i]
        col = None
        for v in x.values():
            col = v * v if col is None else col + v * v
        col = col if d is None else col * dt[j, 0, ...]
        total = col if total is None else total + col
    return xp.reshape(xp.sqrt(total), tuple(L.shape[:-2]))


# Factor by which the column-scaled bound must clear the default cutoff for the scale-free
# exception: a QR solution's worst-case error bound eps * max(m, n) * cond(X D^-1) is then at
# most 1%, far from the boundary where NumPy's rule and the column-scaled one disagree.
CLEAR = 100.0
# Entries of the inverse are clipped at the dtype's largest number to this power before
# squaring (a norm that large fails every test, and is not certified): no overflow, no
# warnings. float32: 5e7, beyond 1 / eps.
BIG_POWER = 0.2


def certified(xp, T, offset_sq, rcond, cutoff, *, resolution=None, wide=False, colsq=None):
    """Boolean (...,), or (..., k) for a stack per target: is the triangular solve with T certified to keep every
    direction the cutoff keeps? ``T`` (..., p, p): upper R, or with a ``resolution`` a Gram matrix's Cholesky factor
    L, lower. ``rcond``: the user's (None: the default rule), ``cutoff`` the one in effect. The other arguments and
    both rules: the module docstring. On Dask one task (``_compat.one_task``)."""
    out = (tuple(T.shape[:-2]), xp.bool)
    return _compat.one_task(xp, _certified, (T, offset_sq, rcond, cutoff, colsq), out, resolution=resolution, wide=wide)


def _certified(xp, T, offset_sq, rcond, cutoff, colsq, *, resolution, wide):
    lower = resolution is not None  # a Gram matrix's Cholesky factor
    if colsq is None:
        colsq = xp.sum(T * T, axis=-1 if lower else -2)
    own = xp.broadcast_to(xp.sum(colsq, axis=-1, keepdims=True), tuple(colsq.shape)) if wide else colsq
    usq = own
    if offset_sq is not None:
        extra = xp.sum(offset_sq, axis=-1, keepdims=True) if wide else offset_sq
        usq = usq + (extra[..., None, :] if colsq.ndim > extra.ndim else extra)
    u = xp.sqrt(_compat.positive_or_one(xp, usq))
    top = _compat.reduce_max(xp, colsq, axis=-1, keepdims=True)  # largest column of R, squared
    scale = xp.maximum(
        xp.sqrt(xp.sum(colsq, axis=-1, keepdims=True)), _compat.reduce_max(xp, u, axis=-1, keepdims=True)
    )
    # Column-scaled factor, lower: entries at most 1 in size, the inverse's growth all its own.
    Ls = T / u[..., :, None] if lower else mT(xp, T / u[..., None, :])
    d = diagonal(xp, Ls)
    good = xp.abs(d) > eps(xp, T)  # False for NaN (a failed factorization)
    big = _compat.finfo(xp, T.dtype).max ** BIG_POWER
    # ||Ls^-1||_F**2 with Ls^-1's columns weighted: against T (scale / u, at most big) and,
    # for the resolution, against T scaled by its own columns (after centering: the Gram
    # matrix's rounding is relative to them, centering's to the columns before it).
    weights = [scale / xp.maximum(u, scale / big)]
    if resolution is not None and (wide or offset_sq is not None):
        weights.append(xp.sqrt(own) / u)
    # A pivot at rounding level (or NaN) fails every test: taken as 1, so that the inverse
    # exists on every library (NumPy raises on a singular one).
    inv_sq, raw_sq, *own_sq = _inverse_norms(xp, Ls, xp.where(good, d, xp.ones_like(d)), weights, big)
    half_big_sq = big * big / 2  # one clipped entry fails
    ok = _compat.reduce_all(xp, good, axis=-1) & (raw_sq < half_big_sq) & (inv_sq < half_big_sq)
    if resolution is not None:
        ok = ok & ((own_sq[0] if own_sq else inv_sq) * (resolution * resolution) < 1)
    if rcond is not None:  # NumPy's rule (rcond = 0: every direction the inverse resolves)
        return ok & _below(xp, raw_sq, rcond)
    keep = _below(xp, raw_sq, cutoff)
    if not wide:
        scaled_sq = xp.maximum(xp.sum(colsq / (u * u), axis=-1), xp.ones_like(inv_sq))  # ||T D^-1||_F^2, >= 1
        clear = _below(xp, inv_sq * scaled_sq, CLEAR * cutoff)
        # no pivot negligible next to the largest column (NumPy's deficiency too)
        pivots = xp.abs(diagonal(xp, T)) / xp.sqrt(_compat.positive_or_one(xp, top))
        keep = keep | (clear & _compat.reduce_all(xp, pivots > cutoff, axis=-1))
    return ok & keep


def bounded(xp, kappa, colsq, pivots, offset_sq, rcond, cutoff, resolution):
    """Python bool: do the bounds from ``kappa`` (``condition_estimate``'s for p <= 16, an upper bound) prove that
    :func:`certified` (lower, tall, with ``resolution``) answers True for every problem? False: run it. ``colsq``
    (..., p): the diagonal of the matrix factorized; ``pivots``: the factor's diagonal. One problem (1-D ``colsq``)
    is read as Python floats: a NumPy reduction over p entries costs as much as the whole test. Module docstring."""
    p = colsq.shape[-1]
    if colsq.ndim == 1:
        c, piv = colsq.tolist(), pivots.tolist()
        usq = c if offset_sq is None else list(map(operator.add, c, offset_sq.tolist()))
        kappa, every, tiny = float(kappa), bool, float(eps(xp, colsq))
        cutoff, resolution = float(cutoff), float(resolution)
        if kappa != kappa or not min(c) > 0:  # a failed factor (NaN kappa) or a zero column
            return False
        g = 1.0 if offset_sq is None else max(map(operator.truediv, usq, c))  # max(u**2 / colsq)
        W2 = max(sum(c), max(usq)) / min(c)  # scale**2 / min colsq
        lowest = min(map(abs, piv)) / max(c) ** 0.5  # the smallest pivot against the largest column
    else:
        every, tiny = (lambda a: bool(_compat.reduce_all(xp, a))), eps(xp, colsq)
        W2 = _compat.reduce_sum(xp, colsq, axis=-1)
        g = 1.0
        if offset_sq is not None:
            usq = colsq + (offset_sq[..., None, :] if colsq.ndim > offset_sq.ndim else offset_sq)
            g = _compat.reduce_max(xp, usq / colsq, axis=-1)
            W2 = xp.maximum(W2, _compat.reduce_max(xp, usq, axis=-1))
        W2 = W2 / _compat.reduce_min(xp, colsq, axis=-1)
        top = _compat.reduce_max(xp, colsq, axis=-1, keepdims=True)
        lowest = _compat.reduce_min(xp, xp.abs(pivots) / xp.sqrt(top), axis=-1)
    K2 = 4 * kappa * kappa / p  # (2 kappa / sqrt(p))**2 >= ||Ls^-1||_F**2
    half_big_sq = float(_compat.finfo(xp, colsq.dtype).max ** BIG_POWER) ** 2 / 2
    ok = _below(xp, K2, resolution) & _below(xp, K2 * g, tiny) & (K2 * g < half_big_sq)
    if not every(ok & (K2 * W2 < half_big_sq)):
        return False
    if rcond is not None:
        return every(_below(xp, K2 * W2, rcond))
    numpy_rule = _below(xp, K2 * W2, cutoff)
    return every(numpy_rule | (_below(xp, K2 * g * p, CLEAR * cutoff) & (lowest > cutoff)))


def _below(xp, norm_sq, c):
    """``sqrt(norm_sq) * c < 1`` without squaring large numbers: ``norm_sq * c * c < 1``."""
    return norm_sq * (c * c) < 1


def _inverse_norms(xp, Ls, d, weights, big):
    """``||F||_F**2`` and ``||F diag(w)||_F**2`` for each ``w`` of ``weights`` ((..., p), at
    most ``big``), ``F`` the inverse of ``Ls`` (lower, entries at most 1) with its diagonal
    replaced by ``d`` (above eps in size, or NaN), each (...,), entries clipped at ``big``."""
    p = Ls.shape[-1]
    if Ls.ndim > 2 and p <= _compat.SMALL_STACK and _compat.plain_numpy(Ls):
        # NumPy only, as ``condition_estimate``'s substitution: ~p**3 / 6 elementwise
        # operations and p (p - 1) / 2 clips are as many kernel launches on a GPU, and on CuPy
        # array-api-compat's ``clip`` writes through boolean masks whose counts CuPy reads on
        # the host (design notes). The batched inverse below is a few operations, whatever p.
        return _stacked_inverse_norms(xp, Ls, d, weights, big)
    eye = _compat.as_rank(xp, _compat.eye_like(xp, Ls, p), Ls.ndim)  # JAX may refuse rank promotion
    F = _compat.triangular_inverse(xp, Ls + eye * (d - diagonal(xp, Ls))[..., None, :], lower=True)
    F = xp.minimum(xp.abs(F), xp.full_like(F, big))
    sums = [_compat.reduce_sum(xp, F * F, axis=(-2, -1))]
    for w in weights:
        Fw = xp.minimum(F * w[..., None, :], xp.full_like(F, big))
        sums.append(_compat.reduce_sum(xp, Fw * Fw, axis=(-2, -1)))
    return sums


def _stacked_inverse_norms(xp, Ls, d, weights, big):
    """:func:`_inverse_norms` for a stack of small triangles, by forward substitution
    vectorized over the stack (the inverse never assembled): NumPy's batched ``inv`` pays a
    few microseconds per matrix (as :func:`condition_estimate`'s stacked one)."""
    p = Ls.shape[-1]
    batch = tuple(Ls.shape[:-2])
    Lt = _compat.batch_last(xp, Ls)  # (p, p, N)
    dt = _compat.batch_last(xp, d[..., None])  # (p, 1, N)
    wts = [_compat.batch_last(xp, w[..., None]) for w in weights]
    sums = [None] * (1 + len(weights))
    for j in range(p):  # column j of the inverse: x_i = 0 for i < j
        x = {j: 1 / dt[j, 0, ...]}
        for i in range(j + 1, p):
            acc = Lt[i, j, ...] * x[j]
            for k in range(j + 1, i):
                acc = acc + Lt[i, k, ...] * x[k]
            x[i] = xp.clip(-acc / dt[i, 0, ...], -big, big)  # NaN stays NaN
        col = None
        for v in x.values():
            col = v * v if col is None else col + v * v
        col = xp.minimum(col, xp.full_like(col, big * big))
        # column j weighted (weights at most big: col * w**2 <= big**4)
        terms = [col] + [col * (wt[j, 0, ...] * wt[j, 0, ...]) for wt in wts]
        sums = [t if s is None else s + t for s, t in zip(sums, terms, strict=True)]
    return [xp.reshape(s, batch) for s in sums]
