"""Derivative rules of the solution itself, not of the algorithm that computed it.

Without them, JAX and PyTorch would differentiate the solver's steps: NaN on rank-deficient X
(the derivative of a dropped singular direction divides by zero), no reverse mode through
LSQR's loop, no PyTorch derivative of Householder QR at all, and a gradient several times the
cost of the fit. Instead, for ``w`` the minimum-norm solution of ``min ||Y - X w||^2 +
alpha ||w||^2`` (alpha >= 0) on the prepared problem (centered, weighted, scaled; those steps
are plain array operations and are differentiated as they are), with ``r = Y - X w``:

    dw = K (X^T (dY - dX w) + dX^T r - dalpha w) + N dX^T X K w

``K = (X^T X + alpha I)^+`` and ``N = I - X^+ X``, as the solver's rank decision resolved them
(``_solvers._operators``): made from the factorization the fit already has (Cholesky factor, R,
SVD, a path's or the Gram matrix's eigendecomposition), never a new one. With ``alpha > 0``,
``N = 0`` and this is the exact derivative. With ``alpha = 0`` it is the derivative of the
pseudo-inverse solution ``X^+ Y`` (Golub and Pereyra, 1973) wherever the numerical rank is
locally constant. It never divides by a dropped singular value, so it is finite everywhere,
X = 0 included. Wide X (m < n) takes the same rule in the row space, from the m x m factor of
``X X^T + alpha I`` the wide fit has (``_rule``).

Directions that change the rank: with ``X = U S V^T`` (rank r, ``U_0``, ``V_0`` the
complements), the rule ignores the block ``U_0^T dX V_0`` of a direction. That block is the
only part that moves a zero singular value away from zero. The rule returns the derivative
along the rest: the derivative of the solution on the manifold of rank-r matrices (as if the
dropped singular values were held at zero). The true solution jumps there, by ``1/t`` of a
singular value ``t`` that leaves zero: no derivative exists. At X = 0 (rank 0) every direction
changes the rank, and the rule returns ``dw = 0``.

The rule itself is ``_rule`` (array API). JAX: a ``jax.custom_jvp`` (``jvp``, ``grad``,
``jacfwd``, ``jacrev``, ``vmap`` and ``jit`` compose). PyTorch: ``_torch_autograd``. LSQR has no
factor: ``K`` is applied by the same iteration, implicitly, never by unrolling (``lsqr_factor``
and ``_per_target`` below). Under JAX it runs inside ``lax.custom_linear_solve``, so that reverse
mode transposes it as the symmetric solve it is.

Where the rule applies: every method, tall or wide X, one penalty or none, one per target,
a penalty path (``ridge`` with a 1-D alpha: every penalty from the path's one factorization),
and ``refine``: the refined solution is the same solution, so its derivative is the rule's
at the unrefined fit, whose factor it has (the refinement steps run on detached arrays and
are not differentiated; ``pass_through``). Not here: ``ridge_cv`` (its scores are exact in
``alphas`` through its own steps, its coefficients not), ``diagnostics``, the accumulators
and ``nnls``, differentiated through their own steps.

``lsqr_factor``: with one penalty or none, ``K g = X_a^+ (X_a^+)^T g`` (two LSQR solves, on
``X_a^T`` and on ``X_a``) with ``X_a = [X; sqrt(alpha) I]``. That is ``(X^T X + alpha I)^+`` for
every ``alpha >= 0``, and ``N v = v - K X_a^T X_a v``. JAX passes ``symmetric_solve(matvec,
solve)`` (``lax.custom_linear_solve``), which makes ``K`` transposable.

``_per_target``: a penalty per target (column j of a (..., n, k) block gets ``alpha_j``) uses
LSQR's own per-column damping. It needs no copy of X per target. ``q`` is the damped solution of
``X^T q = g``, ``q = (X X^T + alpha I)^+ X g``. Where ``alpha_j > 0``, ``K g = (g - X^T q) /
alpha_j``, as ``(X^T X + alpha I) (g - X^T q) = alpha g``. Where ``alpha_j = 0``, ``K g = X^+ q``:
a second LSQR solve, on those columns only (the others start converged). ``N`` is zero where
``alpha_j > 0``.
"""

from __future__ import annotations

import array_api_compat as _aac

from .._backend import _compat
from .._backend._compat import matmul, mT
from .._solvers import Given, OperatorFunctions, lean, record, solve_path
from .._solvers import solve as solve_by_method
from ._rule import linearize, penalty, singular_tangent, tangent


