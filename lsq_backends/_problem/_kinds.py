"""Array-like objects that would convert wrongly, refused before any conversion.

Each of these looks like an array to a converter but is not the dense, concrete array a fit
needs: a NumPy masked array (its mask would be dropped, or break broadcasting), a SciPy sparse
matrix (``asarray`` makes a 0-d object array of it), a PyTorch meta tensor (a shape without
values), and a Dask array with unknown chunk sizes (its shape holds NaN). Nothing here imports
a library: an object of a library that was never imported cannot be one of these.
"""

from __future__ import annotations

import math
import sys

__all__ = ["check_kind", "check_known_shape"]


def check_kind(a, name):
    """Raise ``TypeError`` naming ``name`` if ``a`` is a masked array, a SciPy sparse matrix
    or array, or a meta tensor."""
    ma = sys.modules.get("numpy.ma")
    if ma is not None and isinstance(a, ma.MaskedArray):
        msg = (
            f"{name} is a NumPy masked array, whose mask would be ignored; pass {name}.filled(value) or "
            f"{name}.compressed(), or drop the masked rows from every argument"
        )
        raise TypeError(msg)
    sparse = sys.modules.get("scipy.sparse")
    if sparse is not None and sparse.issparse(a):
        msg = f"{name} is a SciPy sparse {type(a).__name__}; dense arrays only: use {name}.toarray()"
        raise TypeError(msg)
    if getattr(a, "is_meta", False) is True:
        msg = (
            f"{name} is a PyTorch meta tensor; meta tensors have no values to fit: "
            f"create {name} on a real device (cpu, cuda)"
        )
        raise TypeError(msg)


def check_known_shape(a, name):
    """Raise ``ValueError`` naming ``name`` if a dimension of ``a`` is unknown (NaN or None):
    a Dask array after boolean indexing, before ``compute_chunk_sizes()``."""
    if a is None:
        return
    if any(s is None or (isinstance(s, float) and math.isnan(s)) for s in a.shape):
        msg = (
            f"{name} has unknown chunk sizes (shape {tuple(a.shape)}), as after boolean indexing of a "
            f"Dask array; call {name} = {name}.compute_chunk_sizes() first"
        )
        raise ValueError(msg)
