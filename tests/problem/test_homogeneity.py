"""Homogeneity from 1e-300 to 1e300 at every entry point (``lsq_backends._problem._scaling``).

Least squares, ridge, cross-validation, NNLS, the diagnostics, the accumulators and the
estimators are homogeneous: with X times 2**a, y times 2**b, sample_weight times 2**(2c) and
alpha times 2**(2(a + c)), coef is 2**(b - a) times the unscaled one, the intercept 2**b times,
rss 2**(2(b + c)) times, standard errors as their estimates, R^2, t and ranks unchanged. Each
entry point solves at unit scale by powers of two chosen on the device and maps the results
back exactly, so with exact factors (powers of two) the scaled fit IS the unit-scale fit
multiplied out, bit for bit, wherever the result is representable (an rss of 2**1328 is inf,
and is compared as such; on JAX the lean route's unit-scale fits are compared with a scaled
reference to their error bound, ``_reference``). Before the scaling reached them: weights near 1e+-300 next to
ordinary X made every direct method raise ``LinAlgError`` (NaN or zeros from lsqr), the
accumulators returned coef 0 / rank 0 or raised at 1e200 (float32 at 1e25), ``diagnostics`` gave
inf standard errors and NaN R^2 for y * 1e200 and rank 1 for X * 1e200, ``ridge_cv`` NaN scores
for subnormal weights and penalties, and ``score`` NaN for y * 1e200.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends.check.problems import design, threshold
from lsq_backends.estimators import LinearRegression, Ridge, RidgeCV

# (a, b, c): X * 2**a, y * 2**b, sample_weight * 2**(2c): X at 1e+-200 and 1e+-300, y at 1e+-200,
# weights at 1e+-300 next to X at 1e+-20, and mixes (``penalized``: where alpha * 2**(2(a + c))
# stays representable).
SCALES = [(664, 0, 0), (-664, 0, 0), (0, 664, 0), (0, -664, 0), (0, 0, 498), (0, 0, -498), (66, 0, 498),
          (-66, 0, -498), (-66, 0, 498), (66, 0, -498), (-996, -996, 0), (996, 996, 0), (-500, 400, 0),
          (300, -300, 200)]  # fmt: skip
LAZY_SCALES = [(664, 0, 0), (66, 0, 498), (-66, 0, 498), (-996, -996, 0)]  # Dask: a graph per fit (~1 s each)
METHODS = ("auto", "normal", "qr", "svd", "lsqr", "lsmr")

# Results that are not representable (rss of y * 1e200) overflow, as the true values do.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def _scales(be, penalized=False):
    """The scales for ``be``; ``penalized``: those where alpha * 2**(2(a + c)) is a normal number."""
    return [s for s in (LAZY_SCALES if be.lazy else SCALES) if not penalized or abs(s[0] + s[2]) <= 500]


def _problem(m=30, n=4, k=None, seed=0):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), 30.0) + 1.5
    coef = rng.standard_normal((n,) if k is None else (n, k))
    y = X @ coef + 0.05 * rng.standard_normal((m,) if k is None else (m, k)) + 2.0
    return X, y, rng.uniform(0.5, 2.0, m)


def _put(be, a, k):
    return be.asarray(np.ldexp(a, k))


def _same(be, got, base, k, label):
    """``got`` is ``base * 2**k`` exactly (inf where that overflows, 0 where it underflows)."""
    want = np.ldexp(be.to_numpy(base).astype(np.float64), k)
    np.testing.assert_array_equal(be.to_numpy(got).astype(np.float64), want, err_msg=label)


def _reference(be, method):
    """The scale the others are compared with: the unit one, except where JAX fits the unit problem on the lean route
    (``normal``, ``auto``: data within the safe range), compiled as a program of its own whose multiply-adds XLA
    contracts otherwise than the full route's, which scaled data take: there the two agree to rounding, not bit for
    bit, and the reference is a scale the lean route does not certify (the unit fit: :func:`_near_unit`)."""
    return (300, 0, 0) if be.library == "jax" and method in ("normal", "auto") else (0, 0, 0)


def _near_unit(be, r, ref, scale, X, w, label):
    """The unit fit ``r`` and the reference fit ``ref`` at ``scale`` agree to the refined solution's error bound
    (QR-level: c eps cond of the weighted design with its intercept column, ``threshold``)."""
    a, b, c = scale
    A = np.sqrt(w)[:, None] * np.c_[np.ones(X.shape[0]), X]
    tol = threshold("qr", np.float64, np.linalg.cond(A), *A.shape)
    for field, k in (("coef", b - a), ("intercept", b)):
        got, want = be.to_numpy(getattr(r, field)), np.ldexp(be.to_numpy(getattr(ref, field)), -k)
        assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want), f"{label}: {field}"


class _Fitted(NamedTuple):
    coef: object
    intercept: object


def _fit_fields(r, a, b, c):
    """(field, exponent) of an LstsqResult / NNLSResult scaled by (a, b, c)."""
    return [("coef", b - a), ("intercept", b), ("rss", 2 * (b + c))]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["lstsq", "ridge"])
def test_lstsq_and_ridge(be, method, kind):
    if be.lazy and method in ("lsqr", "lsmr"):
        pytest.skip("lsqr and lsmr on Dask compute per block of iterations (slow here): see test_dask")
    X, y, w = _problem()
    opts = {"atol": 1e-10, "btol": 1e-10} if method in ("lsqr", "lsmr") else {}

    def fit(a, b, c):
        args = (_put(be, X, a), _put(be, y, b))
        kw = dict(method=method, fit_intercept=True, sample_weight=_put(be, w, 2 * c), **opts)
        if kind == "ridge":
            return be.finish(lsq.ridge(*args, float(np.ldexp(3.0, 2 * (a + c))), **kw))
        return be.finish(lsq.lstsq(*args, **kw))

    a0, b0, c0 = ref = _reference(be, method)
    base = fit(*ref)
    if ref != (0, 0, 0):
        _near_unit(be, fit(0, 0, 0), base, ref, X, w, f"{kind} {method}")
    for a, b, c in _scales(be, penalized=kind == "ridge"):
        r = fit(a, b, c)
        for field, k in _fit_fields(r, a - a0, b - b0, c - c0):
            _same(be, getattr(r, field), getattr(base, field), k, f"{kind} {method} {(a, b, c)}: {field}")
        assert int(be.to_numpy(r.rank)) == int(be.to_numpy(base.rank))


@pytest.mark.parametrize("method", ["auto", "svd"])
def test_ridge_path_and_per_target(be, method):
    X, y, w = _problem(k=2)
    alphas = np.array([0.1, 1.0, 10.0])

    def fit(a, b, c, per_target):
        penalties = _put(be, alphas[:2] if per_target else alphas, 2 * (a + c))
        return lsq.ridge(_put(be, X, a), _put(be, y, b), penalties, method=method, per_target=per_target,
                         sample_weight=_put(be, w, 2 * c))  # fmt: skip

    a0, b0, c0 = ref = _reference(be, method)
    base_path, base_pt = fit(*ref, False), fit(*ref, True)
    for a, b, c in _scales(be, penalized=True):
        path, pt = fit(a, b, c, False), fit(a, b, c, True)
        for field, k in _fit_fields(path, a - a0, b - b0, c - c0):
            _same(be, getattr(path, field), getattr(base_path, field), k, f"path {(a, b, c)}: {field}")
            _same(be, getattr(pt, field), getattr(base_pt, field), k, f"per target {(a, b, c)}: {field}")


@pytest.mark.parametrize("cv", [None, "gcv", 3])
def test_ridge_cv(be, cv):
    """The same penalty chosen, the results multiplied out: leave-one-out and GCV errors are
    weighted squares (2**(2(b + c))), held-out folds' weighted means of squares (2**(2b))."""
    X, y, w = _problem(m=24, k=2, seed=1)
    alphas = np.logspace(-2, 2, 5)

    def fit(a, b, c):
        return lsq.ridge_cv(
            _put(be, X, a), _put(be, y, b), _put(be, alphas, 2 * (a + c)), sample_weight=_put(be, w, 2 * c), cv=cv
        )

    base = fit(0, 0, 0)
    for a, b, c in _scales(be, penalized=True):
        r = fit(a, b, c)
        label = f"cv={cv} {(a, b, c)}"
        np.testing.assert_array_equal(be.to_numpy(r.best_index), be.to_numpy(base.best_index), err_msg=label)
        errors = 2 * (b + c) if cv != 3 else 2 * b
        for field, k in [("coef", b - a), ("intercept", b), ("alpha", 2 * (a + c)), ("scores", errors)]:
            _same(be, getattr(r, field), getattr(base, field), k, f"{label}: {field}")
        if base.cv_values is not None:
            _same(be, r.cv_values, base.cv_values, errors, f"{label}: cv_values")


