"""Efficient leave-one-out cross-validation of ridge over a grid of penalties."""

from __future__ import annotations

from typing import Any, NamedTuple

from .._backend import _compat
from .._backend._compat import matmul
from .._problem._center import eliminate_intercept
from .._problem._empty import pad_empty_batch
from .._problem._input import Penalty, check_bool, check_count, failure, operator_route, validate
from .._problem._prepare import intercept_of, prepare
from .._problem._scaling import unscale_cv
from .._result import plain_signature
from .._solvers import spectral
from .._types import Array, CVMode
from . import _kfold, _scoring
from ._operator_cv import ridge_cv_operator

MODES = ("auto", "eigen", "svd")


@plain_signature
class RidgeCVResult(NamedTuple):
    """Result of :func:`ridge_cv` (a NamedTuple, hence a JAX pytree).

    Shapes for X of shape (..., m, n), y of shape (..., m) or (..., m, k), ``a`` penalties; the
    alpha axis of the per-penalty fields comes first, as in a ridge path.

    Attributes
    ----------
    coef : array, shape (..., n) or (..., n, k)
        Coefficients refitted on all samples with the chosen penalty (per target with
        ``alpha_per_target``).
    intercept : array, shape (...) or (..., k)
        Intercept of that fit (zeros when ``fit_intercept=False``).
    alpha : array, shape (...), or (..., k) with ``alpha_per_target`` and a 2-D ``y``
        The chosen penalty: ``alphas[best_index]``.
    best_index : integer array, same shape as ``alpha``
        Index of the chosen penalty in ``alphas`` (the first one on ties, as scikit-learn).
    cv_values : array, shape (a, ..., m) or (a, ..., m, k); (a, ..., f) or (a, ..., f, k) for f folds; or None
        Leave-one-out: the squared errors, ``w_i * (y_i - yhat_{-i})**2`` with sample weights,
        or with a ``scoring`` the predictions ``yhat_{-i}`` (as scikit-learn's ``cv_results_``,
        whose alpha axis is last). ``cv="gcv"``: the terms
        ``w_i r_i**2 / (1 - df/m)**2`` whose mean is the GCV criterion. Held-out folds: each
        fold's score (NaN where undefined: ``"r2"`` on one sample). None for leave-one-out and
        GCV with ``target_batch``.
    scores : array, shape (a, ...) or (a, ..., k)
        Per penalty and target, higher is better: minus the mean of ``cv_values`` (leave-one-out,
        GCV), the ``scoring`` of the leave-one-out predictions, or the mean over folds of the
        fold scores; the chosen penalty maximizes it (averaged over targets unless
        ``alpha_per_target``). A scorer that sees all targets at once (a callable or a
        scikit-learn scorer, without ``alpha_per_target``) gives one score per penalty, repeated
        in every target's column. scikit-learn's ``best_score_`` is
        ``scores[best_index]`` averaged over targets, or per target with ``alpha_per_target``.
    """

    coef: Any
    intercept: Any
    alpha: Any
    best_index: Any
    cv_values: Any
    scores: Any


def _loo(xp, spec, alphas, Y, lev0):
    """Squared leave-one-out errors (a, ..., m, k) of every penalty from one factorization:
    e_i = r_i / (1 - H_ii), with H the hat matrix of [1, X] (intercept unpenalized; ``lev0`` its
    intercept part w_i / sum(w), or None), all penalties by broadcasting and two products."""
    f = spectral.filters(xp, spec, alphas)  # (a, ..., p)
    fP = f[..., None] * _compat.as_rank(xp, spec.P, f.ndim + 1)
    resid = _compat.as_rank(xp, Y, fP.ndim) - spectral.over_alphas(xp, spec.F, fP)  # (a, ..., m, k)
    lev = spectral.over_alphas(xp, spec.L, f[..., None])[..., 0]  # (a, ..., m)
    if lev0 is not None:
        lev = lev + _compat.as_rank(xp, lev0, lev.ndim)
    e = resid / (1 - lev)[..., None]
    return e * e


