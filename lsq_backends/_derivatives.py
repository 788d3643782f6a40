"""Derivative rules of the solution itself, not of the algorithm that computed it.

Without them, JAX and PyTorch would differentiate the solver's steps: NaN on rank-deficient X
(the derivative of a dropped singular direction divides by zero), no reverse mode through
LSQR's loop, no PyTorch derivative of Householder QR at all, and a gradient several times the
cost of the fit. Instead, for ``w`` the minimum-norm solution of ``min ||Y - X w||^2 +
alpha ||w||^2`` (alpha >= 0) on the prepared problem (centered, weighted, scaled; those steps
are plain array operations and are differentiated as they are), with ``r = Y - X w``:

    dw = K (X^T (dY - dX w) + dX^T r - dalpha w) + N dX^T X K w

``K = (X^T X + alpha I)^+`` and ``N = I - X^+ X``, as the solver's rank decision resolved them
(``_solvers._factor``): made from the factorization the fit already has (Cholesky factor, R,
SVD), never a new one. With ``alpha > 0``, ``N = 0`` and this is the exact derivative. With
``alpha = 0`` it is the derivative of the pseudo-inverse solution ``X^+ Y`` (Golub and Pereyra,
1973) wherever the numerical rank is locally constant; it never divides by a dropped singular
value, so it is finite everywhere, X = 0 included.

Directions that change the rank: with ``X = U S V^T`` (rank r, ``U_0``, ``V_0`` the
complements), the rule ignores the block ``U_0^T dX V_0`` of a direction (the only part that
moves a zero singular value away from zero) and returns the derivative along the rest, the
derivative of the solution on the manifold of rank-r matrices (as if the dropped singular
values were held at zero). The true solution jumps there, by ``1/t`` of a singular value ``t``
that leaves zero: no derivative exists. At X = 0 (rank 0) every direction changes the rank, and
the rule returns ``dw = 0``.

Written once on the array API standard: ``tangent`` (forward mode, linear in the tangents
through matrix products only, so JAX transposes it for reverse mode) and ``cotangent`` (its
transpose, for PyTorch's ``backward``). JAX: a ``jax.custom_jvp`` (``jvp``, ``grad``,
``jacfwd``, ``jacrev``, ``vmap`` and ``jit`` compose). PyTorch: ``_torch_autograd``. LSQR has no
factor: ``K`` is applied by the same iteration (two LSQR solves: ``X_a^+ (X_a^+)^T``, with
``X_a = [X; sqrt(alpha) I]``), implicitly, never by unrolling; under JAX inside
``lax.custom_linear_solve``, so that reverse mode transposes it as the symmetric solve it is.

Where the rule applies: tall X (m >= n), every method, one penalty or none, or one per target
(direct methods: the operators are then stacks, one per target). Wide X, ``lsqr`` with
per-target penalties, penalty paths and ``refine`` are differentiated through the solver's
steps as before.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import array_api_compat as _aac

from . import _compat
from ._solvers import ITERATIVE
from ._solvers import fit as solvers_fit
from ._solvers._factor import Factor
from ._solvers._shared import dot, eye_like, mT


class Linearization(NamedTuple):
    """What the rule needs from the fit: its factor's ``K`` and ``N`` (matrices, or LSQR's
    operators), X, the solution ``W``, its residual ``Res = Y - X W``, ``B = X K W`` and the
    penalty (0-d, or None)."""

    K: Any
    N: Any
    X: Any
    W: Any
    Res: Any
    B: Any
    alpha: Any


def apply(xp, op, b):
    """``op @ b`` for a factor's matrix (a stack (..., k, n, n) per target: column j of ``b``
    (..., n, k) to matrix j), ``op(b)`` for an operator (LSQR's)."""
    if callable(op):
        return op(b)
    if op.ndim == b.ndim + 1:
        return xp.moveaxis(dot(xp, op, xp.moveaxis(b, -1, -2)[..., None])[..., 0], -2, -1)
    return dot(xp, op, b)


def linearize(xp, fac, X, Y, W, alpha):
    a = None if alpha is None else (alpha[0] if alpha.shape[0] == 1 else alpha)  # 0-d, or (k,)
    return Linearization(fac.K, fac.N, X, W, Y - dot(xp, X, W), dot(xp, X, apply(xp, fac.K, W)), a)


def _gram(xp, lin, x):
    """``(X^T X + alpha I) x``."""
    g = dot(xp, mT(xp, lin.X), dot(xp, lin.X, x))
    return g if lin.alpha is None else g + lin.alpha * x


def _corrected(lin):
    """Whether ``K X^T v`` is refined by one step (corrected seminormal equations, Bjorck):
    ``x = K X^T v``, then ``x + K (X^T (v - X x) - alpha x)``. A factor's ``K`` applied to ``X^T v`` errs
    like eps * cond(X)**2 (the normal equations'); the step brings it to the eps * cond(X) of
    the QR or SVD factor it came from, for two more products with X. Not for LSQR's ``K``
    (each application is two LSQR solves; it is accurate to its tolerance anyway)."""
    return not callable(lin.K)


def tangent(xp, lin, dX, dY, dalpha):
    """``dw`` (..., n, k) for the tangents ``dX``, ``dY`` and ``dalpha`` (0-d, or None);
    linear in them through matrix products (and LSQR's symmetric solve) only."""
    Xt, dXt = mT(xp, lin.X), mT(xp, dX)
    v = dY - dot(xp, dX, lin.W)
    x = apply(xp, lin.K, dot(xp, Xt, v))
    if _corrected(lin):
        r = dot(xp, Xt, v - dot(xp, lin.X, x))
        x = x + apply(xp, lin.K, r if lin.alpha is None else r - lin.alpha * x)
    g = dot(xp, dXt, lin.Res)
    if dalpha is not None:
        g = g - dalpha * lin.W
    return x + apply(xp, lin.K, g) + apply(xp, lin.N, dot(xp, dXt, lin.B))


def cotangent(xp, lin, C):
    """The transpose of :func:`tangent`: ``(X_bar, Y_bar, alpha_bar)`` for the cotangent ``C``
    of ``w`` (``alpha_bar`` summed over the stack: 0-d, or (k,) per target). K and N are
    symmetric."""
    a, b = apply(xp, lin.K, C), apply(xp, lin.N, C)
    Y_bar = dot(xp, lin.X, a)
    if _corrected(lin):  # the transpose of x = 2 K X^T v - K (X^T X + alpha I) K X^T v
        Y_bar = 2 * Y_bar - dot(xp, lin.X, apply(xp, lin.K, _gram(xp, lin, a)))
    X_bar = dot(xp, lin.Res, mT(xp, a)) - dot(xp, Y_bar, mT(xp, lin.W)) + dot(xp, lin.B, mT(xp, b))
    if lin.alpha is not None and lin.alpha.ndim == 1:
        return X_bar, Y_bar, -xp.sum(xp.reshape(a * lin.W, (-1, a.shape[-1])), axis=0)
    return X_bar, Y_bar, -xp.sum(a * lin.W)


def singular_tangent(xp, V, s, X, dX):
    """``ds_i = v_i^T dX^T X v_i / s_i`` (zero where ``s_i = 0``)."""
    pos = s > 0
    XV = dot(xp, X, V)
    return xp.where(pos, xp.sum(XV * dot(xp, dX, V), axis=-2) / xp.where(pos, s, xp.ones_like(s)), xp.zeros_like(s))


def singular_cotangent(xp, V, s, X, s_bar):
    """The transpose of :func:`singular_tangent`: X_bar = X V diag(s_bar / s) V^T."""
    pos = s > 0
    f = xp.where(pos, s_bar / xp.where(pos, s, xp.ones_like(s)), xp.zeros_like(s))
    return dot(xp, dot(xp, X, V) * f[..., None, :], mT(xp, V))


def lsqr_factor(xp, X, alpha, options, symmetric_solve=None):
    """LSQR's ``K`` and ``N`` as operators: ``K g = X_a^+ (X_a^+)^T g`` (two LSQR solves, on
    ``X_a^T`` and on ``X_a``, at the fit's tolerances) with ``X_a = [X; sqrt(alpha) I]``, which
    is ``(X^T X + alpha I)^+`` for every ``alpha >= 0``; ``N v = v - K X_a^T X_a v``. JAX passes
    ``symmetric_solve(matvec, solve)`` (``lax.custom_linear_solve``): a transposable ``K``."""
    lsqr = ITERATIVE["lsqr"]
    n = X.shape[-1]
    Xa = X
    if alpha is not None:
        root = xp.sqrt(alpha[0]) * eye_like(xp, X, n)
        Xa = xp.concat([X, xp.broadcast_to(root, tuple(X.shape[:-2]) + (n, n))], axis=-2)

    def gram(z):
        return dot(xp, mT(xp, Xa), dot(xp, Xa, z))

    def solve(_, g):
        u = lsqr(xp, mT(xp, Xa), g, None, **options)[0]
        return lsqr(xp, Xa, u, None, **options)[0]

    def K(g):
        return solve(None, g) if symmetric_solve is None else symmetric_solve(gram, g, solve)

    def N(v):
        return v - K(gram(v))

    return Factor(K, N)


def fit(xp, X, Y, alpha, method, rcond, offset_sq, check, options, factor=False, symmetric_solve=None):
    """The solver's fit ``(coef, rank, s, n_iter)``, and with ``factor`` its ``Factor`` fifth
    (LSQR's as operators, :func:`lsqr_factor`)."""
    sol = solvers_fit(xp, X, Y, alpha, method, rcond, offset_sq, check, options, factor)
    fac = lsqr_factor(xp, X, alpha, options, symmetric_solve) if factor and method in ITERATIVE else sol.factor
    return sol.coef, sol.rank, sol.s, sol.n_iter, fac


def differentiable(*arrays):
    """True where the rule may serve the fit of these inputs (see :func:`wanted`): any JAX
    array (traced or not), or a PyTorch tensor that requires grad with grad enabled. Such a
    fit centers X before the solver, as the rule needs."""
    if _compat.plain_numpy(*arrays):
        return False
    for a in arrays:
        if _aac.is_jax_array(a):
            return True
        if _aac.is_torch_array(a):
            import torch

            if a.requires_grad and torch.is_grad_enabled():
                return True
    return False


def wanted(xp, X, Y, alpha, method, refine):
    """True where the rule replaces differentiation through the solver's steps: JAX arrays
    (the rule costs nothing until something differentiates), PyTorch tensors that require
    grad. Never elsewhere (NumPy's path is unchanged)."""
    m, n = X.shape[-2:]
    per_target = alpha is not None and alpha.shape[0] != 1
    if refine or m < n or n == 0 or (per_target and method in ITERATIVE):
        return False
    if _aac.is_jax_namespace(xp):
        return True
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.is_grad_enabled() and any(a is not None and a.requires_grad for a in (X, Y, alpha))
    return False


def solve(xp, X, Y, alpha, method, rcond, offset_sq, check, options):
    """``(coef, rank, s, n_iter)`` as the solver gives them, differentiated by the rule in
    JAX (a ``custom_jvp``). PyTorch's twin is ``_torch_autograd.solve``."""
    return _jax_fit(xp, X, Y, alpha, method, rcond, offset_sq, check, options)


def _jax_fit(xp, X, Y, alpha, method, rcond, offset_sq, check, options):
    import jax
    import numpy as np

    def run(X, Y, alpha, offset_sq, factor):
        return fit(xp, X, Y, alpha, method, rcond, offset_sq, check, options, factor, _symmetric_solve)

    # offset_sq (what centering removed) enters the rank decisions only: no derivative.
    @jax.custom_jvp
    def f(X, Y, alpha, offset_sq):
        return run(X, Y, alpha, offset_sq, False)[:4]

    @f.defjvp
    def f_jvp(primals, tangents):
        X, Y, alpha, offset_sq = primals
        dX, dY, dalpha, _ = tangents
        coef, rank, s, n_iter, fac = run(X, Y, alpha, offset_sq, True)
        lin = linearize(xp, fac, X, Y, coef, alpha)
        dcoef = tangent(xp, lin, dX, dY, None if alpha is None else (dalpha[0] if alpha.shape[0] == 1 else dalpha))
        ds = None if s is None else singular_tangent(xp, fac.V, s, X, dX)

        def integer(a):
            return None if a is None else np.zeros(a.shape, dtype=jax.dtypes.float0)

        return (coef, rank, s, n_iter), (dcoef, integer(rank), ds, integer(n_iter))

    return f(X, Y, alpha, offset_sq)


def _symmetric_solve(matvec, b, solve):
    import jax

    return jax.lax.custom_linear_solve(matvec, b, solve, symmetric=True)