def test_ridge_cv_subnormal_weights_and_penalties(be):
    """Weights of 2**-1060 and penalties of 2**-1062 (subnormal) are the unit problem scaled:
    the same penalty, the same coefficients (the scores were [inf nan nan])."""
    X, y, _ = _problem(m=24, seed=2)
    alphas = np.array([0.25, 1.0, 4.0])
    base = lsq.ridge_cv(be.asarray(X), be.asarray(y), be.asarray(alphas))
    w = _put(be, np.ones(24), -1062)
    if be.library == "jax":  # XLA computes with subnormals as zeros: refused, naming the argument
        with pytest.raises(ValueError, match="sample_weight holds subnormal numbers"):
            lsq.ridge_cv(be.asarray(X), be.asarray(y), be.asarray(alphas), sample_weight=w)
        with pytest.raises(ValueError, match="alphas holds subnormal numbers"):
            lsq.ridge_cv(be.asarray(X), be.asarray(y), _put(be, alphas, -1062))
        return
    r = lsq.ridge_cv(be.asarray(X), be.asarray(y), _put(be, alphas, -1062), sample_weight=w)
    assert np.all(np.isfinite(be.to_numpy(r.scores)))
    np.testing.assert_array_equal(be.to_numpy(r.best_index), be.to_numpy(base.best_index))
    _same(be, r.coef, base.coef, 0, "coef")
    _same(be, r.scores, base.scores, -1062, "scores")


