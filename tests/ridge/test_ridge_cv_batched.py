"""ridge_cv(target_batch=...): the same answers as scoring all targets at once, in bounded
memory, on every backend and under jax.jit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import lsq_backends as lsq
from benchmarks.sparse import peak_memory

ALPHAS = np.logspace(-3, 3, 9)


def _data(rng, m, n, k):
    X = rng.standard_normal((m, n)) + 1.0
    Y = X @ rng.standard_normal((n, k)) + rng.standard_normal((m, k)) + 2.0
    return X, Y


def _same(a, b, tol):
    """Batched result ``b`` against the all-at-once ``a`` (NumPy arrays)."""
    np.testing.assert_array_equal(b.best_index, a.best_index)
    np.testing.assert_array_equal(b.alpha, a.alpha)
    for name in ("scores", "coef", "intercept"):
        x, y = getattr(a, name), getattr(b, name)
        np.testing.assert_allclose(y, x, rtol=0, atol=tol * max(np.abs(x).max(), 1.0), err_msg=name)


CASES = list(itertools.product([(50, 6), (18, 30)], [None, "gcv", 3], [False, True], ["eigen", "svd"]))


@pytest.mark.parametrize(("shape", "cv", "per_target", "mode"), CASES)
def test_batched_equals_all_at_once(shape, cv, per_target, mode):
    rng = np.random.default_rng(0)
    X, Y = _data(rng, *shape, 7)
    sw = rng.random(shape[0]) + 0.5
    kw = {"cv": cv, "alpha_per_target": per_target, "mode": mode, "sample_weight": sw}
    a = lsq.ridge_cv(X, Y, ALPHAS, **kw)
    for batch in (1, 3, 7, 100):  # single columns, a ragged last block, one block, batch > k
        b = lsq.ridge_cv(X, Y, ALPHAS, target_batch=batch, **kw)
        _same(a, b, 1e-10)  # rounding of a different grouping of the same products
        assert (b.cv_values is None) == (cv != 3)
        if cv == 3:
            np.testing.assert_allclose(b.cv_values, a.cv_values, atol=1e-10 * np.abs(a.cv_values).max())


@pytest.mark.parametrize("cv", [None, "gcv", 3])
def test_backends(be, cv):
    rng = np.random.default_rng(1)
    X, Y = _data(rng, 40, 5, 5)
    sw = rng.random(40) + 0.5
    ref = lsq.ridge_cv(X, Y, ALPHAS, cv=cv, alpha_per_target=True, sample_weight=sw)
    r = lsq.ridge_cv(
        be.asarray(X), be.asarray(Y), be.asarray(ALPHAS), cv=cv, alpha_per_target=True,
        sample_weight=be.asarray(sw), target_batch=2,
    )  # fmt: skip
    got = type(ref)(*(None if f is None else be.to_numpy(f) for f in r))
    _same(ref, got, 1e-10)


@pytest.mark.parametrize("cv", [None, "gcv", 3])
def test_jit(cv):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(2)
    X, Y = _data(rng, 40, 5, 7)
    ref = lsq.ridge_cv(X, Y, ALPHAS, cv=cv)
    fit = jax.jit(lambda X, Y, a: lsq.ridge_cv(X, Y, a, cv=cv, target_batch=3))  # 7 = 3 + 3 + 1: padded
    r = fit(jnp.asarray(X), jnp.asarray(Y), jnp.asarray(ALPHAS))
    got = type(ref)(*(None if f is None else np.asarray(f) for f in r))
    _same(ref, got, 1e-10)


@pytest.mark.parametrize("cv", [None, "gcv", 3])
def test_memory_bounded(cv):
    """NumPy peak (tracemalloc) within the working-memory bound of the batched route: a few
    X-sized factors (F, L, the centered X), y's prepared copies, the Gram matrix, and
    O(batch (m + a)) per block; all at once holds (a, m, k) arrays, which the test must see."""
    rng = np.random.default_rng(3)
    m, n, k, batch = 4000, 50, 200, 10
    X, Y = _data(rng, m, n, k)
    alphas = np.logspace(-3, 4, 20)
    a = alphas.size
    bound = 8 * (4 * m * n + 3 * m * k + 4 * n * n + 8 * batch * (m + a))
    batched = peak_memory(lambda: lsq.ridge_cv(X, Y, alphas, cv=cv, target_batch=batch))
    assert batched <= bound
    if cv is None:
        assert peak_memory(lambda: lsq.ridge_cv(X, Y, alphas, cv=cv)) > 8 * a * m * k > bound


def test_options_checked():
    rng = np.random.default_rng(4)
    X, Y = _data(rng, 20, 3, 2)
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(ValueError, match="target_batch"):
            lsq.ridge_cv(X, Y, ALPHAS, target_batch=bad)
    with pytest.raises(ValueError, match="target_batch"):
        lsq.RidgeCV(store_cv_results=True, target_batch=5).fit(X, Y)


def test_ridgecv_estimator():
    rng = np.random.default_rng(5)
    X, Y = _data(rng, 60, 4, 6)
    for cv in (None, 3):
        a = lsq.RidgeCV(ALPHAS, cv=cv, alpha_per_target=True).fit(X, Y)
        b = lsq.RidgeCV(ALPHAS, cv=cv, alpha_per_target=True, target_batch=4).fit(X, Y)
        np.testing.assert_array_equal(b.alpha_, a.alpha_)
        np.testing.assert_allclose(b.coef_, a.coef_, atol=1e-10)
        np.testing.assert_allclose(b.best_score_, a.best_score_, atol=1e-10)
