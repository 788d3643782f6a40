"""The rank decision of ``normal``, ``qr``, ``auto`` and the accumulators against
``numpy.linalg.lstsq``, on every backend.

Pivots of an unpivoted triangular factor bound the smallest singular value from above without
revealing it: the methods used to keep the triangular solve on a 3 x 3 X with one row at
rounding level (s3 / s1 ~ 1e-16, ~8% of random draws), on an explicit ``rcond`` above the
smallest singular values (~20-50% of random 8 x 6 draws at ``rcond=0.5``), on Kahan's matrix,
and in accumulators fed about as many rows as features, and returned rank min(m, n) with a
solution that is not the minimum-norm one.

Reference: the truncated SVD of the centered X, keeping singular values above the cutoff
times ``max(s_max, largest column norm before centering)`` (the intercept's scale, which the
SVD path documents; without an intercept this is ``numpy.linalg.lstsq``, checked too). Rank:
equal; coef: within ``check.problems.threshold`` of the retained part, with kappa ``scale / min(s_r,
s_r - s_{r+1})`` (the gap that truncation's sensitivity depends on, Wedin; the scale the
data's rounding is relative to). Draws whose
singular values lie within a factor 2 of the default cutoff (or 1e-6 relative of an explicit
one) are skipped: there the rank is decided by rounding (of the factor, or of NumPy's SVD).
On JAX the random problems run under ``jax.vmap`` (each problem's decision its own
``lax.cond``, one compilation); on Dask a few lazily.
"""

from __future__ import annotations

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends.check.problems import threshold

lazy_fits = ("lstsq", "ridge")  # JAX: under jax.jit; Dask: no compute inside the fit

METHODS = ("auto", "normal", "qr", "svd")
FACTOR_METHODS = ("auto", "normal", "qr")  # the random problems: svd decides from singular values
EPS = float(np.finfo(np.float64).eps)


@pytest.fixture(autouse=True)
def _blas(one_blas_thread):
    """Thousands of tiny factorizations."""