def test_nnls(be):
    X, y, w = _problem(seed=3)
    y = y - 2.0 * X[:, 1]  # one coefficient at the bound
    base = lsq.nnls(be.asarray(X), be.asarray(y), alpha=0.5, sample_weight=be.asarray(w))
    for a, b, c in _scales(be, penalized=True):
        alpha = float(np.ldexp(0.5, 2 * (a + c)))
        r = lsq.nnls(_put(be, X, a), _put(be, y, b), alpha=alpha, sample_weight=_put(be, w, 2 * c))
        for field, k in _fit_fields(r, a, b, c):
            _same(be, getattr(r, field), getattr(base, field), k, f"nnls {(a, b, c)}: {field}")
        np.testing.assert_array_equal(be.to_numpy(r.n_iter), be.to_numpy(base.n_iter))


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("cov_type", ["nonrobust", "HC3"])
def test_diagnostics(be, cov_type, fit_intercept):
    X, y, w = _problem(seed=4)
    base = be.finish(lsq.diagnostics(be.asarray(X), be.asarray(y), sample_weight=be.asarray(w), cov_type=cov_type,
                                     fit_intercept=fit_intercept))  # fmt: skip
    est = np.r_[[0] if fit_intercept else [], np.ones(X.shape[1])]  # estimates: intercept (2**b), coef (2**(b - a))
    for a, b, c in _scales(be):
        d = be.finish(lsq.diagnostics(_put(be, X, a), _put(be, y, b), sample_weight=_put(be, w, 2 * c),
                                      cov_type=cov_type, fit_intercept=fit_intercept))  # fmt: skip
        label = f"diagnostics {cov_type} {(a, b, c)}"
        fields = [("coef", b - a), ("stderr", b - a), ("tvalues", 0), ("rss", 2 * (b + c)), ("sigma", b + c),
                  ("r2", 0), ("r2_adj", 0), ("df_resid", 0), ("rank", 0)]  # fmt: skip
        if fit_intercept:
            fields += [("intercept", b), ("intercept_stderr", b), ("intercept_tvalue", 0)]
        for field, k in fields:
            _same(be, getattr(d, field), getattr(base, field), k, f"{label}: {field}")
        e = (b - est * a).astype(int)
        _same(be, d.cov, base.cov, e[:, None] + e[None, :], f"{label}: cov")
    # The condition number of [1, X] is not homogeneous in X: against the weighted design's own.
    d = lsq.diagnostics(_put(be, X, 664), be.asarray(y), sample_weight=be.asarray(w), fit_intercept=fit_intercept)
    A = np.sqrt(w)[:, None] * (np.c_[np.ones(30), np.ldexp(X, 664)] if fit_intercept else np.ldexp(X, 664))
    assert abs(float(be.to_numpy(d.cond)) / np.linalg.cond(A) - 1) < 1e-10


