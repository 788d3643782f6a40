"""``ridge_cv``'s ``scoring`` beyond the squared error and R² (which ``_kfold`` scores itself).

Any scikit-learn scorer name works, as in scikit-learn's ``RidgeCV``: ``explained_variance``,
``neg_root_mean_squared_error`` and ``neg_mean_absolute_error`` are computed here, in the
arrays' namespace and on their device, as scikit-learn's metrics define them (weighted,
averaged uniformly over targets); any other name calls scikit-learn's scorer of that name. A
callable is ``scoring(y_true, y_pred, sample_weight)``. As in scikit-learn, a callable or a
scikit-learn scorer sees all targets at once (2-D arrays, one number per penalty) unless
``alpha_per_target`` asks for one penalty per target (then one column at a time).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._backend import _compat

#: Names scored without scikit-learn (the first two by ``_kfold``).
NATIVE = (
    "neg_mean_squared_error",
    "r2",
    "explained_variance",
    "neg_root_mean_squared_error",
    "neg_mean_absolute_error",
)


def _sklearn_names():
    try:
        from sklearn.metrics import get_scorer_names
    except ImportError:
        return ()
    return tuple(get_scorer_names())


def check(scoring):
    """Raise ``ValueError`` unless ``scoring`` is None, a callable, or a scorer name."""
    if scoring is None or callable(scoring) or scoring in NATIVE:
        return
    if isinstance(scoring, str) and scoring in _sklearn_names():
        return
    hint = "" if _sklearn_names() else " (other scikit-learn scorer names need scikit-learn)"
    msg = f"scoring must be None, a callable or a scikit-learn scorer name such as {', '.join(map(repr, NATIVE))}{hint}; got {scoring!r}"
    raise ValueError(msg)


def bind(scoring, *, joint, vector, unit):
    """``scoring`` as ``_kfold`` takes it: None and the two names it scores itself unchanged,
    anything else as a :class:`Scorer`."""
    if scoring is None or scoring in ("neg_mean_squared_error", "r2"):
        return scoring
    return Scorer(scoring, joint and scoring not in NATIVE, vector, unit)


class Scorer(NamedTuple):
    """A scoring bound to one fit: ``how`` (a native name, a scikit-learn name or a callable);
    ``joint``: all targets in one call; ``vector``: y was 1-D (columns are passed 1-D);
    ``unit``: the factor that takes the (scaled) targets back to the caller's units, or None."""

    how: Any
    joint: bool
    vector: bool
    unit: Any

    def __call__(self, xp, y, pred, w):
        """Scores (a, ..., k) of predictions ``pred`` (a, ..., m, k) of ``y`` (..., m, k), weights
        ``w`` (..., m, 1) or None; higher is better."""
        if self.how in NATIVE:  # homogeneous of degree 1 or 0 in y: scaled after (no overflow)
            scores = _native(xp, y, pred, w, self.how)
            return scores if self.unit is None or self.how == "explained_variance" else scores * self.unit
        if self.unit is not None:
            y, pred = y * self.unit, pred * self.unit
        return _host_scores(xp, y, pred, w, self)


def _native(xp, y, pred, w, name):
    ww = xp.ones_like(y[..., :1]) if w is None else w
    y, ww = _compat.as_rank(xp, y, pred.ndim), _compat.as_rank(xp, ww, pred.ndim)  # pred's leading alpha axis
    total = xp.sum(ww, axis=-2)  # (..., 1)
    r = y - pred
    if name == "neg_mean_absolute_error":
        return -xp.sum(ww * xp.abs(r), axis=-2) / total
    if name == "neg_root_mean_squared_error":
        return -xp.sqrt(xp.sum(ww * r * r, axis=-2) / total)
    # explained_variance: 1 - Var_w(y - pred) / Var_w(y); a constant target scores 1 if it is
    # predicted up to a constant, else 0 (scikit-learn's force_finite).
    r_c = r - xp.sum(ww * r, axis=-2, keepdims=True) / total[..., None, :]
    y_c = y - xp.sum(ww * y, axis=-2, keepdims=True) / total[..., None, :]
    num = xp.sum(ww * r_c * r_c, axis=-2)
    den = xp.sum(ww * y_c * y_c, axis=-2)
    safe = xp.where(den > 0, den, xp.ones_like(den))
    return xp.where(den > 0, 1 - num / safe, xp.where(num == 0, xp.ones_like(num), xp.zeros_like(num)))


def _identity():
    """A fitted scikit-learn regressor whose ``predict`` returns its input: scikit-learn's
    scorers are called with the predictions in place of X."""

    def make():
        from sklearn.base import BaseEstimator, RegressorMixin

        class Identity(RegressorMixin, BaseEstimator):
            def fit(self, X, y=None):
                return self

            def predict(self, X):
                return X

        return Identity().fit(None)

    return _compat.memo("identity regressor", make)


def sklearn_callable(scorer):
    """A scikit-learn scorer ``scorer(estimator, X, y_true, **kw)`` as a ``ridge_cv`` callable
    ``(y_true, y_pred, sample_weight)``: the sample weights go to it when given, as
    scikit-learn's ``RidgeCV`` passes them."""

    def score(y_true, y_pred, sample_weight):
        kw = {} if sample_weight is None else {"sample_weight": sample_weight}
        return scorer(_identity(), y_pred, y_true, **kw)

    return score


def _host_scores(xp, y, pred, w, scorer):
    """A callable (or a scikit-learn scorer) per penalty, on all targets at once or column by
    column: a Python loop, eager arrays, 2-D problems only."""
    if y.ndim != 2:
        msg = "a callable or scikit-learn scoring takes 2-D X only (no stacks of problems)"
        raise ValueError(msg)
    fn = scorer.how
    if isinstance(fn, str):
        from sklearn.metrics import get_scorer

        fn = sklearn_callable(get_scorer(fn))
    a, k = pred.shape[0], y.shape[-1]
    wv = None if w is None else w[:, 0]
    dev = _compat.device(y)
    if scorer.joint and not scorer.vector:
        rows = [[float(fn(y, pred[i, ...], wv))] * k for i in range(a)]
    else:
        rows = [[float(fn(y[:, j], pred[i, :, j], wv)) for j in range(k)] for i in range(a)]
    return xp.asarray(rows, dtype=y.dtype, device=dev)
