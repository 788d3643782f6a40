"""The fast paths of issue #4 give the same answers as the plain ones, and the memory they save.

Blocked Gram products (NumPy, narrow tall X), substitution over stacks of small triangles,
the one-array intercept elimination, and X's NaN test on the Gram diagonal: each is checked
against a NumPy reference with a tolerance from the problem's measured condition number.
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._backend import _arrays, _compat

EPS = np.finfo(np.float64).eps


def _problem(shape, seed=0, offset=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal(shape) + offset
    y = X @ rng.standard_normal(shape[-1]) + 0.1 * rng.standard_normal(shape[:-1])
    return X, y


def test_blocked_gram_matches_plain(numpy_reference):
    """m large enough for several row blocks: the same Gram and cross-product as one product
    (to the rounding of a sum of m terms), and the same fit."""
    X, y = _problem((32000, 20))
    rows = _arrays.GRAM_BLOCK_ELEMENTS // 20
    assert X.shape[0] >= 4 * rows  # the blocked branch runs
    xp = _compat.array_namespace(X)
    A, B = _compat.normal_products(xp, X, y[:, None])
    scale = np.abs(X).T @ np.abs(X)
    assert np.all(np.abs(A - X.T @ X) <= 32000 * EPS * scale)
    assert np.all(np.abs(B[:, 0] - X.T @ y) <= 32000 * EPS * (np.abs(X).T @ np.abs(y)))
    ref = np.linalg.lstsq(X, y, rcond=None)[0]
    kappa = np.linalg.cond(X)
    got = lsq.lstsq(X, y, method="normal").coef
    assert np.linalg.norm(got - ref) <= 10 * EPS * kappa**2 * np.linalg.norm(ref) * 20


@pytest.mark.parametrize("method", ["normal", "auto", "qr"])
def test_small_stacks_by_substitution(be, method):
    """A stack of 300 problems of 30 x 6 (the substitution path for its triangles, and the
    condition estimate's stacked inverse norm) against numpy.linalg.lstsq per problem."""
    X, y = _problem((300, 30, 6), seed=1)
    ref = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, y, strict=False)])
    r = lsq.lstsq(be.asarray(X), be.asarray(y), method=method)
    kappa = max(np.linalg.cond(a) for a in X)
    err = np.max(np.linalg.norm(be.to_numpy(r.coef) - ref, axis=-1) / np.linalg.norm(ref, axis=-1))
    assert err <= 100 * EPS * kappa**2
    assert np.all(be.to_numpy(r.rank) == 6)


def test_stacked_inverse_norm_is_the_frobenius_norm(be):
    from lsq_backends._solvers.linalg.rank import _stacked_inverse_norm

    A = np.stack([a.T @ a for a in _problem((50, 20, 7), seed=2)[0]])
    L = np.linalg.cholesky(A)
    got = be.to_numpy(_stacked_inverse_norm(be.xp, be.asarray(L)))
    ref = np.linalg.norm(np.linalg.inv(L), axis=(-2, -1))
    np.testing.assert_allclose(got, ref, rtol=1e3 * EPS * np.max(np.linalg.cond(L)))
    # With d = diag(A): ||(D L)^-1||_F for D = diag(A)^-1/2, the factor of the equilibrated A.
    d = np.diagonal(A, axis1=-2, axis2=-1)
    got = be.to_numpy(_stacked_inverse_norm(be.xp, be.asarray(L), be.asarray(d)))
    ref = np.linalg.norm(np.linalg.inv(L / np.sqrt(d)[..., :, None]), axis=(-2, -1))
    np.testing.assert_allclose(got, ref, rtol=1e3 * EPS * np.max(np.linalg.cond(L)))


