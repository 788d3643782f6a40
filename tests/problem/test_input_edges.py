"""Edge inputs that must work (the refusals are in test_bad_input.py): NumPy bools as flags,
sequences of penalties, alpha on another device, no targets, empty batches, pandas frames;
and ridge_cv's positivity check read with the other value checks."""

from __future__ import annotations

import numpy as np
import pytest
from problems import METHODS

import lsq_backends as lsq
from lsq_backends.check import count_host_reads

rng = np.random.default_rng(0)
X = rng.standard_normal((12, 3))
y = rng.standard_normal(12)


def _np(be, a):
    return None if a is None else be.to_numpy(a)


def test_numpy_bools_are_flags(be):
    Xb, yb = be.asarray(X), be.asarray(y)
    t, f = np.bool_(True), np.bool_(False)
    pairs = [
        (lsq.lstsq(Xb, yb, fit_intercept=t, check_finite=f), lsq.lstsq(Xb, yb, fit_intercept=True, check_finite=False)),
        (lsq.ridge(Xb, yb, 0.5, fit_intercept=f, per_target=f), lsq.ridge(Xb, yb, 0.5, fit_intercept=False)),
        (lsq.ridge_cv(Xb, yb, 1.0, fit_intercept=t, alpha_per_target=f, check_finite=t), lsq.ridge_cv(Xb, yb, 1.0)),
    ]
    for a, b in pairs:
        np.testing.assert_array_equal(_np(be, a.coef), _np(be, b.coef))
    reg = lsq.LinearRegression(fit_intercept=f, check_finite=t).fit(Xb, yb)
    np.testing.assert_allclose(_np(be, reg.coef_), _np(be, lsq.lstsq(Xb, yb).coef), rtol=1e-12)
    if be.library != "dask":
        d = lsq.diagnostics(Xb, yb, fit_intercept=t, check_finite=t)
        np.testing.assert_allclose(_np(be, d.coef), _np(be, pairs[0][1].coef), rtol=1e-12)


def test_penalty_sequences(be):
    """Lists and tuples of real numbers are penalties like 1-D arrays (ridge_cv's alphas, one
    per target for an accumulator)."""
    Xb, yb = be.asarray(X), be.asarray(y)
    a = lsq.ridge_cv(Xb, yb, [0.1, 1, 10.0])
    b = lsq.ridge_cv(Xb, yb, be.asarray(np.array([0.1, 1.0, 10.0])))
    np.testing.assert_allclose(_np(be, a.coef), _np(be, b.coef), rtol=1e-12)
    Y2 = be.asarray(np.c_[y, 2 * y])
    acc = lsq.NormalAccumulator().update(Xb, Y2)
    r = acc.solve(alpha=(1.0, 2))
    ref = lsq.ridge(Xb, Y2, be.asarray(np.array([1.0, 2.0])), per_target=True)
    np.testing.assert_allclose(_np(be, r.coef), _np(be, ref.coef), rtol=1e-9)


@pytest.mark.parametrize("where", ["scalar", "per_target", "path"])
def test_alpha_on_another_device_is_moved(strict_device, where):
    """X on device1, alpha on the default device: alpha is moved to X's device (array-api-strict
    raises on any mix, so an alpha left behind would fail), results stay on device1."""
    strict = strict_device.xp
    Xd = strict_device.asarray(X)
    Yd = strict_device.asarray(np.c_[y, y + 1.0])
    alpha = {"scalar": 0.5, "per_target": [0.5, 2.0], "path": [0.5, 2.0]}[where]
    r = lsq.ridge(Xd, Yd, strict.asarray(alpha), per_target=where == "per_target")
    ref = lsq.ridge(X, np.c_[y, y + 1.0], np.asarray(alpha), per_target=where == "per_target")
    assert r.coef.device == strict_device.device
    np.testing.assert_allclose(np.asarray(r.coef.to_device(strict.Device("CPU_DEVICE"))), ref.coef, rtol=1e-12)
    cv = lsq.ridge_cv(Xd, Yd, strict.asarray([0.5, 2.0]))
    assert cv.coef.device == strict_device.device


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_no_targets(be, method, fit_intercept):
    """y of shape (m, 0) with a rank-deficient X: coef (n, 0) as numpy.linalg.lstsq, rank and
    singular values still those of X, for lstsq, ridge (one penalty, per target, a path)."""
    Xr = np.c_[X[:, :2], X[:, :1] + X[:, 1:2]]  # rank 2
    Xb, Y0 = be.asarray(Xr), be.asarray(np.zeros((12, 0)))
    r = lsq.lstsq(Xb, Y0, method=method, fit_intercept=fit_intercept)
    assert tuple(r.coef.shape) == (3, 0) and tuple(r.intercept.shape) == (0,) and tuple(r.rss.shape) == (0,)
    ref = lsq.lstsq(Xr, np.ones((12, 1)), method=method, fit_intercept=fit_intercept)
    if not be.lazy:
        assert int(r.rank) == int(ref.rank)
        if method == "lsqr":
            assert tuple(r.n_iter.shape) == (0,)
    if method == "svd":
        np.testing.assert_allclose(_np(be, r.singular_values), ref.singular_values, rtol=1e-10, atol=1e-12)
    for alpha, per_target, shape in [
        (1.0, False, (3, 0)),
        (np.zeros(0), True, (3, 0)),
        (np.array([0.0, 1.0]), False, (2, 3, 0)),
    ]:
        if method == "lsqr" and shape[0] == 2:
            continue  # no paths with lsqr
        a = alpha if np.ndim(alpha) == 0 else be.asarray(alpha)
        rr = lsq.ridge(Xb, Y0, a, method=method, fit_intercept=fit_intercept, per_target=per_target)
        assert tuple(rr.coef.shape) == shape and tuple(rr.rss.shape) == shape[:-2] + (0,)


