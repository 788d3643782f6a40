"""The bad-input cases of ``test_bad_input`` (flags, options, shapes), as data; the dtype,
kind and value cases are in ``bad_input_kinds``.

A case is (name, build, exception type, regex): ``build(d)`` gets the test's ``Data`` of the
backend under test and returns the call to make; ``value=True`` marks a check of values (NaN,
signs), skipped on Dask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import lsq_backends as lsq

rng = np.random.default_rng(0)
X0 = rng.standard_normal((10, 3))
y0 = rng.standard_normal(10)
w0 = np.linspace(0.5, 1.5, 10)


class Case(NamedTuple):
    name: str
    build: Callable
    exc: type
    match: str
    value: bool = False  # a check of values: not made on Dask


def acc(d, cls=lsq.NormalAccumulator):
    return cls().update(d.X, d.y)


C = Case
ARGUMENT_CASES = [
    # --- flags: bools only (Python or NumPy), everywhere ---
    C(
        "lstsq_fit_intercept_int",
        lambda d: lambda: lsq.lstsq(d.X, d.y, fit_intercept=1),
        TypeError,
        "fit_intercept must be a bool",
    ),
    C(
        "lstsq_fit_intercept_str",
        lambda d: lambda: lsq.lstsq(d.X, d.y, fit_intercept="False"),
        TypeError,
        "fit_intercept must be a bool",
    ),
    C(
        "lstsq_check_finite_none",
        lambda d: lambda: lsq.lstsq(d.X, d.y, check_finite=None),
        TypeError,
        "check_finite must be a bool",
    ),
    C(
        "ridge_per_target_str",
        lambda d: lambda: lsq.ridge(d.X, d.y, 1.0, per_target="yes"),
        TypeError,
        "per_target must be a bool",
    ),
    C(
        "ridge_fit_intercept_0d_array",
        lambda d: lambda: lsq.ridge(d.X, d.y, 1.0, fit_intercept=np.array(True)),
        TypeError,
        "fit_intercept must be a bool",
    ),
    C(
        "ridge_cv_fit_intercept_str",
        lambda d: lambda: lsq.ridge_cv(d.X, d.y, 1.0, fit_intercept="no"),
        TypeError,
        "fit_intercept must be a bool",
    ),
    C(
        "ridge_cv_alpha_per_target_int",
        lambda d: lambda: lsq.ridge_cv(d.X, d.y, 1.0, alpha_per_target=1),
        TypeError,
        "alpha_per_target must be a bool",
    ),
    C(
        "ridge_cv_check_finite_int",
        lambda d: lambda: lsq.ridge_cv(d.X, d.y, 1.0, check_finite=0),
        TypeError,
        "check_finite must be a bool",
    ),
    C(
        "diagnostics_fit_intercept_int",
        lambda d: lambda: lsq.diagnostics(d.X, d.y, fit_intercept=1),
        TypeError,
        "fit_intercept must be a bool",
    ),
    C(
        "diagnostics_check_finite_str",
        lambda d: lambda: lsq.diagnostics(d.X, d.y, check_finite="x"),
        TypeError,
        "check_finite must be a bool",
    ),
    C(
        "accumulator_update_check_finite",
        lambda d: lambda: lsq.NormalAccumulator().update(d.X, d.y, check_finite=1),
        TypeError,
        "check_finite must be a bool",
    ),
    C(
        "accumulator_step_check_finite",
        lambda d: lambda: lsq.QRAccumulator().step(None, d.X, d.y, check_finite="no"),
        TypeError,
        "check_finite must be a bool",
    ),
    C(
        "accumulator_solve_fit_intercept",
        lambda d: lambda: acc(d, lsq.QRAccumulator).solve(fit_intercept="x"),
        TypeError,
        "fit_intercept must be a bool",
    ),
    C(
        "LinearRegression_fit_intercept_str",
        lambda d: lambda: lsq.LinearRegression(fit_intercept="False").fit(d.X, d.y),
        TypeError,
        "fit_intercept must be a bool",
    ),
    C(
        "Ridge_check_finite_str",
        lambda d: lambda: lsq.Ridge(check_finite="False").fit(d.X, d.y),
        TypeError,
        "check_finite must be a bool",
    ),
    C(
        "RidgeCV_alpha_per_target_str",
        lambda d: lambda: lsq.RidgeCV(alpha_per_target="x").fit(d.X, d.y),
        TypeError,
        "alpha_per_target must be a bool",
    ),
    C(
        "RidgeCV_store_cv_results_int",
        lambda d: lambda: lsq.RidgeCV(store_cv_results=1).fit(d.X, d.y),
        TypeError,
        "store_cv_results must be a bool",
    ),
    # --- options ---
    C("method_unknown", lambda d: lambda: lsq.lstsq(d.X, d.y, method="cholesky"), ValueError, "method must be one of"),
    C("rcond_above_one", lambda d: lambda: lsq.lstsq(d.X, d.y, rcond=1.5), ValueError, "rcond must be"),
    C("rcond_negative", lambda d: lambda: lsq.lstsq(d.X, d.y, rcond=-1e-3), ValueError, "rcond must be"),
    C("rcond_bool", lambda d: lambda: lsq.lstsq(d.X, d.y, rcond=True), ValueError, "rcond must be"),
    C("refine_negative", lambda d: lambda: lsq.lstsq(d.X, d.y, refine=-1), ValueError, "refine must be"),
    C("refine_bool", lambda d: lambda: lsq.lstsq(d.X, d.y, refine=True), ValueError, "refine must be"),
    C("refine_with_lsqr", lambda d: lambda: lsq.lstsq(d.X, d.y, refine=1, method="lsqr"), ValueError, "refine"),
    C(
        "atol_with_qr",
        lambda d: lambda: lsq.lstsq(d.X, d.y, atol=1e-8, method="qr"),
        ValueError,
        "atol apply to method='lsqr'",
    ),
    C(
        "max_iter_with_ridge_svd",
        lambda d: lambda: lsq.ridge(d.X, d.y, 1.0, max_iter=5, method="svd"),
        ValueError,
        "max_iter apply to",
    ),
    C(
        "path_with_lsqr",
        lambda d: lambda: lsq.ridge(d.X, d.y, d.put([0.1, 1.0]), method="lsqr"),
        ValueError,
        "alpha path",
    ),
    C("ridge_cv_mode", lambda d: lambda: lsq.ridge_cv(d.X, d.y, 1.0, mode="fast"), ValueError, "mode must be one of"),
    C(
        "diagnostics_cov_type",
        lambda d: lambda: lsq.diagnostics(d.X, d.y, cov_type="HC9"),
        ValueError,
        "cov_type must be one of",
    ),
    C(
        "diagnostics_groups_float",
        lambda d: lambda: lsq.diagnostics(d.X, d.y, cov_type="cluster", groups=d.put(np.zeros(d.X.shape[0]))),
        TypeError,
        "groups must hold integer codes",
    ),
    C(
        "diagnostics_groups_shape",
        lambda d: lambda: lsq.diagnostics(d.X, d.y, cov_type="cluster", groups=d.put([0, 1]), n_groups=2),
        ValueError,
        "groups must have shape",
    ),
    C(
        "diagnostics_maxlags_negative",
        lambda d: lambda: lsq.diagnostics(d.X, d.y, cov_type="HAC", maxlags=-1),
        ValueError,
        "maxlags=, a non-negative int",
    ),
    C(
        "LinearRegression_method",
        lambda d: lambda: lsq.LinearRegression(method="lu").fit(d.X, d.y),
        ValueError,
        "method must be one of",
    ),
    # --- shapes ---
    C("X_1d", lambda d: lambda: lsq.lstsq(d.y, d.y), ValueError, "X must have shape"),
    C("y_rows", lambda d: lambda: lsq.lstsq(d.X, d.put(y0[:9])), ValueError, "y must have 10 rows"),
    C("y_3d", lambda d: lambda: lsq.lstsq(d.X, d.put(np.ones((10, 2, 2)))), ValueError, "y must have shape"),
    C(
        "sample_weight_shape",
        lambda d: lambda: lsq.lstsq(d.X, d.y, sample_weight=d.put(w0[:9])),
        ValueError,
        "sample_weight must have shape",
    ),
    C(
        "alpha_2d",
        lambda d: lambda: lsq.ridge(d.X, d.y, d.put(np.ones((2, 2)))),
        ValueError,
        "alpha must be a scalar or a non-empty 1-D",
    ),
    C(
        "alpha_empty",
        lambda d: lambda: lsq.ridge(d.X, d.y, d.put(np.ones(0))),
        ValueError,
        "alpha must be a scalar or a non-empty 1-D",
    ),
    C(
        "per_target_shape",
        lambda d: lambda: lsq.ridge(d.X, d.put(np.ones((10, 2))), d.put([1.0, 2.0, 3.0]), per_target=True),
        ValueError,
        r"alpha must have shape \(2,\)",
    ),
    C(
        "intercept_no_rows",
        lambda d: lambda: lsq.lstsq(d.put(np.zeros((0, 2))), d.put(np.zeros(0)), fit_intercept=True),
        ValueError,
        "fit_intercept=True needs at least one sample",
    ),
    C(
        "ridge_cv_one_sample",
        lambda d: lambda: lsq.ridge_cv(d.put(X0[:1]), d.put(y0[:1]), 1.0),
        ValueError,
        "at least 2 samples",
    ),
    C(
        "RidgeCV_one_sample",
        lambda d: lambda: lsq.RidgeCV().fit(d.put(X0[:1]), d.put(y0[:1])),
        ValueError,
        "at least 2 samples",
    ),
    C(
        "diagnostics_2d_y",
        lambda d: lambda: lsq.diagnostics(d.X, d.put(np.ones((10, 2)))),
        ValueError,
        "y must have shape",
    ),
    C(
        "accumulator_columns",
        lambda d: lambda: acc(d).update(d.put(X0[:, :2]), d.y),
        ValueError,
        "X must have 3 columns",
    ),
    C(
        "accumulator_merge_type",
        lambda d: lambda: acc(d).merge(acc(d, lsq.QRAccumulator)),
        TypeError,
        "merge with another NormalAccumulator",
    ),
]
