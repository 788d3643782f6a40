"""X as a linear map: sparse matrices, operators and callables for the Krylov solvers.

Placeholder for the operator layer (filled in below).
"""

from __future__ import annotations

from typing import Any


class LinearMap:
    """X (m, n) known only through block products: ``matvec(V)`` = X @ V for V (n, k) and
    ``rmatvec(U)`` = X^T @ U for U (m, k), both arrays of the solving namespace ``xp`` on
    ``device``. ``shape``, ``dtype`` and ``device`` stand in for an array's."""

    ndim = 2

    def __init__(self, xp, shape, dtype, device, matvec, rmatvec):
        self.xp: Any = xp
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self._matvec, self._rmatvec = matvec, rmatvec

    def matvec(self, V):
        return self._matvec(V)

    def rmatvec(self, U):
        return self._rmatvec(U)
