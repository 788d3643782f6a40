"""QR: an orthogonal factorization and a triangular solve, with QR-level accuracy.

Tall X (m >= n): ``X = Q R``, ``w = R^{-1} Q^T y``. Least squares on tall X uses CholeskyQR2
(Fukaya, Nakatsukasa, Yamamoto) when the Gram factor's condition estimate (after column
equilibration) is at most ``eps**-0.5 / 100`` (float64: 6.7e5, float32: 29): two Gram passes,
one triangular solve with m right-hand sides and two small Choleskys, all matrix-matrix work (the fastest
QR on GPUs, and 4x faster than LAPACK's Householder QR here), with Q orthogonal to working
precision in that range. Past it, shifted CholeskyQR3 of ``[X Y]`` (``_shifted_cholqr3``:
Householder-level error measured up to cond 1e12, at about half Householder's time on NumPy),
and Householder QR only where its check fails (rank deficiency, cond beyond ~1e11-1e12: one
more host read). For ridge, Householder QR, applying Q implicitly
where the library can (LAPACK's ormqr through SciPy or PyTorch). Wide X (m < n): the minimum-norm solution
from ``X^T = Q R``: ``w = Q R^{-T} y``. Ridge factors ``[R; sqrt(alpha) I]`` (a 2p x p QR after
the first one), which is the QR of ``[X; sqrt(alpha) I]`` without touching X again. Error
~ eps * cond(X) (plus eps * cond(X)**2 * ||r|| / (||X|| ||w||) for large residuals), for
2mn^2 - 2n^3/3 flops: about twice the normal equations.

Rank deficiency is suspected on the diagonal of the triangular factor that is solved: a
pivot ``|R_jj|`` at most ``rcond * ||X[:, j]||`` (default ``_shared.default_cutoff``: ``eps * max(m, n)`` in float64;
the norm of the column as given, before centering) or at most ``rcond * max_i ||X[:, i]||``
(the scale of NumPy's SVD cutoff); for wide X, where pivots belong to rows, at most
``sqrt(rcond)`` times the largest row or X's Frobenius norm. The SVD of R then decides the
rank with ``rcond`` itself. The problem is then solved from the SVD of the small factor R (X = (QU) S
V^T), so the answer is the minimum-norm solution at no more than O(p^3) extra. Without
column pivoting this test is a heuristic: it catches exactly dependent columns, as in the
usual duplicated or constant columns, but can miss a rare near-dependence spread over many
columns (Kahan's matrix); use ``method="svd"`` when the rank itself matters.
"""

from __future__ import annotations

import array_api_compat as _aac

from .. import _compat
from .._gram_data import BLOCK_ELEMENTS
from . import svd
from ._shared import (
    all_true,
    default_cutoff,
    diagonal,
    dot,
    eps,
    eye_like,
    full_rank,
    gated,
    merge_targets,
    mT,
    pivot_ratios,
    split_targets,
)


def _relative_pivots(xp, R):
    """|R_jj| / max_i ||R[:, i]||: near zero for a column that depends on the ones before it
    or whose norm is negligible next to the largest (the scale SVD's cutoff uses too)."""
    d = xp.abs(diagonal(xp, R))
    norms = xp.max(xp.linalg.vector_norm(R, axis=-2), axis=-1, keepdims=True)
    return d / xp.where(norms > 0, norms, xp.ones_like(norms))


def _penalized_r(xp, R, alpha):
    """QR of ``[sqrt(alpha) I; R]`` (per target when alpha is (k,)): ``(Q2, T)`` with T the R
    factor of ``[R; sqrt(alpha) I]`` too (row order does not change it), Q2's rows in this order.

    The penalty rows come first. Householder QR perturbs each column by eps times its norm, and
    in the order ``[R; sqrt(alpha) I]`` the first reflector of a column whose norm is nearly all
    sqrt(alpha) (alpha >> ||R||**2) swaps R's row with the penalty row: R's entries then come
    back as differences of numbers of size sqrt(alpha) (the Q2 block against R carried errors
    ~eps, not ~eps ||R|| / sqrt(alpha), and ``qr`` ridge at X ~ 1e-20, alpha = 1 erred by 0.88).
    With the large rows first (Powell and Reid's row sorting) each reflector adds to R's rows
    only products of R's own entries, and the block of Q2 against R keeps its relative accuracy.
    """
    p = R.shape[-1]
    root = xp.sqrt(alpha)[:, None, None] * eye_like(xp, R, p)  # (kα, p, p)
    if alpha.shape[0] == 1:
        top, bottom = xp.broadcast_to(root[0, ...], tuple(R.shape)), R
    else:
        shape = tuple(R.shape[:-2]) + (alpha.shape[0], p, p)
        top, bottom = xp.broadcast_to(root, shape), xp.broadcast_to(R[..., None, :, :], shape)
    stacked = xp.concat([top, bottom], axis=-2)
    return _compat.qr(xp, stacked)


