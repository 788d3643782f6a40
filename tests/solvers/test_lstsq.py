"""Every method on every backend against the float64 NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest
from problems import METHODS, cond, reference, rel_err

import lsq_backends as lsq
from lsq_backends.check.problems import design, threshold

DTYPES = ("float64", "float32")

# On JAX every fit below runs under jax.jit, on Dask under a scheduler that refuses to compute
# (``lazy_fits``), where the capability table says the call supports it.
lazy_fits = ("lstsq", "ridge")


def _np_eta(Xc, coef, rss):
    w = np.linalg.norm(coef)
    return float(np.sqrt(np.max(rss)) / (np.linalg.svd(Xc, compute_uv=False).max() * w)) if w > 0 else 0.0


CASES = {
    # name: (batch, m, n, k, fit_intercept, weighted, cond)
    "tall": ((), 60, 6, None, False, False, 30.0),
    "tall_intercept": ((), 60, 6, None, True, False, 30.0),
    "wide": ((), 6, 15, None, False, False, 30.0),
    "wide_intercept": ((), 7, 15, None, True, False, 30.0),
    "multi_target": ((), 40, 5, 3, True, False, 30.0),
    "batched": ((4,), 30, 5, None, True, False, 30.0),
    "batched_multi": ((2, 3), 20, 4, 2, False, False, 30.0),
    "weighted": ((), 50, 5, 2, True, True, 30.0),
    "square": ((), 8, 8, None, False, False, 30.0),
}


def _make(case, seed=0):
    batch, m, n, k, fit_intercept, weighted, kappa = CASES[case]
    rng = np.random.default_rng(seed)
    X = np.stack([design(rng, (m, n), kappa) for _ in range(int(np.prod(batch)))]).reshape(batch + (m, n))
    X = X + 3.0  # an offset the intercept must absorb
    w_true = rng.standard_normal((n,) if k is None else (n, k))
    y = X @ w_true + 1e-3 * rng.standard_normal(batch + ((m,) if k is None else (m, k)))
    sw = rng.uniform(0.5, 2.0, m) if weighted else None
    return X, y, sw, fit_intercept


def _check(be, res, ref, method, dtype, m, n, eta_scale=1.0):
    coef, intercept, rss, Xc = ref
    xp = be.xp
    assert res.coef.dtype == getattr(xp, dtype)
    for name in ("coef", "intercept", "rss"):
        assert tuple(getattr(res, name).shape) == tuple(np.shape(locals()[name]) if name != "coef" else coef.shape)
    kappa = cond(Xc)
    tol = threshold(method, dtype, kappa, m, n, _np_eta(Xc, coef, rss) * eta_scale)
    assert rel_err(be.to_numpy(res.coef), coef) <= tol
    scale = max(np.abs(coef).max(), 1.0) * (np.abs(Xc).max() + 3.0)
    assert np.max(np.abs(be.to_numpy(res.intercept) - intercept)) <= tol * scale
    # rss is first-order insensitive to coef errors: relative error ~ tol**2 plus rounding.
    rss_np = be.to_numpy(res.rss)
    assert np.allclose(rss_np, rss, rtol=max(tol, 100 * np.finfo(dtype).eps), atol=tol * scale**2 * 1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_lstsq_matches_numpy(be, case, method, dtype):
    X, y, sw, fit_intercept = _make(case)
    if be.lazy and len(CASES[case][0]) > 1:
        pytest.skip("dask: one batch axis is enough to exercise the per-matrix path")
    ref = reference(X, y, sw=sw, fit_intercept=fit_intercept)
    res = lsq.lstsq(
        be.asarray(X, dtype),
        be.asarray(y, dtype),
        method=method,
        fit_intercept=fit_intercept,
        sample_weight=None if sw is None else be.asarray(sw, dtype),
    )
    m, n = X.shape[-2:]
    _check(be, res, ref, method, dtype, m, n)
    rank = be.to_numpy(res.rank)
    assert np.all(rank == min(m - fit_intercept, n) if m <= n else rank == n)
    s = be.to_numpy(res.singular_values)
    if method == "svd":
        # With an intercept, the exact zero singular value of the centered X is not reported.
        expected = np.linalg.svd(ref[3], compute_uv=False)[..., : min(m - fit_intercept, n)]
        np.testing.assert_allclose(s, expected, rtol=0, atol=1e3 * np.finfo(dtype).eps * np.linalg.norm(ref[3]))
    else:
        assert s is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", ["tall_intercept", "wide", "multi_target", "batched", "weighted"])
def test_ridge_matches_closed_formula(be, case, method, dtype):
    X, y, sw, fit_intercept = _make(case, seed=1)
    alpha = 0.7
    ref = reference(X, y, alpha=alpha, sw=sw, fit_intercept=fit_intercept)
    res = lsq.ridge(
        be.asarray(X, dtype),
        be.asarray(y, dtype),
        alpha,
        method=method,
        fit_intercept=fit_intercept,
        sample_weight=None if sw is None else be.asarray(sw, dtype),
    )
    m, n = X.shape[-2:]
    _check(be, res, ref, method, dtype, m, n)
    assert np.all(be.to_numpy(res.rank) == n)


@pytest.mark.parametrize("method", METHODS)
def test_ridge_per_target_alpha(be, method):
    X, y, sw, _ = _make("multi_target", seed=2)
    alpha = np.array([0.1, 1.0, 10.0])
    ref = reference(X, y, alpha=alpha, fit_intercept=True)
    res = lsq.ridge(be.asarray(X), be.asarray(y), be.asarray(alpha), method=method, per_target=True)
    _check(be, res, ref, method, "float64", *X.shape)
    # Each column equals a separate single-alpha fit.
    for j, a in enumerate(alpha):
        one = reference(X, y[:, j], alpha=a, fit_intercept=True)[0]
        assert rel_err(be.to_numpy(res.coef)[:, j], one) < 1e-10


def test_alpha_conventions(be):
    """alpha multiplies the plain sum of squares; the scaled objective (1/m)||y - X b||^2 +
    lam ||b||^2 is alpha = m * lam. Both checked against their closed formulas."""
    rng = np.random.default_rng(3)
    m, n, lam = 30, 4, 0.25
    X, y = rng.standard_normal((m, n)), rng.standard_normal(m)
    res = lsq.ridge(be.asarray(X), be.asarray(y), m * lam, fit_intercept=False)
    b = be.to_numpy(res.coef)
    np.testing.assert_allclose((X.T @ X + lam * m * np.eye(n)) @ b, X.T @ y, rtol=1e-12, atol=1e-12)
    # b minimizes the scaled objective: its gradient -(2/m) X^T (y - X b) + 2 lam b vanishes.
    np.testing.assert_allclose(-(2 / m) * X.T @ (y - X @ b) + 2 * lam * b, 0, atol=1e-13)
    res = lsq.ridge(be.asarray(X), be.asarray(y), 2.0, fit_intercept=False)
    w = be.to_numpy(res.coef)
    np.testing.assert_allclose(-2 * X.T @ (y - X @ w) + 2 * 2.0 * w, 0, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_intercept_is_not_penalized(be, method):
    """Ridge with fit_intercept equals least squares on [1, X] with penalty matrix E* =
    diag(0, 1, ..., 1): (A^T A + alpha E*) [b; w] = A^T y."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((25, 3)) + 5.0
    y = rng.standard_normal(25) + 10.0
    A = np.c_[np.ones(25), X]
    E = np.eye(4)
    E[0, 0] = 0.0
    full = np.linalg.solve(A.T @ A + 3.0 * E, A.T @ y)
    res = lsq.ridge(be.asarray(X), be.asarray(y), 3.0, method=method)
    np.testing.assert_allclose(be.to_numpy(res.intercept), full[0], rtol=1e-10)
    np.testing.assert_allclose(be.to_numpy(res.coef), full[1:], rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape", [(40, 6, 4), (5, 12, 3), (30, 8, 8)])
def test_rank_deficient_gives_minimum_norm(be, method, shape):
    """Every method detects rank deficiency and returns the minimum-norm solution and rank."""
    m, n, r = shape
    rng = np.random.default_rng(5)
    X = design(rng, (m, n), 10.0, rank=r)
    y = rng.standard_normal(m)
    coef, _, rss, Xc = reference(X, y)
    res = lsq.lstsq(be.asarray(X), be.asarray(y), method=method)
    got = be.to_numpy(res.coef)
    assert np.all(np.isfinite(got))
    # Conditioning of the nonzero part is 10: an eps-level bound, generous constant.
    assert rel_err(got, coef) < 1e-12
    assert int(be.to_numpy(res.rank)) == r
    np.testing.assert_allclose(be.to_numpy(res.rss), rss, rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_duplicated_column(be, method):
    rng = np.random.default_rng(6)
    X = rng.standard_normal((30, 3))
    X = np.c_[X, X[:, 1]]
    y = rng.standard_normal(30)
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    res = lsq.lstsq(be.asarray(X), be.asarray(y), method=method)
    np.testing.assert_allclose(be.to_numpy(res.coef), coef, rtol=1e-11, atol=1e-12)
    assert int(be.to_numpy(res.rank)) == 3


def test_normal_rank_fallback_per_target_ridge(be):
    """A penalty at rounding level (1e-16: no Cholesky pivot of the duplicated column is above
    the Gram matrix's noise) takes ``normal``'s rank fallback (on JAX the Gram matrix's
    eigendecomposition, elsewhere the SVD path), one penalty per target: the SVD filter
    ``s / (s**2 + alpha)`` over the kept directions, rank n (every penalty positive). The kept
    part's condition is ~1, so the normal equations' bound is eps-level."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((30, 3))
    X = np.c_[X, X[:, 1]]
    y = rng.standard_normal((30, 2))
    alpha = np.array([1e-16, 2e-16])
    u, s, vh = np.linalg.svd(X, full_matrices=False)
    keep = s > 30 * np.finfo(np.float64).eps * s[0]
    ref = np.stack(
        [vh[keep].T @ ((s[keep] / (s[keep] ** 2 + a)) * (u[:, keep].T @ y[:, j])) for j, a in enumerate(alpha)], 1
    )
    res = lsq.ridge(
        be.asarray(X), be.asarray(y), be.asarray(alpha), method="normal", fit_intercept=False, per_target=True
    )
    tol = threshold("normal", np.float64, s[0] / s[keep][-1], *X.shape)
    assert rel_err(be.to_numpy(res.coef), ref) <= tol
    assert int(be.to_numpy(res.rank)) == 4


@pytest.mark.parametrize("method", METHODS)
def test_worked_example(be, method):
    """(1,1), (2,2), (3,2): y = 2/3 + t/2; p = (7/6, 5/3, 13/6); e = (-1/6, 1/3, -1/6)."""
    t = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 2.0, 2.0])
    A = np.c_[np.ones(3), t]
    res = lsq.lstsq(be.asarray(A), be.asarray(y), method=method)
    w = be.to_numpy(res.coef)
    np.testing.assert_allclose(w, [2 / 3, 1 / 2], rtol=1e-14)
    p = A @ w
    e = y - p
    np.testing.assert_allclose(p, [7 / 6, 5 / 3, 13 / 6], rtol=1e-14)
    np.testing.assert_allclose(e, [-1 / 6, 1 / 3, -1 / 6], atol=1e-14)
    assert abs(p @ e) < 1e-14  # the projection is orthogonal to the residual
    np.testing.assert_allclose(A.T @ e, 0, atol=1e-14)  # e is orthogonal to every column
    np.testing.assert_allclose(be.to_numpy(res.rss), 1 / 6, rtol=1e-13)
    # The same line with the intercept fitted by centering.
    res = lsq.lstsq(be.asarray(t[:, None]), be.asarray(y), method=method, fit_intercept=True)
    np.testing.assert_allclose(be.to_numpy(res.intercept), 2 / 3, rtol=1e-14)
    np.testing.assert_allclose(be.to_numpy(res.coef), [1 / 2], rtol=1e-14)


@pytest.mark.parametrize("method", METHODS)
def test_namespace_dtype_preserved(be, method):
    xp = be.xp
    rng = np.random.default_rng(7)
    X, y = rng.standard_normal((12, 3)), rng.standard_normal(12)
    for dtype in DTYPES:
        res = lsq.lstsq(be.asarray(X, dtype), be.asarray(y, dtype), method=method, fit_intercept=True)
        for name in ("coef", "intercept", "rss"):
            field = getattr(res, name)
            assert type(field) is type(be.asarray(X, dtype)) or be.library == "numpy"
            assert field.dtype == getattr(xp, dtype)
    # Integers become the default float dtype.
    res = lsq.lstsq(be.asarray(np.arange(12).reshape(6, 2) ** 2), be.asarray(np.arange(6)), method=method)
    assert res.coef.dtype == xp.asarray(1.0).dtype if be.library != "dask" else res.coef.dtype == np.float64


def test_empty(be):
    res = lsq.lstsq(be.asarray(np.zeros((0, 3))), be.asarray(np.zeros(0)))
    np.testing.assert_array_equal(be.to_numpy(res.coef), np.zeros(3))
    assert int(be.to_numpy(res.rank)) == 0
    res = lsq.lstsq(be.asarray(np.zeros((4, 0))), be.asarray(np.ones(4)), method="svd")
    assert be.to_numpy(res.coef).shape == (0,)
    np.testing.assert_allclose(be.to_numpy(res.rss), 4.0)
    assert be.to_numpy(res.singular_values).shape == (0,)


@pytest.mark.parametrize("method", ["auto", "normal", "qr"])
def test_column_units_do_not_matter(be, method):
    """Columns in wildly different units (1e-6 .. 1e6): the rank tests are scale-free, and the
    answer is the unit-scale answer rescaled, to the accuracy of the equilibrated problem."""
    rng = np.random.default_rng(8)
    X0 = design(rng, (40, 5), 10.0)
    y = rng.standard_normal(40)
    scale = 10.0 ** np.array([-6, -3, 0, 3, 6])
    ref = np.linalg.lstsq(X0, y, rcond=None)[0] / scale
    res = lsq.lstsq(be.asarray(X0 * scale), be.asarray(y), method=method)
    got = be.to_numpy(res.coef)
    assert int(be.to_numpy(res.rank)) == 5
    np.testing.assert_allclose(got * scale, ref * scale, rtol=0, atol=1e-11 * np.abs(ref * scale).max())


@pytest.mark.parametrize("method", METHODS)
def test_constant_column_with_intercept(be, method):
    """A constant column is the intercept again: after centering it is rounding noise, seen as
    dependent against its uncentered norm; the minimum-norm answer gives it coefficient 0."""
    rng = np.random.default_rng(9)
    X = rng.standard_normal((30, 3))
    X[:, 1] = 5.0
    y = X @ np.array([1.0, 2.0, -1.0]) + 0.1 * rng.standard_normal(30) + 4.0
    res = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=True)
    ref = np.linalg.lstsq(np.c_[np.ones(30), X[:, [0, 2]]], y, rcond=None)[0]
    np.testing.assert_allclose(be.to_numpy(res.coef), [ref[1], 0.0, ref[2]], atol=1e-12)
    np.testing.assert_allclose(be.to_numpy(res.intercept), ref[0], rtol=1e-12)
    assert int(be.to_numpy(res.rank)) == 2


@pytest.mark.parametrize("method", METHODS)
def test_refine_keeps_minimum_norm_and_wide_answers(be, method):
    """Refinement applies to tall full-rank problems only; the others come back unchanged."""
    rng = np.random.default_rng(10)
    zero_column = np.c_[design(rng, (30, 4), 10.0), np.zeros(30)]  # R has an exact 0 pivot
    for X in (design(rng, (30, 6), 10.0, rank=4), design(rng, (5, 9), 10.0), zero_column):
        y = rng.standard_normal(X.shape[0])
        plain = lsq.lstsq(be.asarray(X), be.asarray(y), method=method)
        refined = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, refine=2)
        np.testing.assert_allclose(be.to_numpy(refined.coef), be.to_numpy(plain.coef), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("method", METHODS)
def test_refine_recovers_digits(be, method):
    """A graded polynomial design with a large residual: refinement beats the plain solve and
    reaches the double-double-limited answer (computed here in exact rational arithmetic)."""
    from fractions import Fraction

    t = np.arange(21.0)
    X = np.stack([t**k for k in range(1, 6)], axis=1)
    # Wampler-style: coefficients 1 plus a residual of size 1e8 orthogonal to [1, X] (the
    # design is exactly representable; the exact answer for these floats is computed below).
    A1 = np.c_[np.ones(21), X]
    q, _ = np.linalg.qr(A1)
    z = np.cos(7 * t)
    z = z - q @ (q.T @ z)
    y = A1.sum(axis=1) + 1e8 * z / np.abs(z).max()
    A = [[Fraction(1)] + [Fraction(float(v)) for v in row] for row in X]
    b = [Fraction(float(v)) for v in y]
    G = [[sum(A[i][p] * A[i][q] for i in range(21)) for q in range(6)] for p in range(6)]
    r = [sum(A[i][p] * b[i] for i in range(21)) for p in range(6)]
    for c in range(6):  # exact Gauss-Jordan on the normal equations
        piv = G[c][c]
        for rr in range(6):
            if rr != c:
                f = G[rr][c] / piv
                G[rr] = [u - f * v for u, v in zip(G[rr], G[c], strict=False)]
                r[rr] -= f * r[c]
    exact = np.array([float(r[c] / G[c][c]) for c in range(6)])
    res = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=True, refine=2)
    got = np.r_[be.to_numpy(res.intercept), be.to_numpy(res.coef)]
    assert np.max(np.abs(got - exact) / np.abs(exact)) < 1e-13
    # Without refinement the eps * cond**2 * ||r|| term costs ~6 digits (a check on the test).
    plain = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=True)
    got = np.r_[be.to_numpy(plain.intercept), be.to_numpy(plain.coef)]
    assert np.max(np.abs(got - exact) / np.abs(exact)) > 1e-10
