"""``ridge_cv`` with a sparse X: leave-one-out and GCV from its Gram matrix (SciPy, PyTorch, JAX,
CuPy), held-out folds (SciPy) from each fold's Gram matrix (LSMR past ``FOLD_COLUMNS`` columns).

Leave-one-out and GCV (:func:`_leave_one_out`) take the eigendecomposition of the centered,
weighted Gram matrix ``X_c^T W X_c`` (formed by a sparse product, the intercept a rank-one
correction: ``spectral.gram`` of the ``_operator.centered`` map, :func:`_centered`), as the dense
route's ``eigen`` mode: every penalty's coefficients ``V diag(f) P``, its fitted values by X's
products, and the leverages ``H_ii = sum_j F_ij**2 f_j`` from ``F = X_c V`` formed by blocks of
columns (``ROWS`` elements each, X's products), so that no m x n array is made: memory
O(nnz + n**2 + a m k), the last the errors themselves. It runs in X's library (no host read under
``jax.jit``). Error ~ eps times the condition number of the regularized Gram matrix at the smallest
penalty (the dense route's ``eigen``; no ``svd`` mode, which needs X's QR).

Held-out folds only need the fit of each penalty on the training rows: the same eigendecomposition
of the training rows' Gram matrix gives every penalty's coefficients at once. Past ``FOLD_COLUMNS``
columns, where the eigendecompositions cost more than X's products, LSMR fits them instead: it
damps every column of its right-hand side on its own, so one call per fold fits all ``a``
penalties (y's k columns repeated a times, column ``i k + j`` damped by ``sqrt(alphas[i])``; X's
products shared by all a k columns). The chosen penalty is then refitted on all samples. The
fold's rows are a row slice of X (SciPy's CSR and CSC slice without densifying; a
``LinearOperator`` cannot be sliced).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._backend import _compat
from .._backend._compat import matmul, mT, to_numpy
from .._operator_fit import caller_of, fit_ridge
from .._problem._input import as_array
from .._problem._operator import (
    centered,
    describe,
    entry_dtype,
    finite_entries,
    has_gram,
    home_of,
    linear_map,
    on_host,
)
from .._solvers import spectral
from . import _scoring
from ._kfold import fold_score, folds

ROWS = 1 << 18  # elements of a block of F = X_c V (2 MiB of float64): the leverages without an m x n array
# The most columns for which held-out folds are fitted from each fold's Gram matrix (exact); past it by LSMR (to its
# tolerance). An eigendecomposition costs ~9 n**3: on a 20000 x n X, 1% dense, 5 folds of 13 penalties, LSMR took
# 2.9 times as long at n = 200, 0.87 times at 500 and 0.26 times at 1000 (``python -m benchmarks.ridge_cv --sparse``).
FOLD_COLUMNS = 512

__all__ = ["ridge_cv_operator"]


def ridge_cv_operator(X, y, alphas, *, fit_intercept, sample_weight, alpha_per_target, mode, check_finite, cv,
                      scoring, groups, target_batch):  # fmt: skip
    """``ridge_cv`` (see there) with a sparse X: leave-one-out and GCV from its Gram matrix, held-out folds (a SciPy
    X) from each fold's Gram matrix or by LSMR; the fields of its ``RidgeCVResult``, in y's library."""
    held_out = cv is not None and not (isinstance(cv, str) and cv == "gcv")
    if not has_gram(X) or (held_out and not (on_host(X) and hasattr(X, "tocsr"))):
        msg = (
            f"X is a {describe(X)}: leave-one-out and 'gcv' form X's Gram matrix from a sparse matrix's entries, and "
            "held-out folds slice the rows of a SciPy sparse X (or pass a dense array)"
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
    xp, dev = home_of(X)
    if on_host(X):  # SciPy: NumPy, y and the weights copied to the host
        X = X.tocsr() if X.format not in ("csr", "csc") else X
        Y, w = to_numpy(y), None if sample_weight is None else to_numpy(sample_weight)
    else:
        Y = as_array(xp, y, "y", dev)
        w = None if sample_weight is None else as_array(xp, sample_weight, "sample_weight", dev)
    vector = Y.ndim == 1
    # Every scoring as the dense route scores it (scikit-learn's names, callables).
    scoring = _scoring.bind(scoring, joint=not alpha_per_target, vector=vector, unit=None)
    Y = Y[:, None] if vector else Y
    a = np.asarray(to_numpy(alphas) if hasattr(alphas, "shape") else alphas, dtype=np.float64).reshape(-1)
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
        msg = f"alphas must be a non-empty 1-D array of positive penalties for cross-validation; got {a!r}"
        raise ValueError(msg)
    m = X.shape[0]
    if m < 2:
        msg = f"cross-validation needs at least 2 samples; X has {m}"
        raise ValueError(msg)
    if not held_out:
        _check_values(xp, X, Y, w, check_finite)
        out = _leave_one_out(xp, X, Y, w, a, (fit_intercept, alpha_per_target, cv is not None, scoring))
        return _to_caller(xp, (y, sample_weight), out, vector, alpha_per_target)
    split = (cv, groups)
    if X.shape[1] > FOLD_COLUMNS:
        out = _folds_lsmr(X, Y, w, a, split, (fit_intercept, alpha_per_target, check_finite, scoring))
    else:
        _check_values(np, X, Y, w, check_finite)
        out = _folds_gram(X, Y, w, a, split, (fit_intercept, alpha_per_target, scoring))
    return _to_caller(np, (y, sample_weight), out, vector, alpha_per_target)


def _fold_scores(X, Y, w, a, split, how, fit):
    """``(values (a, f, k), scores (a, k), best, alpha)`` of held-out folds: each fold's training rows fitted by
    ``fit(train)`` -> ``(coef (n, a k), intercept (a k,) or None)``, column ``i k + j`` that of penalty i and target
    j; its test rows predicted and scored; the penalty with the best mean score (``how``: alpha_per_target,
    scoring), per target or over targets."""
    alpha_per_target, scoring = how
    (cv, groups), (m, k) = split, Y.shape
    per_fold = []
    for train, test in folds(cv, m, groups):
        coef, intercept = fit(train)
        pred = np.asarray(X[test] @ coef)  # (m_test, a k)
        if intercept is not None:
            pred += intercept
        pred = np.moveaxis(pred.reshape(len(test), a.size, k), 1, 0)  # (a, m_test, k)
        w_test = None if w is None else w[test][:, None]
        per_fold.append(fold_score(np, Y[test].astype(pred.dtype), pred, w_test, scoring))
    values = np.stack(per_fold, axis=-2)  # (a, f, k)
    scores = values.mean(axis=-2)  # (a, k)
    best = np.argmax(scores, axis=0) if alpha_per_target else np.argmax(scores.mean(axis=-1))
    return values, scores, best, a[best]


def _folds_gram(X, Y, w, a, split, how):
    """Held-out folds of a SciPy X up to :data:`FOLD_COLUMNS`, every penalty from the eigendecomposition of each fold's
    Gram matrix, as leave-one-out's (module docstring); the fields of the result, NumPy."""
    fit_intercept, alpha_per_target, scoring = how
    out_dtype, dtype = _float_dtypes(np, X, Y)
    Y0 = Y.astype(dtype, copy=False)
    n, k = X.shape[1], Y.shape[1]

    def fit(train):
        wtr = None if w is None else w[train]
        if wtr is not None and not np.sum(wtr) > 0:
            msg = "sample_weight must have a positive sum on every fold's training rows"
            raise ValueError(msg)
        c = _centered(np, linear_map(X[train], np, dtype, "cpu"), Y0[train], wtr, fit_intercept)
        W = c.spec.V @ (spectral.filters(np, c.spec, a)[..., None] * c.spec.P[None, ...])  # (a, n, k)
        intercept = None if c.y_mean is None else (c.y_mean - c.x_mean @ W).reshape(-1)  # (a k,)
        return np.moveaxis(W, 0, 1).reshape(n, a.size * k), intercept

    values, scores, best, alpha = _fold_scores(X, Y0, w, a, split, (alpha_per_target, scoring), fit)
    chosen = (alpha if alpha_per_target else np.full(k, alpha)).astype(dtype)
    coef, intercept = _coef(np, _centered(np, linear_map(X, np, dtype, "cpu"), Y0, w, fit_intercept), chosen)
    return coef.astype(out_dtype), intercept.astype(out_dtype), alpha, best, values, scores


