"""What the estimators share: the scikit-learn base classes (or duck-typed stand-ins), input
validation for ``fit``/``predict``, and the namespace-preserving R² of ``score``.

scikit-learn is optional. When it is importable the estimators inherit its ``BaseEstimator``
and ``RegressorMixin`` (``get_params``, ``set_params``, ``clone``, the repr, tags, metadata
routing of ``sample_weight``); otherwise the small stand-ins below give the same
``get_params``/``set_params``/repr protocol. This module is imported only when an estimator is
first used (``lsq_backends.__getattr__``), so ``import lsq_backends`` never imports scikit-learn.

Validation has two routes, chosen per call:

- NumPy-like input (NumPy arrays, lists, pandas frames, sparse matrices) with scikit-learn
  installed goes through scikit-learn's own ``validate_data``: that is the behaviour
  ``check_estimator`` specifies message for message (object and complex dtypes, sparse input,
  feature names of data frames, ``n_features_in_``), and rewriting it here would be a second,
  drifting copy of it.
- Any other array-API array (and everything when scikit-learn is absent) goes through
  lsq_backends' own checks (``_input``), which never copy to the host or change the namespace.
"""

from __future__ import annotations

import copy
import inspect
import math
import sys
import warnings

from .._backend import _compat
from .._problem import _input
from .._problem._kinds import check_kind
from .._problem._operator import describe, is_operator_input
from .._problem._scaling import exponent, log2_abs, powers, times
from .._solvers import DEFAULT, RECORDS

try:
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import _check_sample_weight, validate_data  # scikit-learn >= 1.6

    HAVE_SKLEARN = True
except ImportError:  # absent, or older than 1.6 (no validate_data, no __sklearn_tags__): duck-typed
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """Raised by ``predict``/``score`` before ``fit`` (scikit-learn's, when installed)."""

    class BaseEstimator:  # type: ignore[no-redef]
        """Duck-typed stand-in for scikit-learn's ``BaseEstimator``: the parameters are the
        keyword arguments of ``__init__``, stored unchanged as attributes of the same name."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            out = {}
            for name in self._get_param_names():
                value = getattr(self, name)
                if deep and hasattr(value, "get_params") and not isinstance(value, type):
                    out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
                out[name] = value
            return out

        def set_params(self, **params):
            valid = self._get_param_names()
            for name, value in params.items():
                if name not in valid:
                    msg = f"Invalid parameter {name!r} for estimator {self!r}. Valid parameters are: {valid!r}."
                    raise ValueError(msg)
                setattr(self, name, value)
            return self

        def __repr__(self):
            # As scikit-learn prints by default: only the parameters that differ from their default.
            sig = inspect.signature(type(self).__init__).parameters
            changed = [
                f"{k}={v!r}" for k, v in self.get_params(deep=False).items() if not _same_default(v, sig[k].default)
            ]
            return f"{type(self).__name__}({', '.join(changed)})"

    class RegressorMixin:  # type: ignore[no-redef]
        """Stand-in for scikit-learn's ``RegressorMixin`` (``score`` is defined by the estimators)."""

        _estimator_type = "regressor"


# The estimator methods that fit a sparse X: from its Gram matrix (``Record.sparse_gram``: "normal", and "auto" up to
# ``_operator_fit.GRAM_COLUMNS`` columns) or by its products (``Record.matrix_free``: LSMR for "auto" beyond).
SPARSE_METHODS = tuple(r.name for r in RECORDS if r.matrix_free is not None or r.sparse_gram is not None)
# SciPy sparse formats fitted as they are (others are converted to the first).
SPARSE_FORMATS = ("csr", "csc", "coo")

# What ``fit`` records about its input (scikit-learn's names).
_INPUT_ATTRIBUTES = ("n_features_in_", "feature_names_in_")


def _same_default(value, default):
    if type(value) is not type(default):
        return False
    try:
        return bool(value == default)
    except Exception:  # arrays: compare by identity only
        return value is default


