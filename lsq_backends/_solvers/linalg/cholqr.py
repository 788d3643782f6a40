"""CholeskyQR2 (Fukaya, Nakatsukasa, Yamamoto, 2014) and shifted CholeskyQR3 (Fukaya, Kannan,
Nakatsukasa, Yamamoto and Yanagisawa, 2020): QR factorizations of tall X made of Gram products
and triangular solves, with their gates. CholeskyQR2 is orthogonal to working precision up to
``cholqr_limit`` (``eps**-0.5 / 100``); shifted CholeskyQR3 of ``[X Y]`` reaches
Householder-level error up to cond ~1e11-1e12. ``qr`` tries them in that order before
Householder QR; ``svd`` takes CholeskyQR2's R where its gate passes.

``cholqr2_factors``: X D = Q1 R1 with R1 = (D L)^T, Q1 = X M and M = D R1^{-1}. Q1 is a matrix
product, not a triangular solve with m right-hand sides: faster through NumPy's BLAS (design
notes). The solve measured up to 0.4 digits better on NIST's large-residual Wampler problems,
which is why ``auto`` uses Householder QR instead. Then Q1 = Q R2 with R2 = L2^T, so
X = Q L2^T L^T; the second pass repairs Q1's loss of orthogonality, ~eps * cond**2. Q^T Y is
L2^{-1} Q1^T Y. Q1^T Q1 is I up to eps * cond**2, so a pivot of L2 far from 1 means the
condition estimate was fooled: ``good`` is then False.

``shifted_cholqr3``: the Gram matrix of ``[X Y] D`` (unit diagonal; from the normal path's ``A``
and ``B``) plus a shift ``s = SHIFT eps (sqrt(m) + n + k) (n + k)`` always factors. The shift
is the Frobenius norm squared times the Gram matrix's probable rounding
(``_shared.gram_noise``); Fukaya et al. take the worst case 11 (m n + n (n + 1)) eps ||X||**2.
It caps the condition of ``Q1 = [X Y] R1^{-1}`` at ~sqrt(s) cond(X D). CholeskyQR2 on Q1 (two
more rounds) then makes ``[X Y] = Q R`` backward stable, with Q orthogonal to working precision,
as Householder QR. The solution is ``R11^{-1} R12`` (R's blocks against X and Y). So Q^T Y
comes out of the same factorization, not from a product with an explicit Q. That Q's rounding,
~eps cond(X), met Y's residual and cost up to 4 digits on large-residual problems. Each
``Q = [X Y] R^{-1}`` is a triangular solve: row-wise backward stable, half the flops of a
product with the inverse.

Its third round only repairs Q2's loss of orthogonality, ~eps cond(Q1)**2. The condition
estimate of Q1 (from the second round's factor) may put that at most ``THIRD_ROUND``. The round
is then skipped (one solve and one Gram pass over X fewer), where that choice costs no host read
(NumPy, traced JAX). It is not skipped where ``operators`` asks for R11 as X's own triangular
factor (derivative rules).

Its ``good`` needs the last round's pivots against X to be 1 up to O(1) or, where that round is
skipped, Q1's condition estimate to be finite. Pivots far from 1 mean that cond(Q1) was past
CholeskyQR2's reach: cond(X D) beyond ~1e11-1e12 in float64. R11 must also certify the rank
(``rank.certified``, as Householder's R), and W be finite. Otherwise the caller falls back to
Householder QR.

``_gram_after`` applies the factors in turn: one solve per round keeps each row-wise backward
stable. On NumPy (2-D X) Q is never formed whole. Each ~1 MB row block of [X Y] is copied into
a buffer, solved in place (BLAS trsm) and its Gram product added, in cache: one pass over X per
round. With ``keep`` the blocks are also stored and returned. The next round then solves once
per block instead of twice: SciPy's trsm is slower than the Gram product. Elsewhere Q is formed
by blocks of columns (``_next_q``)."""

from __future__ import annotations

from ..._backend import _compat
from ..._backend._compat import all_true, diagonal, eps, full_int, matmul, mT
from .._record import Solution
from . import gram
from ._gram_data import BLOCK_ELEMENTS
from ._operators import asked, inverse_factor, triangular_inverse
from ._shared import default_cutoff, gated
from .rank import certified, condition_estimate


def cholqr_limit(xp, X):
    return eps(xp, X) ** -0.5 / 100


