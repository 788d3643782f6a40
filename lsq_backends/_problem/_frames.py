"""pandas DataFrames and Series as NumPy arrays, column by column, as scikit-learn reads them.

A frame whose columns all have NumPy integer or float dtypes converts as NumPy converts it
(``to_numpy``: their common dtype). Any other frame is read column by column, as
scikit-learn's ``check_array`` does: bool columns (``pd.get_dummies``' output) and pandas'
nullable ``Int*``/``Float*``/``boolean`` columns become float64 (0/1 for booleans, ``pd.NA``
becomes NaN, which the finiteness check then refuses like any NaN), object columns are
converted where their values are numbers, and a column that cannot be read as numbers
(strings, categories, dates) is refused with its label in the error. Nothing here imports
pandas: an object of a library that was never imported cannot be a frame.
"""

from __future__ import annotations

import sys

__all__ = ["from_pandas"]


def _numeric_kind(pd, dtype):
    """ "plain" (a NumPy number dtype), "convert" (bool, nullable numbers, object: converted to
    float64), or None (not a number: strings, categories, dates)."""
    import numpy as np

    if isinstance(dtype, np.dtype):
        if dtype.kind in "iuf":
            return "plain"
        return "convert" if dtype.kind in "bO" else None
    types = pd.api.types
    if types.is_bool_dtype(dtype) or types.is_float_dtype(dtype) or types.is_integer_dtype(dtype):
        return "convert"
    return None


def _refuse(where, dtype, why):
    msg = (
        f"{where} has dtype {dtype}, which is not numeric{why}: encode it first (e.g. pd.get_dummies "
        "for categories) or drop it"
    )
    raise TypeError(msg)


def from_pandas(a, name):
    """``a`` as a NumPy array if it is a pandas DataFrame or Series (see the module docstring),
    else ``a`` unchanged. ``name`` is the argument's name in errors."""
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(a, (pd.DataFrame, pd.Series)):
        return a
    import numpy as np

    if isinstance(a, pd.DataFrame):
        columns = [(f"{name} column {label!r}", col) for label, col in a.items()]
    else:
        columns = [(name if a.name is None else f"{name} (Series {a.name!r})", a)]
    if not columns:  # no columns (the intercept-only model): pandas would make it object
        return np.zeros((len(a), 0))
    kinds = [_numeric_kind(pd, col.dtype) for _, col in columns]
    if all(kind == "plain" for kind in kinds):
        return a.to_numpy()
    for (where, col), kind in zip(columns, kinds, strict=True):
        if kind is None:
            _refuse(where, col.dtype, "")
        if col.dtype == object:
            try:
                col.to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError) as exc:
                _refuse(where, col.dtype, f" ({exc})")
    return a.to_numpy(dtype=np.float64, na_value=np.nan)
