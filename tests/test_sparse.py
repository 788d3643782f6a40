"""Sparse and matrix-free X for ``lsmr`` and ``lsqr``: SciPy sparse matrices and arrays,
``LinearOperator``, ``lsq.operator`` callables, PyTorch sparse tensors and JAX's BCOO, each
against the dense fit of the same data (the same recurrence on the same products: the same
counts, and coefficients to rounding) and against SciPy's ``lsmr``/``lsqr`` on the sparse
matrix; intercepts and weights without densifying, results in y's library and device, and
memory O(nnz + (m + n) k), never O(m n)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from test_lsqr import check_within_bound

import lsq_backends as lsq

sp = pytest.importorskip("scipy.sparse")
sl = pytest.importorskip("scipy.sparse.linalg")

KW = {"atol": 1e-10, "btol": 1e-10}


def _problem(m=300, n=40, k=2, density=0.1, seed=0):
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=density, format="csr", random_state=seed) + sp.eye(m, n)  # full column rank
    Y = rng.standard_normal((m, k)) if k else rng.standard_normal(m)
    return sp.csr_array(A), Y, rng.uniform(0.5, 2.0, m)


def _native(be, A):
    """The sparse kinds of the backend's own library (none: [])."""
    if be.name == "torch":
        import torch

        dense = torch.asarray(A.toarray())
        return [dense.to_sparse_coo(), dense.to_sparse_csr()]
    if be.name == "jax":
        from jax.experimental import sparse as jsparse

        return [jsparse.BCOO.from_scipy_sparse(A)]
    return []


@pytest.fixture
def eager(be):
    if be.lazy:
        pytest.skip("a Dask y is computed to NumPy for a SciPy X: see test_dask_y")
    return be


@pytest.mark.parametrize("method", ["lsmr", "lsqr"])
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "csr_matrix"])
def test_scipy_formats_same_as_dense(method, fmt, numpy_reference):
    """The same recurrence on the same products: the dense fit's counts, and its coefficients
    to rounding; SciPy's own lsmr/lsqr on the sparse matrix too. cond(X) = 3.6, 23 iterations:
    sparse and dense products sum in other orders, and ~eps per product over the iterations
    gave 1e-12 of max |coef| (compared at 1e-11)."""
    A, Y, _ = _problem()
    X = sp.csr_matrix(A) if fmt == "csr_matrix" else A.asformat(fmt)
    res = lsq.lstsq(X, Y, method=method, **KW)
    dense = lsq.lstsq(A.toarray(), Y, method=method, **KW)
    np.testing.assert_array_equal(res.n_iter, dense.n_iter)
    tol = 1e-11 * np.abs(dense.coef).max()
    np.testing.assert_allclose(res.coef, dense.coef, rtol=0, atol=tol)
    solver = sl.lsmr if method == "lsmr" else sl.lsqr
    limit = {"maxiter": 160} if method == "lsmr" else {"iter_lim": 160}
    for j in range(2):
        x, _, itn = solver(X, Y[:, j], conlim=0, **KW, **limit)[:3]
        assert int(res.n_iter[j]) == itn
        np.testing.assert_allclose(res.coef[:, j], x, rtol=0, atol=tol)
    assert type(res.coef) is np.ndarray and res.coef.shape == (40, 2)


def test_auto_is_lsmr_and_direct_methods_refuse(numpy_reference):
    A, Y, _ = _problem(k=0)
    auto = lsq.lstsq(A, Y)
    assert auto.istop is not None
    np.testing.assert_array_equal(auto.coef, lsq.lstsq(A, Y, method="lsmr").coef)
    for method in ("normal", "qr", "svd"):
        with pytest.raises(
            ValueError, match=f"method='{method}' factors a dense X; X is a SciPy sparse csr_array: use"
        ):
            lsq.lstsq(A, Y, method=method)
        with pytest.raises(ValueError, match="'lsmr'"):
            lsq.ridge(A, Y, 1.0, method=method)


@pytest.mark.parametrize("method", ["lsmr", "lsqr"])
def test_intercept_and_weights_without_densifying(method, numpy_reference):
    """Centering as a rank-one correction, weights as a row scaling: the direct fit of the
    dense data within the stopping rule's bound, least squares and ridge (per target)."""
    A, Y, sw = _problem(seed=1)
    X = A.toarray()
    res = lsq.lstsq(A, Y, method=method, fit_intercept=True, sample_weight=sw, **KW)
    check_within_bound(res, _NumPy, X, Y, sw=sw, fit_intercept=True, **KW)
    ref = lsq.lstsq(X, Y, fit_intercept=True, sample_weight=sw)
    np.testing.assert_allclose(res.intercept, ref.intercept, rtol=1e-7)
    np.testing.assert_allclose(res.rss, ref.rss, rtol=1e-9)
    alpha = np.array([0.5, 20.0])
    res = lsq.ridge(A, Y, alpha, method=method, per_target=True, sample_weight=sw, **KW)
    check_within_bound(res, _NumPy, X, Y, alpha=alpha, sw=sw, fit_intercept=True, **KW)
    assert int(res.rank) == 40