def cholqr2_gate(xp, X, rcond, offset_sq, fac):
    """Scalar: may CholeskyQR2 factor X? It has no rank test of its own, so the Gram factor
    must pass the normal path's, and the condition estimate must be within its limit."""
    kappa = fac.condition(xp)
    ok = (kappa <= cholqr_limit(xp, X)) & gram.full_rank_test(xp, fac, X, rcond, offset_sq, global_scale=True)
    return all_true(xp, ok)


def uses_cholqr2(xp, X, alpha):
    m, n = X.shape[-2:]
    return m >= n and alpha is None and n > 0 and not _compat.one_pass_qr(xp)


def r_factor(xp, X, Y, rcond, offset_sq=None, check=None, data=None):
    """``(R, Q^T Y)`` of tall X (m >= n, n > 0): CholeskyQR2 where ``qr`` would use it (R = L2^T L^T, a
    backward-stable factor there), else Householder with Q applied implicitly. The ``svd`` method takes this R's SVD.
    ``check`` and ``data`` as ``qr.solve`` takes them (``data``: the centered problem's exact means, offsets and rss,
    see ``_gram_data.TallGram``)."""
    if not uses_cholqr2(xp, X, None):
        return _compat.qr_apply(xp, X, Y)
    # the Gram products, then X's deferred test on them (finiteness, scale), then their factor
    fac = gram.GramCholesky(xp, X, Y, None, None if data is None else data.whole()).factorize(xp, check)
    offset_sq = gram.centered_offsets(fac, offset_sq)

    def attempt(X, Y):
        M, L2, Z, good = cholqr2_factors(xp, X, Y, fac)
        return (matmul(xp, mT(xp, L2), mT(xp, fac.L)), Z), good

    gate = cholqr2_gate(xp, X, rcond, offset_sq, fac)
    return gated(xp, gate, attempt, lambda X, Y: _compat.qr_apply(xp, *fac.data.arrays(X, Y)), (X, Y))


def cholqr2_factors(xp, X, Y, fac):
    """CholeskyQR2 on the equilibrated X D from the Gram factor L (A = X^T X = L L^T): ``(M, L2, Z, good)``,
    X = Q L2^T L^T with Q = X M L2^{-T} (M (..., n, n)), Z = Q^T Y (..., n, k); ``good`` is False where a pivot of L2
    is far from 1 (module docstring). With an intercept (``fac.data`` centered), of the centered X and Y, corrected
    on the n x n side (``TallGram.basis_products``)."""
    n = X.shape[-1]
    d = diagonal(xp, fac.A)
    dinv = 1 / xp.sqrt(xp.where(d > 0, d, xp.ones_like(d)))
    R1 = mT(xp, dinv[..., :, None] * fac.L)
    eye = xp.broadcast_to(_compat.eye_like(xp, R1, n), tuple(R1.shape))  # some solvers do not broadcast
    M = dinv[..., :, None] * _compat.solve_triangular(xp, R1, eye, lower=False)
    G2, C = fac.data.basis_products(X, Y, M)  # Q1 = X M (centered on the n x n side): Q1^T Q1, Q1^T Y
    L2 = _compat.cholesky(xp, G2)
    Z = _compat.solve_triangular(xp, L2, C, lower=True)  # Q^T y
    good = all_true(xp, xp.abs(diagonal(xp, L2) - 1) < 0.5)
    return M, L2, Z, good


SHIFT = 11.0  # shifted CholeskyQR's shift, in units of the Gram matrix's probable rounding
# eps * cond(Q1)**2 up to which shifted CholeskyQR's third round is skipped: below it the third
# round moved the solution's error by less than 2x (in either direction), measured from
# cond 1e9 to 1e13 on 20000 x 50, 200000 x 50, 50000 x 200 and 3000 x 10 at two noise levels
# (``python -m benchmarks.cholqr_rounds``).
THIRD_ROUND = 1e-4


