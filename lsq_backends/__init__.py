"""lsq_backends: linear least squares and ridge, written once on the Python array API standard.

The same code runs on NumPy, CuPy, JAX (also under ``jax.jit``, ``vmap`` and ``grad``),
PyTorch, Dask and array-api-strict; results stay in the caller's namespace, device and dtype.
"""

from ._api import lstsq, ridge
from ._nnls import NNLSResult, nnls
from ._problem._operator import operator
from ._result import LstsqResult
from ._ridge._cv import RidgeCVResult, ridge_cv
from ._streaming._accumulators import NormalAccumulator, QRAccumulator
from .diagnostics import Diagnostics, diagnostics

__all__ = [
    "Diagnostics",
    "LinearRegression",
    "LstsqResult",
    "NNLSResult",
    "NormalAccumulator",
    "QRAccumulator",
    "Ridge",
    "RidgeCV",
    "RidgeCVResult",
    "diagnostics",
    "lstsq",
    "nnls",
    "operator",
    "ridge",
    "ridge_cv",
]

# The estimators import scikit-learn (when installed): load them on first use only, so that
# ``import lsq_backends`` stays light.
_ESTIMATORS = ("LinearRegression", "Ridge", "RidgeCV")


def __getattr__(name):
    if name in _ESTIMATORS:
        from . import estimators

        return getattr(estimators, name)
    msg = f"module 'lsq_backends' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__():
    return sorted(set(globals()) | set(_ESTIMATORS))


__version__ = "0.1.0"
