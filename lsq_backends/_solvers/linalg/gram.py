"""The Gram-matrix factorization the ``normal``, ``auto`` and ``qr`` solvers share: Cholesky of
``X^T X + alpha I`` (tall X) or ``X X^T + alpha I`` (wide X), from the products of
``_gram_data.TallGram`` (with an intercept, of shifted data, corrected on the n x n side).

- ``GramCholesky``: the factor, its condition estimate (``rank.condition_estimate``), its solution (refined once
  on tall X: ``GramCholesky.solve``) or another method's where a test fails (``solve_or``);
- ``full_rank_test``: the rank decision (``rank.certified`` on the Cholesky factor, which
  must also clear the Gram matrix's rounding, ``_shared.gram_noise``); a failed
  factorization (a non-positive or NaN pivot) fails it too. On NumPy, with p <= 16, the
  condition estimate's bound answers it where it can (``rank.bounded``);
- ``refined_limit``, ``kappa_limit``: the condition numbers up to which one refinement step
  converges, and up to which the unrefined normal equations are kept on wide X.

A numerically singular Gram matrix is re-solved, so rank-deficient problems get the
minimum-norm solution, never NaN. The re-solve is the SVD path (a QR of X, QR-level error).
Where both branches of the choice are compiled into one program (JAX,
``_compat.traits(xp).branches_share_memory``), it is the eigendecomposition of the Gram matrix already
formed (:meth:`GramCholesky.eigen`). That needs no second pass over X to factorize it and no copy
of X (sharded X is never gathered), at the normal equations' own accuracy.

``GramCholesky.eigen``: the rank is the count of kept eigenvalues (``n`` with every penalty
positive, as the SVD filter's). rss comes from one pass over X (``TallGram.residual``: no copy
of X, centered on the n x n side). With ``operators`` the ``Operators`` are those of the kept spectrum
(``spectral_factor``, ``s = sqrt(lam)``). No X-sized temporary is made: under ``jax.jit`` XLA
reserves the buffers of both branches of the rank test, and on sharded X this branch needs no
all-gather. The Gram matrix's rounding (~gram_noise * lam_max, ``_shared.gram_noise``) moves
the kept eigenvectors by ~eps cond**2. Here cond is that of the kept part, at most
``1 / sqrt(gram_noise)`` by the cutoff. So coef errs by ~eps cond**2, as the Cholesky branch's
before refinement; the SVD path errs by ~eps cond. It is not refined: the kept subspace's own
error is of that order.

Refinement (``GramCholesky.solve``, tall X): the residual r = Y - X W that rss needs anyway gives the normal equations'
residual ``g = X^T r - alpha W`` in the same pass (``TallGram.residual``: one pass over X, in
cache on NumPy). The correction ``dW = (X^T X + alpha I)^{-1} g`` comes from the Cholesky
factor already made. The Gram matrix's rounding (~eps cond(X)**2 relative) enters the
correction only through the factor. So each step shrinks the error by ~eps cond(X)**2, towards
the accuracy of the residual itself: ~eps cond(X), plus ~eps cond(X)**2 ||r|| / (||X|| ||w||)
from the rounding of X^T r. One step reaches QR's error where (eps cond**2)**2 <= eps cond,
that is cond <= eps**(-1/3). The refined residual is not formed:
``||r - X dW||^2 = ||r||^2 - 2 dW.h + dW.g - alpha ||dW||^2`` (h = X^T r, and
X^T X dW = g - alpha dW). That is a correction of second order, whose own rounding is
~eps cond**2 times itself. So the step is kept where the condition estimate is within
``refined_limit`` (float64 1.0e4, float32 12.6; ``auto`` uses no more). Beyond it W and rss
stay those of the plain normal equations.

``full_rank_test``: the rank at the cutoff is certified by the inverse of the column-scaled
factor. That bound must also clear the Gram matrix's rounding (``sqrt(gram_noise)``): below it
the factor's small singular values are noise, and the fallback decides. ``global_scale`` also
asks for no pivot at that rounding against the largest column: a dependence hidden by a small
column.

``eigen_keep``: ``c`` is the SVD path's cutoff on singular values, squared for eigenvalues.
With an intercept the reference is the largest squared column norm before centering, since
centering leaves noise at that scale. The floor ``gram_noise * lam_max`` is the threshold the
rank test's pivots use too. The test is scale-free: the same in every unit X is measured in.
"""

from __future__ import annotations

import math

from ..._backend import _compat
from ..._backend._compat import diagonal, eps, full_int, matmul, mT
from .._record import Given, Solution
from ._gram_data import TallGram
from ._operators import asked, inverse_factor, spectral_factor, triangular_inverse
from ._shared import add_penalty, count, default_cutoff, gram_noise, merge_targets, split_targets
from .rank import SMALL, bounded, certified, condition_estimate