def shifted_cholqr3(xp, X, Y, fac, rcond, offset_sq, operators=False):
    """Shifted CholeskyQR3 of the equilibrated ``[X Y]``, for X past CholeskyQR2's limit: ``(Solution, good)``,
    W = R11^{-1} R12 (..., n, k); with ``operators`` its ``Operators`` (``_operators.inverse_factor`` of R11).
    Householder-level error up to cond(X D) ~1e11-1e12 (float64); ``good`` fails beyond. NumPy and traced JAX skip
    the third round where it is not needed, except with ``operators``. See the module docstring."""
    m, n = X.shape[-2:]
    k = Y.shape[-1]
    top = xp.concat([fac.A, fac.B], axis=-1)
    bottom = xp.concat([mT(xp, fac.B), matmul(xp, mT(xp, Y), Y)], axis=-1)
    G = xp.concat([top, bottom], axis=-2)  # Gram matrix of [X Y]
    d = diagonal(xp, G)
    root = xp.sqrt(xp.where(d > 0, d, xp.ones_like(d)))
    shift = SHIFT * eps(xp, X) * (m**0.5 + n + k) * (n + k)
    G = G / (root[..., :, None] * root[..., None, :]) + shift * _compat.as_rank(
        xp, _compat.eye_like(xp, G, n + k), G.ndim
    )
    R1 = mT(xp, _compat.cholesky(xp, G)) * root[..., None, :]  # of [X Y]
    G2, Q1 = _gram_after(xp, X, Y, (R1,), shift, keep=True)
    L2 = _compat.cholesky(xp, G2)
    R2 = mT(xp, L2)

    def third_round(R2):
        if Q1 is None:
            R3 = mT(xp, _compat.cholesky(xp, _gram_after(xp, X, Y, (R1, R2), shift)))
        else:
            R3 = mT(xp, _compat.cholesky(xp, _gram_after(xp, Q1[:, :n], Q1[:, n:], (R2,), shift)))
        # the last round's pivots are 1 up to O(1), else cond(Q1) was past CholeskyQR2's reach
        return matmul(xp, R3, R2), xp.all(xp.abs(diagonal(xp, R3)[..., :n] - 1) < 0.5, axis=-1)

    # The choice where it costs no host read: NumPy, or traced JAX (one branch runs). The
    # derivative rules take R11 as X's own triangular factor: Q orthogonal, three rounds.
    free = _compat.choice_is_free(xp, L2)
    if free and not operators:
        q1_cond = condition_estimate(xp, L2, G2)
        two_rounds = all_true(xp, eps(xp, X) * q1_cond * q1_cond <= THIRD_ROUND)
        R32, orthogonal = _compat.branch(xp, two_rounds, lambda R2: (R2, xp.isfinite(q1_cond)), third_round, (R2,))
    else:
        R32, orthogonal = third_round(R2)
    R = matmul(xp, R32, R1)
    R11 = R[..., :n, :n]
    W = _compat.solve_triangular(xp, R11, R[..., :n, n:], lower=False)
    ok = certified(xp, R11, offset_sq, rcond, default_cutoff(xp, X, m, n, rcond))
    ok = ok & orthogonal & xp.all(xp.isfinite(W), axis=(-2, -1))
    good = all_true(xp, ok)
    rank = full_int(xp, X.shape[:-2], n, X)
    return Solution(
        W, rank, operators=asked(operators, lambda: inverse_factor(xp, triangular_inverse(xp, R11, False)))
    ), good


def _gram_after(xp, X, Y, factors, shift, keep=False):
    """Gram matrix of ``Q = [X Y] R1^{-1} R2^{-1} ...`` (``factors`` upper triangular), ``shift`` added to Y's block
    (see :func:`_gram_of`); with ``keep`` ``(G, Q)``, Q None off NumPy. NumPy (2-D X): row blocks solved in cache,
    one pass over X a round; elsewhere Q by blocks of columns (``_next_q``). See the module docstring."""
    n = X.shape[-1]
    blas = None
    if _compat.traits(xp).host_blas and X.ndim == 2:
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
    # pool's spinning threads (design notes).
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
    Qy = mT(xp, _compat.solve_triangular(xp, mT(xp, R22), mT(xp, Qy - matmul(xp, Qx, R12)), lower=True))
    return Qx, Qy


def _gram_of(xp, Qx, Qy, shift):
    """Gram matrix of [Qx Qy], ``shift`` added to the diagonal of Qy's block: R11 and R12 of
    its factor (all the solution needs) do not depend on that block, and Y in X's range
    (a Schur complement of rounding noise) or dependent columns of Y then cannot make the
    factorization fail; any nonsingular R22 keeps [Qx Qy] R^{-1} a valid next basis."""
    a, b = matmul(xp, mT(xp, Qx), Qx), matmul(xp, mT(xp, Qx), Qy)
    c = matmul(xp, mT(xp, Qy), Qy) + shift * _compat.as_rank(xp, _compat.eye_like(xp, Qy, Qy.shape[-1]), Qy.ndim)
    return xp.concat([xp.concat([a, b], axis=-1), xp.concat([mT(xp, b), c], axis=-1)], axis=-2)
