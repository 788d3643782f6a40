"""The Gram route of ``normal``/``auto`` on tall X: one step of refinement from the Cholesky
factor, and the intercept handled on the n x n side (no centered copy of X).

Error bounds. Plain normal equations err by ~eps cond**2; one step of refinement multiplies
that by another ~eps cond**2 and stops at the rounding of X^T r, ~eps cond (1 + cond tan),
tan = ||r|| / ||X w||. The tests take cond = 1e3 and tan ~ 1e-6, where the refined bound
``C eps cond (1 + cond tan) + (C eps cond**2)**2`` with C = 20 is ~5e-12 and the unrefined
error, ~eps cond**2 = 2e-10, would fail it.
"""

from __future__ import annotations

import gc
import math
import tracemalloc

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._solvers.linalg import householder

EPS = np.finfo(np.float64).eps
C = 20.0


def _problem(m, n, cond, noise, seed=0, offset=0.0):
    """X with singular values from sqrt(m) down to sqrt(m)/cond, y = X w + noise (relative)."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((m, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    U -= U.mean(axis=0)  # centered columns: cond is that of the centered problem too
    X = (U * np.geomspace(1.0, 1.0 / cond, n) * math.sqrt(m)) @ V.T
    signal = X @ rng.standard_normal(n)
    y = signal + noise * np.linalg.norm(signal) / math.sqrt(m) * rng.standard_normal(m)
    return X + offset, y + offset


def _reference(X, y, w=None, offset=0.0):
    """Least squares with an intercept on the data as given, offsets removed exactly (X and y
    lie within a factor 2 of ``offset``, so the subtraction is exact), in extended precision
    by three steps of refinement with long-double residuals."""
    X, y = X - offset, y - offset
    w = np.ones(len(y)) if w is None else w
    A = np.sqrt(w)[:, None] * np.column_stack([np.ones(len(y)), X])
    b = np.sqrt(w) * y
    sol = np.linalg.lstsq(A, b, rcond=None)[0].astype(np.longdouble)
    for _ in range(3):
        r = b - A.astype(np.longdouble) @ sol
        sol = sol + np.linalg.lstsq(A, r.astype(np.float64), rcond=None)[0]
    sol = sol.astype(np.float64)
    return sol[1:], sol[0] + offset * (1 - sol[1:].sum())


def _bound(cond, tan):
    return C * EPS * cond * (1 + cond * tan) + (C * EPS * cond**2) ** 2


@pytest.mark.parametrize("method", ["normal", "auto", "qr", "svd"])
@pytest.mark.parametrize("offset", [0.0, 1e8])
@pytest.mark.parametrize("weighted", [False, True])
def test_refined_error_is_qr_level(be, method, offset, weighted):
    """cond 1e3, tiny residual, with an intercept and columns offset by 0 or 1e8 (weighted or
    not): the refined bound holds (the unrefined error, ~eps cond**2, would not), and rss is
    the residual of the coefficients returned. ``qr`` and ``svd`` (CholeskyQR2 centered on the
    n x n side) are held to the same QR-level bound."""
    m, n, cond = 3000, 8, 1e3
    X, y = _problem(m, n, cond, 1e-8, seed=1, offset=offset)
    w = np.linspace(0.5, 2.0, m) if weighted else None
    ref, ref_b = _reference(X, y, w, offset)
    r = lsq.lstsq(
        be.asarray(X), be.asarray(y), method=method, fit_intercept=True,
        sample_weight=None if w is None else be.asarray(w),
    )  # fmt: skip
    coef, b, rss = be.to_numpy(r.coef), float(be.to_numpy(r.intercept)), float(be.to_numpy(r.rss))
    tan = 1e-8 * 2  # noise relative to the signal (a factor 2 for the weights)
    assert np.linalg.norm(coef - ref) <= _bound(cond, tan) * np.linalg.norm(ref)
    # intercept: b = mean(y) - mean(X) w, where the offsets turn w's error into ~offset * err
    assert abs(b - ref_b) <= _bound(cond, tan) * np.linalg.norm(ref) * (offset + 1) * n + 1e-12 * abs(ref_b)
    # rss: of the centered problem (the intercept as the exact weighted mean of y - X w; the
    # rounded intercept, ~1e-8 at offsets 1e8, would add m * its rounding**2)
    ww = np.ones(m) if w is None else w
    xs, ys = X - offset, y - offset
    rc = ys - xs @ coef
    resid = np.sqrt(ww) * (rc - np.average(rc, weights=ww))
    band = (
        8 * m * EPS * (np.linalg.norm(np.sqrt(ww) * (y - offset)) + np.linalg.norm(X - offset) * np.linalg.norm(coef))
    )
    assert abs(math.sqrt(rss) - np.linalg.norm(resid)) <= band


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_refined_ridge_and_targets(be, fit_intercept):
    """Ridge (one penalty, and one per target) and several targets: the refined Gram route
    agrees with QR, and rss is the residual of the coefficients returned."""
    X, y = _problem(2000, 6, 1e3, 1e-3, seed=2, offset=10.0 if fit_intercept else 0.0)
    Y = np.column_stack([y, 2 * y + 1, X[:, 0]])
    for alpha in (0.5, np.array([0.1, 1.0, 10.0])):
        per = np.ndim(alpha) == 1
        a = be.asarray(alpha) if per else alpha
        got = lsq.ridge(be.asarray(X), be.asarray(Y), a, method="normal", fit_intercept=fit_intercept, per_target=per)
        ref = lsq.ridge(X, Y, alpha, method="qr", fit_intercept=fit_intercept, per_target=per)
        coef = be.to_numpy(got.coef)
        np.testing.assert_allclose(coef, ref.coef, rtol=0, atol=_bound(1e3, 1e-3) * np.abs(ref.coef).max() * 10)
        resid = Y - X @ coef - be.to_numpy(got.intercept)
        np.testing.assert_allclose(be.to_numpy(got.rss), (resid**2).sum(axis=0), rtol=1e-9)


def test_auto_gate(numpy_reference, monkeypatch):
    """auto keeps the refined normal equations on well-conditioned data and sends large
    residuals at cond 1e3 (cond**2 tan ~ 1e6, where refinement measured 26-140x
    numpy.linalg.lstsq's error) to Householder QR; its error stays within 10x numpy's."""
    calls = []
    solve = householder.solve
    monkeypatch.setattr(householder, "solve", lambda *a, **k: calls.append(1) or solve(*a, **k))
    for cond, noise, expect_qr in ((100.0, 1e-2, False), (1e3, 1e-4, False), (1e3, 1.0, True), (1e5, 1e-6, True)):
        X, y = _problem(2000, 20, cond, noise, seed=3)
        calls.clear()
        got = lsq.lstsq(X, y, method="auto").coef
        assert bool(calls) == expect_qr, (cond, noise)
        ref = _reference(X, y)[0]
        err_np = np.linalg.norm(np.linalg.lstsq(X, y, rcond=None)[0] - ref)
        assert np.linalg.norm(got - ref) <= 10 * err_np + 4 * EPS * np.linalg.norm(ref)


@pytest.mark.parametrize("weighted", [False, True])
def test_intercept_route_makes_no_copy_of_x(numpy_reference, weighted):
    """normal/auto with an intercept on tall X: no X-sized array (blocks of ~512 KB)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40000, 40)) + 1e8
    y = X[:, 0] + rng.standard_normal(40000)
    sw = np.linspace(0.5, 2.0, X.shape[0]) if weighted else None
    for method in ("normal", "auto"):
        lsq.lstsq(X, y, method=method, fit_intercept=True, sample_weight=sw)
        gc.collect()
        tracemalloc.start()
        lsq.lstsq(X, y, method=method, fit_intercept=True, sample_weight=sw)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak <= X.nbytes / 4  # 12.8 MB of X