def _count(be, full):
    """Random problems per test: all on NumPy, fewer where each fit costs more (on Dask, whose
    lazy fits build both branches of every decision, one)."""
    return {"numpy": full, "dask": 1}.get(be.library, max(full // 4, 20))


def reference(X, Y, rcond=None, fit_intercept=False, alpha=None):
    """(coef (n, k), intercept (k,), rank, kappa, eta, ambiguous) from the SVD of the centered
    X; ``alpha`` (k,) per target (0: least squares, the truncated solution; positive: ridge on
    every direction)."""
    m, n = X.shape
    xo = X.mean(0) if fit_intercept else np.zeros(n)
    yo = Y.mean(0) if fit_intercept else np.zeros(Y.shape[1])
    Xc, Yc = X - xo, Y - yo
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    scale = s[0]
    if fit_intercept:
        scale = max(scale, float(np.sqrt((X * X).sum(0)).max()))
    c = rcond if rcond is not None else EPS * max(m, n)
    keep = s > c * scale
    r = int(keep.sum())
    # At the default (rounding-level) cutoff, computed singular values err by about the cutoff
    # itself; at an explicit one, by rounding relative to it.
    f = 2.0 if rcond is None else 1 + 1e-6
    ambiguous = bool(np.any((s > c * scale / f) & (s < f * c * scale)))
    if not fit_intercept:
        assert r == np.linalg.lstsq(X, Y, rcond=c)[2]  # the reference is NumPy's
    alpha = np.zeros(Y.shape[1]) if alpha is None else np.asarray(alpha, np.float64)
    f = np.where(keep[:, None], 1 / np.where(keep, s, 1)[:, None], 0.0) * (alpha == 0)
    f = f + (alpha > 0) * s[:, None] / (s[:, None] ** 2 + np.where(alpha > 0, alpha, 1))
    coef = Vt.T @ (f * (U.T @ Yc))
    s_r = s[r - 1] if r else s[0]
    gap = s_r - (s[r] if r < len(s) else 0.0)
    # against the scale the data's rounding is relative to (centering: the columns before it)
    kappa = scale / max(min(s_r, gap), s[0] * EPS)
    resid = Yc - Xc @ coef
    eta = np.linalg.norm(resid) / max(s[0] * np.linalg.norm(coef), np.finfo(float).tiny)
    return coef, yo - xo @ coef, r, kappa, eta, ambiguous


def _fits(be, Xs, Ys, **kw):
    """coef (N, n, k), intercept (N, k) and rank (N,) of ``lsq.lstsq`` (or ``lsq.ridge`` with
    ``alpha``) on each problem of the stacks, one decision per problem."""
    alpha = kw.pop("alpha", None)

    def fit(X, Y):
        if alpha is None:
            return lsq.lstsq(X, Y, **kw)
        return lsq.ridge(X, Y, be.asarray(alpha), per_target=True, **kw)

    if be.library == "jax":
        import jax

        r = jax.vmap(lambda X, Y: tuple(fit(X, Y)[:3]))(be.asarray(Xs), be.asarray(Ys))
        return tuple(np.asarray(a) for a in r)
    out = [fit(be.asarray(X), be.asarray(Y)) for X, Y in zip(Xs, Ys, strict=True)]
    return tuple(np.stack([be.to_numpy(getattr(o, f)) for o in out]) for f in ("coef", "intercept", "rank"))


def _check_all(be, method, Xs, Ys, rcond=None, fit_intercept=False, alpha=None):
    """Fit every problem; return the descriptions of those that differ from the reference."""
    refs = [reference(X, Y, rcond, fit_intercept, alpha) for X, Y in zip(Xs, Ys, strict=True)]
    clear = [i for i, ref in enumerate(refs) if not ref[-1]]
    assert len(clear) >= 0.8 * len(refs), "too many draws at the cutoff"
    Xs, Ys, refs = Xs[clear], Ys[clear], [refs[i] for i in clear]
    kw = dict(method=method, fit_intercept=fit_intercept)
    if alpha is None:
        kw["rcond"] = rcond
    else:
        kw["alpha"] = alpha
    coef, intercept, rank = _fits(be, Xs, Ys, **kw)
    bad = []
    for i, (X, (w, b, r, kappa, eta, _)) in enumerate(zip(Xs, refs, strict=True)):
        m, n = X.shape
        tol = threshold(method, np.float64, kappa, m, n, eta)
        err = np.linalg.norm(coef[i] - w) / max(np.linalg.norm(w), 1e-300)
        err_b = np.linalg.norm(intercept[i] - b) / max(
            np.linalg.norm(b) + np.linalg.norm(X) * np.linalg.norm(w), 1e-300
        )
        if int(rank[i]) != r or not err <= tol or not err_b <= tol:
            bad.append(f"problem {clear[i]}: rank {int(rank[i])} (want {r}), coef error {err:.2g} (tol {tol:.2g})")
    return bad, len(refs)


# -- the cases ----------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_explicit_rcond_is_honoured(be, method):
    """rcond=0.5 on a random 8 x 6 X (s / s_max = 1, .85, .61, .53, .27, .22): NumPy's rank 4
    and coefficients (the pivots said 6, coefficients off by 0.54)."""
    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((8, 6)), rng.standard_normal(8)
    w, rank = np.linalg.lstsq(X, y, rcond=0.5)[::2]
    r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, rcond=0.5)
    assert int(be.to_numpy(r.rank)) == rank == 4
    coef, _, _, kappa, eta, _ = reference(X, y[:, None], 0.5)
    np.testing.assert_allclose(be.to_numpy(r.coef), w, rtol=0, atol=threshold(method, np.float64, kappa, 8, 6, eta))


@pytest.mark.parametrize("method", METHODS)
def test_row_at_rounding_level(be, method):
    """A 3 x 3 X whose first row is 1e-16 of the others (s / s_max = 1, .39, 7e-17): rank 2 and
    the minimum-norm solution with the default rcond (the pivots said 3)."""
    rng = np.random.default_rng(18)
    X, y = rng.standard_normal((3, 3)), rng.standard_normal(3)
    X[0] *= 1e-16
    w, rank = np.linalg.lstsq(X, y, rcond=None)[::2]
    r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method)
    assert int(be.to_numpy(r.rank)) == rank == 2
    coef, _, _, kappa, eta, _ = reference(X, y[:, None])
    tol = threshold(method, np.float64, kappa, 3, 3, eta) * np.linalg.norm(w)
    np.testing.assert_allclose(be.to_numpy(r.coef), w, rtol=0, atol=tol)


