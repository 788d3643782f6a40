"""Iterative refinement of a least-squares solution with residuals in double-double precision.

Björck's refinement of the augmented system ``[I X; X^T 0] [r; w] = [y; 0]``: each step computes
``f = y - r - X w`` and ``g = -X^T r`` in about twice the working precision, then solves for the
corrections with the QR factors of X in working precision::

    h = R^{-T} g,   c = Q^T f - h,   dw = R^{-1} c,   dr = f - Q c.

Unlike plain refinement of w alone, this converges at rate ~ eps * cond(X) even for large
residuals, where the error of QR itself carries an eps * cond(X)**2 * ||r|| term. The
extended-precision sums are built from standard operations only (Veltkamp's splitting for exact
products, a pairwise TwoSum tree for sums), so they run, and trace, on every backend. Cost: one
QR of X plus O(mnk) per step, with temporaries of 4 m n k elements: meant for the small and
hard problems (NIST's Wampler, Filip), not for 10^5 x 10^3 designs.

Applies to full-rank tall problems (m >= n); elsewhere the input solution is returned
unchanged (selected with ``where``, so it traces under ``jax.jit``).
"""

from __future__ import annotations

from . import _compat
from ._solvers._shared import dot, mT


def _split(xp, x):
    """x = hi + lo exactly, each with at most half the significand (Veltkamp).

    ``t = x * 2**s + x`` rather than ``x * (2**s + 1)``: the multiplication is by a power of two
    (exact), so a compiler that contracts multiply-adds into FMAs (XLA on CPU does, inside
    fusions) cannot change any rounding here.
    """
    s = 134217728.0 if xp.finfo(x.dtype).eps < 1e-10 else 4096.0  # 2**27 (f64), 2**12 (f32)
    t = x * s + x
    hi = t - (t - x)
    return hi, x - hi


def _exact_products(xp, a, b):
    """The four partial products of a * b: each exact, their sum exactly a * b. (No rounded
    product p with its error a*b - p: a compiler free to recompute p inside an FMA breaks that
    identity, and XLA does.)"""
    ah, al = _split(xp, a)
    bh, bl = _split(xp, b)
    return [ah * bh, ah * bl, al * bh, al * bl]


def _dd_sum(xp, x, axis):
    """Sum along ``axis`` (-1 or -2) to about twice the working precision: a pairwise tree of
    TwoSums whose rounding errors are carried and added at the end."""

    def halves(a):
        if a.shape[axis] % 2:  # pad with one zero to an even length
            pad = list(a.shape)
            pad[axis] = 1
            a = xp.concat([a, xp.zeros(tuple(pad), dtype=a.dtype, device=_compat.device(a))], axis=axis)
        return (a[..., 0::2], a[..., 1::2]) if axis == -1 else (a[..., 0::2, :], a[..., 1::2, :])

    hi, lo = x, None
    while hi.shape[axis] > 1:
        a, b = halves(hi)
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
        if lo is not None:
            la, lb = halves(lo)
            e = e + (la + lb)
        hi, lo = s, e
    return hi + lo if lo is not None else hi


def _residuals(xp, X, Y, W, R_):
    """f = Y - R_ - X W and g = -X^T R_, each summed in double-double."""
    # Row i, target t: terms Y_it, -R_it and -X_ij W_jt (four exact parts each), along j.
    parts = _exact_products(xp, X[..., :, :, None], W[..., None, :, :])  # 4 x (..., m, n, k)
    terms = xp.concat([Y[..., :, None, :], -R_[..., :, None, :]] + [-q for q in parts], axis=-2)
    f = _dd_sum(xp, terms, axis=-2)[..., 0, :]
    parts = _exact_products(xp, X[..., :, :, None], R_[..., :, None, :])  # X_ij r_it, over i
    terms = xp.concat(parts, axis=-3)  # (..., 4m, n, k); the row axis goes last for the tree
    g = -_dd_sum(xp, xp.moveaxis(terms, -3, -1), axis=-1)[..., 0]  # (..., n, k)
    return f, g


def refine(xp, X, Y, W, rank, steps):
    """``steps`` refinement steps of the solution W (..., n, k) of min ||Y - X W||, for the
    problems of the batch whose ``rank`` (...) is n. Returns (W, residual)."""
    m, n = X.shape[-2:]
    if m < n:
        return W, Y - dot(xp, X, W)
    Q, R = _compat.qr(xp, X)
    # A rank-deficient problem's R can have an exact zero on its diagonal, where LAPACK's
    # triangular solve raises (SciPy: "singular matrix"). Its refined W is discarded below,
    # so solve with the zeros replaced by ones: finite, never used.
    eye = _compat.as_rank(xp, xp.eye(n, dtype=R.dtype, device=_compat.device(R)), R.ndim)
    R = xp.where((R == 0) & (eye == 1), eye, R)
    R_ = Y - dot(xp, X, W)
    W0 = W
    for _ in range(steps):
        f, g = _residuals(xp, X, Y, W, R_)
        h = _compat.solve_triangular(xp, mT(xp, R), g, lower=True)
        c = dot(xp, mT(xp, Q), f) - h
        W = W + _compat.solve_triangular(xp, R, c, lower=False)
        R_ = R_ + (f - dot(xp, Q, c))
    # Rank-deficient problems keep their minimum-norm solution (R is singular there).
    good = (rank == n)[..., None, None] & xp.all(xp.isfinite(W), axis=(-2, -1), keepdims=True)
    return xp.where(good, W, W0), xp.where(good, R_, Y - dot(xp, X, W0))
