"""Householder QR (LAPACK's geqrf, Q applied implicitly where the library can) and its solve,
with the ridge factor of ``[R; sqrt(alpha) I]`` and the rank decision of ``rank.certified``
on it. Where full rank is not certified, the SVD of R decides (``pinv.filtered_solve``). The
accurate fallback of ``qr`` and ``auto``.

``penalized_r`` puts the penalty rows first. Householder QR perturbs each column by eps times
its norm. In the order ``[R; sqrt(alpha) I]``, the first reflector of a column whose norm is
nearly all sqrt(alpha) (alpha >> ||R||**2) swaps R's row with the penalty row. R's entries then
come back as differences of numbers of size sqrt(alpha). The Q2 block against R carried errors
~eps, not ~eps ||R|| / sqrt(alpha), and ``qr`` ridge at X ~ 1e-20, alpha = 1 erred by 0.88.
With the large rows first (Powell and Reid's row sorting) each reflector adds to R's rows only
products of R's own entries. The block of Q2 against R then keeps its relative accuracy.
"""

from __future__ import annotations

from ..._backend import _compat
from ..._backend._compat import all_true, full_int, matmul, mT
from .._record import NOTHING, Solution
from ._operators import asked, inverse_factor, spectral_factor, triangular_inverse
from ._shared import default_cutoff, merge_targets, split_targets
from .pinv import filtered_solve, uncentered_scale
from .rank import certified


def penalized_r(xp, R, alpha):
    """QR of ``[sqrt(alpha) I; R]`` (per target when alpha is (k,)): ``(Q2, T)``, Q2's rows in this order. T is
    also the R factor of ``[R; sqrt(alpha) I]`` (row order does not change it). The penalty rows come first, so the
    block of Q2 against R keeps its relative accuracy where alpha >> ||R||**2 (see the module docstring)."""
    p = R.shape[-1]
    root = xp.sqrt(alpha)[:, None, None] * _compat.eye_like(xp, R, p)[None, :, :]  # (kα, p, p)
    if alpha.shape[0] == 1:
        top, bottom = xp.broadcast_to(root[0, ...], tuple(R.shape)), R
    else:
        shape = tuple(R.shape[:-2]) + (alpha.shape[0], p, p)
        top, bottom = xp.broadcast_to(root, shape), xp.broadcast_to(R[..., None, :, :], shape)
    stacked = xp.concat([top, bottom], axis=-2)
    return _compat.qr(xp, stacked)


def solve(xp, X, Y, alpha, given=NOTHING, *, operators=False, cutoff=None):
    """Householder QR solution, falling back to the SVD of R where the rank is not certified
    full, as a ``Solution`` (``operators``: see ``qr.solve``); of ``given``, ``rcond`` and ``offset_sq``.
    ``cutoff``: the default cutoff where X is already a triangular factor of more rows (the
    accumulators), ``rcond`` then None."""
    rcond, offset_sq = given.rcond, given.offset_sq
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
        Q2, T = penalized_r(xp, R, alpha)
        Zs = split_targets(xp, Z, alpha)
        if not wide:
            # [sqrt(a) I; R] = Q2 T, right-hand side [0; Z]: T W = Q2[p:]^T Z.
            p = R.shape[-1]
            Zs = matmul(xp, mT(xp, Q2[..., p:, :]), Zs)
    if cutoff is None:
        cutoff = default_cutoff(xp, X, m, n, rcond)
    # Wide X with an intercept: X's Frobenius norm before centering, the scale of its noise.
    frob = None
    if wide and offset_sq is not None:
        frob = xp.sqrt(xp.sum(R * R, axis=(-2, -1)) + xp.sum(offset_sq, axis=-1))
    # The triangular solve where T certifies the rank (``rank.certified``), else the SVD of R,
    # which decides it with the cutoff itself.
    ok = all_true(xp, certified(xp, T, offset_sq, rcond, cutoff, wide=wide))

    def triangular(X, Y):
        W, rank = _triangular(X, Y)
        return Solution(
            W, rank, operators=asked(operators, lambda: inverse_factor(xp, triangular_inverse(xp, T, False)))
        )

    def _triangular(X, Y):
        if alpha is None:
            if wide:
                W = q_times(_compat.solve_triangular(xp, mT(xp, R), Y, lower=True))
            else:
                W = _compat.solve_triangular(xp, R, Z, lower=False)
            return W, full_int(xp, X.shape[:-2], min(m, n), X)
        if wide:
            # w = X^T (X X^T + a I)^{-1} y with X X^T + a I = T^T T.
            U = _compat.solve_triangular(xp, mT(xp, T), Zs, lower=True)
            U = _compat.solve_triangular(xp, T, U, lower=False)
            W = q_times(matmul(xp, R, merge_targets(xp, U, alpha)))
        else:
            W = merge_targets(xp, _compat.solve_triangular(xp, T, Zs, lower=False), alpha)
        return W, full_int(xp, X.shape[:-2], n, X)

    def from_svd_of_r(X, Y):
        if wide:
            # X = R^T Q^T; with R^T = U S V^T, X = U S (Q V)^T.
            u, s, vh = _compat.svd(xp, mT(xp, R), after_qr_implicit=True)
            W, rank, keep = filtered_solve(xp, (u, s, vh), Y, alpha, cutoff, n, frob)
            return Solution(
                q_times(W), rank, operators=asked(operators, lambda: spectral_factor(xp, s, mT(xp, u), keep, alpha))
            )
        u, s, vh = _compat.svd(xp, R)  # X = (Q U) S V^T, and (Q U)^T y = U^T Z
        scale = uncentered_scale(xp, xp.sum(R * R, axis=-2), offset_sq)
        W, rank, keep = filtered_solve(xp, (u, s, vh), Z, alpha, cutoff, n, scale)
        return Solution(W, rank, operators=asked(operators, spectral_factor, xp, s, vh, keep, alpha))

    return _compat.branch(xp, ok, triangular, from_svd_of_r, (X, Y))
