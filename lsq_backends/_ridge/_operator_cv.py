"""``ridge_cv`` with a sparse X: leave-one-out and GCV from its Gram matrix, held-out folds each
fitted by LSMR for every penalty at once.

Leave-one-out and GCV (:func:`_leave_one_out`) take the eigendecomposition of the centered,
weighted Gram matrix ``X_c^T W X_c`` (formed by a sparse product, the intercept a rank-one
correction: ``spectral.gram`` of the ``_operator.centered`` map), as the dense route's ``eigen``
mode: every penalty's coefficients ``V diag(f) P``, its fitted values by X's products, and the
leverages ``H_ii = sum_j F_ij**2 f_j`` from ``F = X_c V`` formed by blocks of rows (``ROWS``), so
that no m x n array is made: memory O(nnz + n**2 + a m k), the last the errors themselves.
Error ~ eps times the condition number of the regularized Gram matrix at the smallest penalty
(the dense route's ``eigen``; no ``svd`` mode, which needs X's QR).

Held-out folds only need the fit of each penalty on the training rows. LSMR damps every column
of its right-hand side on its own, so one call per fold fits all ``a`` penalties: y's k columns
repeated a times, column ``i k + j`` damped by ``sqrt(alphas[i])``; X's products are shared by
all a k columns. The chosen penalty is then refitted on all samples. The fold's rows are a row
slice of X (SciPy's CSR and CSC slice without densifying; a ``LinearOperator`` cannot be sliced).
"""

from __future__ import annotations

import numpy as np

from .._backend._compat import to_numpy
from .._operator_fit import caller_of, fit_ridge
from .._solvers import spectral
from .._solvers.linalg._operator import centered, describe, finite_entries, home_of, linear_map, on_host
from . import _scoring
from ._kfold import fold_score, folds

ROWS = 1 << 18  # elements of a block of F = X_c V (2 MiB of float64): the leverages without an m x n array

__all__ = ["ridge_cv_operator"]


def ridge_cv_operator(X, y, alphas, *, fit_intercept, sample_weight, alpha_per_target, mode, check_finite, cv,
                      scoring, groups, target_batch):  # fmt: skip
    """``ridge_cv`` (see there) with a SciPy sparse X: leave-one-out and GCV from its Gram matrix, held-out folds by
    LSMR; the fields of its ``RidgeCVResult``, in y's library."""
    held_out = cv is not None and not (isinstance(cv, str) and cv == "gcv")
    if not on_host(X) or not hasattr(X, "tocsr"):
        msg = (
            f"X is a {describe(X)}: leave-one-out and 'gcv' form X's Gram matrix from its entries, and held-out "
            "folds slice its rows; a SciPy sparse X is cross-validated (or pass a dense array)"
        )
        raise TypeError(msg)
    modes = ("auto",) if held_out else ("auto", "eigen")  # leave-one-out and GCV: the Gram matrix's eigen
    if target_batch is not None or mode not in modes:
        msg = (
            "target_batch and mode apply to dense X (a sparse X's folds are fitted by LSMR, every target at once; "
            "its leave-one-out and GCV by the eigendecomposition of its Gram matrix, mode 'auto' or 'eigen')"
        )
        raise ValueError(msg)
    _scoring.check(scoring)
    if scoring not in (None, "neg_mean_squared_error") and cv is not None and not held_out:
        msg = "cv='gcv' scores the generalized cross-validation criterion; scoring must be None there"
        raise ValueError(msg)
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
    if not held_out:
        _check_values(X, Y, w, check_finite)
        out = _leave_one_out(X, Y, w, a, (fit_intercept, alpha_per_target, cv is not None, scoring))
        return _to_caller(y, sample_weight, out, vector, alpha_per_target)
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
    out = (final.coef, final.intercept, alpha, best, values, scores)
    return _to_caller(y, sample_weight, out, vector, alpha_per_target)


def _to_caller(y, sample_weight, out, vector, alpha_per_target):
    """The fields ``(coef, intercept, alpha, best, values, scores)`` with y's vector shape, in y's library."""
    coef, intercept, alpha, best, values, scores = out
    if vector:
        coef, intercept, values, scores = coef[:, 0], intercept[0], values[..., 0], scores[..., 0]
        if alpha_per_target:
            alpha, best = alpha[0], best[0]
    xp, dev = caller_of(y, sample_weight)
    out = (coef, intercept, np.asarray(alpha, coef.dtype), np.asarray(best), values, scores)
    return tuple(a if xp is np else xp.asarray(a, device=dev) for a in out)


def _check_values(X, Y, w, check_finite):
    """The value checks of a leave-one-out fit (the held-out folds' fits make their own): finite entries of X, y
    and the weights (with ``check_finite``), weights non-negative with a positive sum; each error names its input."""
    if check_finite:
        if not bool(finite_entries(X)):
            raise ValueError("X contains NaN or infinity in its stored entries")
        for name, v in (("y", Y), ("sample_weight", w)):
            if v is not None and not np.all(np.isfinite(v)):
                msg = f"{name} contains NaN or infinity"
                raise ValueError(msg)
    if w is not None and (np.any(w < 0) or not np.sum(w) > 0):
        raise ValueError("sample_weight must be non-negative, with a positive sum")