@pytest.mark.parametrize("method", METHODS)
def test_kahan_matrix(be, method):
    """Kahan's 90 x 90 matrix (theta = 1.2): every pivot at least 2e-3 of its column, s_min /
    s_max = 4.5e-16 below the cutoff 2e-14: rank 89, as NumPy."""
    n, theta = 90, 1.2
    K = np.diag(np.sin(theta) ** np.arange(n)) @ (np.eye(n) - np.cos(theta) * np.triu(np.ones((n, n)), 1))
    y = np.random.default_rng(0).standard_normal(n)
    r = lsq.lstsq(be.asarray(K), be.asarray(y), method=method)
    assert int(be.to_numpy(r.rank)) == np.linalg.lstsq(K, y, rcond=None)[2] == 89


# -- random problems ------------------------------------------------------------------------


@pytest.mark.parametrize("method", FACTOR_METHODS)
def test_random_rows_at_rounding_level(be, method):
    """3 x 3 systems with one random row scaled to 1e-16, default rcond."""
    rng = np.random.default_rng(0)
    N = _count(be, 400)
    Xs, Ys = rng.standard_normal((N, 3, 3)), rng.standard_normal((N, 3, 1))
    Xs[np.arange(N), rng.integers(0, 3, N)] *= 1e-16
    bad, _ = _check_all(be, method, Xs, Ys)
    assert not bad, f"{len(bad)} of {N}:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("method", FACTOR_METHODS)
def test_random_explicit_rcond(be, method):
    """8 x 6 Gaussian systems at rcond = 0.5 (rank 2 to 6)."""
    rng = np.random.default_rng(1)
    N = _count(be, 200)
    Xs, Ys = rng.standard_normal((N, 8, 6)), rng.standard_normal((N, 8, 1))
    bad, _ = _check_all(be, method, Xs, Ys, rcond=0.5)
    assert not bad, f"{len(bad)} of {N}:\n" + "\n".join(bad[:10])


def _near_singular(rng, N, m, n, offsets=False):
    """N problems m x n of numerical rank r < min(m, n) (r random): the dropped singular values
    at 1e-18 .. 1e-16 of s_max, the kept ones from 1 down to 1e-4, singular vectors dense (the
    dependence spread over every column); with ``offsets``, columns shifted by up to 10."""
    p = min(m, n)
    Xs = np.empty((N, m, n))
    for i in range(N):
        r = int(rng.integers(1, p))
        s = np.concatenate([np.geomspace(1, 1e-4, r), 10.0 ** rng.uniform(-18, -16, p - r)])
        U = np.linalg.qr(rng.standard_normal((m, p)))[0]
        V = np.linalg.qr(rng.standard_normal((n, p)))[0]
        Xs[i] = (U * s) @ V.T
        if offsets:
            Xs[i] = Xs[i] - Xs[i].mean(0) + rng.uniform(-10, 10, n)
    return Xs


@pytest.mark.parametrize("method", FACTOR_METHODS)
@pytest.mark.parametrize("shape", [(6, 6), (40, 6), (5, 9)], ids=["square", "tall", "wide"])
def test_random_near_singular(be, method, shape):
    rng = np.random.default_rng(2)
    N = _count(be, 200)
    Xs = _near_singular(rng, N, *shape)
    Ys = rng.standard_normal((N, shape[0], 2))
    bad, _ = _check_all(be, method, Xs, Ys)
    assert not bad, f"{len(bad)} of {N}:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("method", FACTOR_METHODS)
@pytest.mark.parametrize("rcond", [None, 1e-3])
def test_random_near_singular_with_intercept(be, method, rcond):
    """Columns shifted by up to 10 and centered again: the scale of the cutoff is the largest
    column before centering."""
    rng = np.random.default_rng(3)
    N = _count(be, 200)
    Xs = _near_singular(rng, N, 30, 6, offsets=True)
    Ys = rng.standard_normal((N, 30, 1))
    bad, _ = _check_all(be, method, Xs, Ys, rcond=rcond, fit_intercept=True)
    assert not bad, f"{len(bad)} of {N}:\n" + "\n".join(bad[:10])


