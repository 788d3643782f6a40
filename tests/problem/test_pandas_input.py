"""pandas frames as data scientists hold them: bool dummy columns (``pd.get_dummies``), nullable
``Float64``/``Int64``/``boolean`` columns, ``pd.NA``, and columns that are not numbers, read
column by column as scikit-learn reads them; and no cost (no pandas import) without pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import lsq_backends as lsq

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.usefixtures("numpy_reference")

rng = np.random.default_rng(0)
M = 40


def _frame():
    """A frame with a float, an int, a nullable Float64, a nullable Int64 column and bool
    dummies; and its float64 array."""
    x = rng.standard_normal(M)
    k = rng.integers(0, 5, M)
    z = rng.standard_normal(M)
    city = pd.Series(rng.choice(["a", "b", "c"], M))
    frame = pd.DataFrame({"x": x, "k": k, "z": pd.array(z, dtype="Float64"), "j": pd.array(k + 1, dtype="Int64")})
    frame = pd.concat([frame, pd.get_dummies(city, prefix="city", drop_first=True)], axis=1)
    dense = np.column_stack([x, k, z, k + 1.0, (city == "b").to_numpy(float), (city == "c").to_numpy(float)])
    return frame, dense


def test_dummies_and_nullable_columns_as_scikit_learn():
    from sklearn.linear_model import LinearRegression

    frame, dense = _frame()
    assert frame.dtypes.iloc[-1] == np.dtype(bool) and str(frame.dtypes["z"]) == "Float64"
    y = dense @ np.arange(1.0, 7.0) + rng.standard_normal(M)
    frame = frame.drop(columns="j")  # k + 1 next to k and an intercept: collinear
    dense = np.delete(dense, 3, axis=1)
    want = LinearRegression().fit(frame, y)
    got = lsq.lstsq(frame, y, fit_intercept=True)
    np.testing.assert_allclose(got.coef, want.coef_, rtol=1e-10)
    np.testing.assert_allclose(got.intercept, want.intercept_, rtol=1e-10)
    d = lsq.diagnostics(frame, pd.Series(y, name="price"))
    np.testing.assert_allclose(d.coef, lsq.diagnostics(dense, y).coef, rtol=1e-12)
    assert d.feature_names == list(frame.columns) and d.target_name == "price"
    np.testing.assert_allclose(lsq.ridge(frame, y, 2.0).coef, lsq.ridge(dense, y, 2.0).coef, rtol=1e-12)
    np.testing.assert_allclose(
        lsq.ridge_cv(frame, y, np.logspace(-2, 2, 5)).coef, lsq.ridge_cv(dense, y, np.logspace(-2, 2, 5)).coef
    )


def test_only_bool_columns_and_nullable_target():
    dummies = pd.get_dummies(pd.Series(rng.choice(["a", "b", "c"], M)))  # bool only: no intercept needed
    y = pd.Series(rng.standard_normal(M), dtype="Float64")
    got = lsq.lstsq(dummies, y)
    groups = dummies.to_numpy().argmax(axis=1)
    means = [y.to_numpy(float)[groups == g].mean() for g in range(3)]
    np.testing.assert_allclose(got.coef, means, rtol=1e-12)


def test_missing_values_are_refused_as_nan_is():
    frame, dense = _frame()
    y = dense[:, 0].copy()
    frame.loc[3, "z"] = pd.NA
    for fit in (lambda X, y: lsq.lstsq(X, y), lambda X, y: lsq.diagnostics(X, y)):
        with pytest.raises(ValueError, match="X contains NaN"):
            fit(frame, y)
    with pytest.raises(ValueError, match="y contains NaN"):
        lsq.lstsq(dense, pd.Series(y, dtype="Float64").mask(np.arange(M) == 5))


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(["a", "b"] * (M // 2)),
        pd.Series(pd.Categorical(["a", "b"] * (M // 2))),
        pd.Series(pd.date_range("2020-01-01", periods=M)),
        pd.Series(["1.5", "x"] * (M // 2), dtype=object),
    ],
    ids=["str", "category", "datetime", "object-str"],
)
def test_a_column_that_is_not_numbers_is_named(column):
    frame, dense = _frame()
    frame["city name"] = column
    with pytest.raises(TypeError, match="X column 'city name' has dtype"):
        lsq.lstsq(frame, dense[:, 0])
    with pytest.raises(TypeError, match=r"y \(Series 'price'\) has dtype"):
        lsq.diagnostics(dense, column.rename("price"))


def test_object_column_of_numbers_converts():
    frame, dense = _frame()
    frame, dense = frame.drop(columns="j"), np.delete(dense, 3, axis=1)
    frame["x"] = frame["x"].astype(object)
    y = rng.standard_normal(M)
    np.testing.assert_allclose(lsq.lstsq(frame, y).coef, lsq.lstsq(dense, y).coef, rtol=1e-12)


def test_no_pandas_import_without_pandas():
    code = (
        "import sys, numpy as np, lsq_backends as lsq\n"
        "X = np.random.default_rng(0).standard_normal((20, 3))\n"
        "lsq.lstsq(X, X[:, 0], fit_intercept=True); lsq.diagnostics(X, X[:, 1]); lsq.lstsq(X.tolist(), X[:, 0].tolist())\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
