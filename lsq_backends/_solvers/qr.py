"""QR: an orthogonal factorization and a triangular solve, with QR-level accuracy.

Tall X (m >= n): ``X = Q R``, ``w = R^{-1} Q^T y``. Least squares on tall X uses CholeskyQR2
(Fukaya, Nakatsukasa, Yamamoto) when the Gram factor's condition estimate (after column
equilibration) is at most ``eps**-0.5 / 100`` (float64: 6.7e5, float32: 29): two Gram passes,
one triangular solve with m right-hand sides and two small Choleskys, all matrix-matrix work (the fastest
QR on GPUs, and 4x faster than LAPACK's Householder QR here), with Q orthogonal to working
precision in that range. Past it, shifted CholeskyQR3 of ``[X Y]`` (``cholqr``:
Householder-level error measured up to cond 1e12, at about half Householder's time on NumPy),
and Householder QR only where its check fails (rank deficiency, cond beyond ~1e11-1e12: one
more host read). For ridge, Householder QR, applying Q implicitly
where the library can (LAPACK's ormqr through SciPy or PyTorch). Wide X (m < n): the minimum-norm solution
from ``X^T = Q R``: ``w = Q R^{-T} y``. Ridge factors ``[R; sqrt(alpha) I]`` (a 2p x p QR after
the first one), which is the QR of ``[X; sqrt(alpha) I]`` without touching X again. Error
~ eps * cond(X) (plus eps * cond(X)**2 * ||r|| / (||X|| ||w||) for large residuals), for
2mn^2 - 2n^3/3 flops: about twice the normal equations.

The rank is decided by ``rank.certified`` on the triangular factor that is solved (the Gram
factor for CholeskyQR2's gate, R11 for shifted CholeskyQR3, R for Householder): the inverse
of the column-scaled factor certifies that no singular value falls below the cutoff
(``rcond``, default ``_shared.default_cutoff``: ``eps * max(m, n)`` in float64), pivots
alone cannot (Kahan's matrix). Where it does not, the problem is solved from the SVD of the
small factor R (X = (QU) S V^T), which decides the rank with the cutoff itself: the
minimum-norm solution, at O(p^3) extra.
"""

from __future__ import annotations

from .._backend import _compat
from .._backend._compat import full_int, matmul, mT
from ._record import DIRECT_FEATURES, NOTHING, SVD_SYNC, Given, Record, Solution
from .linalg import cholqr, gram, householder
from .linalg._operators import asked, inverse_factor, triangular_inverse
from .linalg._shared import gated


def solve(xp, X, Y, alpha, given=NOTHING, *, operators=False):
    """QR solution (CholeskyQR2 where safe, else shifted CholeskyQR3, else Householder), falling
    back to the SVD of R on a numerically singular factor: a ``Solution``. ``operators``: with
    the ``_operators.Operators`` solved with (of ``X^T X``, or for wide X of ``X X^T``). ``given.check``
    and ``given.data`` as the normal equations take them: CholeskyQR2's first
    Gram product tests X (finiteness, scale) as the normal equations' does, and with an
    intercept centers on the n x n side (``TallGram``); the other routes take the data
    as Householder QR does (``gram.without_gram``). rss where ``data`` is given."""
    rcond, offset_sq, check, data, _ = given
    if not cholqr.uses_cholqr2(xp, X, alpha):
        return gram.without_gram(xp, householder.solve, X, Y, alpha, given, operators)
    # the Gram products, then X's deferred test on them (finiteness, scale), then their factor
    fac = gram.GramCholesky(xp, X, Y, None, None if data is None else data.whole()).factorize(xp, check)
    offset_sq = gram.centered_offsets(fac, offset_sq)
    n = X.shape[-1]

    def attempt(X, Y):
        M, L2, Z, good = cholqr.cholqr2_factors(xp, X, Y, fac)
        W = matmul(xp, M, _compat.solve_triangular(xp, mT(xp, L2), Z, lower=False))
        rank = full_int(xp, X.shape[:-2], n, X)
        # X = Q L2^T L^T with Q = X M L2^-T: R^-1 = M L2^-T
        ops = asked(operators, lambda: inverse_factor(xp, matmul(xp, M, triangular_inverse(xp, mT(xp, L2), False))))
        return Solution(W, rank, operators=ops), good

    def householder_solved(X, Y):
        return householder.solve(xp, X, Y, None, Given(rcond, offset_sq), operators=operators)

    def shifted_or_householder(X, Y):
        X, Y = fac.data.arrays(X, Y)  # centered (an X-sized copy) where fac.data is
        solved, good = cholqr.shifted_cholqr3(xp, X, Y, fac, rcond, offset_sq, operators)
        return _compat.branch(xp, good, lambda *_: solved, householder_solved, (X, Y))

    gate = cholqr.cholqr2_gate(xp, X, rcond, offset_sq, fac)
    sol = gated(xp, gate, attempt, shifted_or_householder, (X, Y))
    return sol if data is None else sol._replace(rss=fac.data.residual(X, Y, sol.coef, cross=False)[1])


RECORD = Record(
    "qr",
    solve,
    forms_gram=True,
    path_route="svd",
    capabilities={
        **DIRECT_FEATURES,
        "host_reads": "1 (2 on the Householder route)",
        "torch_cuda_syncs": SVD_SYNC,
        "xla_gpu_syncs": "3 (4 past CholeskyQR2's gate)",
    },  # fmt: skip
    notes={
        "host_reads": (
            "float32 X past CholeskyQR2's gate (cond > ~30 in float32, 6.7e5 in float64) takes the 2 reads of"
            " the next route; past shifted CholeskyQR3's reach (cond ~1e7 in float32, ~1e11 in float64), 3."
        ),
    },
)