def cholqr_limit(xp, X):
    return eps(xp, X) ** -0.5 / 100


def _cholqr2_gate(xp, X, rcond, offset_sq, fac):
    """Scalar: may CholeskyQR2 factor X? It has no rank test of its own, so the Gram factor
    must pass the normal path's, and the condition estimate must be within its limit."""
    from . import (
        normal,  # normal imports svd, svd imports this module: kept acyclic here
    )

    kappa = fac.condition(xp)
    ok = (kappa <= cholqr_limit(xp, X)) & normal.full_rank_test(xp, fac, X, rcond, offset_sq, global_scale=True)
    return all_true(xp, ok)


def _uses_cholqr2(xp, X, alpha):
    m, n = X.shape[-2:]
    return m >= n and alpha is None and n > 0 and not _compat.one_pass_qr(xp)


def solve(xp, X, Y, alpha, rcond, offset_sq=None):
    """QR solution (CholeskyQR2 where safe, else Householder), falling back to the SVD of R on
    a numerically singular factor."""
    if not _uses_cholqr2(xp, X, alpha):
        return householder(xp, X, Y, alpha, rcond, offset_sq)
    from . import normal

    fac = normal.Factored(xp, X, Y, None)
    n = X.shape[-1]

    def attempt(X, Y):
        M, L2, Z, good = _cholqr2_factors(xp, X, Y, fac)
        W = dot(xp, M, _compat.solve_triangular(xp, mT(xp, L2), Z, lower=False))
        return (W, full_rank(xp, X.shape[:-2], n, X)), good

    def shifted_or_householder(X, Y):
        (W, rank), good = _shifted_cholqr3(xp, X, Y, fac, rcond, offset_sq)
        return _compat.cond(
            xp, good, lambda *_: (W, rank), lambda X, Y: householder(xp, X, Y, None, rcond, offset_sq)[:2], (X, Y)
        )

    gate = _cholqr2_gate(xp, X, rcond, offset_sq, fac)
    coef, rank = gated(xp, gate, attempt, shifted_or_householder, (X, Y))
    return coef, rank, None


def r_factor(xp, X, Y, rcond, offset_sq=None):
    """``(R, Q^T Y)`` of tall X (m >= n, n > 0): CholeskyQR2 where ``qr`` would use it (its
    R = L2^T L^T, a backward-stable factor in that range), else Householder with Q applied
    implicitly. The ``svd`` method takes the SVD of this R."""
    if not _uses_cholqr2(xp, X, None):
        return _compat.qr_apply(xp, X, Y)
    from . import normal

    fac = normal.Factored(xp, X, Y, None)

    def attempt(X, Y):
        M, L2, Z, good = _cholqr2_factors(xp, X, Y, fac)
        return (dot(xp, mT(xp, L2), mT(xp, fac.L)), Z), good

    gate = _cholqr2_gate(xp, X, rcond, offset_sq, fac)
    return gated(xp, gate, attempt, lambda X, Y: _compat.qr_apply(xp, X, Y), (X, Y))


def _cholqr2_factors(xp, X, Y, fac):
    """CholeskyQR2 on the equilibrated X D, from the Gram factor L (A = X^T X = L L^T).

    X D = Q1 R1 with R1 = (D L)^T, Q1 = X M, M = D R1^{-1}: a matrix product rather than a
    triangular solve with m right-hand sides (2x faster here through NumPy's BLAS; the solve
    measured up to 0.4 digits better on NIST's large-residual Wampler problems, which is why
    ``auto`` uses Householder QR instead). Then Q1 = Q R2 with R2 = L2^T (the second pass repairs Q1's loss of orthogonality, ~eps *
    cond**2), so X = Q L2^T L^T. Returns (M, L2, Q^T Y = L2^{-1} Q1^T Y, good): ``good`` is
    False where a pivot of L2 is far from 1 (Q1^T Q1 is I up to eps * cond**2, so the
    condition estimate was fooled)."""
    n = X.shape[-1]
    d = diagonal(xp, fac.A)
    dinv = 1 / xp.sqrt(xp.where(d > 0, d, xp.ones_like(d)))
    R1 = mT(xp, dinv[..., :, None] * fac.L)
    eye = xp.broadcast_to(eye_like(xp, R1, n), tuple(R1.shape))  # some solvers do not broadcast
    M = dinv[..., :, None] * _compat.solve_triangular(xp, R1, eye, lower=False)
    Q1 = dot(xp, X, M)
    L2 = _compat.cholesky(xp, dot(xp, mT(xp, Q1), Q1))
    Z = _compat.solve_triangular(xp, L2, dot(xp, mT(xp, Q1), Y), lower=True)  # Q^T y
    good = all_true(xp, xp.abs(diagonal(xp, L2) - 1) < 0.5)
    return M, L2, Z, good