def lsqr_factor(xp, X, alpha, given, symmetric_solve=None):
    """LSQR's ``K`` and ``N`` as operators (``_operators.OperatorFunctions``), at the fit's tolerances (``given.options``,
    ``_solvers.Given``): ``K`` as two LSQR solves (one penalty or none), or :func:`_per_target` (one per
    target). JAX passes ``symmetric_solve(matvec, solve)``, a transposable ``K`` (module docstring:
    ``lsqr_factor``)."""
    lsqr = record("lsqr").solve
    n = X.shape[-1]
    if alpha is not None and alpha.shape[0] > 1:
        return _per_target(xp, X, alpha, given, symmetric_solve)
    Xa = X
    if alpha is not None:
        root = xp.sqrt(alpha[0]) * _compat.eye_like(xp, X, n)
        Xa = xp.concat([X, xp.broadcast_to(root, tuple(X.shape[:-2]) + (n, n))], axis=-2)

    def gram(z):
        return matmul(xp, mT(xp, Xa), matmul(xp, Xa, z))

    def solve(_, g):
        u = lsqr(xp, mT(xp, Xa), g, None, given)[0]
        return lsqr(xp, Xa, u, None, given)[0]

    def K(g):
        return solve(None, g) if symmetric_solve is None else symmetric_solve(gram, g, solve)

    def N(v):
        return v - K(gram(v))

    return OperatorFunctions(K, N)


def _per_target(xp, X, alpha, given, symmetric_solve):
    """LSQR's operators with a penalty per target (column j of a (..., n, k) block gets ``alpha_j``),
    by LSQR's own per-column damping, with no copy of X per target. ``N`` is zero where ``alpha_j > 0``
    (module docstring: ``_per_target``)."""
    lsqr = record("lsqr").solve
    nd = X.ndim  # the blocks (..., n, k) have X's rank: alpha (k,) as (1, ..., 1, k)
    a = _compat.as_rank(xp, alpha, nd)
    pos = a > 0
    safe = xp.where(pos, a, xp.ones_like(a))

    def gram(z):
        return matmul(xp, mT(xp, X), matmul(xp, X, z)) + a * z

    def solve(_, g):
        q = lsqr(xp, mT(xp, X), g, alpha, given)[0]
        damped = (g - matmul(xp, mT(xp, X), q)) / safe
        plain = lsqr(xp, X, xp.where(pos, xp.zeros_like(q), q), None, given)[0]
        return xp.where(pos, damped, plain)

    def K(g):
        return solve(None, g) if symmetric_solve is None else symmetric_solve(gram, g, solve)

    def N(v):
        return xp.where(pos, xp.zeros_like(v), v - K(gram(v)))

    return OperatorFunctions(K, N)


def primal(xp, X, Y, alpha, method, given, operators=False, symmetric_solve=None):
    """The solver's fit ``(coef, rank, s, n_iter)`` (``given``: ``_solvers.Given``), and with ``operators`` its
    ``Operators`` fifth (LSQR's as functions, :func:`lsqr_factor`). For ``lsmr`` the counts and the stop reasons
    come stacked, (2, ..., k): one integer output of the rule (:func:`split_counts`)."""
    sol = solve_by_method(xp, X, Y, alpha, method, given, operators)
    fac = sol.operators
    if operators and record(method).iterative:  # K by LSQR at the fit's tolerances (an LSMR fit's too)
        options = {k: given.options[k] for k in ("atol", "btol", "max_iter")}
        fac = lsqr_factor(xp, X, alpha, Given(options=options), symmetric_solve)
    counts = sol.n_iter if sol.istop is None else xp.stack([sol.n_iter, sol.istop])
    return sol.coef, sol.rank, sol.s, counts, fac


def split_counts(method, counts):
    """``(n_iter, istop)`` from the integer output of :func:`primal` (istop None but for lsmr)."""
    if record(method).stops:
        return counts[0], counts[1]
    return counts, None


def differentiable(*arrays):
    """True where the rule may serve the fit of these inputs (see :func:`wanted`): any JAX
    array (traced or not), or a PyTorch tensor that requires grad with grad enabled. Such a
    fit centers X before the solver, as the rule needs."""
    if _compat.plain_numpy(*arrays):
        return False
    for a in arrays:
        if _compat.call_kind(a).startswith("jax"):  # a JAX array, traced or not
            return True
        if _aac.is_torch_array(a):
            import torch

            if a.requires_grad and torch.is_grad_enabled():
                return True
    return False


def path_primal(xp, X, Y, alpha, method, offset_sq, operators=False):
    """A penalty path's fit ``(coef, rank, s, None)`` (``spectral.solve_path``), and with
    ``operators`` its ``Operators`` (functions of the penalty axis) fifth."""
    sol = solve_path(xp, X, Y, alpha, record(method).path_route, offset_sq, operators)
    return sol.coef, sol.rank, sol.s, None, sol.operators