class GramCholesky:
    """The Cholesky factor of a Gram system, in a solve's two steps: the products (the constructor), then their
    factor (:meth:`factorize`, which first runs X's deferred test on the products, ``Given.check``, before anything
    is factorized). Kept so that ``auto`` can inspect the factor before solving."""

    def __init__(self, xp, X, Y, alpha, data=None):
        self.m, self.n = X.shape[-2:]
        self.wide = self.m < self.n and data is None  # ``data`` gives the n x n products whatever X's shape
        self.alpha = alpha
        self.data = None
        if self.wide:
            A, B = matmul(xp, X, mT(xp, X)), Y  # (..., m, m)
        else:
            self.data = TallGram(xp, X, Y) if data is None else data
            A, B = self.data.products(X, Y)  # (..., n, n), (..., n, k)
        self.G, self.XtY = A, B  # before the penalty (:meth:`eigen`)
        self.A = self.B = self.L = None  # :meth:`factorize`
        self.Lt = None  # _compat.batch_last(L), made once for stacks of small factors
        self.kappa = None  # the condition estimate, made once (``condition``)

    @property
    def offset_sq(self):
        """What the Gram route's centering removed from the squared column norms (``TallGram.offset_sq``), or None."""
        return None if self.data is None else self.data.offset_sq

    def factorize(self, xp, check=None):
        """X's deferred test ``check`` (None: none) on the products :attr:`G` with :attr:`offset_sq`, then the penalty
        added (``A``, ``B`` split per target) and the Cholesky factor ``L``; returns ``self``."""
        if check is not None:
            check(self.G, self.offset_sq)
        alpha = self.alpha
        self.A = self.G if alpha is None else add_penalty(xp, self.G, alpha)
        self.B = split_targets(xp, self.XtY, alpha)
        self.L = _compat.cholesky(xp, self.A)
        return self

    def condition(self, xp):
        """Estimate of cond(X) after column equilibration (see ``rank.condition_estimate``), made once."""
        if self.kappa is None:
            if self.L.ndim > 2 and self.L.shape[-1] <= _compat.SMALL_STACK:
                self.Lt = _compat.batch_last(xp, self.L)  # shared with the solve
            self.kappa = condition_estimate(xp, self.L, self.A, self.Lt)
        return self.kappa

    def solve_or(self, xp, X, Y, ok, fallback, rcond, offset_sq, operators=False):
        """The refined Cholesky solution where the scalar ``ok`` holds, else ``fallback``'s (None: :meth:`eigen`), a
        traced branch under ``jax.jit`` (``_compat.branch``). Every branch returns one ``Solution``: rss (..., k) for
        tall X, None for wide X; with ``operators`` the ``_operators.Operators`` solved with (wide X: of ``X X^T``, the
        Cholesky factor here being that of ``X X^T + alpha I``)."""
        if fallback is None:

            def other(X, Y):
                return self.eigen(xp, X, Y, rcond, offset_sq, operators)

        elif self.wide:

            def other(X, Y):
                return self.other_solve(xp, fallback, X, Y, rcond, offset_sq, operators)

        else:
            other = self.fallback(xp, fallback, rcond, offset_sq, operators)

        def cholesky(X, Y):
            coef, rank, rss = self.solve(xp, X, Y)
            return Solution(coef, rank, rss=rss, operators=asked(operators, self.operators, xp))

        return _compat.branch(xp, ok, cholesky, other, (X, Y))

    def operators(self, xp):
        """The ``_operators.Operators`` of the Cholesky factor (full rank)."""
        return inverse_factor(xp, mT(xp, triangular_inverse(xp, self.L, True)))

    def other_solve(self, xp, solver, X, Y, rcond, offset_sq, operators=False):
        """``solver``'s ``Solution`` (another method's) in the Cholesky branch's shape: coef, rank and, with
        ``operators``, its ``Operators`` without singular vectors (which the Cholesky branch lacks)."""
        sol = solver(xp, X, Y, self.alpha, Given(rcond, offset_sq), operators=operators)
        return Solution(sol.coef, sol.rank, operators=None if sol.operators is None else sol.operators._replace(V=None))

    def fallback(self, xp, solver, rcond, offset_sq, operators=False):
        """``solver`` (another method's solve) as a branch on tall X: (X, Y) -> ``Solution`` with rss, on the data
        as that method takes it (``TallGram.arrays``), in the Cholesky branch's shape (:meth:`other_solve`)."""

        def other(X, Y):
            X, Y = self.data.arrays(X, Y)
            sol = self.other_solve(xp, solver, X, Y, rcond, offset_sq, operators)
            return sol._replace(
                rss=_compat.sum_of_squares(xp, _compat.minus_fresh(xp, Y, matmul(xp, X, sol.coef)), axis=-2)
            )

        return other

    def eigen(self, xp, X, Y, rcond, offset_sq, operators=False):
        """Minimum-norm (or ridge) solution from ``G = V diag(lam) V^T``, the Gram matrix before the penalty:
        ``w = V diag(f) V^T X^T y`` (tall X) or ``X^T V diag(f) V^T y`` (wide X), ``f = 1 / (lam + alpha)`` on the
        kept eigenvalues (:func:`eigen_keep`), 0 on the others. Returns a ``Solution``, rss for tall X, with
        ``operators`` its ``Operators``. Error ~eps cond**2 (see the module docstring)."""
        m, n = X.shape[-2:]
        lam, V = _compat.eigh(xp, self.G)
        lam = xp.maximum(lam, xp.zeros_like(lam))  # null directions round to +-eps * lam_max
        keep = eigen_keep(xp, lam, self.G, X, rcond, offset_sq, self.wide)
        safe = xp.where(keep, lam, xp.ones_like(lam))[..., None]  # (..., p, 1)
        f = (
            1 / safe if self.alpha is None else 1 / (safe + _compat.as_rank(xp, self.alpha, safe.ndim))
        )  # (..., p, 1 or k)
        f = xp.where(keep[..., None], f, xp.zeros_like(f))
        W = matmul(xp, V, f * matmul(xp, mT(xp, V), self.XtY))
        rank = count(xp, keep, lam)
        if self.alpha is not None:
            rank = xp.where(xp.all(self.alpha > 0), full_int(xp, rank.shape, n, lam), rank)
        # of X^T X, or for wide X of X X^T: V holds X's right or left singular vectors
        fac = asked(operators, spectral_factor, xp, xp.sqrt(lam), mT(xp, V), keep, self.alpha)
        if self.wide:
            return Solution(matmul(xp, mT(xp, X), W), rank, operators=fac)
        return Solution(W, rank, rss=self.data.residual(X, Y, W)[1], operators=fac)

    def solve(self, xp, X, Y=None):
        """``(W, rank, rss)``; rss is None for wide X. Tall X: one step of iterative refinement of the normal-equation
        solution, rss that of the solution returned, in one pass over X (``TallGram.residual``). The step is kept
        where the condition estimate is within :func:`refined_limit` (error ~eps cond(X), as QR's); beyond it W and
        rss are the plain normal equations'. See the module docstring."""
        W = merge_targets(xp, _compat.cho_solve(xp, self.L, self.B, Lt=self.Lt), self.alpha)
        rank = full_int(xp, X.shape[:-2], self.n if self.alpha is not None else min(self.m, self.n), X)
        if self.wide:
            return matmul(xp, mT(xp, X), W), rank, None
        h, rss = self.data.residual(X, Y, W)
        alpha = self.alpha
        # as the lean route rounds it (one ``addcmul`` on PyTorch): a scaled fit that takes this route gives the
        # lean route's unit-scale answer multiplied out, bit for bit
        g = h if alpha is None else _compat.add_product(xp, h, _compat.as_rank(xp, alpha, W.ndim), W, -1)
        dW = merge_targets(xp, _compat.cho_solve(xp, self.L, split_targets(xp, g, alpha), Lt=self.Lt), alpha)
        # rss falls by dW^T (2h - g) (+ alpha ||dW||^2); without a penalty g is h, and 2h - h is h exactly
        corr = _compat.reduce_sum(xp, dW * (h if alpha is None else 2 * h - g), axis=-2)
        if alpha is not None:
            corr = corr + _compat.as_rank(xp, alpha, corr.ndim) * _compat.reduce_sum(xp, dW * dW, axis=-2)
        conv = self.condition(xp) <= refined_limit(xp, X)  # (...,) or, per-target penalties, (..., k)
        new = rss - corr
        if conv.ndim == 0 and _compat.traits(xp).free_to_read:  # one NumPy problem: read, not selected
            if not conv:
                return W, rank, rss
            one_positive = new.shape == (1,) and float(new[0]) > 0  # one target's rss read (NaN is not positive)
            return W + dW, rank, new if one_positive else _compat.positive_or_zero(xp, new)
        new = _compat.positive_or_zero(xp, new)
        conv_r = conv if conv.ndim == rss.ndim else conv[..., None]
        return xp.where(conv_r[..., None, :], W + dW, W), rank, xp.where(conv_r, new, rss)


