"""The float64 NumPy reference answers of the test problems. The problems themselves
(``design``) and the error each method may make (``threshold``) are the self-check's:
``lsq_backends.check.problems``."""

from __future__ import annotations

import numpy as np

from lsq_backends._solvers import RECORDS

METHODS = tuple(r.name for r in RECORDS if not r.iterative)  # the direct methods
ITERATIVE = tuple(r.name for r in RECORDS if r.iterative)


def center(X, y, sw, fit_intercept):
    """Weighted centering and sqrt-weight scaling: the problem every solver sees."""
    w = np.ones(X.shape[-2]) if sw is None else np.asarray(sw, dtype=np.float64)
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    Y = y[..., None] if y.ndim == X.ndim - 1 else y
    if fit_intercept:
        wc = w[..., :, None]
        xo = (wc * X).sum(-2, keepdims=True) / wc.sum(-2, keepdims=True)
        yo = (wc * Y).sum(-2, keepdims=True) / wc.sum(-2, keepdims=True)
    else:
        xo = np.zeros(X.shape[:-2] + (1, X.shape[-1]))
        yo = np.zeros(Y.shape[:-2] + (1, Y.shape[-1]))
    r = np.sqrt(w)[..., :, None]
    return r * (X - xo), r * (Y - yo), xo, yo


def reference(X, y, *, alpha=None, sw=None, fit_intercept=False):
    """float64 answer: numpy.linalg.lstsq (minimum norm) or the ridge closed formula."""
    Xc, Yc, xo, yo = center(X, y, sw, fit_intercept)
    if alpha is None:
        solve = lambda A, B: np.linalg.lstsq(A, B, rcond=None)[0]  # noqa: E731
        coef = np.stack(
            [
                solve(A, B)
                for A, B in zip(Xc.reshape((-1,) + Xc.shape[-2:]), Yc.reshape((-1,) + Yc.shape[-2:]), strict=False)
            ]
        )
        coef = coef.reshape(Xc.shape[:-2] + coef.shape[-2:])
    else:
        a = np.broadcast_to(np.atleast_1d(np.asarray(alpha, np.float64)), (Yc.shape[-1],))
        G = Xc.swapaxes(-1, -2) @ Xc
        B = Xc.swapaxes(-1, -2) @ Yc
        eye = np.eye(X.shape[-1])
        coef = np.concatenate([np.linalg.solve(G + a[j] * eye, B[..., j : j + 1]) for j in range(len(a))], axis=-1)
    intercept = (yo - xo @ coef)[..., 0, :]
    resid = Yc - Xc @ coef
    rss = (resid**2).sum(-2)
    if y.ndim == X.ndim - 1:
        coef, intercept, rss = coef[..., 0], intercept[..., 0], rss[..., 0]
    return coef, intercept, rss, Xc


def cond(Xc):
    s = np.linalg.svd(Xc, compute_uv=False)
    s = s[..., s[..., 0] * 1e-12 < s] if s.ndim == 1 else s
    return float(np.max(s[..., 0] / s[..., -1]))


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), np.finfo(np.float64).tiny))


# The iterative methods' error bound (LSQR's stopping tests on the problem's measured singular values)
def _spectrum(Xc, alpha):
    """(smallest nonzero singular value, Frobenius norm) of [Xc; sqrt(alpha) I]."""
    s = np.linalg.svd(Xc, compute_uv=False)
    s = s[s > s[0] * 1e-10]
    n = Xc.shape[-1]
    if alpha:
        s_min = np.sqrt(alpha) if len(s) < n else np.sqrt(s[-1] ** 2 + alpha)
        return s_min, np.sqrt(np.sum(s**2) + n * alpha)
    return s[-1], np.sqrt(np.sum(s**2))


def error_bound(Xc, b, x, alpha, atol, btol, eps):
    """Bound on ||x - x*|| for an LSQR iterate x that passed one of the stopping tests, from
    A = [Xc; sqrt(alpha) I], r = [b - Xc x; -sqrt(alpha) x] (x* the exact solution, x and x* both
    in the row space of A, as LSQR's iterates from 0 are):

    - ||r|| <= btol ||b|| + atol ||A||_F ||x||  gives  ||x - x*|| <= ||A (x - x*)|| / s_min
      <= ||r|| / s_min (the residuals are orthogonal: ||r||^2 = ||r*||^2 + ||A (x - x*)||^2);
    - ||A^T r|| <= atol ||A||_F ||r||  gives  ||x - x*|| <= atol ||A||_F ||r|| / s_min^2.

    Either test may have fired: the larger bound, times 2 for LSQR's estimates of the norms,
    plus rounding, eps * cond(A)^2 * ||b|| / ||A|| as the normal equations LSQR implicitly
    solves (a loose ceiling: LSQR is usually nearer eps * cond).
    """
    alpha = alpha or 0.0
    s_min, fro = _spectrum(Xc, alpha)
    r = np.linalg.norm(np.concatenate([b - Xc @ x, np.sqrt(alpha) * x]))
    consistent = (btol * np.linalg.norm(b) + atol * fro * np.linalg.norm(x)) / s_min
    least_squares = atol * fro * r / s_min**2
    rounding = 10 * np.sqrt(max(Xc.shape)) * eps * (fro / s_min) ** 2 * np.linalg.norm(b) / fro
    return 2 * max(consistent, least_squares) + rounding


def check_within_bound(res, be, X, Y, *, alpha=None, sw=None, fit_intercept=False, atol, btol, dtype=np.float64):
    coef_ref, _, _, _ = reference(X, Y, alpha=alpha, sw=sw, fit_intercept=fit_intercept)
    Xc, Yc, _, _ = center(X, Y, sw, fit_intercept)
    coef = be.to_numpy(res.coef).astype(np.float64)
    coef, coef_ref, Yc = (a.reshape(a.shape[0], -1) for a in (coef, coef_ref, Yc))
    alphas = np.broadcast_to(np.atleast_1d(0.0 if alpha is None else alpha), (coef.shape[1],))
    eps = float(np.finfo(dtype).eps)
    for j in range(coef.shape[1]):
        bound = error_bound(Xc, Yc[:, j], coef[:, j], alphas[j], atol, btol, eps)
        err = np.linalg.norm(coef[:, j] - coef_ref[:, j])
        assert err <= bound, f"target {j}: error {err:.3g} above the bound {bound:.3g}"
        # ... and the bound says something: well below the size of the solution.
        assert bound < 1e-2 * np.linalg.norm(coef_ref[:, j])
