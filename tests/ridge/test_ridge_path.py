"""Ridge paths (1-D alpha): every penalty from one factorization, a leading alpha axis.

Tolerances come from the conditioning of each regularized system: with s the singular values
of the centered, weighted X, cond(X^T X + alpha I) = (s_max**2 + alpha) / (s_min**2 + alpha). The
Gram route (normal, auto) errs like eps times that, the SVD route (svd, qr) like eps times its
square root plus the large-residual term (``check.problems.threshold``).
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
from problems import METHODS, center, rel_err

import lsq_backends as lsq
from lsq_backends.check.problems import design, threshold

ALPHAS = np.array([1e-3, 0.1, 1.0, 30.0, 1e3])
EPS = np.finfo(np.float64).eps

CASES = {
    # name: (batch, m, n, k, fit_intercept, weighted)
    "tall": ((), 40, 6, None, False, False),
    "tall_weighted_multi": ((), 40, 5, 3, True, True),
    "wide": ((), 6, 12, None, False, False),
    "wide_intercept_multi": ((), 7, 12, 2, True, True),
    "batched": ((3,), 25, 4, None, True, False),
}


def _make(case, seed=0, cond=30.0):
    batch, m, n, k, fit_intercept, weighted = CASES[case]
    rng = np.random.default_rng(seed)
    X = np.stack([design(rng, (m, n), cond) for _ in range(int(np.prod(batch)))]).reshape(batch + (m, n)) + 3.0
    w = rng.standard_normal((n,) if k is None else (n, k))
    y = X @ w + 0.1 * rng.standard_normal(batch + ((m,) if k is None else (m, k)))
    sw = rng.uniform(0.5, 2.0, m) if weighted else None
    return X, y, sw, fit_intercept


def reference(X, y, *, alpha, sw=None, fit_intercept=False):
    """float64 ridge answer as least squares on [Xc; sqrt(alpha) I] by NumPy's SVD: error
    ~ eps * sqrt(cond(Xc^T Xc + alpha I)), where the closed formula would square that."""
    Xc, Yc, xo, yo = center(X, y, sw, fit_intercept)
    n = X.shape[-1]
    flat = zip(Xc.reshape((-1,) + Xc.shape[-2:]), Yc.reshape((-1,) + Yc.shape[-2:]), strict=False)
    aug = [(np.vstack([A, np.sqrt(alpha) * np.eye(n)]), np.vstack([B, np.zeros((n, B.shape[1]))])) for A, B in flat]
    coef = np.stack([np.linalg.lstsq(A, B, rcond=None)[0] for A, B in aug]).reshape(Xc.shape[:-2] + (n, Yc.shape[-1]))
    intercept = (yo - xo @ coef)[..., 0, :]
    rss = ((Yc - Xc @ coef) ** 2).sum(-2)
    if y.ndim == X.ndim - 1:
        coef, intercept, rss = coef[..., 0], intercept[..., 0], rss[..., 0]
    return coef, intercept, rss, Xc


def _tol(method, dtype, Xc, coef, rss, alpha):
    """check.problems.threshold for the augmented system [Xc; sqrt(alpha) I], whose condition
    number is the square root of the regularized Gram matrix's."""
    s = np.linalg.svd(Xc, compute_uv=False)
    s_max, s_min = float(s.max()), float(s.min())
    if Xc.shape[-2] < Xc.shape[-1] and alpha > 0:
        s_min = 0.0  # wide: X^T X is singular; the penalty alone bounds it
    kappa = np.sqrt((s_max**2 + alpha) / (s_min**2 + alpha))
    w = np.linalg.norm(coef)
    eta = np.sqrt(np.sum(rss) + alpha * w**2) / (np.sqrt(s_max**2 + alpha) * w) if w > 0 else 0.0
    return threshold(method, dtype, kappa, *Xc.shape[-2:], eta)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_path_matches_reference(be, case, method, dtype):
    if dtype == "float32" and case not in ("tall", "wide_intercept_multi"):
        pytest.skip("float32: one tall and one wide case keep the suite fast")
    if be.library in ("jax", "dask") and case in ("tall", "wide", "batched") and dtype == "float64":
        # Each eager JAX call compiles (auto: both branches), each Dask call builds a graph:
        # the weighted/intercept cases cover the same code; numpy, torch and strict run all.
        pytest.skip("jax/dask: the two weighted cases with an intercept keep the suite fast")
    X, y, sw, fit_intercept = _make(case)
    res = lsq.ridge(
        be.asarray(X, dtype),
        be.asarray(y, dtype),
        be.asarray(ALPHAS, dtype),
        method=method,
        fit_intercept=fit_intercept,
        sample_weight=None if sw is None else be.asarray(sw, dtype),
    )
    a = len(ALPHAS)
    assert res.coef.dtype == getattr(be.xp, dtype)
    batch, n = X.shape[:-2], X.shape[-1]
    tail = () if y.ndim == X.ndim - 1 else (y.shape[-1],)
    assert tuple(res.coef.shape) == (a, *batch, n, *tail)
    assert tuple(res.intercept.shape) == tuple(res.rss.shape) == (a, *batch, *tail)
    assert tuple(res.rank.shape) == (a, *batch)
    coef, intercept, rss = (be.to_numpy(v) for v in (res.coef, res.intercept, res.rss))
    for i, alpha in enumerate(ALPHAS):
        ref_coef, ref_icpt, ref_rss, Xc = reference(X, y, alpha=alpha, sw=sw, fit_intercept=fit_intercept)
        tol = _tol(method, dtype, Xc, ref_coef, ref_rss, alpha)
        assert rel_err(coef[i], ref_coef) <= tol, (alpha, rel_err(coef[i], ref_coef), tol)
        scale = max(np.abs(ref_coef).max(), 1.0) * (np.abs(X).max() + 1.0)
        assert np.max(np.abs(intercept[i] - ref_icpt)) <= tol * scale
        np.testing.assert_allclose(rss[i], ref_rss, rtol=max(tol, 100 * np.finfo(dtype).eps))
    # A penalty far above the noise level (eps * max(m, n) * s_max**2 at most) keeps every
    # direction; the float32 Gram route may drop some below it (the tolerance still holds).
    rank = be.to_numpy(res.rank)
    assert np.all(rank[ALPHAS >= 1] == n) and np.all(rank <= n)
    s = res.singular_values
    if method == "svd":
        assert tuple(s.shape)[:-1] == (a, *batch)
        s = be.to_numpy(s)
        np.testing.assert_array_equal(s[0], s[-1])
    else:
        assert s is None