def _loo_predictions(xp, spec, alphas, G, Y0, y_off, lev0):
    """Leave-one-out predictions (a, ..., m, k) of every penalty, in y's units: ``y_i - r_i / (1 - H_ii)``, ``r``
    the (unweighted) residual of the fit on all samples. ``G`` (..., m, p): the rows of X (centered with the fit's
    means, unweighted) in the factorization's basis. A zero-weight sample (no influence) gets the fit's prediction,
    not 0/0."""
    f = spectral.filters(xp, spec, alphas)  # (a, ..., p)
    pred = spectral.over_alphas(xp, G, f[..., None] * _compat.as_rank(xp, spec.P, f.ndim + 1))  # (a, ..., m, k)
    if y_off is not None:
        pred = pred + _compat.as_rank(xp, y_off, pred.ndim)
    lev = spectral.over_alphas(xp, spec.L, f[..., None])[..., 0]  # (a, ..., m)
    if lev0 is not None:
        lev = lev + _compat.as_rank(xp, lev0, lev.ndim)
    Y0 = _compat.as_rank(xp, Y0, pred.ndim)
    return Y0 - (Y0 - pred) / (1 - lev)[..., None]


def _refit(xp, spec, alpha):
    """Coefficients (..., n, k) for one penalty per problem and target: ``alpha`` (..., kα),
    kα in {1, k}."""
    f = spectral.inverse(xp, spec.lam[..., :, None] + alpha[..., None, :], spec.cut[..., :, None])
    return matmul(xp, spec.V, f * spec.P)  # f: (..., p, kα)


def _scores_batched(xp, spec, alphas, Y, lev0, gcv, batch, scored=None):
    """Leave-one-out (or, with ``gcv`` = (root, fit_intercept), GCV) scores (a, ..., k),
    ``batch`` targets and one penalty at a time: working memory O(m batch) beyond the factors.
    Each block's P comes from the sample-space factor (``spectral.project``). ``scored``:
    (G, Y0, y_off, w, scoring) to score the leave-one-out predictions instead."""

    def block(Yb, *rest):
        sb = spec._replace(P=spectral.project(xp, spec, Yb))
        rows = []
        for i in range(alphas.shape[0]):
            a = alphas[i : i + 1]
            if scored is not None:
                G, _, _, w, scoring = scored
                pred = _loo_predictions(xp, sb, a, G, rest[0], rest[1] if len(rest) > 1 else None, lev0)
                rows.append(_kfold.score_predictions(xp, rest[0], pred, w, scoring))
            elif gcv is None:
                rows.append(-xp.mean(_loo(xp, sb, a, Yb, lev0), axis=-2))
            else:
                rows.append(_kfold.gcv_scores(xp, sb, a, Yb, *gcv)[0])
        return (xp.concat(rows, axis=0),)

    more = () if scored is None else tuple(a for a in scored[1:3] if a is not None)
    return _compat.over_columns(xp, block, (Y, *more), batch)[0]


def _refit_batched(xp, spec, alpha, Y, batch):
    """:func:`_refit` a block of ``batch`` targets at a time; ``alpha`` (..., k) or (..., 1)."""

    def block(Yb, *ab):
        return (_refit(xp, spec._replace(P=spectral.project(xp, spec, Yb)), ab[0] if ab else alpha),)

    per_target = alpha.shape[-1] == Y.shape[-1] and alpha.shape[-1] > 1
    return _compat.over_columns(xp, block, (Y, alpha) if per_target else (Y,), batch)[0]