class LinearModelBase(RegressorMixin, BaseEstimator):
    """Shared ``predict``, ``score``, fitted-state check and validation of the linear estimators."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.input_tags.sparse = self._accepts_sparse()
        return tags

    def _accepts_sparse(self):
        """Whether ``fit`` takes a sparse X: where the fit forms X's Gram matrix (``method`` "normal" or
        "auto", the non-negative fits, ``RidgeCV``'s leave-one-out and GCV, whose ``gcv_mode="svd"`` falls back to
        "eigen" there) or is iterative ("lsmr", "lsqr", and "auto" past the Gram route's columns, ``RidgeCV``'s
        held-out folds)."""
        if getattr(self, "positive", False) is True:
            return getattr(self, "method", DEFAULT) == DEFAULT  # the active-set method on X's Gram matrix
        if hasattr(self, "cv"):
            return True
        return getattr(self, "method", "auto") in SPARSE_METHODS

    def __sklearn_is_fitted__(self):
        return hasattr(self, "coef_")

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            msg = (
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with appropriate "
                "arguments before using this estimator."
            )
            raise NotFittedError(msg)

    # --- validation ------------------------------------------------------------------------

    # Flag parameters, checked at fit as scikit-learn checks parameters: a string "False"
    # would otherwise count as true.
    _FLAGS = ("fit_intercept", "check_finite", "alpha_per_target", "store_cv_results")

    def _validate_flags(self):
        for name in self._FLAGS:
            if hasattr(self, name):
                _input.check_bool(getattr(self, name), name)

    def _validate_fit(self, X, y, sample_weight):
        """Return ``(X, y, sample_weight, check_finite, fitted)`` for the fit. ``check_finite``: what the solver
        must still check (False once scikit-learn did). ``fitted``: the input's attributes (``n_features_in_``,
        and ``feature_names_in_`` for a data frame) for :meth:`_store`. Nothing of ``self`` changes here, so a
        fit that is refused (here or in the solver) leaves a fitted estimator as it was."""
        self._validate_flags()
        if y is None:
            msg = f"{type(self).__name__} requires y to be passed, but the target y is None."
            raise ValueError(msg)
        sparse = _scipy_sparse(X)
        native = not sparse and is_operator_input(X) and not _compat.is_array(X)  # JAX's and CuPy's sparse kinds
        if native and not self._accepts_sparse():
            msg = f"X is a {describe(X)}: {self!r} factorizes a dense X; see the SciPy sparse X's methods"
            raise TypeError(msg)
        if sparse and not self._accepts_sparse():
            msg = (
                f"X is a SciPy sparse {type(X).__name__}: {self!r} factorizes a dense X; sparse X is fitted with "
                "method='auto', 'normal' (X's Gram matrix), 'lsmr' or 'lsqr' (RidgeCV: gcv_mode 'auto' or 'eigen'), "
                "or pass X.toarray()"
            )
            raise TypeError(msg)
        for name, a in (("X", X), ("y", y), ("sample_weight", sample_weight)):
            if not (sparse and name == "X"):
                check_kind(a, name)  # scikit-learn's validation would drop a mask silently
        if native:  # the fit validates it (lsq_backends._operator_fit)
            return X, y, sample_weight, bool(self.check_finite), {"n_features_in_": X.shape[1]}
        if _sklearn_route(X, y, sample_weight):
            import numpy as np

            # scikit-learn's validate_data records the feature names and count on the estimator
            # it is given (the names before it checks the values): give it a shallow copy.
            probe = copy.copy(self)
            X, y = validate_data(
                probe,
                X,
                y,
                accept_sparse=SPARSE_FORMATS if sparse else False,
                dtype=[np.float64, np.float32],
                multi_output=True,
                y_numeric=True,
                ensure_all_finite=bool(self.check_finite),
            )
            if sample_weight is not None:
                sample_weight = _check_sample_weight(sample_weight, X, dtype=X.dtype, ensure_non_negative=True)
            fitted = {k: getattr(probe, k) for k in _INPUT_ATTRIBUTES if hasattr(probe, k)}
            return X, y, sample_weight, False, fitted
        if sparse:  # without scikit-learn: the fit validates it (lsq_backends._operator_fit)
            if len(X.shape) != 2:
                msg = f"X must be 2-D, shape (n_samples, n_features); got shape {tuple(X.shape)}"
                raise ValueError(msg)
            return X, y, sample_weight, bool(self.check_finite), {"n_features_in_": X.shape[1]}
        xp = _input.namespace_of(X, y, sample_weight)
        dev = next((_compat.device(a) for a in (X, y, sample_weight) if _compat.is_array(a)), None)
        X = _input.as_array(xp, X, "X", dev)
        if X.ndim != 2:
            msg = (
                f"X must be 2-D, shape (n_samples, n_features); got shape {tuple(X.shape)} "
                "(reshape a single feature with X[:, None], a single sample with X[None, :])"
            )
            raise ValueError(msg)
        return X, y, sample_weight, bool(self.check_finite), {"n_features_in_": X.shape[1]}

    def _store(self, fitted, optional=()):
        """Set the fitted attributes all at once, at the end of a fit that succeeded; those
        of ``_INPUT_ATTRIBUTES`` and ``optional`` that this fit did not produce are removed
        (left by an earlier fit on a data frame, or with ``store_cv_results``)."""
        for name in (*_INPUT_ATTRIBUTES, *optional):
            if name not in fitted and name in vars(self):
                delattr(self, name)
        for name, value in fitted.items():
            setattr(self, name, value)
        return self

    def _validate_predict(self, X):
        self._check_fitted()
        coef = self.coef_
        if _compat.is_host_array(coef) and _sklearn_route(X):
            import numpy as np

            return validate_data(
                self,
                X,
                reset=False,
                accept_sparse=SPARSE_FORMATS,
                dtype=[np.float64, np.float32],
                ensure_all_finite=bool(self.check_finite),
            )
        if _scipy_sparse(X) and _compat.is_host_array(coef):
            if len(X.shape) != 2 or X.shape[1] != self.n_features_in_:
                msg = f"X must have shape (n_samples, {self.n_features_in_}); got shape {tuple(X.shape)}"
                raise ValueError(msg)
            return X
        xp = _compat.array_namespace(coef)
        X = _like(xp, X, "X", coef)
        _input.check_dtype(xp, X, "X")
        if X.ndim != 2:
            msg = f"X must be 2-D, shape (n_samples, n_features); got shape {tuple(X.shape)}"
            raise ValueError(msg)
        if X.shape[1] != self.n_features_in_:
            msg = (
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
            raise ValueError(msg)
        if self.check_finite:
            _input.check_finite_values(xp, X, "X")
        return X

    # --- prediction and score --------------------------------------------------------------

    @staticmethod
    def _coef(result, single_target_1d=False):
        """A fit result's ``coef_`` (scikit-learn's orientation: (n,) or (k, n)) and ``intercept_``.
        ``single_target_1d``: y of shape (m, 1) gives ``coef_`` (n,), as scikit-learn's Ridge and
        RidgeCV (LinearRegression keeps (1, n))."""
        coef = result.coef
        coef = coef if coef.ndim == 1 else _compat.array_namespace(coef).permute_dims(coef, (1, 0))
        if single_target_1d and coef.ndim == 2:
            coef = coef[0, ...]
        return {"coef_": coef, "intercept_": result.intercept}

    @_compat.on_input_device
    def predict(self, X):
        """Predict with the fitted linear model.

        Parameters
        ----------
        X : array, shape (m, n_features)
            Samples, from the array library (and on the device) used in ``fit``.

        Returns
        -------
        array, shape (m,) or (m, k)
            ``X @ coef_.T + intercept_``, in the namespace and on the device of ``X``.
        """
        X = self._validate_predict(X)
        coef = self.coef_
        if _scipy_sparse(X):  # SciPy's product, dense (m, k) out
            W = coef if coef.ndim == 1 else coef.T
            return X @ W + self.intercept_
        xp = _compat.array_namespace(X, coef)
        dtype = xp.result_type(X.dtype, coef.dtype) if xp.isdtype(X.dtype, "real floating") else coef.dtype
        X = xp.astype(X, dtype, copy=False) if X.dtype != dtype else X
        W = coef if coef.ndim == 1 else xp.permute_dims(coef, (1, 0))
        pred = _compat.matmul(xp, X, xp.astype(W, dtype, copy=False))
        return pred + _compat.as_rank(xp, xp.astype(self.intercept_, dtype, copy=False), pred.ndim)

    @_compat.on_input_device
    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R² of ``predict(X)`` against ``y``.

        As scikit-learn's ``RegressorMixin.score``: weighted by ``sample_weight``, averaged
        uniformly over targets, 1.0 for a perfect fit of a constant target and 0.0 for an
        imperfect one. Computed in the namespace of ``X``; one value is read back.

        Returns
        -------
        float
        """
        pred = self.predict(X)
        xp = _compat.array_namespace(pred)
        dev = _compat.device(pred)
        y = _like(xp, y, "y", pred)
        y = xp.astype(y, pred.dtype, copy=False) if y.dtype != pred.dtype else y
        Y = xp.reshape(y, (y.shape[0], -1))
        P = xp.reshape(pred, (pred.shape[0], -1))
        if tuple(Y.shape) != tuple(P.shape):
            msg = f"y must have shape {tuple(pred.shape)} to match the predictions; got shape {tuple(y.shape)}"
            raise ValueError(msg)
        if Y.shape[0] < 2:
            warnings.warn("R^2 score is not well-defined with less than two samples.", stacklevel=2)
            return math.nan
        if sample_weight is None:
            w = xp.ones((Y.shape[0], 1), dtype=Y.dtype, device=dev)
        else:
            w = _like(xp, sample_weight, "sample_weight", pred)
            if tuple(w.shape) != (Y.shape[0],):
                msg = f"sample_weight must have shape ({Y.shape[0]},); got shape {tuple(w.shape)}"
                raise ValueError(msg)
            w = xp.astype(w, Y.dtype, copy=False)[:, None]
        # R^2 is scale-free: y and the predictions by one power of two per target, the weights
        # by one, so that no square overflows or underflows (``_scaling``; exact).
        big = xp.maximum(xp.max(xp.abs(Y), axis=0), xp.max(xp.abs(P), axis=0))
        fy, fw = powers(xp, [(-exponent(xp, log2_abs(xp, big)), 1), (-exponent(xp, log2_abs(xp, xp.max(w))), 1)])
        Y, P, w = times(xp, Y, fy), times(xp, P, fy), w * fw
        mean = xp.sum(w * Y, axis=0, keepdims=True) / xp.sum(w, axis=0, keepdims=True)
        num = xp.sum(w * (Y - P) ** 2, axis=0)
        den = xp.sum(w * (Y - mean) ** 2, axis=0)
        safe = xp.where(den != 0, den, xp.ones_like(den))
        r2 = xp.where(den != 0, 1 - num / safe, xp.where(num != 0, xp.zeros_like(num), xp.ones_like(num)))
        return float(xp.mean(r2))


def _scipy_sparse(X):
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def _sklearn_route(*arrays):
    """scikit-learn validates the input when it is installed and nothing is a non-NumPy array."""
    return HAVE_SKLEARN and not any(
        _compat.is_array(a) and not _compat.is_host_array(a) for a in arrays if a is not None
    )


def _like(xp, a, name, fitted):
    """``a`` as an array of the library and device of ``fitted`` (the model's arrays): lists and
    the like are converted there; another library's arrays or another device are refused."""
    if not _compat.is_array(a):
        return _input.as_array(xp, a, name, _compat.device(fitted))
    try:
        _compat.array_namespace(a, fitted)
    except TypeError as exc:
        msg = (
            f"{name} ({type(a).__module__}.{type(a).__name__}) must come from the array library the "
            f"estimator was fitted with ({type(fitted).__module__}.{type(fitted).__name__})"
        )
        raise TypeError(msg) from exc
    _input.check_devices({name: a, "the fitted model": fitted})
    return a