@pytest.mark.parametrize("method", METHODS)
def test_path_point_equals_single_fit(be, method):
    """r.coef[i] is ridge(alpha[i]): also for a 1-element path, which keeps its axis."""
    if be.library == "jax" and method == "auto":
        pytest.skip("jax: each eager auto call compiles both branches; test_jax_path covers it")
    X, y, sw, _ = _make("tall_weighted_multi", seed=3)
    Xb, yb, swb = be.asarray(X), be.asarray(y), be.asarray(sw)
    path = lsq.ridge(Xb, yb, be.asarray(ALPHAS), method=method, sample_weight=swb)
    for i in (0, 3):
        one = lsq.ridge(Xb, yb, float(ALPHAS[i]), method=method, sample_weight=swb)
        short = lsq.ridge(Xb, yb, be.asarray(ALPHAS[i : i + 1]), method=method, sample_weight=swb)
        assert tuple(short.coef.shape) == (1,) + tuple(one.coef.shape)
        for field in ("coef", "intercept", "rss"):
            want = be.to_numpy(getattr(one, field))
            np.testing.assert_allclose(be.to_numpy(getattr(path, field))[i], want, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(be.to_numpy(getattr(short, field))[0], want, rtol=1e-9, atol=1e-12)


def test_path_is_not_per_target(be):
    """A path of k penalties on k targets is a path; per_target=True gives sklearn's meaning."""
    X, y, _, _ = _make("tall_weighted_multi", seed=4)
    alpha = np.array([0.1, 1.0, 10.0])  # k = 3 penalties for k = 3 targets
    Xb, yb, ab = be.asarray(X), be.asarray(y), be.asarray(alpha)
    path = be.to_numpy(lsq.ridge(Xb, yb, ab, method="normal").coef)
    per = be.to_numpy(lsq.ridge(Xb, yb, ab, method="normal", per_target=True).coef)
    assert path.shape == (3, 5, 3) and per.shape == (5, 3)
    for j in range(3):
        np.testing.assert_allclose(per[:, j], path[j, :, j], rtol=1e-9)
    assert not np.allclose(path[0], per)


@pytest.mark.parametrize("method", METHODS)
def test_zero_penalty_on_rank_deficient_x_is_minimum_norm(be, method):
    """alpha = 0 on the path: the minimum-norm least-squares solution, the rank of X; a
    positive penalty: rank n. ``auto`` sees the infinite condition number and takes the SVD."""
    rng = np.random.default_rng(5)
    X = design(rng, (30, 6), 10.0, rank=4)
    y = rng.standard_normal(30)
    res = lsq.ridge(be.asarray(X), be.asarray(y), be.asarray([0.0, 1.0]), method=method, fit_intercept=False)
    ref = np.linalg.lstsq(X, y, rcond=None)[0]
    # Gram route: eigenvalues accurate to eps * s_max**2, singular values to sqrt of that.
    tol = 1e-6 if method == "normal" else 1e-10
    assert rel_err(be.to_numpy(res.coef)[0], ref) <= tol
    np.testing.assert_array_equal(be.to_numpy(res.rank), [4, 6])


@pytest.mark.parametrize("method", ["auto", "svd"])
def test_ill_conditioned_path_keeps_svd_accuracy(be, method):
    """cond(X) = 1e6 and alpha down to 1e-10: the Gram route's bound (eps * 1e12 * ...) is
    useless; auto must switch to the SVD route and meet the SVD route's bound."""
    rng = np.random.default_rng(6)
    X = design(rng, (50, 5), 1e6)
    y = X @ rng.standard_normal(5) + 1e-8 * rng.standard_normal(50)
    alphas = np.array([1e-10, 1e-4])
    res = lsq.ridge(be.asarray(X), be.asarray(y), be.asarray(alphas), method=method, fit_intercept=False)
    for i, alpha in enumerate(alphas):
        ref_coef, _, ref_rss, Xc = reference(X, y, alpha=alpha, fit_intercept=False)
        tol = _tol("svd", "float64", Xc, ref_coef, ref_rss, alpha)
        assert rel_err(be.to_numpy(res.coef)[i], ref_coef) <= tol


@pytest.mark.parametrize("shape", [(60, 7), (9, 14)])
def test_path_rss_of_many_penalties_is_each_residual(be, shape):
    """rss of a path of 30 penalties and 4 targets (formed by groups of penalties): each penalty's
    ``||y - X coef - intercept||^2`` of the returned fit, within the rounding of that residual,
    eps sqrt(m) (||Y|| + ||X|| ||W||) ||r||; on ill-conditioned X (cond 1e8, a large residual)
    as on well-conditioned X."""
    if be.library in ("jax", "dask"):
        pytest.skip("jax/dask: the path's rss is the same code; numpy, torch and strict run it")
    rng = np.random.default_rng(9)
    alphas = np.logspace(-9, 3, 30)
    for cond in (10.0, 1e8):
        X = design(rng, shape, cond) + 2.0
        Y = X @ rng.standard_normal((shape[1], 4)) + rng.standard_normal((shape[0], 4))
        for method in METHODS:
            res = lsq.ridge(be.asarray(X), be.asarray(Y), be.asarray(alphas), method=method)
            coef, intercept, rss = (be.to_numpy(v) for v in (res.coef, res.intercept, res.rss))
            for i in range(len(alphas)):
                R = Y - X @ coef[i] - intercept[i]
                direct = (R * R).sum(axis=0)
                scale = np.linalg.norm(Y, axis=0) + np.linalg.norm(X, 2) * np.linalg.norm(coef[i], axis=0)
                bound = 4 * EPS * np.sqrt(shape[0]) * scale * np.sqrt(direct)
                assert np.all(np.abs(rss[i] - direct) <= bound), (cond, method, i)


@pytest.mark.parametrize("method", METHODS)
def test_path_memory_is_bounded(numpy_reference, method):
    """A path of 50 penalties on 4 targets with an intercept holds at most 3 times X (its rss once
    held three (m, 50 * 4) arrays: 13 times X for n = 50)."""
    rng = np.random.default_rng(10)
    X = rng.standard_normal((20000, 50)) + 1.0
    Y = X @ rng.standard_normal((50, 4)) + rng.standard_normal((20000, 4))
    alphas = np.logspace(-3, 3, 50)
    lsq.ridge(X, Y, alphas, method=method)  # first-call allocations (caches) out of the count
    gc.collect()
    tracemalloc.start()
    res = lsq.ridge(X, Y, alphas, method=method)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= 3 * X.nbytes, peak / X.nbytes
    assert res.rss.shape == (50, 4)


def test_path_keeps_device(strict_device):
    be = strict_device
    X, y, sw, _ = _make("tall_weighted_multi", seed=7)
    for method in METHODS:
        res = lsq.ridge(be.asarray(X), be.asarray(y), be.asarray(ALPHAS), method=method, sample_weight=be.asarray(sw))
        assert all(v.device == be.device for v in res if v is not None)


def test_dask_path_is_lazy(be):
    if not be.lazy:
        pytest.skip("dask only")
    X, y, _, _ = _make("tall", seed=8)
    res = lsq.ridge(be.asarray(X), be.asarray(y), be.asarray(ALPHAS))
    import dask.array as da

    assert all(isinstance(v, da.Array) for v in res if v is not None)
