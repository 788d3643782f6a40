"""The derivative rule of a least-squares solution (``_derivatives`` states it and wires it
into JAX and PyTorch), written once on the array API standard: ``tangent`` (forward mode,
linear in the tangents through matrix products only, so JAX transposes it for reverse mode)
and ``cotangent`` (its transpose, for PyTorch's ``backward``).

Tall X (m >= n): ``dw = K (X^T (dY - dX w) + dX^T r - dalpha w) + N dX^T X K w`` with the
n x n operators ``K = (X^T X + alpha I)^+`` and ``N = I - X^+ X``.

Wide X (m < n), in the row space: the fit factored ``X X^T + alpha I`` (m x m), and ``w = X^T u``
with ``u = M Y``, ``M = (X X^T + alpha I)^+``. The same rule (Golub and Pereyra's derivative
of the pseudo-inverse; for ``alpha > 0`` the derivative of ``(X X^T + alpha I) u = Y``) reads

    dw = dX^T u + X^T M (dY - dX w - X dX^T u - dalpha u + M X dX^T r0)

with ``r0 = r`` where ``alpha = 0`` (the part of Y outside X's range, nonzero at rank
deficiency only) and ``r0 = 0`` where ``alpha > 0`` (there ``r = alpha u`` exactly, already in
the terms before). Only m x m operators and products with X: never an n x n matrix.

Stacks: ``K``/``M`` may be a stack per target (..., k, p, p), or an operator (a callable: LSQR's
iteration, or a penalty path's spectral factor, with the solution's leading penalty axis).

``_solve``: one step of the corrected seminormal equations (Björck): ``x = K v``, then
``x + K (v - (X^T X + alpha I) x)``. A factor's ``K`` applied to ``X^T v`` errs like
eps * cond(X)**2 (the normal equations' error). The step brings it to the eps * cond(X) of the
QR or SVD factor it came from, for two more products with X. Not for LSQR's ``K``: each
application is two LSQR solves, and it is accurate to its tolerance anyway. The step is
symmetric in ``v``: ``2 K v - K G K v``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._backend import _compat
from .._backend._compat import matmul, mT
from .._solvers import OperatorFunctions


class Linearization(NamedTuple):
    """What the rule needs from the fit: ``K`` and ``N`` (matrices, stacks, or operators), X,
    the solution ``W``, the residual ``Res = Y - X W``, ``B = X K W`` (wide X: ``B = u``, the
    row-space coefficients, and ``Res`` is ``r0``), the penalty (None, or shaped to broadcast
    against ``W``: 0-d, (k,) per target, (a, 1, ..., 1) along a path), whether ``K X^T v`` is
    refined by one step (``corrected``), and whether the wide (row-space) form applies."""

    K: Any
    N: Any
    X: Any
    W: Any
    Res: Any
    B: Any
    alpha: Any
    corrected: bool
    wide: bool


def apply(xp, op, b):
    """``op @ b`` for a factor's matrix (a stack (..., k, p, p) per target: column j of ``b``
    (..., p, k) to matrix j), ``op(b)`` for an operator."""
    if callable(op):
        return op(b)
    if op.ndim == b.ndim + 1:
        return xp.moveaxis(matmul(xp, op, xp.moveaxis(b, -1, -2)[..., None])[..., 0], -2, -1)
    return matmul(xp, op, b)


def penalty(xp, alpha, ndim, path=False):
    """A penalty (or its tangent) of shape (1,) or (k,) per target, or (a,) along a ``path``,
    in the form that broadcasts against a solution of ``ndim`` axes (a path's with its
    leading penalty axis): 0-d, (1, ..., 1, k), (a, 1, ..., 1). None stays None."""
    if alpha is None:
        return None
    if path:
        return xp.reshape(alpha, (alpha.shape[0],) + (1,) * (ndim - 1))
    return alpha[0] if alpha.shape[0] == 1 else _compat.as_rank(xp, alpha, ndim)


def linearize(xp, fac, X, Y, W, alpha, path=False):
    """The ``Linearization`` of the fit ``W`` (along a ``path``: W (a, ..., n, k))."""
    a = penalty(xp, alpha, W.ndim, path)
    corrected = not isinstance(fac, OperatorFunctions)
    XW = matmul(xp, X, W)
    Res = _compat.as_rank(xp, Y, XW.ndim) - XW
    if corrected and X.shape[-2] < X.shape[-1]:
        U = apply(xp, fac.K, Y)
        GU = _gram_times(xp, X, a, U, True)
        U = U + apply(xp, fac.K, _compat.as_rank(xp, Y, GU.ndim) - GU)  # one corrected step, as below
        if a is not None:
            Res = xp.where(a > 0, xp.zeros_like(Res), Res)
        return Linearization(fac.K, None, X, W, Res, U, a, True, True)
    return Linearization(fac.K, fac.N, X, W, Res, matmul(xp, X, apply(xp, fac.K, W)), a, corrected, False)


def _gram_times(xp, X, alpha, x, rows=False):
    """``(X^T X + alpha I) x``, or with ``rows`` ``(X X^T + alpha I) x``."""
    Xt = mT(xp, X)
    g = matmul(xp, X, matmul(xp, Xt, x)) if rows else matmul(xp, Xt, matmul(xp, X, x))
    return g if alpha is None else g + alpha * x


def _solve(xp, lin, v):
    """``K v`` (wide: ``M v``), refined by one step of the corrected seminormal equations where
    ``lin.corrected``: error eps * cond(X), not eps * cond(X)**2 (module docstring: ``_solve``)."""
    x = apply(xp, lin.K, v)
    if lin.corrected:
        x = x + apply(xp, lin.K, v - _gram_times(xp, lin.X, lin.alpha, x, lin.wide))
    return x


def tangent(xp, lin, dX, dY, dalpha):
    """``dw`` for the tangents ``dX``, ``dY`` and ``dalpha`` (None, or shaped as
    ``lin.alpha``); linear in them through matrix products (and LSQR's symmetric solve) only."""
    Xt, dXt = mT(xp, lin.X), mT(xp, dX)
    if lin.wide:
        U = lin.B
        dXW = matmul(xp, dX, lin.W)
        h = _compat.as_rank(xp, dY, dXW.ndim) - dXW - matmul(xp, lin.X, matmul(xp, dXt, U))
        if dalpha is not None:
            h = h - dalpha * U
        h = h + apply(xp, lin.K, matmul(xp, lin.X, matmul(xp, dXt, lin.Res)))
        return matmul(xp, dXt, U) + matmul(xp, Xt, _solve(xp, lin, h))
    dXW = matmul(xp, dX, lin.W)
    x = _solve(xp, lin, matmul(xp, Xt, _compat.as_rank(xp, dY, dXW.ndim) - dXW))
    g = matmul(xp, dXt, lin.Res)
    if dalpha is not None:
        g = g - dalpha * lin.W
    return x + apply(xp, lin.K, g) + apply(xp, lin.N, matmul(xp, dXt, lin.B))


def cotangent(xp, lin, C, alpha_shape=None):
    """The transpose of :func:`tangent`: ``(X_bar, Y_bar, alpha_bar)`` for the cotangent ``C``
    of ``w``, each summed to the shape of its primal (``alpha_shape``: the penalty's own, (1,),
    (k,) or (a,)). K, N and the corrected solve are symmetric."""
    X, W = lin.X, lin.W
    if lin.wide:
        U = lin.B
        a = _solve(xp, lin, matmul(xp, X, C))
        Y_bar = a
        X_bar = matmul(xp, U, mT(xp, C - matmul(xp, mT(xp, X), a))) - matmul(xp, a, mT(xp, W))
        X_bar = X_bar + matmul(xp, lin.Res, mT(xp, matmul(xp, mT(xp, X), apply(xp, lin.K, a))))
        alpha_bar = -(a * U)
    else:
        a, b = apply(xp, lin.K, C), apply(xp, lin.N, C)
        Y_bar = matmul(xp, X, a)
        if lin.corrected:  # the transpose of x = 2 K X^T v - K (X^T X + alpha I) K X^T v
            Y_bar = 2 * Y_bar - matmul(xp, X, apply(xp, lin.K, _gram_times(xp, X, lin.alpha, a)))
        X_bar = matmul(xp, lin.Res, mT(xp, a)) - matmul(xp, Y_bar, mT(xp, W)) + matmul(xp, lin.B, mT(xp, b))
        alpha_bar = -(a * W)
    X_bar = sum_to(xp, X_bar, tuple(X.shape))
    Y_bar = sum_to(xp, Y_bar, tuple(Y_bar.shape[Y_bar.ndim - X.ndim :]))
    if lin.alpha is None:
        return X_bar, Y_bar, None
    alpha_bar = xp.reshape(sum_to(xp, alpha_bar, tuple(lin.alpha.shape)), alpha_shape or tuple(lin.alpha.shape))
    return X_bar, Y_bar, alpha_bar


def sum_to(xp, g, shape):
    """``g`` summed over the axes that broadcasting added to an array of ``shape``."""
    lead = g.ndim - len(shape)
    if lead:
        g = xp.sum(g, axis=tuple(range(lead)))
    axes = tuple(i for i, (d, s) in enumerate(zip(g.shape, shape, strict=True)) if s == 1 and d != 1)
    return xp.sum(g, axis=axes, keepdims=True) if axes else g


def singular_tangent(xp, V, s, X, dX):
    """``ds_i = v_i^T dX^T X v_i / s_i`` (zero where ``s_i = 0``); ``V`` right singular vectors
    (..., n, p), or for wide X left ones (..., m, p) (then ``u_i^T dX X^T u_i / s_i``)."""
    if V.shape[-2] != X.shape[-1]:
        X, dX = mT(xp, X), mT(xp, dX)
    pos = s > 0
    XV = matmul(xp, X, V)
    return xp.where(pos, xp.sum(XV * matmul(xp, dX, V), axis=-2) / xp.where(pos, s, xp.ones_like(s)), xp.zeros_like(s))


def singular_cotangent(xp, V, s, X, s_bar):
    """The transpose of :func:`singular_tangent`: X_bar = X V diag(s_bar / s) V^T (wide, left
    vectors: its transpose with X^T)."""
    if V.shape[-2] != X.shape[-1]:
        return mT(xp, singular_cotangent(xp, V, s, mT(xp, X), s_bar))
    pos = s > 0
    f = xp.where(pos, s_bar / xp.where(pos, s, xp.ones_like(s)), xp.zeros_like(s))
    return matmul(xp, matmul(xp, X, V) * f[..., None, :], mT(xp, V))
