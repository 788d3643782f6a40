"""scikit-learn-compatible estimators on any array-API library.

``LinearRegression`` and ``Ridge`` wrap :func:`lsq_backends.lstsq` and :func:`lsq_backends.ridge`.
Fitted attributes live in the namespace and on the device of the training data, and
``predict`` answers in that namespace; scikit-learn is optional (see ``_estimator_base``).
"""

from __future__ import annotations

import array_api_compat as _aac

from . import _compat
from ._api import lstsq, ridge
from ._estimator_base import LinearModelBase
from ._input import check_method

__all__ = ["LinearRegression", "Ridge"]


class LinearRegression(LinearModelBase):
    """Ordinary (or weighted) least squares, as scikit-learn's ``LinearRegression``.

    Parameters
    ----------
    fit_intercept : bool, default True
        Fit an unpenalized intercept.
    method : {"auto", "normal", "qr", "svd"}, default "auto"
        Solver of :func:`lsq_backends.lstsq`. Every method returns the minimum-norm solution
        on rank-deficient data.
    rcond : float in [0, 1) or None
        Relative singular-value cutoff; default ``eps * max(m, n)``.
    check_finite : bool, default True
        Refuse NaN and infinity in ``X``, ``y`` and ``sample_weight`` (eager arrays only).

    Attributes
    ----------
    coef_ : array, shape (n_features,) or (n_targets, n_features)
    intercept_ : array, shape () or (n_targets,)
        Zeros when ``fit_intercept=False``.
    rank_ : integer array, shape ()
        Numerical rank of the centered, weighted X.
    singular_ : array, shape (min(m', n_features),), or None
        Singular values of the centered, weighted X, for ``method="svd"`` only (``m' = m - 1``
        with an intercept).
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

    def __init__(self, *, fit_intercept=True, method="auto", rcond=None, check_finite=True):
        self.fit_intercept = fit_intercept
        self.method = method
        self.rcond = rcond
        self.check_finite = check_finite

    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` (m, n_features) and ``y`` (m,) or (m, n_targets); returns ``self``."""
        check_method(self.method, self.rcond)
        X, y, sample_weight, check_finite = self._validate_fit(X, y, sample_weight)
        r = lstsq(
            X, y, method=self.method, rcond=self.rcond, fit_intercept=bool(self.fit_intercept),
            sample_weight=sample_weight, check_finite=check_finite,
        )
        self._set_coef(r)
        self.rank_ = r.rank
        self.singular_ = r.singular_values
        return self


class Ridge(LinearModelBase):
    """Ridge regression, as scikit-learn's ``Ridge``: ``||y - X w - b||² + alpha ||w||²``.

    Parameters
    ----------
    alpha : float or array of shape (n_targets,), default 1.0
        Non-negative penalty (on the plain, or ``sample_weight``-weighted, sum of squares),
        or one penalty per target column of ``y``.
    fit_intercept : bool, default True
        Fit an intercept, never penalized.
    method : {"auto", "normal", "qr", "svd"}, default "auto"
        Solver of :func:`lsq_backends.ridge`.
    check_finite : bool, default True
        Refuse NaN and infinity in the inputs (eager arrays only).

    Attributes
    ----------
    coef_ : array, shape (n_features,) or (n_targets, n_features)
    intercept_ : array, shape () or (n_targets,)
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

    def __init__(self, alpha=1.0, *, fit_intercept=True, method="auto", check_finite=True):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.method = method
        self.check_finite = check_finite

    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` (m, n_features) and ``y`` (m,) or (m, n_targets); returns ``self``."""
        check_method(self.method, None)
        X, y, sample_weight, check_finite = self._validate_fit(X, y, sample_weight)
        r = ridge(
            X, y, _alpha_arg(self.alpha, X), method=self.method, fit_intercept=bool(self.fit_intercept),
            sample_weight=sample_weight, check_finite=check_finite,
        )
        self._set_coef(r)
        return self


def _alpha_arg(alpha, X):
    """Penalty vectors given as lists, tuples or NumPy arrays move to X's namespace and device
    (``ridge`` takes a scalar or an array of X's library); anything else goes to ``ridge`` as is,
    which checks it."""
    if not isinstance(alpha, (list, tuple)) and not (_aac.is_numpy_array(alpha) and not _aac.is_numpy_array(X)):
        return alpha
    import numpy as np

    xp = _compat.array_namespace(X)
    return xp.asarray(np.asarray(alpha, dtype=np.float64), device=_compat.device(X))
