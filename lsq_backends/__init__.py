"""lsq_backends: linear least squares and ridge, written once on the Python array API standard.

The same code runs on NumPy, CuPy, JAX (also under ``jax.jit``, ``vmap`` and ``grad``),
PyTorch, Dask and array-api-strict; results stay in the caller's namespace, device and dtype.
"""

from ._accumulators import NormalAccumulator, QRAccumulator
from ._api import lstsq, ridge
from ._result import LstsqResult

__all__ = ["LstsqResult", "NormalAccumulator", "QRAccumulator", "lstsq", "ridge"]
__version__ = "0.1.0"
