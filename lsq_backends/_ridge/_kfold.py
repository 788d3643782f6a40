"""Cross-validation of ridge over a grid of penalties from held-out folds (``ridge_cv(cv=...)``).

Each fold is factorized ONCE (the eigendecomposition of its training Gram matrix, or the SVD
of its training data: ``_solvers.spectral``), and that one factorization gives the fit of
every penalty; the held-out predictions of all penalties are one matrix product. k folds
cost k factorizations of the training rows, never one fit per penalty (scikit-learn's
``RidgeCV(cv=k)`` refits every penalty on every fold). Generalized cross-validation
(``cv="gcv"``) needs only the factorization of all samples.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, NamedTuple

from .._backend import _compat
from .._backend._compat import matmul
from .._problem._center import eliminate_intercept
from .._solvers import spectral


class FoldFit(NamedTuple):
    """How each held-out fold is fitted and scored: with an intercept or not, the ``scoring`` (None: minus the
    mean squared error; a callable bound by ``_scoring.bind``), ``mode`` (``"svd"`` or the Gram route) and
    ``batch`` (None, or that many targets and one penalty at a time)."""

    fit_intercept: bool
    scoring: Any
    mode: str
    batch: int | None = None


def folds(cv, m, groups=None):
    """The (train, test) index pairs of ``cv`` for ``m`` samples, as NumPy integer arrays. ``cv`` may be an integer
    k >= 2: scikit-learn's ``KFold(k)``, k contiguous folds, no shuffling, the first ``m % k`` one sample larger. Or
    an object with a ``split`` method (a scikit-learn splitter; it gets placeholders for X and y, and ``groups``).
    Or an iterable of (train, test) index arrays."""
    import numpy as np

    if isinstance(cv, bool):
        msg = f"cv must be None, 'gcv', an integer >= 2, a splitter or an iterable of (train, test); got {cv!r}"
        raise TypeError(msg)
    if isinstance(cv, numbers.Integral):
        k = int(cv)
        if not 2 <= k <= m:
            msg = f"cv={k} folds needs 2 <= cv <= the number of samples ({m})"
            raise ValueError(msg)
        sizes = np.full(k, m // k)
        sizes[: m % k] += 1
        edges = np.concatenate([[0], np.cumsum(sizes)])
        idx = np.arange(m)
        return [
            (np.concatenate([idx[: edges[i]], idx[edges[i + 1] :]]), idx[edges[i] : edges[i + 1]]) for i in range(k)
        ]
    if hasattr(cv, "split"):
        pairs = cv.split(np.zeros((m, 1)), np.zeros(m), groups)
    else:
        try:
            pairs = iter(cv)
        except TypeError:
            msg = f"cv must be None, 'gcv', an integer >= 2, a splitter or an iterable of (train, test); got {type(cv).__name__}"
            raise TypeError(msg) from None
    out = []
    for i, pair in enumerate(pairs):
        train, test = (np.asarray(a) for a in pair)
        for name, a in (("train", train), ("test", test)):
            if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer) or a.min() < -m or a.max() >= m:
                msg = f"cv fold {i}: {name} must be a non-empty 1-D array of sample indices below {m}"
                raise ValueError(msg)
        out.append((np.asarray(train % m, dtype=np.int64), np.asarray(test % m, dtype=np.int64)))
    if not out:
        msg = "cv gave no folds"
        raise ValueError(msg)
    return out


def undefined_folds(pairs, scoring):
    """The folds (indices) whose score is undefined: ``"r2"`` on fewer than two held-out samples
    (scikit-learn scores them NaN, with a warning). Their scores are NaN and left out of the
    mean over folds, with a warning here; when every fold is such (leave-one-out), no score
    is left to choose a penalty from, and ``ValueError`` is raised, before any work."""
    if scoring != "r2":
        return ()
    undefined = tuple(i for i, (_, test) in enumerate(pairs) if len(test) < 2)
    if undefined and len(undefined) == len(pairs):
        msg = (
            "scoring='r2' (RidgeCV's default with folds) is undefined on a held-out fold of fewer than 2 "
            "samples, and every fold here has one: use scoring='neg_mean_squared_error', or cv=None for "
            "the efficient leave-one-out"
        )
        raise ValueError(msg)
    if undefined:
        msg = (
            f"R^2 is undefined on held-out folds of fewer than 2 samples (folds {list(undefined)}): their "
            "scores are NaN and left out of the mean over folds"
        )
        warnings.warn(msg, UserWarning, stacklevel=3)  # at the caller of ridge_cv
    return undefined


def _take(xp, a, idx):
    """Rows ``idx`` (NumPy integers) of ``a`` (..., m, c)."""
    return None if a is None else _compat.take_rows(xp, a, idx)


def _fold_predictions(xp, data, alphas, fold, fit_intercept, mode):
    """Held-out predictions (a, ..., m_test, k) of every penalty from one factorization of the
    training rows of ``data`` ``(X, Y, root)`` (``fold``: (train, test); centered with their own
    weighted means when ``fit_intercept``)."""
    (X, Y, root), (train, test) = data, fold
    Xtr, Ytr, rtr = _take(xp, X, train), _take(xp, Y, train), _take(xp, root, train)
    if fit_intercept:
        Xe, Ye, x_off, y_off, offset_sq = eliminate_intercept(xp, Xtr, Ytr, rtr)
    else:
        Xe, Ye, offset_sq = (Xtr, Ytr, None) if rtr is None else (rtr * Xtr, rtr * Ytr, None)
    route = spectral.svd if mode == "svd" else spectral.gram
    spec = route(xp, Xe, Ye, offset_sq)
    pred = _predict(xp, spec, _test_basis(xp, spec, _take(xp, X, test), x_off if fit_intercept else None), alphas)
    return pred + _compat.as_rank(xp, y_off, pred.ndim) if fit_intercept else pred


def _test_basis(xp, spec, Xte, x_off):
    """``G = (X_test - x_off) V`` (..., m_test, p): the held-out rows (centered with the training
    means) in the factorization's basis, so that every penalty's predictions are ONE product
    ``G diag(f) P`` (rather than forming each penalty's coefficients, ``V diag(f) P``, and then
    ``X_test`` times them: twice the work per penalty)."""
    G = matmul(xp, Xte, spec.V)
    return G if x_off is None else G - matmul(xp, x_off, spec.V)


def _predict(xp, spec, G, alphas):
    """Held-out predictions (a, ..., m_test, k), intercept aside: ``G diag(f) P`` per penalty."""
    f = spectral.filters(xp, spec, alphas)  # (a, ..., p)
    return spectral.over_alphas(xp, G, f[..., None] * _compat.as_rank(xp, spec.P, f.ndim + 1))


def fold_score(xp, y, pred, w, scoring):
    """Score (higher is better) of the held-out predictions ``pred`` (a, ..., m, k) of ``y``
    (..., m, k), weights ``w`` (..., m, 1) or None: (a, ..., k)."""
    if callable(scoring):  # any other scoring, bound by ``_scoring.bind``
        return scoring(xp, y, pred, w)
    r = _compat.as_rank(xp, y, pred.ndim) - pred
    ww = xp.ones_like(y[..., :1]) if w is None else w
    total = xp.sum(ww, axis=-2)  # (..., 1)
    sse = xp.sum(_compat.as_rank(xp, ww, r.ndim) * r * r, axis=-2)  # (a, ..., k)
    if scoring == "r2":
        mean = xp.sum(ww * y, axis=-2, keepdims=True) / total[..., None, :]
        d = y - mean
        sst = xp.sum(ww * d * d, axis=-2)  # (..., k)
        # Constant targets (on the rows with weight) have no variance to explain. Tested
        # exactly: their weighted mean's rounding leaves sst ~1e-33, not 0. As scikit-learn's
        # r2_score: 1 for a perfect prediction, else 0.
        weighted = ww > 0
        inf = xp.full_like(y[..., :1, :], float("inf"))
        hi = xp.max(xp.where(weighted, y, -inf), axis=-2)
        constant = hi <= xp.min(xp.where(weighted, y, inf), axis=-2)  # (..., k)
        constant, sst = _compat.as_rank(xp, constant, sse.ndim), _compat.as_rank(xp, sst, sse.ndim)
        r2 = 1 - sse / xp.where(constant, xp.ones_like(sst), sst)
        return xp.where(constant, xp.where(sse == 0, xp.ones_like(r2), xp.zeros_like(r2)), r2)
    return -sse / _compat.as_rank(xp, total, sse.ndim)


def _fold_scores_batched(xp, data, alphas, fold, how):
    """The held-out scores (a, ..., k) of one ``fold`` (train, test) of ``data`` ``(X, Y, root)``, ``how.batch``
    targets and one penalty at a time (``how``: :class:`FoldFit`): the training rows are factorized once (without
    targets); each block of targets is centered with the fold's weights and projected on the factors
    (``spectral.project``)."""
    (X, Y, root), (train, test) = data, fold
    fit_intercept, scoring, mode, batch = how
    Xtr, rtr, Xte = _take(xp, X, train), _take(xp, root, train), _take(xp, X, test)
    w_test = None if root is None else _take(xp, root * root, test)
    x_off = offset_sq = None
    if fit_intercept:  # X alone (no targets): centered and weighted, the intercept kept
        Xe, _, x_off, _, offset_sq = eliminate_intercept(xp, Xtr, Xtr[..., :0], rtr, eliminate=False)
    else:
        Xe = Xtr if rtr is None else rtr * Xtr
    route = spectral.svd if mode == "svd" else spectral.gram
    spec = route(xp, Xe, Xe[..., :0], offset_sq, samples=True)

    G = _test_basis(xp, spec, Xte, x_off)

    def block(Yb):
        Ytr = _take(xp, Yb, train)
        if fit_intercept:
            Ye, _, y_off, _, _ = eliminate_intercept(xp, Ytr, Ytr[..., :0], rtr, eliminate=False)
        else:
            Ye = Ytr if rtr is None else rtr * Ytr
        sb = spec._replace(P=spectral.project(xp, spec, Ye))
        Yte, rows = _take(xp, Yb, test), []
        for i in range(alphas.shape[0]):
            pred = _predict(xp, sb, G, alphas[i : i + 1])  # (1, ..., m_test, b)
            pred = pred + _compat.as_rank(xp, y_off, pred.ndim) if fit_intercept else pred
            rows.append(fold_score(xp, Yte, pred, w_test, scoring))
        return (xp.concat(rows, axis=0),)

    return _compat.over_columns(xp, block, (Y,), batch)[0]


def kfold_scores(xp, data, alphas, pairs, how, undefined=()):
    """Scores (a, ..., k), the mean over folds, and the per-fold scores (a, ..., f, k), of the folds ``pairs``
    (train, test) of ``data`` ``(X, Y, root)``, each fitted and scored as ``how`` (:class:`FoldFit`) says; with
    ``how.batch``, that many targets and one penalty at a time (memory O(batch (m + a)) beyond the factors). The
    ``undefined`` folds (:func:`undefined_folds`) are not fitted: NaN per fold, left out of the mean."""
    _, Y, root = data
    per_fold = []
    for i, fold in enumerate(pairs):
        if i in undefined:
            per_fold.append(None)
            continue
        if how.batch is not None:
            per_fold.append(_fold_scores_batched(xp, data, alphas, fold, how))
            continue
        pred = _fold_predictions(xp, data, alphas, fold, how.fit_intercept, how.mode)
        w_test = None if root is None else _take(xp, root * root, fold[1])
        per_fold.append(fold_score(xp, _take(xp, Y, fold[1]), pred, w_test, how.scoring))
    scored = [s for s in per_fold if s is not None]
    nan = xp.full_like(scored[0], float("nan"))
    stacked = xp.stack([nan if s is None else s for s in per_fold], axis=-2)  # (a, ..., f, k)
    return xp.mean(xp.stack(scored, axis=-2), axis=-2), stacked


def gcv_scores(xp, spec, alphas, Y, root, fit_intercept):
    """Generalized cross-validation (Golub, Heath and Wahba) from the factorization of all
    (centered, weighted) samples: ``(1/m) sum_i w_i r_i**2 / (1 - df/m)**2`` with
    ``df = tr(H)`` (plus one for the unpenalized intercept). Returns minus that (a, ..., k)
    and the per-sample terms (a, ..., m, k)."""
    m = Y.shape[-2]
    f = spectral.filters(xp, spec, alphas)  # (a, ..., p)
    fitted = spectral.over_alphas(xp, spec.F, f[..., None] * _compat.as_rank(xp, spec.P, f.ndim + 1))
    resid = _compat.as_rank(xp, Y, fitted.ndim) - fitted  # weighted residuals
    df = xp.sum(f * _compat.as_rank(xp, spec.lam, f.ndim), axis=-1) + (1.0 if fit_intercept else 0.0)  # (a, ...)
    den = (1 - df / m)[..., None, None]
    terms = resid * resid / (den * den)  # (a, ..., m, k)
    return -xp.mean(terms, axis=-2), terms


def score_predictions(xp, y, pred, w, scoring):
    """Scores (a, ..., k) of predictions (a, ..., m, k) of ``y``, as a held-out fold is scored:
    ``ridge_cv``'s leave-one-out predictions with a ``scoring``."""
    return fold_score(xp, y, pred, w, scoring)