def _folds_lsmr(X, Y, w, a, split, how):
    """Held-out folds of a SciPy X past :data:`FOLD_COLUMNS`, every penalty at once by LSMR: y's columns repeated,
    column i k + j damped by alphas[i] (module docstring); the fields of the result, NumPy."""
    fit_intercept, alpha_per_target, check_finite, scoring = how
    k = Y.shape[1]

    def fit(train):
        f = fit_ridge(
            X[train], np.tile(Y[train], (1, a.size)), np.repeat(a, k), method="lsmr", fit_intercept=fit_intercept,
            sample_weight=None if w is None else w[train], check_finite=check_finite, atol=None, btol=None,
            max_iter=None, conlim=None, x0=None, per_target=True,
        )  # fmt: skip
        return f.coef, f.intercept

    values, scores, best, alpha = _fold_scores(X, Y, w, a, split, (alpha_per_target, scoring), fit)
    chosen = alpha if alpha_per_target else np.full(k, alpha)
    final = fit_ridge(
        X, Y, chosen, method="lsmr", fit_intercept=fit_intercept, sample_weight=w, check_finite=check_finite,
        atol=None, btol=None, max_iter=None, conlim=None, x0=None, per_target=True,
    )  # fmt: skip
    return final.coef, final.intercept, alpha, best, values, scores


