"""The lean route: the refined normal equations with a proof, on the device, that they are the
answer, read once; the full route (``normal``, ``auto``) where the proof fails.

A fit of ordinary data needs the Gram products, one Cholesky factorization, one step of
refinement and the residual: about fifteen operators. The full route adds its scaling, its
condition estimate and its rank certificate, each built to decide the hard cases, and on a GPU
every operator is a kernel launch. The lean route computes the refined answer first and then
proves from arrays it already has that the common case holds (Higham, *Accuracy and Stability
of Numerical Algorithms*, 2nd ed., ch. 10 and 20):

- **Scale** (``root_d``): every ``diag(A)`` (A the Gram matrix, centered with an intercept, with the
  penalty), as ``diag(A)**-1/2``, and each target's ``||X w||^2`` (the signal, ``w^T X^T y``, from arrays
  of n entries; with ridge ``+ alpha ||w||^2``) for y's scale, within ``[m 2**(-2 safe), 2**(2 safe)]``, the
  scaling's safe range (``_scaling.limits``): no square can overflow or lose bits to the subnormal range, so the
  full route would not have scaled (a y far off the range with its signal inside: its rss is finite, or it fails,
  and every operation on y commutes with a power of two; a signal off the range with y inside, y nearly
  orthogonal to X's columns: the full route fits, as it would). Asked of
  every column rather than the largest: a column below the range with the others inside it mostly fails
  the pivot test too; the rest (within 1 / max(c**2, gram_noise) of the range's bottom) take the full route.
  NaN or infinity in X, y or the weights (a negative weight's square root) fails it, and so does a
  zero total weight or a zero column.
- **Rank and convergence** (``s``, ``ks``): with ``L`` the Cholesky factor of the matrix factorized
  (``G + alpha I`` for ridge), ``d`` its diagonal and ``As = D^-1 A D^-1`` (unit diagonal),
  ``s = sum_j d_j ||(L^-1)[:, j]||^2 = trace(As^-1)`` and ``ks = ||As||_inf s >= cond(As) =
  cond2(X D^-1)**2``: an *upper* bound, which can accept (the pivot ratio and power iteration are
  lower bounds and can only reject). ``ks`` is asked row by row (each row sum of ``|As|`` times ``s``: their
  largest is the bound, and no reduction is needed). ``ks <= r**2 / 4``, r the refinement limit
  (``gram.refined_limit``), proves that the refinement step converged; ``s <= 1 / (4 gram_noise)``
  that the factor is clear of the Gram matrix's rounding; ``s <= 1 / (4 n (CLEAR c)**2)`` the
  library's rank rule (``rank.certified``: no direction near the cutoff c), which in float64 is
  implied by convergence. The factor 4 is ``rank.bounded``'s margin for the rounding of the
  inverse. A failed factorization (NaN, or a nonzero ``info``) fails it. float32 ``normal``
  (``choose``): its refinement limit (cond 12.6) is below what ``ks >= n`` can prove, so the step
  is kept on the device where ``eps max(ks) <= 1/16`` (it shrinks the error 16-fold) and the plain
  solution elsewhere, and the rank is NumPy's rule (``trace(A) trace(A^-1) c**2 < 1``) or CLEAR's.
- **Pivots**: no Cholesky pivot below the cutoff, nor the Gram matrix's rounding, against any
  column's norm (so against the largest: a negligible column is NumPy's rank deficiency), as
  ``diag(L)_i * diag(A)_j**-1/2`` for every pair (one problem of up to ``OUTER_MAX`` columns: one product) or
  ``min(diag(L)) * diag(A)**-1/2`` (a stack, or more columns), which a failed factor's negative pivot fails.
- **Residual** (``rss``): finite and non-negative; ``auto`` also asks its residual-angle test
  (``cond**2 tan(theta) <= 1e4``) of the upper bound.
- **Resolution** (least squares with an intercept): each column's centered square ``d_j`` above
  ``c**2`` times what centering removed, ``total * mean_j**2``, asked as ``|mean_j| sqrt(total / d_j)
  <= 1 / c``. A column that centering left at the
  rounding of its offset (a constant column, or 1e8 varying by 1e-7: a few units in the last place)
  holds no digit of its own; the full route then decides, as NumPy does on ``[1, X]`` (rank
  deficient). Offsets with digits of their own (timestamps of 1.7e9 varying by 1e6) pass by many
  orders of magnitude. Ridge has no such test: its penalty makes every column well-posed.

These are stacked into one vector and compared with cached bounds: one boolean, read once by
the caller. Everything here is a plain function of arrays (no read, no context variable), so
that ``torch.compile(fullgraph=True)`` traces it as one graph.

The derivative (:func:`tangent`, JAX's rule under a trace): full rank is certified, so it is that of
the weighted, centered, penalized normal equations ``A W = Xc^T D Yc`` (D the weights, Xc, Yc
centered by their weighted means), ``A dW = Xc^T D (dY - dX W) + dX^T D r + Xc^T dD r - dalpha W``
(the means' own derivatives drop out: ``1^T D Xc = 0`` and ``1^T D r = 0``). Where the gate
failed, the factor is replaced by the identity and the solution by zero, so that the derivative
of the branch not taken is finite (a zero cotangent through it stays zero).

The rank decision is that of the *centered* problem: with an intercept the columns' offsets
(timestamps of 1.7e9, prices of 1e6) are removed exactly by the shifted products
(``_gram_data.TallGram``) and do not count against the columns, where the full route's
certificate, measured against the uncentered norms as ``numpy.linalg.lstsq`` would see
``[1, X]``, sends such data to its SVD fallback.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

from ..._backend import _compat
from ..._backend._compat import diagonal, eps, matmul
from ._gram_data import TallGram
from ._shared import add_penalty, default_cutoff, gram_noise, merge_targets, split_targets
from .gram import refined_limit
from .rank import CLEAR

CONTRACTION = 1 / 16  # eps cond(As) up to which ``choose`` keeps the refined solution (module docstring)
RESIDUAL_LIMIT = 1e4  # auto's: cond**2 * tan(theta) up to which the refined error stays QR-level
# Columns up to which one problem asks the pivot test of every pivot against every column (an outer product: n**2
# entries of the certificate, one operator), where the smallest pivot's reduction and its product took two
OUTER_MAX = 64


class Form(NamedTuple):
    """What a lean fit solves: ``centered`` (an intercept), ``auto`` (its residual-angle test too), ``choose``
    (float32 ``normal``: the refined or the plain solution, chosen on the device)."""

    centered: bool
    auto: bool
    choose: bool = False


def fit(xp, X, Y, weights, alpha, form, limits=None, traits=None):
    """``(W (..., n, k), intercept (..., k) or None, rss (..., k), ok, L, x_mean (..., 1, n) or None)``: the refined
    solution, the gate (0-d boolean) and what :func:`tangent` needs. ``weights`` (..., m) or None, ``alpha`` None,
    (1,) or (k,), ``form`` a :class:`Form`, ``limits`` :func:`bounds`' (found here, or remembered, when None), ``traits`` the
    library's (``_compat.traits``) where the caller has them. On JAX one compiled call. Module docstring."""
    centered, auto, choose = form
    if limits is None:
        m, n = X.shape[-2:]
        per_target = alpha is not None and alpha.shape[0] > 1
        traits = _compat.traits(xp) if traits is None else traits
        # the resolution test's factor of c**2: the total weight where it is the number m (no weights), else 1
        resolution = (float(m) if weights is None else 1.0) if centered and alpha is None else None
        info = traits.reports_failures
        outer = X.ndim == 2 and n <= OUTER_MAX  # the pivot test's form (below)
        shape = (m, n, Y.shape[-1], per_target, auto, choose, info, centered, resolution, outer)
        if traits.reads_while_solving or not _compat.is_lazy(X):  # made once per shape and device
            key = ("lean bounds", xp.__name__, X.dtype, _compat.device(X), shape)  # an unhashable device: made anew
            limits = _compat.memo(key, lambda: bounds(xp, X, shape))
        else:  # traced: constants of this trace (a remembered one would leak it)
            limits = bounds(xp, X, shape)
        if not traits.reads_while_solving:  # JAX (Dask takes the full route): eagerly, each operation would compile
            key = ("lean fit", xp.__name__, form)
            run = _compat.memo(key, lambda: _compat.jit(xp, functools.partial(fit, xp, form=form)))
            return run(X, Y, weights, alpha, limits=limits)
    root = None if weights is None else _compat.as_rank(xp, xp.sqrt(weights[..., None]), X.ndim)
    if root is not None and not centered:
        X, Y = root * X, root * Y
    data = TallGram(xp, X, Y, root, centered=centered, refined=True)
    G, B = data.products(X, Y)
    if alpha is None:
        A = G
    else:  # G is the products' own (one penalty: in place)
        A = add_penalty(xp, G, alpha) if alpha.shape[0] > 1 else _compat.add_to_diagonal(xp, G, alpha[0])
    L, info = _compat.cholesky_ex(xp, A)
    per_target = alpha is not None and alpha.shape[0] > 1  # a factor per target
    Li = _compat.small_inverse(xp, L) if L.ndim > 2 else None  # NumPy's stacks: solves and certificate through L^-1
    W = _solve_per_target(xp, L, B, alpha) if per_target else _compat.cho_solve(xp, L, B, inverse=Li)
    h, rss = data.residual(X, Y, W)
    a = None if alpha is None else _compat.as_rank(xp, alpha, W.ndim)
    g = h if alpha is None else _compat.add_product(xp, h, a, W, -1)
    dW = _solve_per_target(xp, L, g, alpha) if per_target else _compat.cho_solve(xp, L, g, inverse=Li)
    W2 = W + dW
    # rss falls by dW^T (2h - g) + alpha ||dW||^2 (``gram.GramCholesky.solve``) = dW^T (h + alpha W2), as 2h - g = h + alpha W
    corr = _compat.dots(xp, dW, h if alpha is None else _compat.add_product(xp, h, a, W2))
    W1, rss1, W, rss = W, rss, W2, rss - corr
    # The certificate: s = trace(As^-1), As = D^-1 A D^-1 the unit-diagonal matrix; ks >= cond(As), per row of As
    d = diagonal(xp, A)
    inv = _compat.inverse_diagonal(xp, L, inverse=Li)
    s = _compat.dots(xp, d[..., None], inv[..., None])[..., 0]  # (...,) or (..., k)
    root_d = d**-0.5  # lambda_max(As) <= ||As||_inf, the largest row of |A| scaled on both sides: ks its largest entry
    ks = s[..., None] * (root_d * matmul(xp, xp.abs(A), root_d[..., None])[..., 0])  # (..., n) or (..., k, n)
    # X's scale (with the penalty's): each column's diag(A)**-1/2, which the pivot test multiplies too (the smallest
    # pivot against every column: against the largest); a failed pivot's negative diagonal fails it
    piv = diagonal(xp, L)
    if X.ndim == 2 and X.shape[-1] <= OUTER_MAX:  # one problem: every pivot against every column
        pivots = piv[..., :, None] * root_d[..., None, :]
    else:
        pivots = _compat.reduce_min(xp, piv, axis=-1)[..., None] * root_d
    parts = [root_d, s, pivots, rss]
    if choose:  # NumPy's rank rule too (trace(A) trace(A^-1) c**2 < 1), where CLEAR's is narrower
        t = _compat.reduce_sum(xp, d, axis=-1) * _compat.reduce_sum(xp, inv, axis=-1)
        parts.append(xp.minimum(t, s * (X.shape[-1] * CLEAR**2)))  # at most 1 / (4 c**2)
        conv = _compat.reduce_max(xp, ks, axis=-1) <= CONTRACTION / eps(xp, X)  # eps a power of two: exactly
        conv = conv if conv.ndim == rss.ndim else conv[..., None]
        W, rss = xp.where(conv[..., None, :], W, W1), xp.where(conv, rss, rss1)
    else:
        parts.append(ks)
    signal = _compat.dots(xp, W, B)  # ||X w||^2 (+ alpha ||w||^2), per target: y's scale (module docstring)
    parts.append(signal)
    if auto:
        # ks**2 tan(theta)**2 <= RESIDUAL_LIMIT**2, tan(theta)**2 = rss / signal, asked without the division as
        # signal - ks**2 rss / RESIDUAL_LIMIT**2 >= 0 (one fused operator), per target and row of As
        per_row = ks.ndim > rss.ndim  # ks (..., k, n) per target, else (..., n) shared by the targets
        k2, r, t = (
            (ks * ks, rss[..., None], signal[..., None])
            if per_row
            else ((ks * ks)[..., None], rss[..., None, :], signal[..., None, :])
        )
        parts.append(_compat.add_product(xp, t, k2, r, -(RESIDUAL_LIMIT**-2)))
    if info is not None:
        parts.append(info)  # an integer: ``flat_concat`` casts it with the rest
    if centered and alpha is None:  # each column's offset against its centered square (module docstring)
        ratio = data.x_mean[..., 0, :] * root_d  # |mean| / sqrt(d), times sqrt(total): here, or in the bound (m)
        parts.append(ratio if data.weights is None else ratio * data.root_total[..., 0, :])
    intercept = None
    if centered:
        intercept = (data.y_mean - matmul(xp, data.x_mean, W))[..., 0, :]
        parts.append(intercept)
    q = _compat.flat_concat(xp, parts, tuple(X.shape[:-2]), W.dtype)  # the bounds are one problem's
    return W, intercept, rss, _compat.within(xp, q, *limits), L, data.x_mean if centered else None


