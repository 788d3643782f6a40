"""``ridge_cv`` with a sparse X: held-out folds, each fitted by LSMR for every penalty at once.

Leave-one-out and GCV need a factorization of X (its hat matrix); held-out folds only need the
fit of each penalty on the training rows. LSMR damps every column of its right-hand side on its
own, so one call per fold fits all ``a`` penalties: y's k columns repeated a times, column
``i k + j`` damped by ``sqrt(alphas[i])``; X's products are shared by all a k columns. The
chosen penalty is then refitted on all samples. The fold's rows are a row slice of X
(SciPy's CSR and CSC slice without densifying; a ``LinearOperator`` cannot be sliced).
"""

from __future__ import annotations

import numpy as np

from .._backend._compat import to_numpy
from .._operator_fit import caller_of, fit_ridge
from .._solvers.linalg._operator import describe, on_host
from . import _scoring
from ._kfold import fold_score, folds

__all__ = ["ridge_cv_operator"]


def ridge_cv_operator(X, y, alphas, *, fit_intercept, sample_weight, alpha_per_target, mode, check_finite, cv,
                      scoring, groups, target_batch):  # fmt: skip
    """``ridge_cv`` (see there) with a SciPy sparse X and held-out folds: the fields of its
    ``RidgeCVResult``, in y's library."""
    held_out = cv is not None and not (isinstance(cv, str) and cv == "gcv")
    if not held_out or not on_host(X) or not hasattr(X, "tocsr"):
        msg = (
            f"X is a {describe(X)}: leave-one-out and 'gcv' factorize X, and held-out folds slice its rows; "
            "a SciPy sparse X is cross-validated with cv=k (or a splitter, or index pairs), each fold by LSMR"
        )
        raise TypeError(msg)
    if target_batch is not None or mode != "auto":
        msg = "target_batch and mode apply to dense X (a sparse X's folds are fitted by LSMR, every target at once)"
        raise ValueError(msg)
    _scoring.check(scoring)
    X = X.tocsr() if X.format not in ("csr", "csc") else X
    Y = to_numpy(y)
    vector = Y.ndim == 1
    # Every scoring as the dense route scores it (scikit-learn's names, callables).
    scoring = _scoring.bind(scoring, joint=not alpha_per_target, vector=vector, unit=None)
    Y = Y[:, None] if vector else Y
    w = None if sample_weight is None else to_numpy(sample_weight)
    a = np.asarray(to_numpy(alphas) if hasattr(alphas, "shape") else alphas, dtype=np.float64).reshape(-1)
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
        msg = f"alphas must be a non-empty 1-D array of positive penalties for cross-validation; got {a!r}"
        raise ValueError(msg)
    m, k = X.shape[0], Y.shape[1]
    if m < 2:
        msg = f"cross-validation needs at least 2 samples; X has {m}"
        raise ValueError(msg)
    per_fold = []
    for train, test in folds(cv, m, groups):
        wtr = None if w is None else w[train]
        # Every penalty at once: y's columns repeated, column i k + j damped by alphas[i].
        fit = fit_ridge(
            X[train], np.tile(Y[train], (1, a.size)), np.repeat(a, k), method="lsmr", fit_intercept=fit_intercept,
            sample_weight=wtr, check_finite=check_finite, atol=None, btol=None, max_iter=None, conlim=None, x0=None,
            per_target=True,
        )  # fmt: skip
        pred = np.asarray(X[test] @ fit.coef) + fit.intercept  # (m_test, a k)
        pred = np.moveaxis(pred.reshape(len(test), a.size, k), 1, 0)  # (a, m_test, k)
        w_test = None if w is None else w[test][:, None]
        per_fold.append(fold_score(np, Y[test].astype(pred.dtype), pred, w_test, scoring))
    values = np.stack(per_fold, axis=-2)  # (a, f, k)
    scores = values.mean(axis=-2)  # (a, k)
    best = np.argmax(scores, axis=0) if alpha_per_target else np.argmax(scores.mean(axis=-1))
    alpha = a[best]
    chosen = alpha if alpha_per_target else np.full(k, alpha)
    final = fit_ridge(
        X, Y, chosen, method="lsmr", fit_intercept=fit_intercept, sample_weight=w, check_finite=check_finite,
        atol=None, btol=None, max_iter=None, conlim=None, x0=None, per_target=True,
    )  # fmt: skip
    coef, intercept = final.coef, final.intercept
    if vector:
        coef, intercept, values, scores = coef[:, 0], intercept[0], values[..., 0], scores[..., 0]
        if alpha_per_target:
            alpha, best = alpha[0], best[0]
    xp, dev = caller_of(y, sample_weight)
    out = (coef, intercept, np.asarray(alpha, coef.dtype), np.asarray(best), values, scores)
    return tuple(a if xp is np else xp.asarray(a, device=dev) for a in out)