SHIFT = 11.0  # shifted CholeskyQR's shift, in units of the Gram matrix's probable rounding


def _shifted_cholqr3(xp, X, Y, fac, rcond, offset_sq):
    """Shifted CholeskyQR3 (Fukaya, Kannan, Nakatsukasa, Yamamoto and Yanagisawa, 2020) of the
    column-equilibrated ``[X Y]``, for X past CholeskyQR2's limit: ``((W, rank), good)``.

    The Gram matrix of ``[X Y] D`` (unit diagonal; from the normal path's ``A`` and ``B``)
    plus a shift ``s = SHIFT eps (sqrt(m) + n + k) (n + k)`` (the Frobenius norm squared
    times the Gram matrix's probable rounding, ``_shared.gram_noise``, where Fukaya et al.
    take the worst case 11 (m n + n (n + 1)) eps ||X||**2) always factors; the shift caps
    the condition of ``Q1 = [X Y] R1^{-1}`` at ~sqrt(s) cond(X D), and CholeskyQR2 on Q1 (two
    more rounds) makes ``[X Y] = Q R`` backward stable with Q orthogonal to working
    precision, as Householder QR. The solution is ``R11^{-1} R12`` (R's blocks against X and
    Y): Q^T Y comes out of the same factorization rather than from a product with an
    explicit Q, whose rounding, ~eps cond(X) in Q, met Y's residual and cost up to 4 digits
    on large-residual problems. Each ``Q = [X Y] R^{-1}`` is a triangular solve (row-wise
    backward stable, half the flops of a product with the inverse); Q is formed twice (two
    X-sized arrays).

    ``good``: the last round's pivots against X are 1 up to O(1) (else cond(Q1) was past
    CholeskyQR2's reach: cond(X D) beyond ~1e11-1e12 in float64) and R11 passes Householder's rank tests (pivots against the column norms and the
    largest column, at ``rcond``); otherwise the caller falls back to Householder QR."""
    m, n = X.shape[-2:]
    k = Y.shape[-1]
    top = xp.concat([fac.A, fac.B], axis=-1)
    bottom = xp.concat([mT(xp, fac.B), dot(xp, mT(xp, Y), Y)], axis=-1)
    G = xp.concat([top, bottom], axis=-2)  # Gram matrix of [X Y]
    d = diagonal(xp, G)
    root = xp.sqrt(xp.where(d > 0, d, xp.ones_like(d)))
    shift = SHIFT * eps(xp, X) * (m**0.5 + n + k) * (n + k)
    G = G / (root[..., :, None] * root[..., None, :]) + shift * eye_like(xp, G, n + k)
    R1 = mT(xp, _compat.cholesky(xp, G)) * root[..., None, :]  # of [X Y]
    G2, Q1 = _gram_after(xp, X, Y, (R1,), shift, keep=True)
    R2 = mT(xp, _compat.cholesky(xp, G2))
    if Q1 is None:
        R3 = mT(xp, _compat.cholesky(xp, _gram_after(xp, X, Y, (R1, R2), shift)))
    else:
        R3 = mT(xp, _compat.cholesky(xp, _gram_after(xp, Q1[:, :n], Q1[:, n:], (R2,), shift)))
    R = dot(xp, R3, dot(xp, R2, R1))
    R11 = R[..., :n, :n]
    W = _compat.solve_triangular(xp, R11, R[..., :n, n:], lower=False)
    cutoff = default_cutoff(xp, X, m, n, rcond)
    own = pivot_ratios(xp, diagonal(xp, R11), xp.sum(R11 * R11, axis=-2), offset_sq)
    ok = xp.all((own > cutoff) & (_relative_pivots(xp, R11) > cutoff), axis=-1)
    ok = ok & xp.all(xp.abs(diagonal(xp, R3)[..., :n] - 1) < 0.5, axis=-1) & xp.all(xp.isfinite(W), axis=(-2, -1))
    good = all_true(xp, ok)
    return (W, full_rank(xp, X.shape[:-2], n, X)), good


