"""NumPy float64 cost of the rank certificate of ``normal``, ``qr`` and ``auto``
(``lsq_backends._solvers.linalg.rank``), against the fits it is part of, in the same run.

``python -m benchmarks.rank_check [--rows ROW,...] [--repeat N]`` (one BLAS thread). The
certificate is timed alone, on the Cholesky factor of the fit's own Gram matrix (the inverse
of the column-scaled n x n factor and three weighted sums; on Householder's R it costs the
same), and reported as a fraction of each well-conditioned fit's time (cond 100):

- ``tall``: 200000 x 50 and 100000 x 200;
- ``square``: 2000 x 2000 (where the n**3 / 3 of the certificate meets the m n**2 of the fit);
- ``small``: 442 x 10, per call, and the bound that the Gram route reads in the certificate's stead
  there (``rank.bounded``, n <= 16);
- ``batched``: 10000 x (64 x 8), the stack's factors certified by substitution;
- ``agreement`` (not timed): 2000 random 3 x 3 systems with one row scaled to 1e-16 (default
  rcond) and 200 random 8 x 6 at ``rcond=0.5``, each method against ``numpy.linalg.lstsq``.

Calls of a row are interleaved (one of each per round), medians of the rounds reported.
"""

from __future__ import annotations

import numpy as np

from .gram_speed import _rounds, make_problem, run


def _factored(X):
    """``(A, L, colsq, cutoff, resolution)`` as the Gram route has them for X: the Gram matrix, its
    Cholesky factor, its diagonal, the default cutoff and the Gram matrix's rounding."""
    m, n = X.shape[-2:]
    A = np.swapaxes(X, -1, -2) @ X
    eps = np.finfo(X.dtype).eps
    d = np.diagonal(A, axis1=-2, axis2=-1).copy()
    return A, np.linalg.cholesky(A), d, eps * max(m, n), (eps * (max(m, n) ** 0.5 + min(m, n))) ** 0.5


def _certificate(X):
    """The call the Gram route makes (``gram.full_rank_test``) on X's Cholesky factor."""
    from lsq_backends._solvers.linalg import rank

    _, L, d, c, tol = _factored(X)
    return lambda: rank.certified(np, L, None, None, c, resolution=tol, colsq=d)


def _bound(X):
    """What the Gram route pays instead where n <= 16 on NumPy (``rank.bounded``): the certificate's answer read
    off the condition estimate (which the fit makes anyway, so not timed here)."""
    from array_api_compat import numpy as xp

    from lsq_backends._solvers.linalg import rank
    from lsq_backends._solvers.linalg.rank import condition_estimate

    A, L, d, c, tol = _factored(X)
    pivots, kappa = np.diagonal(L, axis1=-2, axis2=-1), condition_estimate(xp, L, A)
    assert rank.bounded(xp, kappa, d, pivots, None, None, c, tol), "the bound must prove this problem's rank"
    return lambda: rank.bounded(xp, kappa, d, pivots, None, None, c, tol)


def _row(lsq, title, X, y, repeat, per_call=1):
    def many(f):
        return (lambda: [f() for _ in range(per_call)]) if per_call > 1 else f

    calls = {m: many(lambda m=m: lsq.lstsq(X, y, method=m)) for m in ("normal", "auto", "qr")}
    calls["certificate"] = many(_certificate(X))
    if X.ndim == 2 and X.shape[-1] <= 16:
        calls["bound"] = many(_bound(X))
    med = _rounds(calls, repeat)
    cert = med["certificate"]
    print(f"\n{title}: certificate {cert / per_call * 1e3:.3f} ms per fit")
    if "bound" in med:
        print(f"  the Gram route's bound in its stead (n <= 16): {med['bound'] / per_call * 1e3:.3f} ms")
    for m in ("normal", "auto", "qr"):
        print(f"  {m:8s} {med[m] / per_call * 1e3:9.3f} ms   certificate {100 * cert / med[m]:5.1f}% of it")
    ok = lsq.lstsq(X, y, method="auto").rank
    assert np.all(np.asarray(ok) == X.shape[-1]), "the well-conditioned fit must keep every direction"


def tall(lsq, repeat):
    for m, n in ((200_000, 50), (100_000, 200)):
        _, _, X, y = make_problem(m, n, 100.0)
        _row(lsq, f"tall {m}x{n}, cond 100", X, y, repeat)


def square(lsq, repeat):
    _, _, X, y = make_problem(2000, 2000, 100.0, seed=1)
    _row(lsq, "square 2000x2000, cond 100", X, y, repeat)


def small(lsq, repeat):
    _, _, X, y = make_problem(442, 10, 100.0, seed=3)
    _row(lsq, "442x10, cond 100", X, y, repeat, per_call=200)


def batched(lsq, repeat):
    _, _, X, y = make_problem(64, 8, 100.0, seed=4, batch=(10_000,))
    _row(lsq, "batched 10000 x (64x8), cond 100", X, y, repeat)


def _differences(lsq, method, Xs, ys, rcond):
    """How many fits differ from ``numpy.linalg.lstsq``: another rank, or coefficients off by
    more than 10 sqrt(max(m, n)) eps kappa (QR's bound; kappa ``s_1 / min(s_r, s_r - s_{r+1})``,
    the retained part's and the gap's, Wedin), squared for the normal equations."""
    bad = 0
    for X, y in zip(Xs, ys, strict=True):
        w, _, r, s = np.linalg.lstsq(X, y, rcond=rcond)
        gap = s[r - 1] - (s[r] if r < len(s) else 0.0)
        kappa = s[0] / min(s[r - 1], gap)
        tol = 10 * max(X.shape) ** 0.5 * np.finfo(X.dtype).eps * kappa ** (2 if method in ("normal", "auto") else 1)
        fit = lsq.lstsq(X, y, method=method, rcond=rcond)
        bad += int(fit.rank) != r or np.linalg.norm(fit.coef - w) > tol * np.linalg.norm(w)
    return bad


def agreement(lsq, repeat):
    """Not timed: the issue's random families against ``numpy.linalg.lstsq``."""
    rng = np.random.default_rng(0)
    Xs, ys = rng.standard_normal((2000, 3, 3)), rng.standard_normal((2000, 3))
    Xs[np.arange(2000), rng.integers(0, 3, 2000)] *= 1e-16
    Xr, yr = rng.standard_normal((200, 8, 6)), rng.standard_normal((200, 8))
    print("\ndifferences from numpy.linalg.lstsq (rank, or coef beyond eps kappa)")
    for method in ("auto", "normal", "qr", "svd"):
        row = _differences(lsq, method, Xs, ys, None)
        rc = _differences(lsq, method, Xr, yr, 0.5)
        print(f"  {method:8s} 2000 3x3, one row at 1e-16: {row:4d}   200 8x6 at rcond=0.5: {rc:4d}")


ROWS = {"tall": tall, "square": square, "small": small, "batched": batched, "agreement": agreement}


def main(argv=None):
    run("python -m benchmarks.rank_check", __doc__, ROWS, argv)


if __name__ == "__main__":
    main()