class _NumPy:
    @staticmethod
    def to_numpy(a):
        return np.asarray(a)


def test_operators(numpy_reference):
    """scipy's LinearOperator and ``lsq.operator`` (per vector and by blocks): the sparse fit."""
    A, Y, sw = _problem(seed=2)
    want = lsq.ridge(A, Y, 0.7, sample_weight=sw, **KW)
    for X in (
        sl.aslinearoperator(A),
        lsq.operator(lambda v: A @ v, lambda u: A.T @ u, A.shape),
        lsq.operator(lambda v: A @ v, lambda u: A.T @ u, A.shape, np.float64, blocks=True),
    ):
        got = lsq.ridge(X, Y, 0.7, sample_weight=sw, **KW)
        np.testing.assert_array_equal(got.n_iter, want.n_iter)
        np.testing.assert_allclose(got.coef, want.coef, rtol=0, atol=1e-11 * np.abs(want.coef).max())
        np.testing.assert_allclose(got.intercept, want.intercept, rtol=1e-11)
    bad = lsq.operator(lambda v: (A @ v)[:-1], lambda u: A.T @ u, A.shape)
    with pytest.raises(ValueError, match=r"matvec returned shape \(299,\); expected \(300,\)"):
        lsq.lstsq(bad, Y)
    with pytest.raises(ValueError, match="shape must be a tuple"):
        lsq.operator(lambda v: v, lambda u: u, [3, 3])


def test_each_backend(eager):
    """A SciPy X beside y of any library, X in the backend's own sparse types (PyTorch COO and
    CSR, JAX BCOO) and an operator of its arrays (dtype given as NumPy's): the NumPy fit, in
    y's library; warm-started ridge within its bound."""
    A, Y, sw = _problem(seed=3)
    want = lsq.lstsq(A, Y, fit_intercept=True, sample_weight=sw, **KW)
    y, w = eager.asarray(Y), eager.asarray(sw)
    D = eager.asarray(A.toarray())
    Dt = eager.xp.linalg.matrix_transpose(D)
    op = lsq.operator(lambda v: D @ v, lambda u: Dt @ u, A.shape, np.float64)  # products in y's library
    for X in [A, *_native(eager, A), op]:
        got = lsq.lstsq(X, y, fit_intercept=True, sample_weight=w, **KW)
        assert type(got.coef) is type(y)
        np.testing.assert_array_equal(eager.to_numpy(got.n_iter), want.n_iter)
        np.testing.assert_allclose(eager.to_numpy(got.coef), want.coef, rtol=1e-10, atol=1e-12)
        x0 = eager.asarray(want.coef)
        warm = lsq.ridge(X, y, 1.0, sample_weight=w, x0=x0, **KW)
        check_within_bound(warm, eager, A.toarray(), Y, alpha=1.0, sw=sw, fit_intercept=True, **KW)


def test_stays_on_device(strict_device):
    A, Y, sw = _problem(seed=4)
    y, w = strict_device.asarray(Y), strict_device.asarray(sw)
    res = lsq.ridge(A, y, strict_device.asarray([0.1, 1.0]), sample_weight=w, per_target=True)
    for field in res:
        if field is not None:
            assert field.device == strict_device.device


def test_dask_y(be):
    """A Dask y beside a SciPy X is computed (the products run in NumPy); the results are
    Dask arrays again."""
    if not be.lazy:
        pytest.skip("Dask only")
    A, Y, _ = _problem(seed=5)
    got = lsq.lstsq(A, be.asarray(Y), method="lsqr")
    assert type(got.coef) is type(be.asarray(Y))
    np.testing.assert_allclose(be.to_numpy(got.coef), lsq.lstsq(A, Y, method="lsqr").coef, rtol=1e-12)


