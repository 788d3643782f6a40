"""Normal equations: Cholesky on the Gram matrix.

Tall X (m >= n): ``(X^T X + alpha I) w = X^T y``. Wide X (m < n): the minimum-norm form
``w = X^T (X X^T + alpha I)^{-1} y``. One pass over X to form the Gram matrix, then O(p^3) on a
p x p matrix, p = min(m, n): the fastest method, but the Gram matrix squares the condition
number, so the error grows like eps * cond(X)**2. Accurate for cond(X) << eps**-0.5.

A numerically singular Gram matrix (the factorization breaks down; a pivot ``L_jj`` is at
most ``max(rcond, sqrt(gram_noise)) * sqrt(A_jj)`` (``_shared.gram_noise``); or, as in QR, at most
``rcond * ||X[:, j]||`` with the column's norm before centering: both scale-free) is detected
and the problem is re-solved by the SVD path, so rank-deficient problems get the minimum-norm
solution, never NaN.
"""

from __future__ import annotations

import math

from .. import _compat
from . import svd
from ._factor import inverse_factor, triangular_inverse
from ._shared import (
    add_penalty,
    all_true,
    default_cutoff,
    diagonal,
    dot,
    full_rank,
    gram_noise,
    merge_targets,
    mT,
    pivot_ratios,
    split_targets,
)
from .condest import condition_estimate


class Factored:
    """A factorized Gram system (kept so that ``auto`` can inspect it before solving)."""

    def __init__(self, xp, X, Y, alpha, check=None):
        self.m, self.n = X.shape[-2:]
        self.wide = self.m < self.n
        self.alpha = alpha
        if self.wide:
            A, B = dot(xp, X, mT(xp, X)), Y  # (..., m, m)
        else:
            A, B = _compat.gram(xp, X, Y)  # (..., n, n), (..., n, k)
        if check is not None:
            check(A)  # X's deferred finiteness test (``_input.gram_check``), before factorizing
        if alpha is not None:
            A = add_penalty(xp, A, alpha)
        self.A, self.B = A, split_targets(xp, B, alpha)
        self.L = _compat.cholesky(xp, A)
        self.Lt = None  # _compat.batch_last(L), made once for stacks of small factors

    def condition(self, xp):
        """Estimate of cond(X) after column equilibration (see ``condest``)."""
        if self.L.ndim > 2 and self.L.shape[-1] <= _compat.SMALL_STACK:
            self.Lt = _compat.batch_last(xp, self.L)  # shared with the solve
        return condition_estimate(xp, self.L, self.A, self.Lt)

    def solve_or(self, xp, X, Y, ok, fallback, rcond, offset_sq, factor=False):
        """The Cholesky solution where the scalar ``ok`` holds, else ``fallback``'s solution
        (a traced branch under ``jax.jit``; see ``_compat.cond``). Returns (coef, rank, None),
        and with ``factor`` the ``_factor.Factor`` solved with (for wide X, of ``X X^T``: the
        Cholesky factor here is that of ``X X^T + alpha I``)."""
        if factor:
            coef, rank, fac = _compat.cond(
                xp,
                ok,
                lambda X, Y: (*self.solve(xp, X), inverse_factor(xp, mT(xp, triangular_inverse(xp, self.L, True)))),
                lambda X, Y: _without_vectors(fallback(xp, X, Y, self.alpha, rcond, offset_sq, factor=True)),
                (X, Y),
            )
            return coef, rank, None, fac
        coef, rank = _compat.cond(
            xp,
            ok,
            lambda X, Y: self.solve(xp, X),
            lambda X, Y: fallback(xp, X, Y, self.alpha, rcond, offset_sq)[:2],
            (X, Y),
        )
        return coef, rank, None

    def solve(self, xp, X):
        W = merge_targets(xp, _compat.cho_solve(xp, self.L, self.B, Lt=self.Lt), self.alpha)
        if self.wide:
            W = dot(xp, mT(xp, X), W)
        rank = full_rank(xp, X.shape[:-2], self.n if self.alpha is not None else min(self.m, self.n), X)
        return W, rank


def _without_vectors(solved):
    coef, rank, _, fac = solved
    return coef, rank, fac._replace(V=None)


def full_rank_test(xp, fac, X, rcond, offset_sq, *, global_scale=False):
    """Boolean per problem of the batch: does the Gram factor look full rank?

    A pivot against its own column's norm (dependence at the Gram matrix's precision,
    ``max(rcond, sqrt(gram_noise))``, see ``_shared.gram_noise``); against the column's norm before centering (noise
    left by centering, ``rcond``, default ``_shared.default_cutoff``); with ``global_scale``, also against
    the largest column (a dependence hidden by a small column). A failed factorization leaves
    a non-positive or NaN pivot, which fails every test.
    """
    m, n = X.shape[-2:]
    tol = max(rcond or 0.0, math.sqrt(gram_noise(xp, X, m, n)))
    pivots = diagonal(xp, fac.L)
    d = diagonal(xp, fac.A)
    if fac.wide:
        # Pivots belong to rows of X (mixed by the intercept elimination): compare with X's
        # squared Frobenius norm before centering, the scale of its rounding noise.
        d = xp.sum(d, axis=-1, keepdims=True)
        if offset_sq is not None:
            extra = xp.sum(offset_sq, axis=-1, keepdims=True)
            d = d + (extra[..., None, :] if d.ndim > extra.ndim else extra)
    ok = pivots / xp.sqrt(xp.where(d > 0, d, xp.ones_like(d))) > tol
    if not fac.wide:
        ok = ok & (pivot_ratios(xp, pivots, d, offset_sq) > default_cutoff(xp, X, m, n, rcond))
        if global_scale:
            big = xp.sqrt(xp.max(d, axis=-1, keepdims=True))
            ok = ok & (pivots / xp.where(big > 0, big, xp.ones_like(big)) > tol)
    return xp.all(ok, axis=-1)


def solve(xp, X, Y, alpha, rcond, offset_sq=None, *, check=None, factor=False):
    """Normal-equation solution, falling back to the SVD path on a singular Gram matrix.
    ``check(A)``, if given, validates the Gram matrix before it is factorized; ``factor``: see
    :meth:`Factored.solve_or`."""
    fac = Factored(xp, X, Y, alpha, check)
    ok = full_rank_test(xp, fac, X, rcond, offset_sq)
    return fac.solve_or(xp, X, Y, all_true(xp, ok), svd.solve, rcond, offset_sq, factor)