def tangent(xp, X, Y, weights, alpha, fitted, tangents):
    """``(dW, d intercept or None, d rss)`` of an accepted lean fit ``fitted`` (:func:`fit`'s six) along
    ``tangents`` ``(dX, dY, dweights, dalpha)`` (None: zero): the exact derivative of the certified full-rank fit;
    where the gate failed, finite (module docstring: derivative)."""
    W, intercept, _, ok, L, x_mean = fitted
    dX, dY, dw, dalpha = tangents
    L = xp.where(ok, L, _compat.as_rank(xp, _compat.eye_like(xp, L, L.shape[-1]), L.ndim))
    W = xp.where(ok, W, xp.zeros_like(W))
    centered = x_mean is not None
    Xc = X - x_mean if centered else X
    D = None if weights is None else weights[..., None]
    r = Y - matmul(xp, Xc, W)  # centered Y's mean is 1^T D Y / 1^T D 1: r = Yc - Xc W up to its mean, which drops out
    if centered:
        r = r - (_compat.reduce_sum(xp, r if D is None else D * r, axis=-2, keepdims=True) / _total(xp, X, D))
    Dr = r if D is None else D * r
    g = None
    if dX is not None or dY is not None:
        v = -matmul(xp, dX, W) if dY is None else (dY if dX is None else dY - matmul(xp, dX, W))
        g = matmul(xp, _compat.mT(xp, Xc), v if D is None else D * v)
        if dX is not None:
            g = g + matmul(xp, _compat.mT(xp, dX), Dr)
    if dw is not None:
        term = matmul(xp, _compat.mT(xp, Xc), dw[..., None] * r)
        g = term if g is None else g + term
    if dalpha is not None:
        term = -_compat.as_rank(xp, dalpha, W.ndim) * W
        g = term if g is None else g + term
    dW = merge_targets(xp, _compat.cho_solve(xp, L, split_targets(xp, g, alpha)), alpha)
    # rss = sum D r**2: d rss = sum dD r**2 + 2 sum D r (dY - dX W) - 2 (Xc^T D r) . dW, with Xc^T D r = alpha W
    drss = _compat.reduce_sum(xp, dw[..., None] * r * r, axis=-2) if dw is not None else 0
    if dX is not None or dY is not None:
        drss = drss + 2 * _compat.reduce_sum(xp, Dr * v, axis=-2)
    if alpha is not None:
        drss = drss - 2 * _compat.dots(xp, _compat.as_rank(xp, alpha, W.ndim) * W, dW)
    dintercept = None
    if centered:  # intercept = y_mean - x_mean W, d mean = 1^T (D d. + dD (. - mean)) / 1^T D 1
        total = _total(xp, X, D)
        dmean = []
        for A, dA in ((Xc, dX), (r + matmul(xp, Xc, W), dY)):  # Yc = r + Xc W
            dm = None
            if dA is not None:
                dm = _compat.reduce_sum(xp, dA if D is None else D * dA, axis=-2, keepdims=True) / total
            if dw is not None:
                term = _compat.reduce_sum(xp, dw[..., None] * A, axis=-2, keepdims=True) / total
                dm = term if dm is None else dm + term
            dmean.append(dm)
        dintercept = -matmul(xp, x_mean, dW)
        if dmean[0] is not None:
            dintercept = dintercept - matmul(xp, dmean[0], W)
        if dmean[1] is not None:
            dintercept = dintercept + dmean[1]
        dintercept = dintercept[..., 0, :]
    return dW, dintercept, drss + xp.zeros_like(intercept if centered else W[..., 0, :])


