"""auto: the refined normal equations where they are as accurate as QR, QR otherwise.

The Gram matrix is formed and factorized (the normal path's work) and the condition number of
the column-equilibrated X is estimated from the factor (``rank.condition_estimate``). The normal solution,
refined once (``gram.GramCholesky.solve``: one more pass over X, fused with the residual that rss
needs), is kept when the factor certifies full rank (``gram.full_rank_test``), its diagonal is clear of
the subnormal range, and

- cond <= ``eps**(-1/3) / 16`` (float64: 1.0e4, float32: 12.6), where one step of refinement
  has converged (its error shrinks by ~eps cond**2 per step, to ~eps cond);
- cond**2 * tan(theta) <= 1e4, theta the angle between y and the fitted X w
  (tan = ||r|| / ||X w||, from the refined rss and w^T X^T y on the n x n side): refinement
  cannot go below the rounding of X^T r, ~eps cond**2 ||r|| / (||X|| ||w||), which measured up
  to 7x ``numpy.linalg.lstsq``'s error at cond**2 tan = 1e4 and 26-140x at 1e6.

Otherwise the problem goes to Householder QR (not CholeskyQR2, which measured up to 0.7 digits
fewer on NIST's large-residual Wampler problems), and to the SVD of R on rank deficiency. Wide
X keeps the unrefined normal equations up to ``eps**-0.25 / 8`` (float64 1.5e3; error
~ eps cond**2 below ~5e-10). Under ``jax.jit`` each choice is a ``lax.cond`` on traced values,
so it never leaves the device; over a batch, one problem that fails sends the whole batch down
the safer path.
"""

from __future__ import annotations

from .._backend import _compat
from .._backend._compat import all_true, eps
from ._record import DIRECT_FEATURES, NOTHING, SVD_SYNC, Record, Solution
from .linalg import gram, householder
from .linalg._operators import asked
from .linalg._shared import gated, merge_targets

RESIDUAL_LIMIT = 1e4  # cond**2 * tan(theta) up to which the refined error stays QR-level


def solve(xp, X, Y, alpha, given=NOTHING, *, operators=False):
    rcond, offset_sq, check, data, _ = given
    # the Gram products, then X's deferred test on them (finiteness, scale), then their factor
    fac = gram.GramCholesky(xp, X, Y, alpha, data).factorize(xp, check)
    offset_sq = gram.centered_offsets(fac, offset_sq)
    kappa = fac.condition(xp)
    limit = gram.kappa_limit(xp, X) if fac.wide else gram.refined_limit(xp, X)
    # NaN (a failed factorization) compares False and goes to QR. A Gram matrix in the subnormal
    # range (below ``floor``) has lost bits however well conditioned X is.
    floor = _compat.finfo(xp, X.dtype).smallest_normal / eps(xp, X)
    full_rank = gram.full_rank_test(xp, fac, X, rcond, offset_sq, global_scale=True, floor=floor)
    ok = all_true(xp, (kappa <= limit) & full_rank)
    if fac.wide:
        return fac.solve_or(xp, X, Y, ok, householder.solve, rcond, offset_sq, operators)

    def attempt(X, Y):
        W, rank, rss = fac.solve(xp, X, Y)
        signal = _compat.reduce_sum(xp, W * merge_targets(xp, fac.B, alpha), axis=-2)  # ~ ||X w||^2 (..., k)
        k4 = kappa * kappa
        k4 = k4 * k4  # on the condition estimate's shape, before it meets the targets
        if k4.ndim == 0 and rss.shape == (1,) and _compat.traits(xp).free_to_read:  # one NumPy fit: floats
            good = float(k4) * float(rss[0]) <= RESIDUAL_LIMIT**2 * float(signal[0])
        else:
            k4 = k4 if k4.ndim == rss.ndim else k4[..., None]
            good = all_true(xp, k4 * rss <= RESIDUAL_LIMIT**2 * signal)
        return Solution(W, rank, rss=rss, operators=asked(operators, fac.operators, xp)), good

    return gated(xp, ok, attempt, fac.fallback(xp, householder.solve, rcond, offset_sq, operators), (X, Y))


RECORD = Record(
    "auto",
    solve,
    forms_gram=True,
    path_route="auto",
    matrix_free="lsmr",
    sparse_gram="normal",
    lean="angle",
    error_bound="either",
    capabilities={
        **DIRECT_FEATURES,
        "host_reads": "1 (3 on the QR route)",
        "torch_cuda_syncs": SVD_SYNC,
        "xla_gpu_syncs": "1",
    },  # fmt: skip
    notes={
        "sharded": "the QR branch of a fit and every rank fallback all-gather X (XLA does not partition a QR).",
        "host_reads": (
            "the lean route's certificate is read first (the one read of most fits); where it fails the full"
            " route reads its own, and the QR route one more. float32 `auto` takes the full route at once: the"
            " refined normal equations are kept up to cond ~13 there, so most float32 problems take the QR"
            " route's 2 reads."
        ),
    },
)
