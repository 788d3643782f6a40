"""Iterative refinement of a least-squares solution with residuals in double-double precision.

Björck's refinement of the augmented system ``[I X; X^T 0] [r; w] = [y; 0]``: each step computes
``f = y - r - X w`` and ``g = -X^T r`` in about twice the working precision, then solves for the
corrections with the QR factors of X in working precision::

    h = R^{-T} g,   c = Q^T f - h,   dw = R^{-1} c,   dr = f - Q c.

Unlike plain refinement of w alone, this converges at rate ~ eps * cond(X) even for large
residuals, where the error of QR itself carries an eps * cond(X)**2 * ||r|| term. The
extended-precision sums are built from standard operations only (Veltkamp's splitting for exact
products, a pairwise TwoSum tree for sums). So they run, and trace, on every backend. Cost: one
QR of X plus O(mnk) per step, with temporaries of about 8 m n k + 5 m n elements. (The partial
products, 4 m n k, and the first level of their sum, 4 m n k, written in place on NumPy; X's
halves and Q.) It is meant for the small and hard problems (NIST's Wampler, Filip), not for
10^5 x 10^3 designs. Measured with tracemalloc on NumPy at m = 2000, n = 20
(``pytest -s tests/solvers/test_refine_memory.py``): a peak of 12.2 m n at k = 1 and 37.7 m n at
k = 4, where four separate products, their negated copies and one concatenation took 21.7 m n
and 84.3 m n.

Applies to full-rank tall problems (m >= n); elsewhere the input solution is returned
unchanged (selected with ``where``, so it traces under ``jax.jit``).

``_split``: ``t = x * 2**s + x`` rather than ``x * (2**s + 1)``. The multiplication is by a power
of two (exact). So a compiler that contracts multiply-adds into FMAs cannot change any rounding
here (XLA on CPU does, inside fusions).

``_dd_sum``: ``x`` is a temporary the caller made and no longer needs. On NumPy each level's
TwoSum writes its error terms into the halves of the level's input (``_compat.update_fresh``).
So the first level allocates two half-size arrays beside ``x``. The roundings are those of the
out-of-place formula, ``e = (a - (s - bb)) + (b - bb)``, with signs flipped exactly.

``_products``: each half of X against each half of B, by one broadcast product of stacks. The
stacks are laid out so that the product is the result as it is: no list of four products, no
concatenated copy. (A permuted stack made NumPy's product follow its layout, and the reshape
then copied it.)
"""

from __future__ import annotations

from ..._backend import _compat
from ..._backend._compat import matmul, mT


def _split(xp, x):
    """x = hi + lo exactly, each with at most half the significand (Veltkamp). The constant multiplies
    by a power of two, so FMA contraction changes no rounding (module docstring: ``_split``)."""
    s = 134217728.0 if xp.finfo(x.dtype).eps < 1e-10 else 4096.0  # 2**27 (f64), 2**12 (f32)
    t = x * s + x
    hi = t - (t - x)
    return hi, x - hi


def _dd_sum(xp, x, axis):
    """Sum along ``axis`` (-1, -2 or -3) to about twice the working precision: a pairwise tree of TwoSums
    whose rounding errors are carried along. Returns an unevaluated pair ``(hi, lo)``, the axis kept (length 1).
    ``x``: a temporary the caller no longer needs; NumPy writes into it (module docstring: ``_dd_sum``)."""
    rest = (slice(None),) * (-axis - 1)

    def halves(a):
        if a.shape[axis] % 2:  # pad with one zero to an even length
            pad = list(a.shape)
            pad[axis] = 1
            a = xp.concat([a, xp.zeros(tuple(pad), dtype=a.dtype, device=_compat.device(a))], axis=axis)
        return a[(..., slice(0, None, 2)) + tuple(rest)], a[(..., slice(1, None, 2)) + tuple(rest)]

    hi, lo = x, None
    del x
    while hi.shape[axis] > 1:
        a, b = halves(hi)
        s = a + b
        bb = s - a
        b = _compat.update_fresh(xp, b, "subtract", bb)  # b - bb
        bb = _compat.update_fresh(xp, bb, "subtract", s)  # -(s - bb)
        e = _compat.update_fresh(xp, _compat.update_fresh(xp, a, "add", bb), "add", b)  # a + b - s
        del a, b, bb  # this level's half-size temporary goes before the next level's are made
        if lo is not None:
            la, lb = halves(lo)
            e = _compat.update_fresh(xp, e, "add", _compat.update_fresh(xp, la, "add", lb))
        hi, lo = s, e
    return hi, (xp.zeros_like(hi) if lo is None else lo)