def without_gram(xp, solver, X, Y, alpha, given, operators=False):
    """``solver``'s ``Solution`` (a route of ``qr`` or ``svd`` that forms no Gram matrix of X: Householder QR,
    ridge, Dask's one-pass QR) on the data as it takes them (``TallGram.arrays``: centered, an X-sized copy).
    X's deferred test ``given.check`` runs on one Gram product formed for it, where the test it stands in for took
    four passes. With ``given.data``, rss of the centered problem (the entry holds uncentered data)."""
    rcond, offset_sq, check, data, _ = given
    if data is not None:
        X, Y = data.arrays(X, Y)
        offset_sq = centered_offsets(data, offset_sq)
    if check is not None:
        wide = X.shape[-2] < X.shape[-1]
        check(matmul(xp, X, mT(xp, X)) if wide else matmul(xp, mT(xp, X), X), offset_sq)
    sol = solver(xp, X, Y, alpha, Given(rcond, offset_sq), operators=operators)
    if data is None:
        return sol
    return sol._replace(rss=_compat.sum_of_squares(xp, _compat.minus_fresh(xp, Y, matmul(xp, X, sol.coef)), axis=-2))


def centered_offsets(fac, offset_sq):
    """``offset_sq`` for the rank tests: the Gram route's own where it centered X (``fac`` a
    ``GramCholesky`` or its ``TallGram``)."""
    data = fac if isinstance(fac, TallGram) else fac.data
    if data is not None and data.offset_sq is not None:
        return data.offset_sq
    return offset_sq