def _to_caller(home, given, out, vector, alpha_per_target):
    """The fields ``(coef, intercept, alpha, best, values, scores)`` (arrays of ``home``) with y's vector shape, in
    the library of ``given``, (y, sample_weight)."""
    coef, intercept, alpha, best, values, scores = out
    if vector:
        coef, intercept, values, scores = coef[:, 0], intercept[0], values[..., 0], scores[..., 0]
        if alpha_per_target:
            alpha, best = alpha[0], best[0]
    xp, dev = caller_of(*given)
    out = (coef, intercept, home.astype(home.asarray(alpha), coef.dtype), home.asarray(best), values, scores)
    return tuple(a if _compat.is_array(a) and xp is _compat.array_namespace(a) else xp.asarray(a, device=dev)
                 for a in out)  # fmt: skip


def _check_values(xp, X, Y, w, check_finite):
    """The value checks of a leave-one-out fit, where the values can be read (not under ``jax.jit``): finite entries
    of X, y and the weights (with ``check_finite``), weights non-negative with a positive sum; each names its input."""
    if check_finite:
        ok = finite_entries(X)
        if ok is not None and not _compat.is_lazy(ok) and not bool(ok):
            raise ValueError("X contains NaN or infinity in its stored entries")
        for name, v in (("y", Y), ("sample_weight", w)):
            if v is not None and not _compat.is_lazy(v) and not bool(xp.all(xp.isfinite(v))):
                msg = f"{name} contains NaN or infinity"
                raise ValueError(msg)
    if w is not None and not _compat.is_lazy(w) and (bool(xp.any(w < 0)) or not bool(xp.sum(w) > 0)):
        raise ValueError("sample_weight must be non-negative, with a positive sum")


class _Centered(NamedTuple):
    """The eigendecomposition of a sparse X's centered, weighted Gram matrix and what was centered: X's and y's
    weighted means (1, n), (1, k) (None without an intercept), the weights (m, 1) and their roots (None without
    weights), y centered and weighted (m, k)."""

    spec: Any
    x_mean: Any
    y_mean: Any
    ws: Any
    root: Any
    Yc: Any


def _centered(xp, A, Y0, w, fit_intercept):
    """:class:`_Centered` of the map ``A`` (m, n), ``Y0`` (m, k), weights (m,) or None, in Y0's dtype."""
    dtype, dev = Y0.dtype, _compat.device(Y0)
    ws = xp.ones((A.shape[0], 1), dtype=dtype, device=dev) if w is None else xp.astype(w, dtype)[:, None]
    root = None if w is None else xp.sqrt(ws)
    x_mean = y_mean = offset_sq = None
    Yc = Y0
    if fit_intercept:
        total = xp.sum(ws)
        x_mean = mT(xp, A.rmatvec(ws)) / total  # (1, n)
        y_mean = xp.sum(ws * Y0, axis=0, keepdims=True) / total
        Yc = Y0 - y_mean
        offset_sq = (total * x_mean * x_mean)[0, :]
    if root is not None:
        Yc = root * Yc
    return _Centered(spectral.gram(xp, centered(xp, A, root, x_mean), Yc, offset_sq), x_mean, y_mean, ws, root, Yc)


def _coef(xp, c, alpha):
    """Coefficients (n, k) and intercepts (k,) of the penalties ``alpha`` (k,), one per target, from :func:`_centered`
    ``c``."""
    den = c.spec.lam[:, None] + alpha[None, :]
    coef = matmul(xp, c.spec.V, spectral.inverse(xp, den, c.spec.cut[:, None]) * c.spec.P)
    zero = xp.zeros((coef.shape[1],), dtype=coef.dtype, device=_compat.device(coef))
    return coef, zero if c.y_mean is None else (c.y_mean - matmul(xp, c.x_mean, coef))[0]


def _float_dtypes(xp, X, Y):
    """The inputs' float dtype (the result's) and the one computed in: float64 where the device has it, as the
    dense route computes float32."""
    dev = _compat.device(Y)
    floats = [d for d in (entry_dtype(X, xp), Y.dtype) if _compat.isdtype(xp, d, "real floating")]
    out = xp.result_type(*floats) if floats else _compat.default_dtypes(xp, dev)[0]
    return out, _compat.float64_for(xp, dev) or out