def wanted(xp, X, Y, alpha):
    """True where the rule replaces differentiation through the solver's steps: JAX arrays
    (the rule costs nothing until something differentiates), PyTorch tensors that require
    grad. Never elsewhere (NumPy's path is unchanged)."""
    if X.shape[-1] == 0:
        return False
    if _aac.is_jax_namespace(xp):
        return True
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.is_grad_enabled() and any(a is not None and a.requires_grad for a in (X, Y, alpha))
    return False


def solve(xp, X, Y, alpha, method, given):
    """``(coef, rank, s, n_iter)`` as the solver gives them (``given``: ``_solvers.Given``), differentiated by the
    rule in JAX (a ``custom_jvp``, through which ``given.offset_sq`` passes). PyTorch's twin is
    ``_torch_autograd.solve``."""

    def run(X, Y, alpha, offset_sq, operators):
        return primal(xp, X, Y, alpha, method, given._replace(offset_sq=offset_sq), operators, _symmetric_solve)

    return _jax_rule(xp, run, X, Y, alpha, given.offset_sq, False)


def solve_path_rule(xp, X, Y, alpha, method, offset_sq):
    """A penalty path's ``(coef, rank, s)``, differentiated by the rule per penalty in JAX."""

    def run(X, Y, alpha, offset_sq, operators):
        return path_primal(xp, X, Y, alpha, method, offset_sq, operators)

    return _jax_rule(xp, run, X, Y, alpha, offset_sq, True)[:3]


def _jax_rule(xp, run, X, Y, alpha, offset_sq, path):
    import jax
    import numpy as np

    # offset_sq (what centering removed) enters the rank decisions only: no derivative.
    @jax.custom_jvp
    def f(X, Y, alpha, offset_sq):
        return run(X, Y, alpha, offset_sq, False)[:4]

    @f.defjvp
    def f_jvp(primals, tangents):
        X, Y, alpha, offset_sq = primals
        dX, dY, dalpha, _ = tangents
        coef, rank, s, n_iter, fac = run(X, Y, alpha, offset_sq, True)
        lin = linearize(xp, fac, X, Y, coef, alpha, path)
        dcoef = tangent(xp, lin, dX, dY, penalty(xp, dalpha, coef.ndim, path))
        ds = None if s is None else singular_tangent(xp, fac.V, s, X, dX)

        def integer(a):
            return None if a is None else np.zeros(a.shape, dtype=jax.dtypes.float0)

        return (coef, rank, s, n_iter), (dcoef, integer(rank), ds, integer(n_iter))

    return f(X, Y, alpha, offset_sq)


def lean_fit(xp, X, Y, weights, alpha, form):
    """The lean route's ``(W, intercept or None, rss, ok)`` on traced JAX (``_solvers.lean``), differentiated by its
    own rule (``lean.tangent``: the derivative of the certified full-rank fit, finite where the gate failed)."""
    import jax
    from jax.custom_derivatives import SymbolicZero

    def fitted(X, Y, weights, alpha):
        return lean.fit(xp, X, Y, weights, alpha, form)

    @jax.custom_jvp
    def f(X, Y, weights, alpha):
        return fitted(X, Y, weights, alpha)[:4]

    def f_jvp(primals, tangents):
        done = fitted(*primals)
        given = tuple(None if isinstance(t, SymbolicZero) else t for t in tangents)
        dW, dintercept, drss = lean.tangent(xp, *primals[:3], primals[3], done, given)
        ok_tangent = jax.numpy.zeros((), dtype=jax.dtypes.float0)
        return done[:4], (dW, dintercept, drss, ok_tangent)

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f(X, Y, weights, alpha)


def _symmetric_solve(matvec, b, solve):
    import jax

    return jax.lax.custom_linear_solve(matvec, b, solve, symmetric=True)


def detach(xp, a):
    """``a`` without derivatives (None stays None)."""
    import jax

    return None if a is None else jax.lax.stop_gradient(a)


def pass_through(xp, base, value):
    """``value``, with the derivatives of ``base`` (the refined solution with the rule's
    derivative at the unrefined one). ``value`` has none of its own (:func:`detach`)."""
    return _pass_through()(base, value)


_PASS: list = []


def _pass_through():
    if _PASS:
        return _PASS[0]
    import jax

    @jax.custom_jvp
    def f(base, value):
        return value

    @f.defjvp
    def f_jvp(primals, tangents):
        return primals[1], tangents[0]

    _PASS.append(f)
    return f
