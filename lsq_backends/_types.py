"""Type aliases of the public signatures.

An array is any array of an array-API library (NumPy, CuPy, JAX, PyTorch, Dask,
array-api-strict): the standard has no common static type for them, so ``Array`` is ``Any``
to a type checker and the docstrings say which shapes are meant.
"""

from __future__ import annotations

from typing import Literal

from ._backend._compat import Array as Array
from ._solvers import Method as Method  # the registry's names

CVMode = Literal["auto", "eigen", "svd"]
CovType = Literal["nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster", "HAC", "hac-groupsum", "hac-panel"]