@pytest.mark.parametrize("method", FACTOR_METHODS)
def test_ridge_with_a_zero_penalty(be, method):
    """Per-target penalties (0, 1) on near-singular data with an intercept: the first target
    is least squares (the minimum-norm solution, rank below n), the second ridge."""
    rng = np.random.default_rng(4)
    N = _count(be, 100)
    Xs = _near_singular(rng, N, 30, 6, offsets=True)
    Ys = rng.standard_normal((N, 30, 2))
    bad, _ = _check_all(be, method, Xs, Ys, fit_intercept=True, alpha=np.array([0.0, 1.0]))
    assert not bad, f"{len(bad)} of {N}:\n" + "\n".join(bad[:10])


# -- accumulators ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["NormalAccumulator", "QRAccumulator"])
@pytest.mark.parametrize("rows", [-1, 0, 1], ids=["m=n-1", "m=n", "m=n+1"])
def test_accumulators_about_as_many_rows_as_features(be, kind, rows):
    """n x n (or n +- 1 rows) with an intercept, fed in two chunks: the centered X has rank
    min(m - 1, n); the accumulators reported rank n and a solution of larger norm (5 x 5:
    rank 5, |coef| 2.90 where lstsq gives rank 4, 1.90)."""
    rng = np.random.default_rng(5)
    N = {"numpy": 60, "dask": 2}.get(be.library, 10)
    bad = []
    for _ in range(N):
        n = int(rng.integers(3, 9)) if be.library == "numpy" else 5  # JAX compiles a solve per n
        m = n + rows
        X, Y = rng.standard_normal((m, n)), rng.standard_normal((m, 1))
        w, b, r, kappa, eta, ambiguous = reference(X, Y, fit_intercept=True)
        h = m // 2
        acc = getattr(lsq, kind)().update(be.asarray(X[:h]), be.asarray(Y[:h]))
        res = acc.update(be.asarray(X[h:]), be.asarray(Y[h:])).solve()
        got, rank = be.to_numpy(res.coef), int(be.to_numpy(res.rank))
        # NormalAccumulator: the normal equations' error, eps kappa**2
        tol = threshold("normal" if kind == "NormalAccumulator" else "qr", np.float64, kappa, m, n, eta)
        err = np.linalg.norm(got - w) / max(np.linalg.norm(w), 1e-300)
        if not ambiguous and (rank != r or not err <= tol):
            bad.append(f"{m} x {n}: rank {rank} (want {r}), coef error {err:.2g} (tol {tol:.2g})")
    assert not bad, f"{len(bad)} of {N}:\n" + "\n".join(bad)


