"""QR: an orthogonal factorization and a triangular solve, with QR-level accuracy.

Tall X (m >= n): ``X = Q R``, ``w = R^{-1} Q^T y``. Least squares on tall X uses CholeskyQR2
(Fukaya, Nakatsukasa, Yamamoto) when the Gram factor's condition estimate (after column
equilibration) is at most ``eps**-0.5 / 100`` (float64: 6.7e5, float32: 29): two Gram passes,
one triangular solve with m right-hand sides and two small Choleskys, all matrix-matrix work (the fastest
QR on GPUs, and 4x faster than LAPACK's Householder QR here), with Q orthogonal to working
precision in that range. Otherwise, and for ridge, Householder QR, applying Q implicitly
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

from .. import _compat
from . import svd
from ._factor import inverse_factor, triangular_inverse
from ._shared import (
    all_true,
    default_cutoff,
    diagonal,
    dot,
    eps,
    eye_like,
    full_rank,
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
    from . import normal  # normal imports svd, svd imports this module: kept acyclic here

    kappa = fac.condition(xp)
    ok = (kappa <= cholqr_limit(xp, X)) & normal.full_rank_test(xp, fac, X, rcond, offset_sq, global_scale=True)
    return all_true(xp, ok)


def _uses_cholqr2(xp, X, alpha):
    m, n = X.shape[-2:]
    return m >= n and alpha is None and n > 0 and not _compat.one_pass_qr(xp)


def solve(xp, X, Y, alpha, rcond, offset_sq=None, *, factor=False):
    """QR solution (CholeskyQR2 where safe, else Householder), falling back to the SVD of R on
    a numerically singular factor. ``factor``: also the ``_factor.Factor`` solved with (of
    ``X^T X``, or for wide X of ``X X^T``), as a fourth value."""
    if not _uses_cholqr2(xp, X, alpha):
        return householder(xp, X, Y, alpha, rcond, offset_sq, factor)
    from . import normal

    fac = normal.Factored(xp, X, Y, None)
    n = X.shape[-1]

    def attempt(X, Y):
        M, L2, Z, good = _cholqr2_factors(xp, X, Y, fac)
        W = dot(xp, M, _compat.solve_triangular(xp, mT(xp, L2), Z, lower=False))
        if factor:  # X = Q L2^T L^T with Q = X M L2^-T: R^-1 = M L2^-T
            Rinv = dot(xp, M, triangular_inverse(xp, mT(xp, L2), False))
            return (W, full_rank(xp, X.shape[:-2], n, X), inverse_factor(xp, Rinv)), good
        return (W, full_rank(xp, X.shape[:-2], n, X)), good

    solved = _gated(
        xp, _cholqr2_gate(xp, X, rcond, offset_sq, fac), attempt,
        lambda X, Y: _dropped_none(householder(xp, X, Y, None, rcond, offset_sq, factor)), (X, Y),
    )  # fmt: skip
    return (solved[0], solved[1], None, solved[2]) if factor else (*solved, None)


def _dropped_none(solved):
    """(coef, rank, Factor) or (coef, rank) of a solve's result: without its singular values."""
    return tuple(a for i, a in enumerate(solved) if i != 2)


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
    return _gated(xp, gate, attempt, lambda X, Y: _compat.qr_apply(xp, X, Y), (X, Y))


def _gated(xp, gate, attempt, fallback, operands):
    """CholeskyQR2 (``attempt(X, Y) -> (result, good)``) where its ``gate`` passes and its own
    check ``good`` holds, else ``fallback(X, Y)``.

    Traced (JAX) or lazy (Dask): branches cost no host read, and the CholeskyQR2 work is skipped
    where the gate fails. Eager: CholeskyQR2 runs before the gate is read, so that the gate and
    its check are read together (one host read; wasted work only where the fallback follows)."""
    if _compat.is_lazy(gate):

        def tried(*ops):
            result, good = attempt(*ops)
            return _compat.cond(xp, good, lambda *_: result, fallback, ops)

        return _compat.cond(xp, gate, tried, fallback, operands)
    result, good = attempt(*operands)
    return _compat.cond(xp, gate & good, lambda *_: result, fallback, operands)


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


def householder(xp, X, Y, alpha, rcond, offset_sq=None, factor=False):
    """Householder QR solution, falling back to the SVD of R on a numerically singular factor
    (``factor``: see :func:`solve`)."""
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
        W, rank = _triangular(X, Y)
        return (W, rank, inverse_factor(xp, triangular_inverse(xp, T, False))) if factor else (W, rank)

    def _triangular(X, Y):
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
            if factor:
                W, rank, fac = svd.filtered_solve(xp, u, s, vh, Y, alpha, cutoff, n, frob, True, wide=True)
                return q_times(W), rank, fac
            W, rank = svd.filtered_solve(xp, u, s, vh, Y, alpha, cutoff, n, frob)
            return q_times(W), rank
        u, s, vh = _compat.svd(xp, R)  # X = (Q U) S V^T, and (Q U)^T y = U^T Z
        scale = svd.uncentered_scale(xp, xp.sum(R * R, axis=-2), offset_sq)
        return svd.filtered_solve(xp, u, s, vh, Z, alpha, cutoff, n, scale, factor)

    solved = _compat.cond(xp, ok, triangular, from_svd_of_r, (X, Y))
    return (solved[0], solved[1], None, solved[2]) if factor else (*solved, None)