def _leave_one_out(X, Y, w, alphas, how):
    """Leave-one-out (or GCV) of a SciPy sparse X (m, n), Y (m, k), weights (m,) or None, penalties (a,), ``how`` =
    (fit_intercept, alpha_per_target, gcv, scoring bound by ``_scoring.bind``): ``(coef (n, k), intercept (k,),
    alpha, best, values (a, m, k), scores (a, k))`` (module docstring)."""
    fit_intercept, alpha_per_target, gcv, scoring = how
    xp, _ = home_of(X)
    X0_dtype = X.dtype
    dtype = np.result_type(X.dtype, Y.dtype, np.float64)  # float64 throughout, as the dense route computes float32
    X, Y0 = X.tocsr().astype(dtype, copy=False), Y.astype(dtype, copy=False)
    m, n = X.shape
    ws = np.ones((m, 1), dtype=dtype) if w is None else w.astype(dtype)[:, None]
    root = None if w is None else np.sqrt(ws)
    A = linear_map(X, xp, dtype, "cpu")
    x_mean = y_mean = offset_sq = lev0 = None
    Yc = Y0
    if fit_intercept:
        total = ws.sum()
        x_mean = A.rmatvec(ws).T / total  # (1, n)
        y_mean = (ws * Y0).sum(axis=0, keepdims=True) / total
        Yc = Y0 - y_mean
        offset_sq = (total * x_mean * x_mean)[0]
        lev0 = (ws / total)[:, 0]
    if root is not None:
        Yc = root * Yc
    spec = spectral.gram(xp, centered(xp, A, root, x_mean), Yc, offset_sq)
    f = spectral.filters(xp, spec, xp.asarray(alphas))  # (a, n)
    W = spec.V @ (f[..., None] * spec.P)  # (a, n, k): every penalty's coefficients
    a, k = alphas.size, Y0.shape[1]
    XW = np.moveaxis(np.asarray(X @ np.moveaxis(W, 0, 1).reshape(n, a * k)).reshape(m, a, k), 1, 0)  # (a, m, k)
    if x_mean is not None:
        XW = XW - x_mean @ W  # the centered X's fitted values, unweighted
    if gcv or scoring is None:  # the weighted residuals, written into XW (one (a, m, k) array)
        if root is not None:
            np.multiply(XW, root, out=XW)
        resid = np.subtract(Yc, XW, out=XW)
    if gcv:
        df = (f * spec.lam).sum(axis=-1) + (1.0 if fit_intercept else 0.0)  # (a,)
        values = np.divide(resid * resid, ((1 - df / m) ** 2)[:, None, None], out=resid)
        scores = -values.mean(axis=-2)
    else:
        lev = _leverages(X, spec.V, f, x_mean, root) + (0 if lev0 is None else lev0)  # (a, m)
        if scoring is None:
            e = np.divide(resid, (1 - lev)[..., None], out=resid)
            values = np.multiply(e, e, out=e)
            scores = -values.mean(axis=-2)
        else:  # the leave-one-out predictions, in y's units, scored
            pred = XW if y_mean is None else XW + y_mean
            values = Y0 - (Y0 - pred) / (1 - lev)[..., None]
            scores = fold_score(np, Y0, values, None if w is None else ws, scoring)
    mse = -scores
    best = np.argmin(mse, axis=0) if alpha_per_target else np.argmin(mse.mean(axis=-1))
    alpha = alphas[best]
    chosen = alpha if alpha_per_target else np.full(k, alpha)
    coef = spec.V @ (spectral.inverse(xp, spec.lam[:, None] + chosen[None, :], spec.cut[:, None]) * spec.P)
    intercept = np.zeros(k, dtype) if y_mean is None else (y_mean - x_mean @ coef)[0]
    floats = [d for d in (X0_dtype, Y.dtype) if np.issubdtype(d, np.floating)]
    out = np.result_type(*floats) if floats else np.float64  # the inputs' float dtype, as the dense route's
    return (
        *(v.astype(out, copy=False) for v in (coef, intercept)),
        alpha,
        best,
        values.astype(out),
        scores.astype(out),
    )


def _leverages(X, V, f, x_mean, root):
    """``H_ii`` (a, m) of the centered, weighted X's ridge hat matrices, ``sum_j F_ij**2 f_j`` with ``F = X_c V``,
    by blocks of ``ROWS`` rows (no m x n array)."""
    m, n = X.shape
    rows = max(ROWS // max(n, 1), 1)
    out = np.empty((f.shape[0], m), dtype=V.dtype)
    for i in range(0, m, rows):
        F = np.asarray(X[i : i + rows] @ V)
        if x_mean is not None:
            F = F - x_mean @ V
        if root is not None:
            F = F * root[i : i + rows]
        out[:, i : i + rows] = f @ (F * F).T
    return out