def _products(xp, halves, B, rows):
    """The four exact partial products of X (``halves``: its two, from :func:`_split`) and B (..., p, k), as ONE
    temporary for :func:`_dd_sum`. They are the terms of the sum over j of ``X_ij B_jt`` (``rows=False``:
    (..., m, 4n, k), X W) or over i of ``X_ij B_it`` (``rows=True``: (..., 4m, n, k), X^T R). One broadcast
    product, no copy (module docstring: ``_products``)."""
    m, n = halves[0].shape[-2:]
    Bs = xp.stack(_split(xp, B), axis=-3)  # (..., 2, p, k)
    if rows:  # (..., 2, 2, m, n, k): [a, b, i, j, t] = X_a[i, j] B_b[i, t]
        S = xp.stack(halves, axis=-3)  # (..., 2, m, n)
        P = S[..., :, None, :, :, None] * Bs[..., None, :, :, None, :]
        return xp.reshape(P, (*P.shape[:-5], 4 * m, n, P.shape[-1]))
    S = xp.stack(halves, axis=-2)  # (..., m, 2, n)
    P = S[..., :, :, None, :, None] * Bs[..., None, None, :, :, :]  # (..., m, 2, 2, n, k)
    return xp.reshape(P, (*P.shape[:-5], m, 4 * n, P.shape[-1]))


def _residuals(xp, X, Y, W, R_):
    """f = Y - R_ - X W and g = -X^T R_, each summed in double-double. Temporaries: X's halves
    (2 m n, and their stack), the 4 m n k partial products, and two half-size arrays in their
    sum's first level."""
    halves = _split(xp, X)
    # f: the products of X and -W (exact: no negated copies), summed along j; then Y and -R_
    # join their (hi, lo) pair in a sum of four terms.
    hi, lo = _dd_sum(xp, _products(xp, halves, -W, rows=False), axis=-2)  # (..., m, 1, k)
    terms = xp.concat([Y[..., :, None, :], -R_[..., :, None, :], hi, lo], axis=-2)
    f = sum(_dd_sum(xp, terms, axis=-2))[..., 0, :]
    hi, lo = _dd_sum(xp, _products(xp, halves, R_, rows=True), axis=-3)  # (..., 1, n, k)
    return f, -(hi + lo)[..., 0, :, :]


def refine(xp, X, Y, W, rank, steps):
    """``steps`` refinement steps of the solution W (..., n, k) of min ||Y - X W||, for the
    problems of the batch whose ``rank`` (...) is n. Returns (W, residual)."""
    m, n = X.shape[-2:]
    if m < n:
        return W, Y - matmul(xp, X, W)
    Q, R = _compat.qr(xp, X)
    # A rank-deficient problem's R can have an exact zero on its diagonal, where LAPACK's
    # triangular solve raises (SciPy: "singular matrix"). Its refined W is discarded below,
    # so solve with the zeros replaced by ones: finite, never used.
    eye = _compat.as_rank(xp, _compat.eye_like(xp, R, n), R.ndim)
    R = xp.where((R == 0) & (eye == 1), eye, R)
    R_ = Y - matmul(xp, X, W)
    W0 = W
    for _ in range(steps):
        f, g = _residuals(xp, X, Y, W, R_)
        h = _compat.solve_triangular(xp, mT(xp, R), g, lower=True)
        c = matmul(xp, mT(xp, Q), f) - h
        W = W + _compat.solve_triangular(xp, R, c, lower=False)
        R_ = R_ + (f - matmul(xp, Q, c))
    # Rank-deficient problems keep their minimum-norm solution (R is singular there).
    good = (rank == n)[..., None, None] & xp.all(xp.isfinite(W), axis=(-2, -1), keepdims=True)
    return xp.where(good, W, W0), xp.where(good, R_, Y - matmul(xp, X, W0))
