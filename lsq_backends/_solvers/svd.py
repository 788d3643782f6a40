"""SVD: the minimum-norm solution through the pseudo-inverse.

Handles every problem: tall, wide, rank deficient. Singular values below
``rcond * s_max`` are treated as zero (default ``rcond = eps * max(m, n)`` in float64, as
``numpy.linalg.lstsq``; the factorization's probable noise in float32, see
``_shared.default_cutoff``), which gives the minimum-norm least-squares solution, the one
``scipy.linalg.lstsq`` (gelsd) returns. Ridge uses the filter factors
``s / (s**2 + alpha)``. Error ~ eps * cond(X). Cost: a QR of X plus the SVD of its n x n
factor (tall X), or a QR of X^T and the SVD of its m x m factor (wide X): the most
expensive method. The QR of tall least squares is ``qr``'s: CholeskyQR2 where its gate
passes (well-conditioned, full rank: three Gram-like products instead of Householder's
BLAS-2 panels), Householder otherwise.
"""

from __future__ import annotations

from ._record import DIRECT_FEATURES, NOTHING, Record
from .linalg import cholqr, gram, pinv


def solve(xp, X, Y, alpha, given=NOTHING, *, operators=False):
    """Minimum-norm solution of X @ W = Y (or ridge): a ``Solution`` with the singular values,
    and with ``operators`` (tall X, one penalty or none) the ``_operators.Operators`` of the SVD
    (``pinv.minimum_norm``). ``given.check`` and ``given.data`` as ``qr`` takes them: on CholeskyQR2's
    Gram product, else on the data as Householder QR takes them (``gram.without_gram``)."""
    if alpha is not None or not cholqr.uses_cholqr2(xp, X, None):
        return gram.without_gram(xp, pinv.minimum_norm, X, Y, alpha, given, operators)
    return pinv.minimum_norm(xp, X, Y, None, given, operators=operators)


RECORD = Record(
    "svd",
    solve,
    forms_gram=True,
    singular_values=True,
    path_route="svd",
    capabilities={
        **DIRECT_FEATURES,
        "host_reads": "1 (2 on the Householder route)",
        "torch_cuda_syncs": "+1 (the SVD)",
        "xla_gpu_syncs": "3 (2 past CholeskyQR2's gate)",
    },  # fmt: skip
)