def refined_limit(xp, X):
    """cond(X) up to which one step of refinement converges (see :meth:`GramCholesky.solve`)."""
    return eps(xp, X) ** (-1 / 3) / 16


def kappa_limit(xp, X):
    return eps(xp, X) ** -0.25 / 8


def eigen_keep(xp, lam, G, X, rcond, offset_sq, wide):
    """Mask (..., p): the eigenvalues ``lam`` of X's Gram matrix ``G`` that :meth:`GramCholesky.eigen` keeps. Above
    ``c**2`` times the largest (``c``: ``rcond``, else ``_shared.default_cutoff``) or, with an intercept, times the
    largest squared column norm before centering; and above ``gram_noise * lam_max`` (``_shared.gram_noise``). As
    ``spectral``'s ``gram`` route of a ridge path; see the module docstring."""
    m, n = X.shape[-2:]
    c = default_cutoff(xp, X, m, n, rcond)
    top = xp.max(lam, axis=-1, keepdims=True)
    ref = top
    if offset_sq is not None:
        # Squared column norms of the centered X: the Gram matrix's diagonal (tall X), a pass
        # over X (wide X: its Gram matrix is of the rows).
        colsq = xp.sum(X * X, axis=-2) if wide else diagonal(xp, G)
        ref = xp.maximum(ref, xp.max(colsq + offset_sq, axis=-1, keepdims=True))
    cut = xp.maximum(c * c * ref, gram_noise(xp, X, m, n) * top)
    return lam > cut


def full_rank_test(xp, fac, X, rcond, offset_sq, *, global_scale=False, floor=None):
    """Boolean per problem (a Python bool where ``rank.bounded`` settles one NumPy problem): may the Cholesky
    solution stand, full rank? ``rank.certified`` at the cutoff (``rcond``, default ``_shared.default_cutoff``), clear
    of the Gram matrix's rounding; ``global_scale``: no pivot at it against the largest column; ``floor``: no Gram
    diagonal entry below it. A failed factorization fails every test. See the module docstring."""
    m, n = X.shape[-2:]
    tol = math.sqrt(gram_noise(xp, X, m, n))
    cutoff = default_cutoff(xp, X, m, n, rcond)
    d = diagonal(xp, fac.A)  # the squared norms of L's rows
    pivots = diagonal(xp, fac.L)
    if (
        _compat.traits(xp).free_to_read and not fac.wide and n <= SMALL
        and bounded(xp, fac.condition(xp), d, pivots, offset_sq, rcond, cutoff, tol)
    ):  # fmt: skip
        if d.ndim == 1:  # one problem, its values read as ``bounded`` read them (no NaN there)
            c = d.tolist()
            big = max(c) ** 0.5
            return (not global_scale or min(pivots.tolist()) / big > tol) and (floor is None or min(c) >= floor)
        ok = _compat.full(xp, tuple(d.shape[:-1]), True, xp.bool, d)  # what ``certified`` would answer
    else:
        ok = certified(xp, fac.L, offset_sq, rcond, cutoff, resolution=tol, wide=fac.wide, colsq=d)
    if global_scale and not fac.wide:
        big = xp.sqrt(_compat.reduce_max(xp, d, axis=-1, keepdims=True))
        ok = ok & _compat.reduce_all(xp, pivots / _compat.positive_or_one(xp, big) > tol, axis=-1)
    if floor is not None:
        ok = ok & (_compat.reduce_min(xp, d, axis=-1) >= floor)
    return ok