@pytest.mark.parametrize("weighted", [False, True])
def test_intercept_elimination_needs_one_copy(numpy_reference, weighted):
    """fit_intercept=True with method='normal' peaks at about one X of extra memory (it was
    three: centering, weighting and reflecting each made a copy); the fit is unchanged."""
    X, y = _problem((20000, 40), seed=3, offset=1e3)
    sw = np.linspace(0.5, 2.0, X.shape[0]) if weighted else None
    lsq.lstsq(X, y, method="normal", fit_intercept=True, sample_weight=sw)
    gc.collect()
    tracemalloc.start()
    r = lsq.lstsq(X, y, method="normal", fit_intercept=True, sample_weight=sw)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= X.nbytes + 10 * y.nbytes  # the centered X, and vectors of length m
    w = np.ones(X.shape[0]) if sw is None else sw
    Xc = X - np.average(X, axis=0, weights=w)
    yc = y - np.average(y, weights=w)
    ref = np.linalg.lstsq(np.sqrt(w)[:, None] * Xc, np.sqrt(w) * yc, rcond=None)[0]
    kappa = np.linalg.cond(Xc)
    assert np.linalg.norm(r.coef - ref) <= 100 * EPS * kappa**2 * np.linalg.norm(ref) * 1e3


@pytest.mark.parametrize("method", ["lsqr", "lsmr"])
def test_krylov_intercept_memory(numpy_reference, method):
    """LSQR and LSMR on dense X with an intercept: one centered copy of X and vectors of length m,
    at most 1.1 X in all at 200000 x 50 (their rank test's column norms once squared the copy
    whole: 2.0 X); the fit is the dense direct one to LSQR's tolerance. (At m = 20000 the
    Krylov updates' fixed 256 KiB block buffer alone is 3% of X.)"""
    X, y = _problem((200000, 50), seed=4, offset=3.0)
    lsq.lstsq(X, y, method=method, fit_intercept=True)  # first-call allocations (caches) out of the count
    gc.collect()
    tracemalloc.start()
    r = lsq.lstsq(X, y, method=method, fit_intercept=True, atol=1e-12, btol=1e-12)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= 1.1 * X.nbytes, peak / X.nbytes
    ref = lsq.lstsq(X, y, method="svd", fit_intercept=True)
    np.testing.assert_allclose(r.coef, ref.coef, rtol=0, atol=1e-9 * np.abs(ref.coef).max())


def test_multiply_add_blocks_round_as_written(numpy_reference):
    """The Krylov updates formed block by block (``_compat.multiply_add``, long vectors and a
    ragged last block, one factor per column): bit for bit ``b - c * a`` as NumPy writes it;
    a fresh ``b`` receives the result, any other is left as it was."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 100_003, 3))
    c = rng.standard_normal((1, 3))
    want = b - c * a
    kept = b.copy()
    got = _compat.multiply_add(np, a, -c, b)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(b, kept)
    assert not np.shares_memory(got, b)
    fresh = _compat.multiply_add(np, a, -c, b, fresh=True)
    np.testing.assert_array_equal(fresh, want)
    assert fresh is b


def test_operator_results_never_written(numpy_reference):
    """The results of a user's products are the user's (they may be held elsewhere): only
    those of a sparse matrix, new arrays, are written into by the Krylov updates."""
    import scipy.sparse as sp

    A = sp.random(50_000, 8, density=0.2, format="csr", random_state=1) + sp.eye(50_000, 8)
    y = np.random.default_rng(2).standard_normal(50_000)
    held = []

    def product(M):
        def apply(V):
            out = M @ V
            held.append((out, out.copy()))
            return out

        return apply

    X = lsq.operator(product(A), product(A.T), A.shape, blocks=True)
    for method in ("lsmr", "lsqr"):
        got = lsq.lstsq(X, y, method=method, atol=1e-10, btol=1e-10)
        np.testing.assert_allclose(got.coef, lsq.lstsq(A, y, method=method, atol=1e-10, btol=1e-10).coef, rtol=1e-12)
    assert held and all(np.array_equal(out, copy) for out, copy in held)