def _leave_one_out(xp, X, Y, w, alphas, how):
    """Leave-one-out (or GCV) of a sparse X (m, n) of ``xp``, Y (m, k), weights (m,) or None, penalties (a,) (NumPy),
    ``how`` = (fit_intercept, alpha_per_target, gcv, scoring bound by ``_scoring.bind``): ``(coef (n, k), intercept
    (k,), alpha, best, values (a, m, k), scores (a, k))`` (module docstring)."""
    fit_intercept, alpha_per_target, gcv, scoring = how
    dev = _compat.device(Y)
    out, dtype = _float_dtypes(xp, X, Y)
    A, Y0 = linear_map(X, xp, dtype, dev), xp.astype(Y, dtype, copy=False)  # never written to
    m, n = A.shape
    c = _centered(xp, A, Y0, w, fit_intercept)
    spec, x_mean, y_mean, ws, root, Yc = c
    lev0 = None if x_mean is None else (ws / xp.sum(ws))[:, 0]
    alphas = xp.asarray(alphas, dtype=dtype, device=dev)
    f = spectral.filters(xp, spec, alphas)  # (a, n)
    W = matmul(xp, spec.V, f[..., None] * spec.P[None, ...])  # (a, n, k): every penalty's coefficients
    a, k = alphas.shape[0], Y0.shape[1]
    if not gcv:  # the leverages first, before the (a, m, k) fitted values: their blocks' temporaries then cost less
        lev = _leverages(xp, A, spec.V, f, (x_mean, root))  # (a, m)
        if lev0 is not None:
            lev = _compat.update_fresh(xp, lev, "add", lev0[None, :])
        lev1 = _compat.update_fresh(xp, lev, "subtract", 1.0)  # H_ii - 1, written into lev
    XW = xp.reshape(A.matvec(xp.reshape(xp.permute_dims(W, (1, 0, 2)), (n, a * k))), (m, a, k))
    XW = xp.permute_dims(XW, (1, 0, 2))  # (a, m, k)
    if x_mean is not None:
        XW = _compat.update_fresh(xp, XW, "subtract", matmul(xp, x_mean, W))  # the centered X's, unweighted
    if gcv or scoring is None:  # the weighted residuals, written into XW (one (a, m, k) array on NumPy)
        if root is not None:
            XW = _compat.update_fresh(xp, XW, "multiply", root[None, ...])
        resid = _compat.minus_fresh(xp, Yc[None, ...], XW)
    if gcv:
        df = xp.sum(f * spec.lam[None, :], axis=-1) + (1.0 if fit_intercept else 0.0)  # (a,)
        values = _compat.update_fresh(xp, _compat.update_fresh(xp, resid, "multiply", resid), "divide",
                                      ((1 - df / m) ** 2)[:, None, None])  # fmt: skip
        scores = -xp.mean(values, axis=-2)
    else:
        if scoring is None:  # the leave-one-out errors r / (1 - H_ii), squared (their sign flipped: no matter)
            e = _compat.update_fresh(xp, resid, "divide", lev1[..., None])
            values = _compat.update_fresh(xp, e, "multiply", e)
            scores = -xp.mean(values, axis=-2)
        else:  # the leave-one-out predictions, in y's units, scored
            pred = XW if y_mean is None else XW + y_mean[None, ...]
            values = Y0[None, ...] + (Y0[None, ...] - pred) / lev1[..., None]
            scores = fold_score(xp, Y0, values, None if w is None else ws, scoring)
    mse = -scores
    best = _compat.arg_best(xp, mse, 0) if alpha_per_target else _compat.arg_best(xp, xp.mean(mse, axis=-1), 0)
    alpha = alphas[best]
    chosen = alpha if alpha_per_target else xp.broadcast_to(xp.reshape(alpha, (1,)), (k,))
    coef, intercept = _coef(xp, c, chosen)
    coef, intercept, values, scores = (xp.astype(v, out, copy=False) for v in (coef, intercept, values, scores))
    return coef, intercept, alpha, best, values, scores  # values: no copy where already in the inputs' dtype


def _leverages(xp, A, V, f, centering):
    """``H_ii`` (a, m) of the centered, weighted X's ridge hat matrices, ``sum_j F_ij**2 f_j`` with ``F = X_c V``
    (``centering`` = (x_mean, root)), by blocks of columns of ``ROWS`` elements (no m x n array)."""
    x_mean, root = centering
    m, n = A.shape
    cols = max(ROWS // max(m, 1), 1)
    out = xp.zeros((f.shape[0], m), dtype=V.dtype, device=_compat.device(V))
    for j in range(0, n, cols):
        F = A.matvec(V[:, j : j + cols])
        if x_mean is not None:
            F = _compat.update_fresh(xp, F, "subtract", matmul(xp, x_mean, V[:, j : j + cols]))
        if root is not None:
            F = _compat.update_fresh(xp, F, "multiply", root)
        F = _compat.update_fresh(xp, F, "multiply", F)  # squared in place (NumPy)
        out = _compat.update_fresh(xp, out, "add", matmul(xp, f[:, j : j + cols], mT(xp, F)))
    return out
