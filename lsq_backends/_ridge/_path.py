"""Ridge paths: every penalty of a 1-D ``alpha`` from one factorization (see ``_solvers.spectral``).

``path_rss``: the residuals themselves (accurate for near-exact fits), by groups of g penalties
whose (..., m, g k) array is at most X's size, freed before the next group's: memory X's size
however many penalties and targets, with the same products as one over all penalties (each of
at least n columns). Formed from the factors instead (``X W = Q U diag(s**2 f) U^T Q^T Y``, one
m-sized residual) the rss of a penalty went through the unpenalized solution and erred by
eps cond(X) against eps cond of its own regularized system (design notes).
"""

from __future__ import annotations

from .._autodiff import rule_of
from .._backend import _compat
from .._backend._compat import full_int
from .._problem._prepare import intercept_of
from .._problem._scaling import unscale
from .._result import LstsqResult
from .._solvers import over_alphas, record, solve_path


def fit_path(problem, method, fit_intercept):
    """LstsqResult whose every field has a leading axis of length a = len(alpha)."""
    xp, X, Y, alpha = problem.xp, problem.X, problem.Y, problem.alpha
    m, n = X.shape[-2:]
    a, batch, k = alpha.shape[0], tuple(X.shape[:-2]), Y.shape[-1]
    dev = _compat.device(X)
    if min(m, n) == 0:
        # As the single fit: zero coefficients, rank 0, the whole of y is residual.
        coef = xp.zeros((a, *batch, n, k), dtype=X.dtype, device=dev)
        rank = full_int(xp, (a, *batch), 0, X)
        s = None if not record(method).singular_values else xp.zeros((*batch, 0), dtype=X.dtype, device=dev)
    elif rule := rule_of(xp, X, Y, alpha):
        # JAX, or PyTorch tensors that require grad: the rule per penalty, from the path's factor.
        coef, rank, s = rule.solve_path_rule(xp, X, Y, alpha, method, problem.offset_sq)
    else:
        sol = solve_path(xp, X, Y, alpha, record(method).path_route, problem.offset_sq)
        coef, rank, s = sol.coef, sol.rank, sol.s
    if not record(method).singular_values:
        s = None  # "qr" factors the same way, but only "svd" reports singular values
    intercept = intercept_of(xp, problem, coef, fit_intercept)
    rss = path_rss(xp, X, Y, coef)
    if s is not None:
        s = xp.broadcast_to(s, (a, *s.shape))
    if problem.y_was_vector:
        coef, intercept, rss = coef[..., 0], intercept[..., 0], rss[..., 0]
    return unscale(xp, LstsqResult(coef, intercept, rank, rss, s), problem.scale, problem.y_was_vector)


def path_rss(xp, X, Y, coef):
    """rss (a, ..., k) of a path's coefficients (a, ..., n, k): the residuals themselves, by groups of penalties whose
    (..., m, g k) array is at most X's size (module docstring, ``path_rss``)."""
    a, n, k = coef.shape[0], X.shape[-1], Y.shape[-1]
    group = max(n // max(k, 1), 1)
    parts = [_group_rss(xp, X, Y, coef[i : min(i + group, a), ...]) for i in range(0, a, group)]
    return parts[0] if len(parts) == 1 else xp.concat(parts, axis=0)


def _group_rss(xp, X, Y, coef):
    """rss (g, ..., k) of the coefficients (g, ..., n, k), every penalty in one product ``X @ W``."""
    fitted = over_alphas(xp, X, coef)  # a fresh array: NumPy writes the residual into it
    return _compat.sum_of_squares(xp, _compat.minus_fresh(xp, _compat.as_rank(xp, Y, fitted.ndim), fitted), axis=-2)
