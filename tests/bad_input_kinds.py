"""The bad-input cases of ``test_bad_input`` about dtypes, kinds of array and values, as data
(see ``bad_input_cases``)."""

from __future__ import annotations

import numpy as np
import pytest
from bad_input_cases import X0, C, acc, w0, y0

import lsq_backends as lsq

KIND_CASES = [
    # --- dtypes and kinds ---
    C("X_bool", lambda d: lambda: lsq.lstsq(d.put(X0 > 0), d.y), TypeError, "X has a boolean dtype"),
    C("X_complex", lambda d: lambda: lsq.lstsq(d.put(X0 + 1j), d.y), TypeError, "X is complex"),
    C("y_bool", lambda d: lambda: lsq.lstsq(d.X, d.put(y0 > 0)), TypeError, "y has a boolean dtype"),
    C(
        "sample_weight_complex",
        lambda d: lambda: lsq.lstsq(d.X, d.y, sample_weight=d.put(w0 + 0j)),
        TypeError,
        "sample_weight is complex",
    ),
    C(
        "X_float16",
        lambda d: lambda: lsq.lstsq(d.cast(X0, "float16"), d.y),
        TypeError,
        "X has dtype .*float16.*float32 or float64",
    ),
    C(
        "y_float16",
        lambda d: lambda: lsq.ridge(d.X, d.cast(y0, "float16"), 1.0),
        TypeError,
        "y has dtype .*float16.*float32 or float64",
    ),
    C(
        "X_bfloat16",
        lambda d: (d.only("torch", "jax"), lambda: lsq.lstsq(d.cast(X0, "bfloat16"), d.y))[1],
        TypeError,
        "X has dtype .*bfloat16.*float32 or float64",
    ),
    C(
        "X_longdouble",
        lambda d: (d.only("numpy"), lambda: lsq.lstsq(d.put(X0, np.longdouble), d.y))[1],
        TypeError,
        "X has dtype .*float32 or float64",
    ),
    C(
        "X_strings",
        lambda d: (d.only("numpy"), lambda: lsq.lstsq(d.put(np.full((10, 3), "a")), d.y))[1],
        TypeError,
        "X must have a real numeric dtype",
    ),
    C(
        "X_masked",
        lambda d: (d.only("numpy"), lambda: lsq.lstsq(d.keep(np.ma.masked_array(X0, X0 > 1)), d.y))[1],
        TypeError,
        r"X is a NumPy masked array.*filled",
    ),
    C(
        "y_masked",
        lambda d: (d.only("numpy"), lambda: lsq.ridge(d.X, d.keep(np.ma.masked_array(y0, y0 > 1)), 1.0))[1],
        TypeError,
        "y is a NumPy masked array",
    ),
    C(
        "LinearRegression_masked",
        lambda d: (d.only("numpy"), lambda: lsq.LinearRegression().fit(d.keep(np.ma.masked_array(X0, X0 > 1)), d.y))[1],
        TypeError,
        "X is a NumPy masked array",
    ),
    C(
        "X_sparse_matrix",
        lambda d: (d.only("numpy"), lambda: lsq.nnls(d.keep(pytest.importorskip("scipy.sparse").csr_matrix(X0)), d.y))[
            1
        ],
        TypeError,
        r"X is a SciPy sparse csr_matrix; dense arrays only: use X.toarray\(\)",
    ),
    C(
        "X_sparse_direct_method",
        lambda d: (
            d.only("numpy"),
            lambda: lsq.lstsq(d.keep(pytest.importorskip("scipy.sparse").csr_matrix(X0)), d.y, method="qr"),
        )[1],
        ValueError,
        r"method='qr' factorizes X itself; X is a SciPy sparse csr_matrix of shape \(\d+, \d+\): use method='lsmr'",
    ),
    C(
        "X_sparse_svd_mode",
        lambda d: (
            d.only("numpy"),
            lambda: lsq.ridge_cv(d.keep(pytest.importorskip("scipy.sparse").csr_array(X0)), d.y, 1.0, mode="svd"),
        )[1],
        ValueError,
        "target_batch and mode apply to dense X",
    ),
    C(
        "X_meta_tensor",
        lambda d: (d.only("torch"), lambda: lsq.lstsq(d.keep(d.xp.empty((10, 3), device="meta")), d.y))[1],
        TypeError,
        "X is a PyTorch meta tensor; meta tensors have no values",
    ),
    C(
        "X_unknown_chunks",
        lambda d: (d.only("dask"), lambda: lsq.lstsq(d.keep(d.X[d.X[:, 0] > 0]), d.keep(d.y[d.X[:, 0] > 0])))[1],
        ValueError,
        r"X has unknown chunk sizes.*compute_chunk_sizes",
    ),
    C(
        "y_unknown_chunks",
        lambda d: (d.only("dask"), lambda: lsq.ridge(d.X, d.keep(d.y[d.y > -100]), 1.0))[1],
        ValueError,
        "y has unknown chunk sizes",
    ),
    C(
        "mixed_libraries",
        lambda d: lambda: lsq.lstsq(d.X, d.other_library(y0)),
        TypeError,
        "must come from one array library",
    ),
    C(
        "mixed_devices",
        lambda d: (
            d.only("array_api_strict"),
            lambda: lsq.lstsq(d.keep(d.xp.asarray(X0, device=d.xp.Device("device2"))), d.y),
        )[1],
        ValueError,
        "must be on one device",
    ),
    C(
        "alpha_other_library",
        lambda d: lambda: lsq.ridge(d.X, d.y, d.other_library(np.asarray(1.0))),
        TypeError,
        "alpha must come from the same array library",
    ),
    C(
        "alpha_complex_array",
        lambda d: lambda: lsq.ridge(d.X, d.y, d.put([1.0 + 1j, 2.0])),
        TypeError,
        "alpha must have a real",
    ),
    C(
        "alpha_bool_array",
        lambda d: lambda: lsq.ridge(d.X, d.y, d.put([True, False])),
        TypeError,
        "alpha must have a real",
    ),
    C(
        "alpha_python_complex",
        lambda d: lambda: lsq.ridge(d.X, d.y, 1j),
        TypeError,
        "alpha must be a non-negative number",
    ),
    C("alpha_bool", lambda d: lambda: lsq.ridge(d.X, d.y, True), TypeError, "alpha must be a non-negative number"),
    C("alpha_numpy_bool", lambda d: lambda: lsq.ridge(d.X, d.y, np.bool_(True)), TypeError, "alpha must have a real"),
    C("alpha_string", lambda d: lambda: lsq.ridge(d.X, d.y, "1.0"), TypeError, "alpha must be a non-negative number"),
    C("alpha_huge_int", lambda d: lambda: lsq.ridge(d.X, d.y, 10**400), ValueError, "alpha must be finite"),
    C(
        "ridge_cv_alphas_string",
        lambda d: lambda: lsq.ridge_cv(d.X, d.y, (1, "1")),
        TypeError,
        "alphas must hold real numbers",
    ),
    C(
        "RidgeCV_alphas_string",
        lambda d: lambda: lsq.RidgeCV(alphas=(1, "1")).fit(d.X, d.y),
        TypeError,
        r"alphas\[1\] must be an instance of float, not str",  # scikit-learn's message
    ),
    C(
        "Ridge_alpha_string_array",
        lambda d: lambda: lsq.Ridge(alpha=np.array(["1"])).fit(d.X, d.y),
        TypeError,
        "alpha must have a real",
    ),
    C(
        "accumulator_alpha_complex",
        lambda d: lambda: acc(d).solve(alpha=1j),
        TypeError,
        "alpha must be a non-negative number",
    ),
    # --- values (not read on Dask) ---
    C(
        "X_nan",
        lambda d: lambda: lsq.lstsq(d.with_nan(X0, (2, 1)), d.y),
        ValueError,
        "X contains NaN or infinity",
        True,
    ),
    C(
        "X_inf_normal",
        lambda d: lambda: lsq.ridge(d.with_nan(X0, (0, 0), np.inf), d.y, 1.0, method="normal"),
        ValueError,
        "X contains NaN or infinity",
        True,
    ),
    C(
        "y_nan",
        lambda d: lambda: lsq.lstsq(d.X, d.with_nan(y0, 3), method="svd"),
        ValueError,
        "y contains NaN or infinity",
        True,
    ),
    C(
        "sample_weight_nan",
        lambda d: lambda: lsq.lstsq(d.X, d.y, sample_weight=d.with_nan(w0, 1)),
        ValueError,
        "sample_weight contains NaN",
        True,
    ),
    C(
        "sample_weight_negative",
        lambda d: lambda: lsq.lstsq(d.X, d.y, sample_weight=d.with_nan(w0, 4, -1.0), method="qr"),
        ValueError,
        "sample_weight must be non-negative",
        True,
    ),
    C(
        "zero_weight_sum_intercept",
        lambda d: lambda: lsq.lstsq(d.X, d.y, sample_weight=d.put(np.zeros(10)), fit_intercept=True),
        ValueError,
        "sample_weight must have a positive sum",
        True,
    ),
    C("alpha_negative", lambda d: lambda: lsq.ridge(d.X, d.y, -1.0), ValueError, "alpha must be non-negative", True),
    C("alpha_nan", lambda d: lambda: lsq.ridge(d.X, d.y, float("nan")), ValueError, "alpha must be finite", True),
    C(
        "alpha_device_negative",
        lambda d: lambda: lsq.ridge(d.X, d.y, d.put([1.0, -2.0])),
        ValueError,
        "alpha must be non-negative",
        True,
    ),
    C(
        "per_target_alpha_nan",
        lambda d: lambda: lsq.ridge(d.X, d.put(np.ones((10, 2))), d.put([1.0, np.nan]), per_target=True),
        ValueError,
        "alpha must be finite",
        True,
    ),
    C(
        "alpha_beyond_float32",
        lambda d: lambda: lsq.ridge(d.put(X0, np.float32), d.put(y0, np.float32), 1e300),
        ValueError,
        "alpha must be finite",
        True,
    ),
    C(
        "ridge_cv_alphas_zero",
        lambda d: lambda: lsq.ridge_cv(d.X, d.y, d.put([0.0, 1.0])),
        ValueError,
        "alphas must be positive",
        True,
    ),
    C(
        "ridge_cv_alphas_negative",
        lambda d: lambda: lsq.ridge_cv(d.X, d.y, [-1.0, 1.0]),
        ValueError,
        "alphas must be non-negative",
        True,
    ),
    C(
        "ridge_cv_X_nan",
        lambda d: lambda: lsq.ridge_cv(d.with_nan(X0, (5, 2)), d.y, 1.0),
        ValueError,
        "X contains NaN",
        True,
    ),
    C(
        "diagnostics_y_inf",
        lambda d: lambda: lsq.diagnostics(d.X, d.with_nan(y0, 0, np.inf)),
        ValueError,
        "y contains NaN or infinity",
        True,
    ),
    C(
        "accumulator_X_nan",
        lambda d: lambda: lsq.NormalAccumulator().update(d.with_nan(X0, (1, 1)), d.y),
        ValueError,
        "X contains NaN",
        True,
    ),
    C(
        "accumulator_alpha_negative",
        lambda d: lambda: acc(d).solve(alpha=-1.0),
        ValueError,
        "alpha must be non-negative",
        True,
    ),
    C(
        "LinearRegression_X_nan",
        lambda d: lambda: lsq.LinearRegression().fit(d.with_nan(X0, (1, 1)), d.y),
        ValueError,
        "X contains NaN",
        True,
    ),
    C(
        "Ridge_alpha_negative",
        lambda d: lambda: lsq.Ridge(alpha=-1.0).fit(d.X, d.y),
        ValueError,
        "alpha must be non-negative",
        True,
    ),
]