def _gram_after(xp, X, Y, factors, shift, keep=False):
    """Gram matrix of ``Q = [X Y] R1^{-1} R2^{-1} ...`` (``factors`` upper triangular, applied
    in turn: one solve per round keeps each row-wise backward stable), ``shift`` added to Y's
    block (see :func:`_gram_of`). On NumPy (2-D X) Q is never formed whole: each ~1 MB row
    block of [X Y] is copied into a buffer, solved in place (BLAS trsm) and its Gram product
    added, in cache, each round one pass over X; with ``keep`` the blocks are also stored
    and returned, ``(G, Q)`` (the next round then solves once per block instead of twice:
    SciPy's trsm runs at ~0.6x the speed of the Gram product here). Elsewhere Q is formed by
    blocks of columns (``_next_q``); ``keep`` returns ``(G, None)``."""
    n = X.shape[-1]
    blas = None
    if _aac.is_numpy_namespace(xp) and X.ndim == 2:
        try:
            from scipy.linalg import blas
        except ImportError:  # SciPy is optional
            pass
    if blas is None:
        Qx, Qy = X, Y
        for R in factors:
            Qx, Qy = _next_q(xp, Qx, Qy, R, n)
        G = _gram_of(xp, Qx, Qy, shift)
        return (G, None) if keep else G
    import numpy as np

    m, p = X.shape[0], n + Y.shape[-1]
    # SciPy's BLAS for both products of the loop: NumPy's matmul between SciPy's solves
    # switched OpenBLAS thread pools ~80 times a pass, each switch waiting out the other
    # pool's spinning threads (26x a bare Gram product for one round at 200000 x 50).
    trsm, syrk = blas.get_blas_funcs(("trsm", "syrk"), (factors[0],))
    factors = [np.asfortranarray(R) for R in factors]
    rows = max(BLOCK_ELEMENTS // p, 256)
    out = np.empty((m, p), dtype=X.dtype) if keep else None
    buf = np.empty((min(rows, m), p), dtype=X.dtype) if not keep else None
    G = np.zeros((p, p), dtype=X.dtype, order="F")
    for i in range(0, m, rows):
        Z = out[i : i + rows] if keep else buf[: min(rows, m - i)]
        Z[:, :n], Z[:, n:] = X[i : i + rows], Y[i : i + rows]
        for R in factors:
            # Z R^{-1} in C order is R^{-T} Z^T in Fortran order: solved in place in the buffer
            trsm(1.0, R, Z.T, side=0, lower=0, trans_a=1, overwrite_b=1)
        G = syrk(1.0, Z.T, beta=1.0, c=G, trans=0, lower=0, overwrite_c=1)  # upper triangle of += Z^T Z
    G = np.triu(G) + np.triu(G, 1).T
    G[n:, n:] += shift * np.eye(p - n, dtype=X.dtype)
    return (G, out) if keep else G


def _next_q(xp, Qx, Qy, R, n):
    """``[Qx Qy] R^{-1}`` by blocks (R upper triangular, its first n columns against Qx)."""
    R11, R12, R22 = R[..., :n, :n], R[..., :n, n:], R[..., n:, n:]
    Qx = mT(xp, _compat.solve_triangular(xp, mT(xp, R11), mT(xp, Qx), lower=True))
    Qy = mT(xp, _compat.solve_triangular(xp, mT(xp, R22), mT(xp, Qy - dot(xp, Qx, R12)), lower=True))
    return Qx, Qy


def _gram_of(xp, Qx, Qy, shift):
    """Gram matrix of [Qx Qy], ``shift`` added to the diagonal of Qy's block: R11 and R12 of
    its factor (all the solution needs) do not depend on that block, and Y in X's range
    (a Schur complement of rounding noise) or dependent columns of Y then cannot make the
    factorization fail; any nonsingular R22 keeps [Qx Qy] R^{-1} a valid next basis."""
    a, b = dot(xp, mT(xp, Qx), Qx), dot(xp, mT(xp, Qx), Qy)
    c = dot(xp, mT(xp, Qy), Qy) + shift * eye_like(xp, Qy, Qy.shape[-1])
    return xp.concat([xp.concat([a, b], axis=-1), xp.concat([mT(xp, b), c], axis=-1)], axis=-2)


def householder(xp, X, Y, alpha, rcond, offset_sq=None):
    """Householder QR solution, falling back to the SVD of R on a numerically singular factor."""
    m, n = X.shape[-2:]
    wide = m < n
    if wide:
        R, q_times = _compat.qr_implicit(xp, mT(xp, X))  # X^T = Q R, Q applied implicitly
        Z = Y  # right-hand side of R^T U = Y
    else:
        R, Z = _compat.qr_apply(xp, X, Y)  # X = Q R, Z = Q^T Y (Q never formed if avoidable)
    if alpha is None:
        T = R
    else:
        Q2, T = _penalized_r(xp, R, alpha)
        Zs = split_targets(xp, Z, alpha)
        if not wide:
            # [sqrt(a) I; R] = Q2 T, right-hand side [0; Z]: T W = Q2[p:]^T Z.
            p = R.shape[-1]
            Zs = dot(xp, mT(xp, Q2[..., p:, :]), Zs)
    cutoff = default_cutoff(xp, X, m, n, rcond)
    # Wide X with an intercept: X's Frobenius norm before centering, the scale of its noise.
    frob = None
    if wide and offset_sq is not None:
        frob = xp.sqrt(xp.sum(R * R, axis=(-2, -1)) + xp.sum(offset_sq, axis=-1))
    # Triggers for the SVD of R, which then decides the rank with its own cutoff. On wide X a
    # generous one (sqrt(cutoff)): unpivoted QR can leave a dependent row's pivot well above
    # rounding level, and a false alarm costs only the O(m^3) SVD. On tall X a strict one: the
    # SVD of a graded R (Filip's x .. x**10, columns in small units) would lose the accuracy
    # the triangular solve keeps.
    if wide:
        # Pivots belong to rows of X, which the intercept elimination mixed: compare with the
        # largest row and with ``frob``.
        ratios = _relative_pivots(xp, T)
        if frob is not None:
            f = frob[..., None, None] if T.ndim > R.ndim else frob[..., None]
            ratios = xp.minimum(ratios, xp.abs(diagonal(xp, T)) / xp.where(f > 0, f, xp.ones_like(f)))
        ok = ratios > cutoff**0.5
    else:
        # Against the column's own norm before centering (scale-free: dependent columns,
        # centering noise) and, as NumPy's SVD cutoff does, against the largest column (a
        # dependence hidden behind a small column whose rounding is relative to ||X||).
        own = pivot_ratios(xp, diagonal(xp, T), xp.sum(T * T, axis=-2), offset_sq)
        ok = (own > cutoff) & (_relative_pivots(xp, T) > cutoff)
    ok = all_true(xp, ok)

    def triangular(X, Y):
        if alpha is None:
            if wide:
                W = q_times(_compat.solve_triangular(xp, mT(xp, R), Y, lower=True))
            else:
                W = _compat.solve_triangular(xp, R, Z, lower=False)
            return W, full_rank(xp, X.shape[:-2], min(m, n), X)
        if wide:
            # w = X^T (X X^T + a I)^{-1} y with X X^T + a I = T^T T.
            U = _compat.solve_triangular(xp, mT(xp, T), Zs, lower=True)
            U = _compat.solve_triangular(xp, T, U, lower=False)
            W = q_times(dot(xp, R, merge_targets(xp, U, alpha)))
        else:
            W = merge_targets(xp, _compat.solve_triangular(xp, T, Zs, lower=False), alpha)
        return W, full_rank(xp, X.shape[:-2], n, X)

    def from_svd_of_r(X, Y):
        if wide:
            # X = R^T Q^T; with R^T = U S V^T, X = U S (Q V)^T.
            u, s, vh = _compat.svd(xp, mT(xp, R), after_qr_implicit=True)
            W, rank = svd.filtered_solve(xp, u, s, vh, Y, alpha, cutoff, n, frob)
            return q_times(W), rank
        u, s, vh = _compat.svd(xp, R)  # X = (Q U) S V^T, and (Q U)^T y = U^T Z
        scale = svd.uncentered_scale(xp, xp.sum(R * R, axis=-2), offset_sq)
        return svd.filtered_solve(xp, u, s, vh, Z, alpha, cutoff, n, scale)

    coef, rank = _compat.cond(xp, ok, triangular, from_svd_of_r, (X, Y))
    return coef, rank, None
