"""The derivative's operators: what a direct solver hands back, with ``operators=True``, for the derivative rules
(``lsq_backends._autodiff._derivatives``): the factorization it solved with, as the two small operators
the derivative of the solution needs. No solver logic here, and no new factorization: each
operator is made from the factor the solve already has (a triangular inverse, or products
of singular vectors), O(p**3) on the p x p factor.

Tall X (m >= n): the operators of ``X^T X`` (n x n). Wide X (m < n): the fit factors
``X X^T + alpha I`` (m x m), and ``K`` is ``(X X^T + alpha I)^+`` (``N`` is not used: the rule
for wide X works in the row space, ``_derivatives``). With per-target penalties (``alpha`` of
shape (k,)) each operator is a stack (..., k, p, p), one per target."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..._backend import _compat
from ..._backend._compat import matmul, mT


class Operators(NamedTuple):
    """``K = (X^T X + alpha I)^+`` and ``N = I - X^+ X`` as the solver resolved them (its rank
    decision: singular values it dropped count as zero), each (..., n, n); ``N`` is zero for a
    full-rank factor or a positive penalty. Wide X: ``K = (X X^T + alpha I)^+`` (..., m, m).
    ``V``: the singular vectors of the ``svd`` method, right (..., n, p) or, for wide X, left
    (..., m, p), the dropped ones zero (for the singular values' derivative), else None."""

    K: Any
    N: Any
    V: Any = None


class OperatorFunctions(Operators):
    """An :class:`Operators` whose ``K`` and ``N`` are functions that an iteration applies (LSQR's,
    for the Krylov methods), not matrices: the rule takes no corrected step with it."""

    __slots__ = ()


def asked(wanted, make, *args):
    """``make(*args)``, a solve's :class:`Operators`, where the solve was asked for it (``wanted``); else None, no work.
    Every branch of a solve returns the same ``Solution``, its ``operators`` filled or not by this one test."""
    return make(*args) if wanted else None


def inverse_factor(xp, Tinv):
    """Full-rank factor from ``Tinv`` (..., n, n) with ``Tinv Tinv^T = (X^T X + alpha I)^-1``
    (the inverse of the upper triangular R or T, or the transposed inverse of a Cholesky L)."""
    return Operators(matmul(xp, Tinv, mT(xp, Tinv)), xp.zeros_like(Tinv))


def triangular_inverse(xp, T, lower):
    """``T^-1`` of a triangular stack (a solve with the identity: no factorization)."""
    eye = xp.broadcast_to(_compat.eye_like(xp, T, T.shape[-1]), tuple(T.shape))
    return _compat.solve_triangular(xp, T, eye, lower=lower)


def spectral_factor(xp, s, vh, keep, alpha, vectors=False):
    """Operators from the SVD ``u diag(s) vh`` of X (or of its R factor) with the directions ``keep``
    (..., p); ``alpha`` None, (1,) or (k,) (per target: stacks (..., k, n, n)). A dropped
    direction is a zero singular value: with a positive penalty ``K`` is ``1 / alpha`` there,
    without one it is outside X's row space (``N``)."""
    V = mT(xp, vh)
    kept = xp.where(keep[..., None, :], V, xp.zeros_like(V)) if vectors else None
    if alpha is not None and alpha.shape[0] > 1:
        s, keep, V, vh = s[..., None, :], keep[..., None, :], V[..., None, :, :], vh[..., None, :, :]
        alpha = _compat.as_rank(xp, alpha[:, None], s.ndim)  # (..., k, 1) against (..., k, p)
    safe = xp.where(keep, s, xp.ones_like(s))
    zero = xp.zeros_like(s)
    if alpha is None:
        f = xp.where(keep, 1 / (safe * safe), zero)
        h = xp.where(keep, zero, xp.ones_like(s))
    else:
        a = alpha[0] if alpha.shape[0] == 1 else alpha
        pos = a > 0
        rest = xp.where(pos, 1 / xp.where(pos, a, xp.ones_like(a)), zero)
        f = xp.where(keep, 1 / (safe * safe + a), rest)
        h = xp.where(keep | pos, zero, xp.ones_like(s))
    return Operators(matmul(xp, V * f[..., None, :], vh), matmul(xp, V * h[..., None, :], vh), kept)


def path_factor(xp, basis, f, V=None):
    """Operators of a penalty path (``spectral``) as operators on (a, ..., p, k), a the path's penalty axis. ``K =
    basis diag(f) basis^T`` per penalty, ``f`` (a, ..., p) the filter factors ``1 / (lam + alpha)`` (zero for a
    dropped direction); ``N`` the dropped directions' projector. ``basis``: eigenvectors of ``X^T X`` (tall X) or
    ``X X^T`` (wide X: ``K`` is then ``M``). No matrix per penalty is formed."""
    h = xp.where(f > 0, xp.zeros_like(f), xp.ones_like(f))

    def K(b):  # b (..., p, k) or (a, ..., p, k)
        return matmul(xp, basis, f[..., None] * _compat.as_rank(xp, matmul(xp, mT(xp, basis), b), f.ndim + 1))

    def N(b):
        return matmul(xp, basis, h[..., None] * _compat.as_rank(xp, matmul(xp, mT(xp, basis), b), h.ndim + 1))

    return Operators(K, N, V)