def _gram_factor(X, alpha=None):
    """(L, A, colsq) of ``X^T X (+ alpha I)`` as ``gram.GramCholesky`` factors it."""
    A = X.T @ X
    if alpha is not None:
        A = A + alpha * np.eye(A.shape[0], dtype=A.dtype)
    with np.errstate(all="ignore"):
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            L = np.full_like(A, np.nan)
    return L, A, np.diagonal(A).copy()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bounded_certificate_never_claims_more(dtype):
    """``rank.bounded`` (the answer read off ``rank.condition_estimate``'s bound, NumPy only) may say True only
    where ``rank.certified`` says True: over conditioning from 1 to 1e14, columns graded over
    60 orders, offsets (an intercept), explicit cutoffs and penalties. And it does answer the
    plain problems: the shortcut is taken, not dead code."""
    from array_api_compat import numpy as xp

    from lsq_backends._solvers.linalg import rank
    from lsq_backends._solvers.linalg._shared import default_cutoff, gram_noise
    from lsq_backends._solvers.linalg.rank import condition_estimate

    rng = np.random.default_rng(7)
    taken = checked = 0
    for trial in range(600):
        m, n = int(rng.integers(3, 300)), int(rng.integers(1, 17))
        m = max(m, n)
        kappa = 10.0 ** rng.uniform(0, 14)
        X = (
            rng.standard_normal((m, n))
            @ np.diag(np.geomspace(1, 1 / kappa, n))
            @ np.linalg.qr(rng.standard_normal((n, n)))[0]
        )
        if trial % 3 == 1:
            X = X * 10.0 ** rng.uniform(-30, 30, n)  # graded columns
        X = X.astype(dtype)
        offset_sq = (10.0 ** rng.uniform(-3, 8, n)).astype(dtype) * np.sum(X * X, axis=0) if trial % 4 == 2 else None
        alpha = dtype(10.0 ** rng.uniform(-8, 2)) if trial % 5 == 3 else None
        rcond = [None, None, 0.0, 1e-12, 1e-6, 0.3][trial % 6]
        L, A, colsq = _gram_factor(X, alpha=alpha)
        with np.errstate(all="ignore"):
            est = condition_estimate(xp, L, A)
        cutoff = default_cutoff(xp, X, m, n, rcond)
        tol = np.sqrt(gram_noise(xp, X, m, n))
        with np.errstate(all="ignore"):
            claim = rank.bounded(xp, est, colsq, np.diagonal(L), offset_sq, rcond, cutoff, tol)
            truth = bool(np.all(rank.certified(xp, L, offset_sq, rcond, cutoff, resolution=tol, colsq=colsq)))
        assert truth or not claim, (trial, m, n, kappa, rcond, offset_sq is not None, alpha)
        taken += claim
        checked += 1
    assert taken >= checked // 6  # the common, well-conditioned draws take the shortcut


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bounded_certificate_never_claims_more_on_a_stack(dtype):
    """On a stack of problems ``rank.bounded`` reduces with NumPy (one problem is read as
    Python floats): True only where ``rank.certified`` holds for every problem of the stack,
    and taken on stacks of plain problems."""
    from array_api_compat import numpy as xp

    from lsq_backends._solvers.linalg import rank
    from lsq_backends._solvers.linalg._shared import default_cutoff, gram_noise
    from lsq_backends._solvers.linalg.rank import condition_estimate

    rng = np.random.default_rng(11)
    taken = 0
    for trial in range(150):
        m, n, k = int(rng.integers(17, 200)), int(rng.integers(1, 17)), int(rng.integers(2, 5))
        top = 10.0 ** rng.uniform(0, 12)
        X = np.stack(
            [
                rng.standard_normal((m, n)) @ np.diag(np.geomspace(1, 1 / 10.0 ** rng.uniform(0, np.log10(top)), n))
                for _ in range(k)
            ]
        )
        if trial % 3 == 1:
            X = X * 10.0 ** rng.uniform(-30, 30, n)  # graded columns
        X = X.astype(dtype)
        offset_sq = (
            (10.0 ** rng.uniform(-3, 8, (k, n))).astype(dtype) * np.sum(X * X, axis=-2) if trial % 4 == 2 else None
        )
        rcond = [None, None, 0.0, 1e-12, 1e-6, 0.3][trial % 6]
        A = X.swapaxes(-1, -2) @ X
        with np.errstate(all="ignore"):
            try:
                L = np.linalg.cholesky(A)
            except np.linalg.LinAlgError:  # one problem not positive definite: NaN factors throughout
                L = np.full_like(A, np.nan)
        colsq = np.diagonal(A, axis1=-2, axis2=-1).copy()
        cutoff = default_cutoff(xp, X, m, n, rcond)
        tol = np.sqrt(gram_noise(xp, X, m, n))
        with np.errstate(all="ignore"):
            est = condition_estimate(xp, L, A)
            claim = rank.bounded(xp, est, colsq, np.diagonal(L, axis1=-2, axis2=-1), offset_sq, rcond, cutoff, tol)
            truth = bool(np.all(rank.certified(xp, L, offset_sq, rcond, cutoff, resolution=tol, colsq=colsq)))
        assert truth or not claim, (trial, m, n, k, top, rcond, offset_sq is not None)
        taken += claim
    assert taken >= 25  # the plain stacks take the shortcut


def test_bounded_certificate_on_a_failed_factor():
    from array_api_compat import numpy as xp

    from lsq_backends._solvers.linalg import rank

    L = np.full((3, 3), np.nan)
    assert not rank.bounded(xp, np.float64(np.nan), np.ones(3), np.diagonal(L), None, None, 1e-15, 1e-7)
