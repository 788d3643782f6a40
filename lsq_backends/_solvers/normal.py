"""Normal equations: Cholesky on the Gram matrix.

Tall X (m >= n): ``(X^T X + alpha I) w = X^T y``. Wide X (m < n): the minimum-norm form
``w = X^T (X X^T + alpha I)^{-1} y``. One pass over X to form the Gram matrix, then O(p^3) on a
p x p matrix, p = min(m, n): the fastest method, but the Gram matrix squares the condition
number, so the error grows like eps * cond(X)**2. Accurate for cond(X) << eps**-0.5.

A Gram factor that does not certify full rank (``gram.full_rank_test``: the inverse of the
column-scaled factor bounds the smallest singular value, against the cutoff and the Gram
matrix's rounding ``sqrt(gram_noise)``, ``_shared.gram_noise``; a failed factorization fails
it) sends the problem to a solver that decides the rank from singular values, so
rank-deficient problems get the minimum-norm solution, never NaN. The fallback: the SVD path
(a QR of X, then the SVD of its R factor; error ~ eps cond); on JAX the eigendecomposition of
the Gram matrix already formed (``gram.GramCholesky.eigen``: error ~ eps cond**2 of the kept part,
the normal equations' own), since XLA reserves the memory of both branches of the rank test
in every compiled fit: the QR's copy of X (on sharded X, the all-gather of all of X onto every
device) would be paid by every fit.
"""

from __future__ import annotations

from .._backend import _compat
from .._backend._compat import all_true
from .._problem._operator import LinearMap
from ._record import DIRECT_FEATURES, NOTHING, SVD_SYNC, Record
from .linalg import gram, pinv


def solve(xp, X, Y, alpha, given=NOTHING, *, operators=False):
    """Normal-equation solution, refined once (tall X), falling back to the SVD path (JAX: the
    Gram matrix's eigendecomposition) on a singular Gram matrix: a ``Solution`` with rss.
    ``given.check(A)`` validates the Gram matrix before it is factorized; ``given.data``, a ``TallGram`` of tall X
    (uncentered X and Y with their shifts, for a fit with an intercept), or the ``_operator_gram.MapGram`` of a sparse
    X (a ``LinearMap``: the eigendecomposition is then the fallback); ``operators``: see ``gram.GramCholesky.solve_or``."""
    rcond, offset_sq, check, data, _ = given
    # the Gram products, then X's deferred test on them (finiteness, scale), then their factor
    fac = gram.GramCholesky(xp, X, Y, alpha, data).factorize(xp, check)
    offset_sq = gram.centered_offsets(fac, offset_sq)
    ok = gram.full_rank_test(xp, fac, X, rcond, offset_sq)
    # X known by its products and Gram matrix (a sparse X) has no QR: the Gram's eigendecomposition
    fallback = None if _compat.traits(xp).branches_share_memory or isinstance(X, LinearMap) else pinv.minimum_norm
    return fac.solve_or(xp, X, Y, all_true(xp, ok), fallback, rcond, offset_sq, operators)


RECORD = Record(
    "normal",
    solve,
    forms_gram=True,
    path_route="gram",
    sparse_gram="normal",
    lean="plain",
    error_bound="cond**2",
    capabilities={
        **DIRECT_FEATURES,
        "sharded": True,
        "host_reads": "1 (3 on a rank fallback)",
        "torch_cuda_syncs": SVD_SYNC,
        "xla_gpu_syncs": "1",
    },  # fmt: skip
    notes={
        "host_reads": (
            "the lean route's certificate is read first (the one read of most fits); where it fails the full"
            " route reads its own, and its rank fallback one more."
        ),
        "torch_cuda_syncs": (
            "torch's CUDA `svd` and `eigh` read cuSOLVER's error flag on the host, one synchronization each"
            " (`count_host_reads('torch-cuda')` counts them as hidden); its Cholesky (`cholesky_ex`) and"
            " triangular solves read nothing. The same holds for every row."
        ),
        "xla_gpu_syncs": (
            "an eager JAX call runs the lean route compiled and reads its certificate with the value checks, once;"
            " where it fails, the full route runs compiled and XLA:GPU copies the predicate of every `lax.cond`"
            " executed (each route decision) and of every `while_loop` trip to the host. Under a caller's"
            " `jax.jit` the lean route's `lax.cond` predicate is the one copy. Counted on a well-conditioned"
            " float64 problem (`tests/budgets/test_host_reads.py`, JAX session)."
        ),
    },
)