@pytest.mark.parametrize("kind", ["normal", "qr"])
def test_accumulators(be, kind):
    """Chunks and merges: the state's running powers of two are rescaled exactly."""
    cls = {"normal": lsq.NormalAccumulator, "qr": lsq.QRAccumulator}[kind]
    X, y, w = _problem(k=2, seed=5)

    def fit(a, b, c, alpha=0.0, fit_intercept=True):
        acc, other = cls(), cls()
        for sl, into in ((slice(0, 11), acc), (slice(11, 12), acc), (slice(12, 30), other)):
            into.update(_put(be, X[sl], a), _put(be, y[sl], b), sample_weight=_put(be, w[sl], 2 * c))
        return be.finish(acc.merge(other).solve(float(np.ldexp(alpha, 2 * (a + c))), fit_intercept=fit_intercept))

    for alpha, fit_intercept in ((0.0, True), (2.0, False)):
        base = fit(0, 0, 0, alpha, fit_intercept)
        for a, b, c in _scales(be, penalized=alpha > 0):
            r = fit(a, b, c, alpha, fit_intercept)
            for field, k in _fit_fields(r, a, b, c):
                _same(be, getattr(r, field), getattr(base, field), k, f"{kind} alpha={alpha} {(a, b, c)}: {field}")
            assert int(be.to_numpy(r.rank)) == int(be.to_numpy(base.rank))


def test_accumulator_chunks_of_different_scales(be):
    """A state at 1e-200 meets a chunk at 1e200 (and back): what the new scale pushes below
    the range is below rounding next to the new rows; the fit is the in-memory one."""
    X, y, _ = _problem(m=40, seed=6)
    s = np.ldexp(1.0, 664)
    Xs, ys = X.copy(), y.copy()
    Xs[:5], ys[:5] = X[:5] / s, y[:5] / s
    Xs[5:], ys[5:] = X[5:] * s, y[5:] * s
    ref = lsq.lstsq(Xs, ys, fit_intercept=True, method="svd")
    for cls in (lsq.NormalAccumulator, lsq.QRAccumulator):
        acc = cls().update(be.asarray(Xs[:5]), be.asarray(ys[:5])).update(be.asarray(Xs[5:]), be.asarray(ys[5:]))
        r = acc.solve()
        tol = threshold("normal" if cls is lsq.NormalAccumulator else "qr", np.float64, 30.0, 40, 4)
        err = np.linalg.norm(be.to_numpy(r.coef) - ref.coef) / np.linalg.norm(ref.coef)
        assert err <= tol, f"{cls.__name__}: {err:.3g} > {tol:.3g}"


