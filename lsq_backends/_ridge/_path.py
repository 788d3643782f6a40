"""Ridge paths: every penalty of a 1-D ``alpha`` from one factorization (see ``_solvers.spectral``)."""

from __future__ import annotations

from .._autodiff import rule_of
from .._backend import _compat
from .._problem._input import intercept_of
from .._problem._scaling import unscale
from .._result import LstsqResult
from .._solvers import record
from .._solvers.linalg._shared import full_int
from .._solvers.spectral import over_alphas, solve_path


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
        coef, rank, s = solve_path(xp, X, Y, alpha, record(method).path_route, problem.offset_sq)
    if not record(method).singular_values:
        s = None  # "qr" factors the same way, but only "svd" reports singular values
    intercept = intercept_of(xp, problem, coef, fit_intercept)
    # The residual itself (accurate for near-exact fits), every penalty in one product X @ W.
    fitted = over_alphas(xp, X, coef)
    resid = _compat.as_rank(xp, Y, fitted.ndim) - fitted
    rss = xp.sum(resid * resid, axis=-2)  # (a, ..., k)
    if s is not None:
        s = xp.broadcast_to(s, (a, *s.shape))
    if problem.y_was_vector:
        coef, intercept, rss = coef[..., 0], intercept[..., 0], rss[..., 0]
    return unscale(xp, LstsqResult(coef, intercept, rank, rss, s), problem.scale, problem.y_was_vector)