@operator_route(lambda *args, **kwargs: RidgeCVResult(*ridge_cv_operator(*args, **kwargs)))
def ridge_cv(
    X: Array,
    y: Array,
    /,
    alphas: Array,
    *,
    fit_intercept: bool = True,
    sample_weight: Array | None = None,
    alpha_per_target: bool = False,
    mode: CVMode = "auto",
    check_finite: bool = True,
    cv: Any = None,
    scoring: Any = None,
    groups: Array | None = None,
    target_batch: int | None = None,
) -> RidgeCVResult:
    """Ridge with the penalty chosen by cross-validation: efficient leave-one-out (default),
    generalized cross-validation, or held-out folds.

    Every penalty's leave-one-out errors come from ONE factorization (scikit-learn's
    ``RidgeCV(cv=None)``, ``gcv_mode`` "eigen"/"svd"): with H the hat matrix of ``[1, X]``
    (intercept unpenalized) for penalty alpha, the error of sample i left out is
    ``r_i / (1 - H_ii)``, ``r`` the residual of the fit on all samples. Sample weights scale the
    squared errors by ``w_i`` and the score is their plain mean, exactly as scikit-learn does.

    A sparse X (SciPy, PyTorch, JAX, CuPy): leave-one-out and GCV by the eigendecomposition of its
    Gram matrix (``mode`` "auto" or "eigen", formed by a sparse product, never an m x n array);
    held-out folds of a SciPy sparse X from each fold's Gram matrix, by LSMR past 512 columns (see
    the sparse page).

    Precision: float32 data are validated and scaled in float32, then cast (exactly) to float64
    where the library has float64 on X's device (NumPy, PyTorch, CuPy, Dask, JAX with x64
    enabled, array-api-strict): centering, the factorization (Gram matrix and its
    eigendecomposition, or QR and SVD), the per-sample leave-one-out and GCV terms, the fold
    predictions and the refit all run in float64, as scikit-learn computes float32 input, and
    the results are rounded to float32 once. This costs float64 copies of X and y and float64
    matrix products. Where float64 is missing (JAX without x64, or a device whose namespace
    info lacks float64), everything runs in float32, with errors of order eps32 times the
    condition number of the regularized Gram matrix.

    Parameters
    ----------
    X : array, shape (m, n) or (..., m, n)
    y : array, shape (m,), (m, k), (..., m) or (..., m, k)
    alphas : float or 1-D array of shape (a,)
        Positive penalties to choose from (``alpha ||w||^2`` next to the plain sum of squares, as
        :func:`ridge`); held-out folds also take 0 (least squares, minimum norm). May be traced
        under ``jax.jit``.
    fit_intercept : bool
    sample_weight : array, shape (m,) or (..., m), optional
    alpha_per_target : bool
        Choose a penalty per column of ``y`` (scikit-learn's ``alpha_per_target``); otherwise
        one penalty minimizing the error averaged over targets.
    mode : {"auto", "eigen", "svd"}
        ``"eigen"``: eigendecomposition of ``X^T X`` (tall X) or ``X X^T`` (wide X), error
        ~ eps * cond of the regularized Gram matrix at the smallest alpha. ``"svd"``: QR with Q
        formed, then the SVD of R (tall), or the SVD of X (wide): error ~ eps * sqrt of that,
        about 3x the work. ``"auto"``: ``"eigen"`` unless that condition number exceeds
        ``eps**-0.5 / 64``, then ``"svd"`` (a traced branch under ``jax.jit``).
    check_finite : bool
        As in :func:`lstsq`.
    cv : None, "gcv", int, splitter or iterable of (train, test) index arrays
        ``None``: efficient leave-one-out (above). ``"gcv"``: generalized cross-validation,
        ``mean_i(w_i r_i**2) / (1 - df/m)**2`` with ``df`` the trace of the hat matrix (plus one
        for the intercept), from the same one factorization. An integer k >= 2: k contiguous
        folds without shuffling (scikit-learn's ``KFold(k)``); a scikit-learn splitter (its
        ``split`` gets placeholders for X and y, and ``groups``); or (train, test) index pairs.
        Each fold's training rows are factorized once (``mode``: eigendecomposition of their
        Gram matrix, or SVD), which gives the held-out predictions of every penalty; each fold
        fits its own intercept. Static under ``jax.jit``.
    scoring : None, str or callable
        Higher is better. ``None``: the squared error (leave-one-out: the mean of
        ``cv_values``; held-out folds: minus the weighted mean squared error). Otherwise the
        leave-one-out predictions, or each fold's held-out predictions (the mean over folds), are
        scored as scikit-learn scores them, with ``sample_weight``: a scikit-learn scorer name
        (``"neg_mean_squared_error"``, ``"r2"``, ``"explained_variance"``,
        ``"neg_root_mean_squared_error"`` and ``"neg_mean_absolute_error"`` are computed here on
        any library and device, averaged uniformly over targets; other names call scikit-learn's
        scorer), or a callable ``scoring(y_true, y_pred, sample_weight)`` returning a number
        (2-D X, eager arrays). A callable or scikit-learn scorer is given all targets at once
        (2-D arrays, as scikit-learn's ``RidgeCV`` calls multi-output scorers) unless
        ``alpha_per_target``, then one column at a time. ``cv="gcv"`` takes None only.
        ``"r2"`` on held-out folds as scikit-learn's ``r2_score``: a fold of constant targets
        scores 0 (1 if predicted exactly); a fold of one sample is undefined: NaN in
        ``cv_values``, with a warning, and left out of the mean; every fold of one sample
        (``cv=m``) raises ``ValueError`` (leave-one-out with ``cv=None`` scores all the
        predictions at once, where R² is defined).
    groups : array, optional
        Group labels passed to a splitter's ``split`` (``GroupKFold``).
    target_batch : int, optional
        Score ``target_batch`` columns of ``y`` at a time, one penalty at a time, for y with
        many columns: beyond X and y, working memory O(n^2 + m n + target_batch (m + a))
        rather than O(a m k) (the factorization's factors, made once, serve every block; the
        coefficients are refitted block by block too). ``cv_values`` is then None for
        leave-one-out and GCV (it is a (a, m, k) array); held-out folds still return their
        per-fold scores. Static under ``jax.jit``, where the blocks run as one ``lax.map``.

    Returns
    -------
    RidgeCVResult
        ``coef``, ``intercept``, ``alpha``, ``best_index``, ``cv_values``, ``scores`` (shapes in
        :class:`RidgeCVResult`), in the namespace, device and float dtype of the inputs.

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3)); y = X @ np.array([1.0, -2.0, 0.5]) + rng.standard_normal(40)
    >>> r = lsq.ridge_cv(X, y, np.logspace(-3, 3, 13))
    >>> r.cv_values.shape, r.scores.shape, float(r.alpha) == 10.0 ** (-3 + 0.5 * int(r.best_index))
    ((13, 40), (13,), True)
    """
    if mode not in MODES:
        msg = f"mode must be one of {', '.join(map(repr, MODES))}; got {mode!r}"
        raise ValueError(msg)
    fit_intercept = check_bool(fit_intercept, "fit_intercept")
    alpha_per_target = check_bool(alpha_per_target, "alpha_per_target")
    check_finite = check_bool(check_finite, "check_finite")
    _scoring.check(scoring)
    target_batch = check_count(target_batch, "target_batch")
    held_out = cv is not None and not (isinstance(cv, str) and cv == "gcv")
    if isinstance(cv, str) and cv != "gcv":
        msg = f"cv must be None, 'gcv', an integer >= 2, a splitter or an iterable of (train, test); got {cv!r}"
        raise ValueError(msg)
    if scoring not in (None, "neg_mean_squared_error") and cv is not None and not held_out:
        msg = "cv='gcv' scores the generalized cross-validation criterion; scoring must be None there"
        raise ValueError(msg)
    joint = not alpha_per_target and scoring is not None and (callable(scoring) or scoring not in _scoring.NATIVE)
    if joint and target_batch is not None:
        msg = "a callable or scikit-learn scorer scores all targets at once: it needs target_batch=None (or alpha_per_target=True)"
        raise ValueError(msg)
    penalty = Penalty(alphas, name="alphas")
    v = validate(X, y, sample_weight, fit_intercept=fit_intercept, check_finite=check_finite, penalty=penalty)
    problem = prepare(v, eliminate=False, keep_original=True, defer_checks=True, scale="shared")
    xp, Xc, Yc, alphas = problem.xp, problem.X, problem.Y, problem.alpha
    m = Xc.shape[-2]
    if m < 2:
        msg = f"cross-validation needs at least 2 samples; X has {m}"
        raise ValueError(msg)
    pairs = _kfold.folds(cv, m, groups) if held_out else None
    undefined = _kfold.undefined_folds(pairs, scoring) if held_out else ()
    # Read with the other value checks, in one host read, before any factorization.
    checks = problem.checks
    assert checks is not None  # prepared with defer_checks
    if not _compat.is_lazy(alphas) and not held_out:  # held-out folds take alpha = 0, as scikit-learn
        msg = "alphas must be positive for leave-one-out and GCV (held-out folds, cv=k, also take 0)"
        checks.add(xp.all(alphas > 0), failure(ValueError, msg))
    checks.read(xp)
    problem, cut = pad_empty_batch(problem)  # Dask fails on a batch with no problems
    out_dtype = problem.X.dtype
    wide = _compat.float64_for(xp, _compat.device(problem.X)) if out_dtype == xp.float32 else None
    if wide is not None:
        problem = _in_float64(xp, problem, fit_intercept, wide)
    Xc, Yc, alphas = problem.X, problem.Y, problem.alpha
    lev0 = None
    if fit_intercept:
        root = problem.original[2]
        w = xp.ones_like(Xc[..., :1]) if root is None else root * root  # (..., m, 1)
        lev0 = (w / xp.sum(w, axis=-2, keepdims=True))[..., 0]

    batch = target_batch
    gcv = (problem.original[2], fit_intercept) if cv is not None else None
    unit = None if problem.scale is None else problem.scale.target
    vector = problem.y_was_vector
    scoring = _scoring.bind(scoring, joint=not alpha_per_target, vector=vector, unit=unit)
    predictions = cv is None and scoring is not None  # leave-one-out predictions, scored

    def evaluate(spec):
        if pairs is not None:
            how = _kfold.FoldFit(fit_intercept, scoring, mode, batch)
            scores, values = _kfold.kfold_scores(xp, problem.original, alphas, pairs, how, undefined)
        elif predictions:
            X0, Y0, root0 = problem.original
            x_off = problem.x_offset
            G = spec.F if root0 is None else matmul(xp, X0 if x_off is None else X0 - x_off, spec.V)
            w = None if root0 is None else root0 * root0
            if batch is not None:
                scored = (G, Y0, problem.y_offset, w, scoring)
                scores, values = _scores_batched(xp, spec, alphas, Yc, lev0, None, batch, scored), None
            else:
                values = _loo_predictions(xp, spec, alphas, G, Y0, problem.y_offset, lev0)
                scores = _kfold.score_predictions(xp, Y0, values, w, scoring)
        elif batch is not None:
            scores, values = _scores_batched(xp, spec, alphas, Yc, lev0, gcv, batch), None
        elif gcv is not None:
            scores, values = _kfold.gcv_scores(xp, spec, alphas, Yc, *gcv)
        else:
            values = _loo(xp, spec, alphas, Yc, lev0)  # (a, ..., m, k)
            scores = -xp.mean(values, axis=-2)  # (a, ..., k)
        mse = -scores
        best = _compat.arg_best(xp, mse if alpha_per_target else xp.mean(mse, axis=-1), 0)  # (..., k) or (...)
        alpha = xp.reshape(xp.take(alphas, xp.reshape(best, (-1,)), axis=0), tuple(best.shape))
        chosen = alpha if alpha_per_target else alpha[..., None]
        coef = _refit(xp, spec, chosen) if batch is None else _refit_batched(xp, spec, chosen, Yc, batch)
        return coef, alpha, best, values, scores

    # Leave-one-out and GCV need the sample-space factors F, L; so does a batched refit (each
    # block's P from F), whose factorization is made without targets.
    samples = pairs is None or batch is not None
    Yf = Yc if batch is None else Yc[..., :0]
    if mode == "svd":
        out = evaluate(spectral.svd(xp, Xc, Yf, problem.offset_sq, samples=samples))
    else:
        spec = spectral.gram(xp, Xc, Yf, problem.offset_sq, samples=samples)
        if mode == "eigen":
            out = evaluate(spec)
        else:
            out = _compat.branch(
                xp,
                spectral.auto_ok(xp, spec, alphas, Xc),
                lambda X, Y: evaluate(spec),
                lambda X, Y: evaluate(spectral.svd(xp, X, Y, problem.offset_sq, samples=samples)),
                (Xc, Yf),
            )
    coef, alpha, best, values, scores = out
    intercept = intercept_of(xp, problem, coef, fit_intercept)
    # Leave-one-out and GCV errors are weighted sums of squares (scaled back by y's and the
    # weights' factors), held-out folds' and scored leave-one-out predictions' weighted means
    # of squares (by y's alone); R^2 is scale-free, and the other scorers saw the targets in
    # the caller's units (``_scoring.Scorer.unit``).
    squared = scoring in (None, "neg_mean_squared_error")
    errors = None if not squared else "means" if pairs is not None or predictions else "sums"
    coef, intercept, alpha, values_u, scores = unscale_cv(
        xp, problem.scale, best, (coef, intercept, alpha, None if predictions else values, scores), errors=errors
    )
    if not predictions:
        values = values_u
    elif values is not None and unit is not None:
        values = values * unit
    if problem.y_was_vector:
        coef, intercept, scores = coef[..., 0], intercept[..., 0], scores[..., 0]
        values = None if values is None else values[..., 0]
        if alpha_per_target:
            alpha, best = alpha[..., 0], best[..., 0]
    if wide is not None:
        coef, intercept, alpha, values, scores = (
            None if a is None else xp.astype(a, out_dtype) for a in (coef, intercept, alpha, values, scores)
        )
    return RidgeCVResult(cut(coef), cut(intercept), cut(alpha), cut(best), cut(values, 1), cut(scores, 1))


def _in_float64(xp, problem, fit_intercept, wide):
    """The prepared float32 problem in the wider float ``wide``: the data cast (exactly) and
    centered again, as :func:`prepare` centered them, so that centering, the factorization and
    the per-sample errors carry float64 rounding, not float32's."""
    X0, Y0, root = (None if a is None else xp.astype(a, wide) for a in problem.original)
    x_off = y_off = offset_sq = None
    if fit_intercept:
        Xc, Yc, x_off, y_off, offset_sq = eliminate_intercept(xp, X0, Y0, root, False)
    else:
        Xc, Yc = (X0, Y0) if root is None else (root * X0, root * Y0)
    return problem._replace(
        X=Xc, Y=Yc, alpha=xp.astype(problem.alpha, wide), x_offset=x_off, y_offset=y_off, offset_sq=offset_sq,
        original=(X0, Y0, root),
    )  # fmt: skip