def _solve_per_target(xp, L, B, alpha):
    """``A^-1 B`` from the factors ``L`` (..., k, n, n) of per-target penalties (``_shared.split_targets``)."""
    return merge_targets(xp, _compat.cho_solve(xp, L, split_targets(xp, B, alpha)), alpha)


def _total(xp, X, D):
    """The total weight ``1^T D 1`` (..., 1, 1): m without weights."""
    return float(X.shape[-2]) if D is None else _compat.reduce_sum(xp, D, axis=-2, keepdims=True)


def bounds(xp, like, shape):
    """``(lo, hi)``: the bounds of :func:`fit`'s ``q`` for one problem of ``shape`` = (m, n, k, per_target, auto,
    choose, info, centered, resolution, outer), arrays on ``like``'s device (module docstring)."""
    m, n, k, per_target, auto, choose, info, centered, resolution, outer = shape
    big = float(_compat.finfo(xp, like.dtype).max)
    safe = round(math.log2(big)) // 4
    r = refined_limit(xp, like)
    c = default_cutoff(xp, like, m, n, None)
    gn = gram_noise(xp, like, m, n)
    # resolution and the CLEAR rule (``||Ls^-1||_F ||Ls||_F CLEAR c < 1``, ||Ls||_F**2 = n) on s (with ``choose``
    # the CLEAR rule or NumPy's, a part of its own); convergence on ks
    s_max = 1 / (4 * gn) if choose else min(1 / (4 * gn), 1 / (4 * n * (CLEAR * c) ** 2))
    lo, hi = [], []

    def part(count, low, high):
        lo.extend([low] * count)
        hi.extend([high] * count)

    per = k if per_target else 1
    safe_sum = (m * 2.0 ** (-2 * safe), 2.0 ** (2 * safe))  # the scaling's safe range for a sum of squares
    part(per * n, 2.0**-safe, 2.0**safe / math.sqrt(m))  # every diag(A)**-1/2 within that range
    part(per, 0.0, s_max)  # s
    part(per * n * (n if outer else 1), math.sqrt(max(c * c, gn)), big)  # each (smallest) pivot against each column
    part(k, 0.0, big)  # rss
    if choose:
        part(per, 0.0, 1 / (4 * c * c))  # the rank: NumPy's rule or CLEAR's
    else:
        part(per * n, 0.0, r * r / 4)  # ks, per row: cond(X D^-1) <= r / 2
    part(k, *safe_sum)  # the signal, y's scale
    if auto:
        part(n * k, 0.0, big)  # per row of As and target: signal - ks**2 rss / RESIDUAL_LIMIT**2
    if info:
        part(per, 0.0, 0.0)
    if resolution is not None:  # |mean| / sqrt(d) below 1 / (c sqrt(total)) (total: m, or 1 and in q)
        limit = 1 / (c * math.sqrt(resolution))
        part(n, -limit, limit)
    if centered:
        part(k, -big, big)
    return (_compat.constants(xp, lo, like.dtype, like), _compat.constants(xp, hi, like.dtype, like))
