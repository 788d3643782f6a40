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