@pytest.mark.parametrize("ridge", [False, True])
def test_scale_certified_by_the_gram_matrix(numpy_reference, monkeypatch, ridge):
    """Every direct method reads X's scale off a Gram matrix (its own, CholeskyQR2's first
    product, or one formed for the test where the route has none: ridge by QR): ordinary data
    never take the max |X| passes; data at 1e200 (not certified) do, and least squares gets
    the same fit, scaled."""
    from lsq_backends._problem import _scaling

    seen = []
    magnitude = _scaling._magnitude
    monkeypatch.setattr(_scaling, "_magnitude", lambda xp, A, axis: seen.append(A.shape) or magnitude(xp, A, axis))
    X, y = _problem(2000, 8, 10.0, 1e-2, seed=7)

    def fit(X, y, **kw):
        return lsq.ridge(X, y, 1e-3, **kw) if ridge else lsq.lstsq(X, y, **kw)

    for method in ("normal", "auto", "qr", "svd"):
        for fit_intercept in (False, True):
            seen.clear()
            r = fit(X, y, method=method, fit_intercept=fit_intercept)
            assert X.shape not in seen, method
            seen.clear()
            big = fit(X * 2.0**700, y, method=method, fit_intercept=fit_intercept)
            assert X.shape in seen
            if not ridge:  # (ridge: alpha would have to scale with X**2)
                np.testing.assert_array_equal(big.coef * 2.0**700, r.coef)


@pytest.mark.parametrize("method", ["qr", "svd"])
def test_qr_intercept_on_row_blocked_data(numpy_reference, method):
    """qr and svd with an intercept on NumPy X tall enough for the Gram route's row blocks
    (whose shifts are a sample's): CholeskyQR2 centers on whole arrays with the exact means,
    and columns offset by 1e8 keep the QR-level error; intercept and rss as in
    ``test_refined_error_is_qr_level``."""
    m, n, cond, offset = 40000, 8, 1e3, 1e8
    X, y = _problem(m, n, cond, 1e-8, seed=5, offset=offset)
    ref, ref_b = _reference(X, y, None, offset)
    r = lsq.lstsq(X, y, method=method, fit_intercept=True)
    bound = _bound(cond, 2e-8)
    assert np.linalg.norm(r.coef - ref) <= bound * np.linalg.norm(ref)
    assert abs(float(r.intercept) - ref_b) <= bound * np.linalg.norm(ref) * (offset + 1) * n + 1e-12 * abs(ref_b)
    rc = (y - offset) - (X - offset) @ r.coef
    band = 8 * m * EPS * (np.linalg.norm(y - offset) + np.linalg.norm(X - offset) * np.linalg.norm(r.coef))
    assert abs(math.sqrt(float(r.rss)) - np.linalg.norm(rc - rc.mean())) <= band