def test_jax_jit_vmap(request):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from jax.experimental import sparse as jsparse

    A, Y, sw = _problem(seed=6)
    B, D = jsparse.BCOO.from_scipy_sparse(A), jnp.asarray(A.toarray())
    want = lsq.ridge(A, Y, 0.5, sample_weight=sw, **KW)
    fit = jax.jit(lambda X, y, w: lsq.ridge(X, y, 0.5, sample_weight=w, **KW))
    got = fit(B, jnp.asarray(Y), jnp.asarray(sw))
    np.testing.assert_array_equal(np.asarray(got.n_iter), want.n_iter)
    np.testing.assert_allclose(np.asarray(got.coef), want.coef, rtol=1e-10, atol=1e-12)
    op = lsq.operator(lambda v: D @ v, lambda u: D.T @ u, A.shape)  # closed over, traced
    got = jax.jit(lambda y, w: lsq.ridge(op, y, 0.5, sample_weight=w, **KW))(jnp.asarray(Y), jnp.asarray(sw))
    np.testing.assert_allclose(np.asarray(got.coef), want.coef, rtol=1e-10, atol=1e-12)
    per_column = jax.jit(jax.vmap(lambda y: lsq.ridge(B, y, 0.5, **KW).coef, in_axes=1, out_axes=1))
    np.testing.assert_allclose(np.asarray(per_column(jnp.asarray(Y))), lsq.ridge(A, Y, 0.5, **KW).coef, rtol=1e-10)
    with pytest.raises(TypeError, match="BCOO.from_scipy_sparse"):
        jax.jit(lambda y: lsq.lstsq(A, y).coef)(jnp.asarray(Y))


def test_bad_input(numpy_reference):
    A, Y, sw = _problem(k=0, seed=7)
    with pytest.raises(ValueError, match=r"y must have shape \(300,\) or \(300, k\)"):
        lsq.lstsq(A, Y[:-1])
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(300,\)"):
        lsq.lstsq(A, Y, sample_weight=sw[:-1])
    with pytest.raises(ValueError, match="alpha path needs a direct method"):
        lsq.ridge(A, Y, np.array([0.1, 1.0]))
    with pytest.raises(ValueError, match="rcond and refine apply to the direct methods"):
        lsq.lstsq(A, Y, rcond=1e-3)
    with pytest.raises(ValueError, match="x0 must have shape"):
        lsq.lstsq(A, Y, x0=np.zeros(3))
    with pytest.raises(ValueError, match="y contains NaN"):
        lsq.lstsq(A, np.full(300, np.nan))
    bad = A.copy()
    bad.data[3] = np.inf
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        lsq.lstsq(bad, Y)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        lsq.lstsq(A, Y, sample_weight=-sw)
    with pytest.raises(TypeError, match="X is complex"):
        lsq.lstsq(A.astype(complex), Y)
    one_hot = lsq.lstsq(A.astype(bool), Y, atol=1e-10, btol=1e-10)  # boolean entries: cast to float64
    np.testing.assert_allclose(one_hot.coef, lsq.lstsq(A.astype(bool).astype(float), Y, method="lsmr", atol=1e-10,
                               btol=1e-10).coef)  # fmt: skip
    with pytest.raises(TypeError, match="y is a SciPy sparse"):
        lsq.lstsq(A, sp.csr_array(Y[:, None]))
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="y and sample_weight must be arrays of its library"):
        lsq.lstsq(torch.asarray(A.toarray()).to_sparse_coo(), Y)


def test_empty_and_no_targets(numpy_reference):
    A, Y, _ = _problem(seed=8)
    res = lsq.lstsq(A, Y[:, :0])
    assert res.coef.shape == (40, 0) and res.n_iter.shape == (0,)
    res = lsq.lstsq(sp.csr_array((5, 0)), np.ones(5), fit_intercept=True)
    assert res.coef.shape == (0,) and float(res.intercept) == 1.0 and int(res.n_iter) == 0


def test_memory_is_not_m_by_n(numpy_reference):
    """A tall sparse fit with an intercept and weights: peak traced memory (X made before) a
    few vectors of length m, below a twelfth of one dense copy of X (m n 8 bytes), which
    densifying or centering X itself would cost."""
    m, n = 200_000, 200
    rng = np.random.default_rng(9)
    rows = np.repeat(np.arange(m), 3)
    X = sp.csr_array((rng.standard_normal(3 * m), (rows, rng.integers(0, n, 3 * m))), shape=(m, n))
    y, sw = rng.standard_normal(m), rng.uniform(0.5, 2.0, m)
    tracemalloc.start()
    try:
        res = lsq.lstsq(X, y, fit_intercept=True, sample_weight=sw, atol=0.0, btol=0.0, max_iter=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert int(res.n_iter) == 10
    # Measured 14.8 MB: nine vectors of m float64 (y, weights, LSMR's u, temporaries).
    assert peak < 16 * 8 * (m + n), f"peak {peak / 1e6:.1f} MB; dense X would be {m * n * 8 / 1e6:.0f} MB"
