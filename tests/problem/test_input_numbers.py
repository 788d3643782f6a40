"""Options given as NumPy scalars, integer inputs' float dtype, and non-finite input that raises
quietly: the small promises of input handling."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lsq_backends as lsq

rng = np.random.default_rng(0)
X = rng.standard_normal((12, 3))
y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(12)


@pytest.mark.parametrize(
    ("call", "numpy_value", "python_value"),
    [
        (lambda v: lsq.lstsq(X, y, refine=v).coef, np.int64(1), 1),
        (lambda v: lsq.lstsq(X, y, rcond=v).coef, np.float32(0.25), float(np.float32(0.25))),
        (lambda v: lsq.lstsq(X, y, method="lsqr", max_iter=v).coef, np.int32(2), 2),
        (lambda v: lsq.lstsq(X, y, method="lsqr", atol=v, btol=v).coef, np.float32(1e-3), float(np.float32(1e-3))),
        (lambda v: lsq.nnls(X, y, max_iter=v).coef, np.uint8(2), 2),
        (lambda v: lsq.nnls(X, y, tol=v).coef, np.float64(1e-8), 1e-8),
        (lambda v: lsq.diagnostics(X, y, refine=v).sigma, np.int16(1), 1),
        (lambda v: lsq.ridge_cv(X, y, [0.1, 1.0], target_batch=v).coef, np.int64(1), 1),
        (lambda v: lsq.QRAccumulator().update(X, y).solve(rcond=v).coef, np.float32(0.25), float(np.float32(0.25))),
        (lambda v: lsq.LinearRegression(rcond=v).fit(X, y).coef_, np.float16(0.25), 0.25),
        (lambda v: lsq.NormalAccumulator().update(X, y).solve(v).rank, np.float32(0.0), 0.0),  # least squares
        (lambda v: lsq.QRAccumulator().update(X, y).solve(v).coef, np.float32(0.5), 0.5),
    ],
)
@pytest.mark.filterwarnings("error")
def test_numpy_scalars_are_numbers(call, numpy_value, python_value):
    """A NumPy integer scalar where an integer is asked for, a NumPy float or integer scalar
    where a number is: the same fit as the Python number, and no warning (a float32 penalty
    was compared with float64's largest value in float32: an overflow warning)."""
    np.testing.assert_array_equal(call(numpy_value), call(python_value))


def test_summary_takes_a_numpy_level():
    d = lsq.diagnostics(X, y)
    assert d.summary(alpha=np.float32(0.1)) == d.summary(alpha=float(np.float32(0.1)))


@pytest.mark.parametrize("bad", [True, np.True_, np.bool_(False), 1.0, np.float64(2.0), "1", np.array([1])])
def test_integers_refuse_bools_and_floats(bad):
    with pytest.raises(ValueError, match="refine must be a non-negative integer"):
        lsq.lstsq(X, y, refine=bad)
    with pytest.raises(ValueError, match="max_iter must be None or a positive integer"):
        lsq.lstsq(X, y, method="lsqr", max_iter=bad)


@pytest.mark.parametrize("bad", [True, np.True_, "0.1", np.array([0.1]), 1.0, np.float32(np.nan)])
def test_fractions_refuse_bools_and_non_numbers(bad):
    with pytest.raises(ValueError, match="rcond must be None or a number in"):
        lsq.lstsq(X, y, rcond=bad)
    with pytest.raises(ValueError, match="atol must be None or a number in"):
        lsq.lstsq(X, y, method="lsqr", atol=bad)


def test_lsqr_refuses_rcond():
    """LSQR has no singular values to cut: an explicit rcond is an error, not ignored."""
    with pytest.raises(ValueError, match="rcond applies to the direct methods.*method='lsqr'"):
        lsq.lstsq(X, y, method="lsqr", rcond=0.5)
    with pytest.raises(ValueError, match="rcond applies to the direct methods"):
        lsq.LinearRegression(method="lsqr", rcond=0.5).fit(X, y)


def test_integer_inputs_follow_torch_default_dtype():
    """Integer X and y take PyTorch's default float dtype as it is at the call, not as it was
    at the first call."""
    torch = pytest.importorskip("torch")
    Xi, yi = torch.arange(12).reshape(6, 2), torch.arange(6) % 4
    before = torch.get_default_dtype()
    try:
        for dtype in (torch.float32, torch.float64, torch.float32):
            torch.set_default_dtype(dtype)
            assert lsq.lstsq(Xi, yi).coef.dtype == dtype
            assert lsq.QRAccumulator().update(Xi, yi).solve().coef.dtype == dtype
    finally:
        torch.set_default_dtype(before)


def _fits(Xb, yb, w):
    return [
        lambda: lsq.lstsq(Xb, yb, method="auto", fit_intercept=True, sample_weight=w),
        lambda: lsq.lstsq(Xb, yb, method="qr", fit_intercept=True, sample_weight=w),
        lambda: lsq.ridge(Xb, yb, 1.0, method="normal", sample_weight=w),
        lambda: lsq.ridge_cv(Xb, yb, [0.1, 1.0], sample_weight=w),
        lambda: lsq.ridge_cv(Xb, yb, [0.1, 1.0], cv=3, sample_weight=w),
        lambda: lsq.diagnostics(Xb, yb, sample_weight=w),
        lambda: lsq.nnls(Xb, yb, fit_intercept=True, sample_weight=w),
        lambda: lsq.QRAccumulator().update(Xb, yb, w),
    ]


@pytest.mark.parametrize("where", ["X", "y", "sample_weight"])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_nonfinite_input_raises_without_warnings(where, bad):
    """The clean ValueError comes first: no RuntimeWarning from arithmetic on the bad value
    (centering, the Gram route's shifts) is printed ahead of it."""
    Xb, yb, w = X.copy(), y.copy(), np.ones(len(y))
    {"X": Xb[:, 1], "y": yb, "sample_weight": w}[where][3] = bad
    for fit in _fits(Xb, yb, w):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match=f"{where} contains NaN or infinity"):
                fit()
