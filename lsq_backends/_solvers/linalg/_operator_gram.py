"""The Gram route's data (as ``_gram_data.TallGram`` gives it) of X known by its products and its Gram
matrix: a sparse X, whose ``X^T X`` a sparse product forms into a dense n x n array
(``_operator.LinearMap.gram``), centered and weighted there by a rank-one correction
(``_operator.centered``). ``gram.GramCholesky`` factorizes it as a dense X's, and refines with the
residual from X's products; where the Cholesky factor does not certify full rank, ``normal``
takes the Gram matrix's eigendecomposition (X has no QR here). Memory O(nnz + n**2 + m k),
never O(m n).
"""

from __future__ import annotations

from ..._backend import _compat

__all__ = ["MapGram"]


class MapGram:
    """``products`` and ``residual`` of the map ``A`` (``_operator.LinearMap`` with a ``gram``), as ``TallGram``'s of
    a tall X already centered and weighted: the X and Y they are given are A and the prepared targets."""

    centered = False
    offset_sq = None  # centering's offsets travel in ``Given.offset_sq``

    def __init__(self, xp, A):
        self.xp, self.A = xp, A

    def products(self, X, Y):
        """``(A^T A, A^T Y)``: (n, n) and (n, k)."""
        return self.A.gram(), self.A.rmatvec(Y)

    def residual(self, X, Y, W, cross=True):
        """``(h, rss)`` of r = Y - A W: h = A^T r (n, k) (None without ``cross``), rss (k,); two products."""
        R = _compat.minus_fresh(self.xp, Y, self.A.matvec(W))
        h = self.A.rmatvec(R) if cross else None
        return h, _compat.sum_of_squares(self.xp, R, axis=-2)
