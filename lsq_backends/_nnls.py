"""Public entry point of non-negative least squares and non-negative ridge (:func:`nnls`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from ._backend import _compat
from ._backend._compat import full_int, matmul
from ._problem._empty import pad_empty_batch
from ._problem._input import (
    Penalty,
    check_bool,
    check_count,
    check_fraction,
    compiled_fit,
    validate,
)
from ._problem._prepare import intercept_of, prepare
from ._problem._scaling import unscale
from ._result import LstsqResult, plain_signature
from ._solvers import solve_nnls
from ._types import Array

NNLS_STATIC = ("fit_intercept", "check_finite", "max_iter", "tol")


@plain_signature
class NNLSResult(NamedTuple):
    """Result of :func:`nnls` (a NamedTuple, hence a JAX pytree).

    Attributes
    ----------
    coef : array, shape (..., n) or (..., n, k)
        Non-negative coefficients; (..., n) when ``y`` was a vector.
    intercept : array, shape (...) or (..., k)
        The intercept, unconstrained and unpenalized (zeros when ``fit_intercept=False``).
    rss : array, shape (...) or (..., k)
        Residual sum of squares (weighted by ``sample_weight``), without the penalty.
    n_iter : integer array, shape (...) or (..., k)
        Active-set iterations each target took (one solve each).
    converged : boolean array, shape (...) or (..., k)
        True where the optimality conditions hold at ``coef``; False where ``max_iter`` ran
        out first (``coef`` is then non-negative but not the minimizer).
    """

    coef: Any
    intercept: Any
    rss: Any
    n_iter: Any
    converged: Any


def check_options(max_iter, tol):
    """Validate the iteration options (before any work); returns them as Python numbers."""
    return check_count(max_iter, "max_iter"), check_fraction(tol, "tol")


@_compat.on_input_device
def nnls(
    X: Array,
    y: Array,
    /,
    *,
    alpha: float | Array = 0.0,
    fit_intercept: bool = False,
    sample_weight: Array | None = None,
    max_iter: int | None = None,
    tol: float | None = None,
    check_finite: bool = True,
) -> NNLSResult:
    """Non-negative least squares: ``min sum_i w_i (y_i - x_i @ coef - b)**2 + alpha ||coef||^2``
    subject to ``coef >= 0``, the intercept b unconstrained and unpenalized.

    Lawson and Hanson's active-set method (that of ``scipy.optimize.nnls``) on the Gram matrix
    ``X^T X + alpha I``, every target column with its own active set, batched over stacks and
    targets, in fixed shapes (``jax.jit`` and ``vmap`` work; the loop is a ``while_loop``
    there). At the solution, the coefficients are the (ridge) least-squares fit on the
    positive ones, refined once against X itself: accurate to about ``eps * cond`` of the
    columns kept. A separate function rather than a flag of :func:`lstsq`/:func:`ridge`: its
    result reports convergence (``n_iter``, ``converged``) instead of a rank, it takes an
    iteration budget and tolerance, and it has no ``method`` to choose.

    Parameters
    ----------
    X : array, shape (m, n) or (..., m, n)
    y : array, shape (m,), (m, k), (..., m) or (..., m, k)
    alpha : float, or array of shape (k,)
        Non-negative ridge penalty (on the plain sum of squares, as :func:`ridge`), or one per
        column of ``y``. 0: plain non-negative least squares.
    fit_intercept : bool
        Fit an intercept (by centering X and y with their weighted means: the intercept is
        free, so the constrained problem in the coefficients is the centered one).
    sample_weight : array, shape (m,) or (..., m), optional
        Non-negative weights.
    max_iter : int, optional
        Iteration budget per target, default ``3 n``; each iteration is one step of the method
        (adding or removing one coefficient) and one solve. Static under ``jax.jit``.
    tol : float in [0, 1), optional
        A coefficient held at zero may join while its gradient ``x_j^T r - alpha coef_j``
        exceeds ``tol * ||x_j|| * ||y||``; default ``10 * max(m, n) * eps``. Static under jit.
    check_finite : bool
        As in :func:`lstsq`.

    Returns
    -------
    NNLSResult
        ``coef``, ``intercept``, ``rss``, ``n_iter``, ``converged``, in the namespace, on the
        device and in the float dtype of the inputs.

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]); y = np.array([2.0, 1.0, -1.0])
    >>> r = lsq.nnls(X, y)
    >>> r.coef.tolist(), bool(r.converged)
    ([1.5, 0.0], True)
    """
    max_iter, tol = check_options(max_iter, tol)
    fit_intercept = check_bool(fit_intercept, "fit_intercept")
    check_finite = check_bool(check_finite, "check_finite")
    per_target = getattr(alpha, "ndim", 0) == 1 or isinstance(alpha, (list, tuple))
    if _compat.eager_jax(X, y, sample_weight, alpha):
        kwargs = {"fit_intercept": fit_intercept, "max_iter": max_iter, "tol": tol}
        penalty = (alpha, per_target, per_target)
        return compiled_fit(nnls, NNLS_STATIC, X, y, sample_weight, kwargs, check_finite, penalty)
    penalty = Penalty(alpha, per_target)
    v = validate(X, y, sample_weight, fit_intercept=fit_intercept, check_finite=check_finite, penalty=penalty)
    problem = prepare(v, scale="per_target")
    problem, cut = pad_empty_batch(problem)
    xp, Xp, Yp = problem.xp, problem.X, problem.Y
    n = Xp.shape[-1]
    if n == 0:
        coef = xp.zeros((*Xp.shape[:-2], 0, Yp.shape[-1]), dtype=Xp.dtype, device=_compat.device(Xp))
        n_iter = full_int(xp, tuple(Yp.shape[:-2]) + (Yp.shape[-1],), 0, Xp)
        converged = n_iter == 0
    else:
        coef, n_iter, converged = solve_nnls(xp, Xp, Yp, problem.alpha, max_iter=max_iter, tol=tol)
    intercept = intercept_of(xp, problem, coef, fit_intercept)
    resid = Yp - matmul(xp, Xp, coef)
    rss = xp.sum(resid * resid, axis=-2)
    if problem.y_was_vector:
        coef, intercept, rss = coef[..., 0], intercept[..., 0], rss[..., 0]
        n_iter, converged = n_iter[..., 0], converged[..., 0]
    scaled = unscale(xp, LstsqResult(coef, intercept, None, rss), problem.scale, problem.y_was_vector)
    return NNLSResult(cut(scaled.coef), cut(scaled.intercept), cut(scaled.rss), cut(n_iter), cut(converged))