@pytest.mark.parametrize("kind", ["normal", "qr"])
def test_accumulators_float32(be, kind):
    """float32 squares overflow at 1e+-20: the accumulators scale as float64 ones do."""
    cls = {"normal": lsq.NormalAccumulator, "qr": lsq.QRAccumulator}[kind]
    X, y, _ = _problem(seed=7)
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    base = be.finish(cls().update(be.asarray(X32), be.asarray(y32)).solve())
    for a, b in ((84, 0), (-84, 0), (0, 84), (-100, -100), (100, 100)):
        r = be.finish(cls().update(be.asarray(np.ldexp(X32, a)), be.asarray(np.ldexp(y32, b))).solve())
        _same(be, r.coef, base.coef, b - a, f"float32 {kind} {(a, b)}: coef")
        _same(be, r.intercept, base.intercept, b, f"float32 {kind} {(a, b)}: intercept")


@pytest.mark.parametrize("method", METHODS)
def test_uniform_subnormal_weights(be, method):
    """Weights of 5e-324 (2**-1074) are weights of 1 scaled: the unweighted fit; 1e-318 (a
    subnormal with 17 bits) the same problem up to the rounding of sqrt(w) (eps kappa). JAX
    reads subnormals as zeros (XLA flushes them): no scaling can rescue them, they are refused."""
    if be.lazy and method in ("lsqr", "lsmr"):
        pytest.skip("lsqr and lsmr on Dask compute per block of iterations (slow here): see test_dask")
    X, y, _ = _problem(seed=8)
    opts = {"atol": 1e-12, "btol": 1e-12} if method in ("lsqr", "lsmr") else {}
    ones = be.asarray(np.ones(30))
    base = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=True, sample_weight=ones, **opts)
    for w in (5e-324, 1e-318):
        if be.library == "jax":  # XLA computes with subnormals as zeros: refused, naming the argument
            with pytest.raises(ValueError, match="sample_weight holds subnormal numbers"):
                lsq.lstsq(be.asarray(X), be.asarray(y), method=method, sample_weight=be.asarray(np.full(30, w)))
            continue
        r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method, fit_intercept=True,
                      sample_weight=be.asarray(np.full(30, w)), **opts)  # fmt: skip
        got, want = be.to_numpy(r.coef), be.to_numpy(base.coef)
        if w == 5e-324:
            _same(be, r.coef, base.coef, 0, f"{method}: coef")
            _same(be, r.rss, base.rss, -1074, f"{method}: rss")
        else:
            tol = 1e-8 if method in ("lsqr", "lsmr") else threshold(method, np.float64, 30.0, 30, 4)
            assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want), f"{method}, w = {w}"


def test_estimators(be):
    X, y, w = _problem(k=2, seed=9)
    alphas = np.array([0.5, 5.0])
    ests = {
        "LinearRegression": lambda a, c: LinearRegression(),
        "Ridge": lambda a, c: Ridge(alpha=float(np.ldexp(2.0, 2 * (a + c)))),
        "RidgeCV": lambda a, c: RidgeCV(alphas=np.ldexp(alphas, 2 * (a + c))),
    }
    a0, b0, c0 = ref = _reference(be, "auto")  # the estimators' method
    for name, make in ests.items():
        base = make(a0, c0).fit(_put(be, X, a0), _put(be, y, b0), sample_weight=_put(be, w, 2 * c0))
        score = base.score(_put(be, X, a0), _put(be, y, b0), sample_weight=_put(be, w, 2 * c0))
        if ref != (0, 0, 0):
            unit = make(0, 0).fit(be.asarray(X), be.asarray(y), sample_weight=be.asarray(w))
            _near_unit(be, _Fitted(unit.coef_, unit.intercept_), _Fitted(base.coef_, base.intercept_), ref, X, w, name)
        for a, b, c in _scales(be, penalized=name != "LinearRegression"):
            est = make(a, c).fit(_put(be, X, a), _put(be, y, b), sample_weight=_put(be, w, 2 * c))
            _same(be, est.coef_, base.coef_, b - a - (b0 - a0), f"{name} {(a, b, c)}: coef_")
            _same(be, est.intercept_, base.intercept_, b - b0, f"{name} {(a, b, c)}: intercept_")
            got = est.score(_put(be, X, a), _put(be, y, b), sample_weight=_put(be, w, 2 * c))
            assert got == score, f"{name} {(a, b, c)}: score {got} vs {score}"
