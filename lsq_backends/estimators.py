"""scikit-learn-compatible estimators on any array-API library.

``LinearRegression`` and ``Ridge`` wrap :func:`lsq_backends.lstsq` and :func:`lsq_backends.ridge`.
Fitted attributes live in the namespace and on the device of the training data, and
``predict`` answers in that namespace. scikit-learn is optional: the estimators subclass its
``BaseEstimator`` where it is installed and keep its interface, duck-typed, where it is not.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ._api import lstsq, ridge
from ._backend import _compat
from ._nnls import NNLSResult, nnls
from ._operator_fit import fit_nnls, method_for
from ._problem._input import check_alpha_type, check_bool
from ._problem._operator import is_operator_input
from ._ridge._cv import ridge_cv
from ._ridge._scoring import sklearn_callable
from ._sklearn._estimator_base import LinearModelBase
from ._solvers import DEFAULT, check_method, record

__all__ = ["LinearRegression", "Ridge", "RidgeCV"]


class LinearRegression(LinearModelBase):
    """Ordinary (or weighted) least squares, as scikit-learn's ``LinearRegression``.

    Parameters
    ----------
    fit_intercept : bool, default True
        Fit an unpenalized intercept.
    method : {"auto", "normal", "qr", "svd", "lsqr"}, default "auto"
        Solver of :func:`lsq_backends.lstsq`. Every method returns the minimum-norm solution
        on rank-deficient data.
    rcond : float in [0, 1) or None
        Relative singular-value cutoff; default ``eps * max(m, n)``.
    tol : float in [0, 1) or None, default None
        The stopping tolerance of an iterative fit (``atol`` and ``btol`` of
        :func:`lsq_backends.lstsq`, as scikit-learn's ``tol`` for LSQR): ``method="lsqr"``, and
        every fit of a sparse X that runs LSMR (``"auto"`` included); None: lstsq's default
        ``max(1e-6, 100 eps)``. The direct methods ignore it, as scikit-learn's do.
    check_finite : bool, default True
        Refuse NaN and infinity in ``X``, ``y`` and ``sample_weight`` (eager arrays only).
    positive : bool, default False
        Constrain the coefficients to be non-negative (the intercept stays free): solved by
        :func:`lsq_backends.nnls` (a sparse X by its active-set method on X's Gram matrix);
        ``method`` must then be ``"auto"`` and ``rcond`` None.

    Attributes
    ----------
    coef_ : array, shape (n_features,) or (n_targets, n_features)
    intercept_ : array, shape () or (n_targets,)
        Zeros when ``fit_intercept=False``.
    rank_ : integer array, shape ()
        Numerical rank of the centered, weighted X (not with ``positive=True``).
    singular_ : array, shape (min(m', n_features),), or None
        Singular values of the centered, weighted X, for ``method="svd"`` only (``m' = m - 1``
        with an intercept).
    n_iter_ : integer array, shape () or (n_targets,)
        With ``positive=True`` or ``method="lsqr"`` only: the iterations each target took.
    method_ : str
        The method that fitted (scikit-learn's ``solver_``): ``method`` itself for a dense X
        (``"auto"`` stays ``"auto"``: the normal equations with their certified fallbacks); for
        a sparse or operator X the one that fitted in its stead (``"normal"``, the Gram matrix
        formed by a sparse product, or ``"lsmr"``); ``"nnls"`` with ``positive=True``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from lsq_backends import LinearRegression
    >>> X = np.array([[1.0], [2.0], [3.0]]); y = np.array([1.0, 2.0, 2.0])
    >>> reg = LinearRegression().fit(X, y)
    >>> np.round([float(reg.intercept_), float(reg.coef_[0])], 6).tolist()
    [0.666667, 0.5]
    >>> np.round(reg.predict(np.array([[4.0]])), 6).tolist()
    [2.666667]
    """

    def __init__(self, *, fit_intercept=True, method="auto", rcond=None, tol=None, check_finite=True, positive=False):
        self.fit_intercept = fit_intercept
        self.method = method
        self.rcond = rcond
        self.tol = tol
        self.check_finite = check_finite
        self.positive = positive

    @_compat.on_input_device
    def fit(self, X, y, sample_weight=None, absorb=None):
        """Fit on ``X`` (m, n_features) and ``y`` (m,) or (m, n_targets); returns ``self``. ``absorb``: integer
        codes (m,) or (m, K) of fixed effects, partialled out first (:func:`lsq_backends.lstsq`'s ``absorb``):
        ``coef_`` is the fixed-effects regression's, ``intercept_`` zero; ``predict`` gives ``X @ coef_``, without
        the fixed effects (they are not estimated). Not with ``positive=True``."""
        rcond = check_method(self.method, self.rcond)
        tol = _check_tol(self.tol)
        positive = _check_positive(self.positive, self.method, rcond=rcond, absorb=absorb)
        X, y, sample_weight, check_finite, fitted = self._validate_fit(X, y, sample_weight)
        fitted["method_"], tolerances = _method_run(self.method, X, tol, positive)
        if positive:
            return self._store({**fitted, **_positive_fit(self, X, y, sample_weight, 0.0, check_finite)}, _OPTIONAL)
        r = lstsq(
            X,
            y,
            method=self.method,
            rcond=rcond,
            fit_intercept=bool(self.fit_intercept),
            sample_weight=sample_weight,
            check_finite=check_finite,
            absorb=absorb,
            **tolerances,
        )
        fitted.update(self._coef(r), rank_=r.rank, singular_=r.singular_values)
        return self._store({**fitted, **_iterations(r)}, _OPTIONAL)


class Ridge(LinearModelBase):
    """Ridge regression, as scikit-learn's ``Ridge``: ``||y - X w - b||² + alpha ||w||²``.

    Parameters
    ----------
    alpha : float or array of shape (n_targets,), default 1.0
        Non-negative penalty (on the plain, or ``sample_weight``-weighted, sum of squares),
        or one penalty per target column of ``y``.
    fit_intercept : bool, default True
        Fit an intercept, never penalized.
    method : {"auto", "normal", "qr", "svd", "lsqr"}, default "auto"
        Solver of :func:`lsq_backends.ridge`.
    tol : float in [0, 1) or None, default None
        The stopping tolerance of an iterative fit (``atol`` and ``btol``, as scikit-learn's
        ``tol`` for ``solver="lsqr"``): ``method="lsqr"``, and every fit of a sparse X that runs
        LSMR (``"auto"`` included); None: ridge's default ``max(1e-6, 100 eps)``. The direct
        methods ignore it, as scikit-learn's do.
    check_finite : bool, default True
        Refuse NaN and infinity in the inputs (eager arrays only).
    positive : bool, default False
        Constrain the coefficients to be non-negative (the intercept stays free): solved by
        :func:`lsq_backends.nnls` with the penalty (a sparse X by its active-set method on
        X's Gram matrix); ``method`` must then be ``"auto"``.

    Attributes
    ----------
    coef_ : array, shape (n_features,) or (n_targets, n_features)
    intercept_ : array, shape () or (n_targets,)
    n_iter_ : integer array, shape () or (n_targets,)
        With ``positive=True`` or ``method="lsqr"`` only: the iterations each target took.
    method_ : str
        The method that fitted (scikit-learn's ``solver_``): ``method`` itself for a dense X
        (``"auto"`` stays ``"auto"``: the normal equations with their certified fallbacks); for
        a sparse or operator X the one that fitted in its stead (``"normal"``, the Gram matrix
        formed by a sparse product, or ``"lsmr"``); ``"nnls"`` with ``positive=True``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from lsq_backends import Ridge
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); y = np.array([1.0, 2.0, 3.0])
    >>> reg = Ridge(alpha=1.0, fit_intercept=False).fit(X, y)
    >>> np.allclose((X.T @ X + np.eye(2)) @ reg.coef_, X.T @ y)
    True
    """

    def __init__(self, alpha=1.0, *, fit_intercept=True, method="auto", tol=None, check_finite=True, positive=False):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.method = method
        self.tol = tol
        self.check_finite = check_finite
        self.positive = positive

    @_compat.on_input_device
    def fit(self, X, y, sample_weight=None, absorb=None):
        """Fit on ``X`` (m, n_features) and ``y`` (m,) or (m, n_targets); returns ``self``. ``absorb``: fixed
        effects, as in :meth:`LinearRegression.fit`; they are not penalized."""
        check_method(self.method, None)
        tol = _check_tol(self.tol)
        positive = _check_positive(self.positive, self.method, absorb=absorb)
        X, y, sample_weight, check_finite, fitted = self._validate_fit(X, y, sample_weight)
        fitted["method_"], tolerances = _method_run(self.method, X, tol, positive)
        alpha = _alpha_arg(self.alpha, X, "alpha")
        # A vector of penalties is one per target (a 1-D alpha alone would be a path for ridge);
        # a single one, in any form, applies to every target as in scikit-learn.
        per_target = _compat.is_array(alpha) and alpha.ndim > 0
        if per_target and math.prod(alpha.shape) == 1:
            alpha, per_target = _compat.array_namespace(alpha).reshape(alpha, ()), False
        single = y.ndim == 2 and y.shape[1] == 1  # coef_ of shape (n_features,), as scikit-learn
        if positive:
            fit = _positive_fit(self, X, y, sample_weight, alpha, check_finite, single_target_1d=single)
            return self._store({**fitted, **fit}, _OPTIONAL)
        r = ridge(
            X,
            y,
            alpha,
            method=self.method,
            fit_intercept=bool(self.fit_intercept),
            sample_weight=sample_weight,
            check_finite=check_finite,
            per_target=per_target,
            absorb=absorb,
            **tolerances,
        )
        return self._store({**fitted, **self._coef(r, single_target_1d=single), **_iterations(r)}, _OPTIONAL)


# Fitted attributes that only some fits produce (removed when a refit does not).
_OPTIONAL = ("rank_", "singular_", "n_iter_")


def _iterations(result):
    """``n_iter_`` of an LSQR fit (scikit-learn's Ridge has it for its iterative solvers)."""
    return {} if result.n_iter is None else {"n_iter_": result.n_iter}


def _check_tol(tol):
    """``tol`` checked (before any work): None or a number in [0, 1)."""
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 <= tol < 1):
        msg = f"tol must be None or a number in [0, 1) (LSQR's stopping tolerance); got {tol!r}"
        raise ValueError(msg)
    return tol


def _method_run(method, X, tol, positive):
    """``(method_, keywords)``: the method the fit of X runs (``_operator_fit.method_for``: for a sparse X the Gram
    route's or LSMR; "nnls" with ``positive``), and ``tol`` as its ``atol``/``btol`` keywords where that method is
    iterative (none otherwise)."""
    ran = method_for(method, X)
    iterative = tol is not None and record(ran).iterative
    return ("nnls" if positive else ran), ({"atol": float(tol), "btol": float(tol)} if iterative else {})


def _check_positive(positive, method, rcond=None, absorb=None):
    """``positive`` as a bool; with it, the unconstrained solver's options and ``absorb`` are refused."""
    positive = check_bool(positive, "positive")
    if positive and absorb is not None:
        msg = "absorb= is not with positive=True (the non-negative solver takes no fixed effects)"
        raise ValueError(msg)
    if positive and method != DEFAULT:
        msg = f"method={method!r} does not support positive=True, which the non-negative active-set method solves: use method='auto'"
        raise ValueError(msg)
    if positive and rcond is not None:
        msg = f"rcond applies to positive=False; got rcond={rcond!r} with positive=True"
        raise ValueError(msg)
    return positive


def _positive_fit(est, X, y, sample_weight, alpha, check_finite, single_target_1d=False):
    """The fitted attributes of a non-negative fit (:func:`nnls`); warns where a target ran
    out of iterations (eager arrays: one host read)."""
    if is_operator_input(X):  # a sparse X: the active-set method on its Gram matrix
        per_target = getattr(alpha, "ndim", 0) == 1
        fit = fit_nnls(X, y, alpha, fit_intercept=bool(est.fit_intercept), sample_weight=sample_weight,
                       check_finite=check_finite, per_target=per_target)  # fmt: skip
        r = NNLSResult(*fit)
    else:
        r = nnls(
            X, y, alpha=alpha, fit_intercept=bool(est.fit_intercept), sample_weight=sample_weight,
            check_finite=check_finite,
        )  # fmt: skip
    if not _compat.is_lazy(r.converged):
        xp = _compat.array_namespace(r.coef)
        if not bool(xp.all(r.converged)):
            msg = f"{type(est).__name__}(positive=True): the active-set method did not converge within its iteration budget"
            warnings.warn(msg, _convergence_warning(), stacklevel=3)
    return {**est._coef(r, single_target_1d=single_target_1d), "n_iter_": r.n_iter}


def _convergence_warning():
    try:
        from sklearn.exceptions import ConvergenceWarning
    except ImportError:
        return RuntimeWarning
    return ConvergenceWarning


class RidgeCV(LinearModelBase):
    """Ridge with the penalty chosen by cross-validation, as scikit-learn's ``RidgeCV`` (built
    on :func:`lsq_backends.ridge_cv`): efficient leave-one-out by default (every penalty's
    errors from one factorization), or held-out folds (one factorization per fold).

    Parameters
    ----------
    alphas : sequence or 1-D array of positive floats, default (0.1, 1.0, 10.0)
        Penalties to choose from; held-out folds (``cv`` not None) also take 0, as scikit-learn.
    fit_intercept : bool, default True
        Fit an intercept, never penalized.
    alpha_per_target : bool, default False
        Choose a penalty per column of ``y``; otherwise one penalty minimizing the error
        averaged over targets.
    store_cv_results : bool, default False
        Keep the leave-one-out errors (or, with a ``scoring``, predictions) in ``cv_results_``.
    gcv_mode : {"auto", "eigen", "svd"}, default "auto"
        Factorization of :func:`lsq_backends.ridge_cv` (its ``mode``; scikit-learn's name). A
        sparse X has no SVD here: ``"svd"`` falls back to ``"eigen"`` with a ``FutureWarning``,
        as in scikit-learn, which will refuse it from its release 1.11 (and so will RidgeCV).
        Held-out folds of a sparse X are fitted from each fold's Gram matrix (by LSMR past 512
        columns), whatever ``gcv_mode`` says.
    cv : None, "gcv", int, splitter or iterable of (train, test), default None
        ``None``: leave-one-out; otherwise as :func:`lsq_backends.ridge_cv`'s ``cv`` (an integer
        k: ``KFold(k)``). Groups for a splitter go to ``fit(..., groups=...)``.
    scoring : None, str or callable, default None
        As scikit-learn's: a scorer name (``"r2"``, ``"explained_variance"``,
        ``"neg_mean_absolute_error"``, ... any of ``sklearn.metrics.get_scorer_names()``) or a
        scorer ``scoring(estimator, X, y)`` (``make_scorer``; it is given a regressor whose
        ``predict`` returns the held-out predictions, and ``sample_weight`` when fitted with
        weights). Leave-one-out: ``None`` is the mean squared error over samples (weighted);
        otherwise the leave-one-out predictions are scored, all targets at once unless
        ``alpha_per_target`` (multi-output scorers see 2-D arrays). Held-out folds: ``None`` is
        R^2; scores are averaged over folds. Names computed without scikit-learn (on any
        array library and device): ``"neg_mean_squared_error"``, ``"r2"``,
        ``"explained_variance"``, ``"neg_root_mean_squared_error"``, ``"neg_mean_absolute_error"``;
        others call scikit-learn's scorer on the predictions (eager arrays).
    check_finite : bool, default True
        As in :class:`Ridge`.
    target_batch : int or None, default None
        Score that many targets at a time (:func:`lsq_backends.ridge_cv`'s ``target_batch``):
        memory bounded for y with many columns. Not with ``store_cv_results``.

    Attributes
    ----------
    coef_, intercept_, n_features_in_
        As in :class:`Ridge`, refitted on all samples with ``alpha_``.
    alpha_ : array, shape () or (n_targets,) with ``alpha_per_target`` and a 2-D ``y``
        The chosen penalty.
    best_score_ : array, same shape as ``alpha_``
        The score at ``alpha_``: minus the mean squared leave-one-out error (weighted by
        ``sample_weight``), the ``scoring`` of the leave-one-out predictions, or with held-out
        folds the mean fold score; averaged over targets unless ``alpha_per_target``.
    cv_results_ : array, shape (m, n_alphas) or (m, n_targets, n_alphas)
        As scikit-learn's: the squared leave-one-out errors
        ``sample_weight_i * (y_i - yhat_{-i})**2`` with ``scoring=None``, else the leave-one-out
        predictions ``yhat_{-i}``; only with ``store_cv_results=True`` (leave-one-out only).

    Examples
    --------
    >>> import numpy as np
    >>> from lsq_backends import RidgeCV
    >>> rng = np.random.default_rng(1)
    >>> X = rng.standard_normal((30, 4)); y = X @ np.ones(4) + 3 * rng.standard_normal(30)
    >>> reg = RidgeCV(alphas=np.logspace(-3, 3, 13), store_cv_results=True).fit(X, y)
    >>> reg.cv_results_.shape, round(float(reg.alpha_), 4)
    ((30, 13), 3.1623)
    >>> bool(np.isclose(reg.best_score_, -reg.cv_results_.mean(axis=0).min()))
    True
    """

    def __init__(
        self,
        alphas=(0.1, 1.0, 10.0),
        *,
        fit_intercept=True,
        alpha_per_target=False,
        store_cv_results=False,
        gcv_mode="auto",
        check_finite=True,
        cv=None,
        scoring=None,
        target_batch=None,
    ):
        self.alphas = alphas
        self.target_batch = target_batch
        self.cv = cv
        self.scoring = scoring
        self.fit_intercept = fit_intercept
        self.alpha_per_target = alpha_per_target
        self.store_cv_results = store_cv_results
        self.gcv_mode = gcv_mode
        self.check_finite = check_finite

    @_compat.on_input_device
    def fit(self, X, y, sample_weight=None, groups=None):
        """Choose the penalty and fit on ``X`` (m, n_features), ``y`` (m,) or (m, n_targets);
        ``groups`` go to a ``cv`` splitter's ``split``."""
        held_out = self.cv is not None and not (isinstance(self.cv, str) and self.cv == "gcv")
        if self.store_cv_results and self.cv is not None:
            msg = f"cv!=None and store_cv_results=True are incompatible (the results stored are leave-one-out ones); got cv={self.cv!r}"
            raise ValueError(msg)
        if self.store_cv_results and self.target_batch is not None:
            msg = f"store_cv_results=True keeps every sample's error: it needs target_batch=None; got {self.target_batch!r}"
            raise ValueError(msg)
        _check_alphas(self.alphas, held_out)
        X, y, sample_weight, check_finite, fitted = self._validate_fit(X, y, sample_weight)
        sparse, mode = is_operator_input(X), self.gcv_mode
        if sparse and held_out:  # folds of a sparse X: the Gram matrix's eigendecomposition or LSMR, no choice
            mode = "auto"
        if mode == "svd" and sparse:
            msg = (
                "The 'svd' mode is not supported for sparse X: RidgeCV falls back to gcv_mode='eigen' (the "
                "eigendecomposition of X's Gram matrix), as scikit-learn does until it refuses this (its release "
                "1.11; RidgeCV will follow): use the default or pass gcv_mode='eigen' to suppress this warning"
            )
            warnings.warn(msg, FutureWarning, stacklevel=3)
            mode = "eigen"
        if X.shape[0] is not None and X.shape[0] < 2:
            msg = f"RidgeCV needs at least 2 samples for cross-validation; got {X.shape[0]} sample"
            raise ValueError(msg)
        scoring = "r2" if held_out and self.scoring is None else self.scoring
        if callable(scoring):  # scikit-learn's convention, scoring(estimator, X, y)
            scoring = sklearn_callable(scoring)
        r = ridge_cv(
            X,
            y,
            _alpha_arg(self.alphas, X, "alphas"),
            fit_intercept=bool(self.fit_intercept),
            sample_weight=sample_weight,
            alpha_per_target=bool(self.alpha_per_target),
            mode=mode,
            check_finite=check_finite,
            cv=self.cv,
            scoring=scoring,
            groups=groups,
            target_batch=self.target_batch,
        )
        xp = _compat.array_namespace(r.coef)
        fitted.update(self._coef(r, single_target_1d=y.ndim == 2 and y.shape[1] == 1), alpha_=r.alpha)
        # Minus the mean error at the chosen penalty: the best score, per target or averaged.
        scores = r.scores if self.alpha_per_target or r.scores.ndim == 1 else xp.mean(r.scores, axis=-1)
        fitted["best_score_"] = xp.max(scores, axis=0)
        if self.store_cv_results:
            cv = r.cv_values  # (a, m) or (a, m, k); scikit-learn puts the alpha axis last
            fitted["cv_results_"] = xp.permute_dims(cv, tuple(range(1, cv.ndim)) + (0,))
        return self._store(fitted, optional=("cv_results_",))


def _check_alphas(alphas, held_out):
    """scikit-learn's element checks of a list, tuple or NumPy array of penalties, with its
    messages: real numbers, positive (leave-one-out) or non-negative (held-out folds)."""
    if not isinstance(alphas, (list, tuple)) and not _compat.is_host_array(alphas):
        return
    items = [alphas] if getattr(alphas, "ndim", 1) == 0 else list(alphas)
    for i, a in enumerate(items):
        if isinstance(a, (bool, str)) or not isinstance(a, numbers.Real):
            msg = f"alphas must hold real numbers: alphas[{i}] must be an instance of float, not {type(a).__name__}"
            raise TypeError(msg)
        if a < 0 or (a == 0 and not held_out):
            bound = ">= 0.0" if held_out else "> 0.0"
            msg = f"alphas[{i}] == {a}, must be {bound}" + ("" if held_out else " (held-out folds, cv=k, take 0)")
            raise ValueError(msg)


def _alpha_arg(alpha, X, name):
    """Penalty vectors given as lists, tuples or NumPy arrays move to X's namespace and device
    (``ridge`` takes a scalar or an array of X's library); anything else goes to ``ridge`` as is,
    which checks it. Types are checked first (``name`` is the parameter): a NumPy conversion
    would turn ``"1"`` into 1.0."""
    check_alpha_type(alpha, name)
    if not isinstance(alpha, (list, tuple)) and not (_compat.is_host_array(alpha) and not _compat.is_host_array(X)):
        return alpha
    import numpy as np

    if not _compat.is_array(X):  # a SciPy, JAX or CuPy sparse X: taken to X's library by the fit
        return np.asarray(alpha, dtype=np.float64)
    xp, dev = _compat.array_namespace(X), _compat.device(X)
    dtype = _compat.float64_for(xp, dev) or _compat.default_dtypes(xp, dev)[0]
    return _compat.constants(xp, np.asarray(alpha, dtype=np.float64), dtype, dev)  # filled in on the device