def test_no_targets_with_refine(numpy_reference):
    r = lsq.lstsq(X, np.zeros((12, 0)), refine=2, fit_intercept=True)
    assert r.coef.shape == (3, 0) and int(r.rank) == 3


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shapes", [((0, 5, 3), (0, 5)), ((2, 0, 5, 3), (2, 0, 5, 2))], ids=["0", "2x0"])
def test_empty_batch(be, method, shapes):
    """A batch with no problems gives empty results of the usual shapes on every backend (on
    Dask the solvers' block functions failed at compute time on it)."""
    xs, ys = shapes
    mode = "svd" if method in ("qr", "svd") else "auto"
    calls = [
        lambda put: lsq.lstsq(put(np.zeros(xs)), put(np.zeros(ys)), method=method, fit_intercept=True),
        lambda put: lsq.ridge(put(np.zeros(xs)), put(np.zeros(ys)), 1.0, method=method, fit_intercept=True),
        # weights per problem: the Gram route's own (Dask failed at compute time on the empty ones)
        lambda put: lsq.lstsq(
            put(np.zeros(xs)), put(np.zeros(ys)), method=method, fit_intercept=True, sample_weight=put(np.ones(xs[:-1]))
        ),
        lambda put: lsq.ridge_cv(put(np.zeros(xs)), put(np.zeros(ys)), put(np.array([1.0, 2.0])), mode=mode),
    ]
    if method != "lsqr":  # a path
        calls.append(
            lambda put: lsq.ridge(put(np.zeros(xs)), put(np.zeros(ys)), put(np.array([1.0, 2.0])), method=method)
        )
    for call in calls:
        got, ref = call(be.asarray), call(np.asarray)
        for g, r in zip(got, ref, strict=False):
            assert (g is None) == (r is None)
            if r is not None:
                assert _np(be, g).shape == r.shape


def test_empty_rows_dask():
    da = pytest.importorskip("dask.array")
    r = lsq.lstsq(da.zeros((0, 3), chunks=(1, 3)), da.zeros(0, chunks=1))
    np.testing.assert_array_equal(r.coef.compute(), np.zeros(3))
    with pytest.raises(ValueError, match="fit_intercept=True needs at least one sample"):
        lsq.lstsq(da.zeros((0, 3), chunks=(1, 3)), da.zeros(0, chunks=1), fit_intercept=True)


def test_pandas_inputs_still_work(numpy_reference):
    pd = pytest.importorskip("pandas")
    frame, series = pd.DataFrame(X, columns=["a", "b", "c"]), pd.Series(y)
    np.testing.assert_allclose(
        lsq.lstsq(frame, series, fit_intercept=True).coef, lsq.lstsq(X, y, fit_intercept=True).coef, rtol=1e-12
    )
    np.testing.assert_allclose(lsq.ridge(frame, series, 1.0).coef, lsq.ridge(X, y, 1.0).coef, rtol=1e-12)
    reg = lsq.LinearRegression().fit(frame, series)
    assert list(reg.feature_names_in_) == ["a", "b", "c"]


@pytest.mark.parametrize("lib", ["torch", "array_api_strict"])
@pytest.mark.parametrize("mode", ["eigen", "svd"])
def test_ridge_cv_reads_its_checks_once(lib, mode, numpy_reference):
    """alphas > 0 is read with the other value checks: one host read for a fixed mode."""
    put = pytest.importorskip(lib).asarray
    Xd, yd, w = put(X), put(y), put(np.linspace(0.5, 1.5, 12))
    with count_host_reads(lib) as n:
        lsq.ridge_cv(Xd, yd, put(np.array([0.1, 1.0])), mode=mode, sample_weight=w)
    assert n.count == 1, f"{n.count} host reads"
    with pytest.raises(ValueError, match="alphas must be positive"):
        lsq.ridge_cv(Xd, yd, put(np.array([0.0, 1.0])), mode=mode)
