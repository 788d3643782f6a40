"""Sparse and matrix-free X for ``lsmr`` and ``lsqr``: SciPy sparse matrices and arrays,
``LinearOperator``, ``lsq.operator`` callables, PyTorch sparse tensors and JAX's BCOO, each
against the dense fit of the same data (the same recurrence on the same products: the same
counts, and coefficients to rounding) and against SciPy's ``lsmr``/``lsqr`` on the sparse
matrix; intercepts and weights without densifying, results in y's library and device, and
memory O(nnz + (m + n) k), never O(m n)."""

from __future__ import annotations

import functools
import tracemalloc

import numpy as np
import pytest
from problems import check_within_bound

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
    """The sparse kinds of the backend's own library (none: []), on the backend's device: a
    PyTorch sparse X is multiplied where it lives, and y must be there too (docs/sparse.md);
    made on the host beside torch-cuda's y, every fit was refused with a TypeError."""
    if be.library == "torch":
        dense = be.asarray(A.toarray())  # on the backend's device (CUDA for torch-cuda)
        return [dense.to_sparse_coo(), dense.to_sparse_csr()]
    if be.library == "jax":
        from jax.experimental import sparse as jsparse

        return [jsparse.BCOO.from_scipy_sparse(A)]
    return []


def test_native_kinds_made_on_the_backends_device():
    """The first torch-cuda run: _native made PyTorch's COO and CSR X on the host (torch.asarray
    without a device) beside y on the GPU, and the fit refused X (y and sample_weight must be on
    X's device), failing the four tests that use it. A stand-in backend as torch-cuda: it makes
    its arrays somewhere else than the host default, so X must be made from its arrays, with
    their device and entries."""
    torch = pytest.importorskip("torch")
    A, _, _ = _problem(m=30, n=6, seed=17)

    class OnItsDevice:  # torch-cuda's shape: library torch, arrays put on its device by asarray
        library = "torch"

        def __init__(self):
            self.made = []

        def asarray(self, a):
            self.made.append(torch.asarray(a))
            return self.made[-1]

    be = OnItsDevice()
    kinds = _native(be, A)
    assert be.made, "_native made X without the backend: on the host, not on its device"
    assert [X.layout for X in kinds] == [torch.sparse_coo, torch.sparse_csr]
    for X in kinds:
        assert X.device == be.made[0].device
        np.testing.assert_array_equal(X.to_dense().numpy(), A.toarray())


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


def test_auto_and_normal_by_the_gram_matrix_qr_and_svd_refuse(numpy_reference, monkeypatch):
    """``normal`` and ``auto`` fit a SciPy sparse X from its Gram matrix (no iterations, a
    rank); ``auto`` is LSMR past ``GRAM_COLUMNS`` columns and where an iterative option is
    given; ``qr`` and ``svd`` (they factorize X itself) refuse it by name."""
    from lsq_backends import _operator_fit

    A, Y, _ = _problem(k=0)
    dense = lsq.lstsq(A.toarray(), Y, method="svd")
    for method in ("auto", "normal"):
        res = lsq.lstsq(A, Y, method=method)
        assert res.istop is None and res.n_iter is None and int(res.rank) == 40
        np.testing.assert_allclose(res.coef, dense.coef, rtol=0, atol=1e-13 * np.abs(dense.coef).max())
    np.testing.assert_array_equal(lsq.lstsq(A, Y, **KW).coef, lsq.lstsq(A, Y, method="lsmr", **KW).coef)
    monkeypatch.setattr(_operator_fit, "GRAM_COLUMNS", 39)
    assert lsq.lstsq(A, Y).istop is not None  # 40 columns: past the line, LSMR
    assert lsq.lstsq(A, Y, method="normal").istop is None  # as asked
    for method in ("qr", "svd"):
        with pytest.raises(ValueError, match=f"method='{method}' factorizes X itself; X is a SciPy sparse csr_array"):
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


@pytest.fixture
def jax_sparse(request):
    """``(jax, jax.numpy, jax.experimental.sparse)``, in the jax session only."""
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    from jax.experimental import sparse as jsparse

    return jax, jax.numpy, jsparse


def test_jax_jit_vmap(jax_sparse):
    jax, jnp, jsparse = jax_sparse

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
        lsq.ridge(A, Y, np.array([0.1, 1.0]), method="lsmr")
    with pytest.raises(ValueError, match="a 1-D alpha path factors a dense X"):
        lsq.ridge(A, Y, np.array([0.1, 1.0]))
    with pytest.raises(ValueError, match="rcond and refine apply to the direct methods"):
        lsq.lstsq(A, Y, rcond=1e-3, method="lsmr")
    with pytest.raises(ValueError, match="refine applies to a dense X"):
        lsq.lstsq(A, Y, refine=1)
    with pytest.raises(ValueError, match="x0 must have shape"):
        lsq.lstsq(A, Y, x0=np.zeros(3))
    with pytest.raises(ValueError, match="y contains NaN"):
        lsq.lstsq(A, np.full(300, np.nan))
    bad = A.copy()
    for value in (np.inf, -np.inf, np.nan):  # read from X's largest magnitude: each must reach it
        bad.data[3] = value
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


# Column scaling as a preconditioner (precondition="columns").

PC = {"atol": 1e-10, "btol": 1e-10, "max_iter": 10_000}


def _badly_scaled(m=2000, levels=20, per=20, seed=10):
    """One-hot columns of a factor with ``levels`` levels and 3 per Gaussian covariates, a third
    each scaled by 1e3, 1 and 1e-3 (cond 1.2e6, 1.5 with unit columns): CSR, y, weights."""
    rng = np.random.default_rng(seed)
    c = 3 * per
    cov = rng.standard_normal((m, c)) * np.repeat([1e3, 1.0, 1e-3], per)
    rows = np.repeat(np.arange(m), 1 + c)
    cols = np.column_stack([rng.integers(0, levels, m), np.broadcast_to(np.arange(levels, levels + c), (m, c))])
    X = sp.csr_array((np.column_stack([np.ones(m), cov]).ravel(), (rows, cols.ravel())), shape=(m, levels + c))
    return X, X @ rng.standard_normal(levels + c) + rng.standard_normal(m), rng.uniform(0.5, 2.0, m)


def _scaled_system(X, y, sw, alpha):
    """The system the preconditioned fit iterates on, from the centered weighted data: A = [Xc
    D^-1; sqrt(alpha) D^-1] (unit columns, D_j = sqrt(||xc_j||^2 + alpha)), b = [yc; 0], D, and
    the exact solution z* of min ||A z - b|| by NumPy's SVD (error ~ eps cond(A), cond(A) ~ 1.5)."""
    from problems import center

    Xc, Yc, _, _ = center(X, y, sw, True)
    D = np.sqrt(np.sum(Xc * Xc, axis=0) + (alpha or 0.0))
    A, b = Xc / D, Yc[:, 0]
    if alpha:
        A, b = np.vstack([A, np.diag(np.sqrt(alpha) / D)]), np.concatenate([b, np.zeros(X.shape[1])])
    return A, b, D, np.linalg.lstsq(A, b, rcond=None)[0]


def x_mean_over(X, sw):
    return sw @ X.toarray() / sw.sum()


def _check_intercept(got, X, y, sw, coef, bound):
    """The intercept of ``coef`` within ``bound`` (|x_mean (w - w*)| for the coefficients'
    bound) and its rounding."""
    want = sw @ y / sw.sum() - x_mean_over(X, sw) @ coef
    assert abs(float(got) - want) <= bound + 1e-12 * abs(want)


def _iteration_bound(A, atol):
    """Iterations for LSQR/LSMR to meet atol on A: the error of CG on the normal equations
    falls by (kappa - 1) / (kappa + 1) an iteration; kappa / atol of it, with a factor 2 for
    the stopping test's estimates and rounding."""
    s = np.linalg.svd(A, compute_uv=False)
    kappa = s[0] / s[-1]
    return int(np.ceil(2 * np.log(2 * kappa / atol) / np.log((kappa + 1) / (kappa - 1))))


@pytest.mark.parametrize("method", ["lsmr", "lsqr"])
def test_preconditioner_on_badly_scaled_columns(method, numpy_reference):
    """cond(X) = 1.2e6 from columns scaled 1e3, 1, 1e-3: unscaled, 199-265 iterations to
    atol = 1e-10; with unit columns (cond 1.5) 18, within the bound cond(X D^-1) gives (29) and
    at most a tenth of them. The solution is the direct one within the stopping rule's bound
    (in the scaled coordinates z = D w, where the rule holds), intercept and weights included;
    sparse and dense X alike."""
    from problems import error_bound

    X, y, sw = _badly_scaled()
    A, b, D, z_star = _scaled_system(X.toarray(), y, sw, None)
    plain = lsq.lstsq(X, y, method=method, fit_intercept=True, sample_weight=sw, **PC)
    for data in (X, X.toarray()):
        res = lsq.lstsq(data, y, method=method, fit_intercept=True, sample_weight=sw, precondition="columns", **PC)
        assert int(res.n_iter) <= _iteration_bound(A, PC["atol"])
        assert 10 * int(res.n_iter) <= int(plain.n_iter)
        z = D * res.coef
        bound = error_bound(A, b, z, None, PC["atol"], PC["btol"], 2.2e-16)
        assert np.linalg.norm(z - z_star) <= bound < 1e-6 * np.linalg.norm(z_star)
        _check_intercept(res.intercept, X, y, sw, z_star / D, np.linalg.norm(x_mean_over(X, sw) / D) * bound)


@pytest.mark.parametrize("method", ["lsmr", "lsqr"])
def test_preconditioned_ridge(method, numpy_reference):
    """The penalty stays on the original coefficients: [X D^-1; sqrt(alpha) D^-1] iterated
    (unit columns), one D per target with its own penalty; the direct ``ridge`` within the
    stopping rule's bound (scaled coordinates), in fewer iterations than unscaled."""
    from problems import error_bound

    X, y, sw = _badly_scaled(m=600, per=5, seed=11)
    Y = np.column_stack([y, -2 * y + 1])
    alphas = np.array([1e-4, 30.0])
    for data in (X, X.toarray()):
        res = lsq.ridge(data, Y, alphas, method=method, per_target=True, sample_weight=sw, precondition="columns", **PC)
        plain = lsq.ridge(data, Y, alphas, method=method, per_target=True, sample_weight=sw, **PC)
        direct = lsq.ridge(X.toarray(), Y, alphas, method="svd", per_target=True, sample_weight=sw)
        assert int(res.rank) == X.shape[1]
        for j, alpha in enumerate(alphas):
            A, b, D, z_star = _scaled_system(X.toarray(), Y[:, j], sw, alpha)
            assert int(res.n_iter[j]) <= _iteration_bound(A, PC["atol"]) and res.n_iter[j] < plain.n_iter[j]
            bound = error_bound(A, b, D * res.coef[:, j], None, PC["atol"], PC["btol"], 2.2e-16)
            assert np.linalg.norm(D * res.coef[:, j] - z_star) <= bound < 1e-6 * np.linalg.norm(z_star)
            # ... and the direct ridge is that solution, to its own rounding (eps cond, cond 1.2e6)
            assert np.linalg.norm(D * direct.coef[:, j] - z_star) <= 10 * 2.2e-16 * 1.2e6 * np.linalg.norm(z_star)
            _check_intercept(
                res.intercept[j], X, Y[:, j], sw, z_star / D, np.linalg.norm(x_mean_over(X, sw) / D) * bound
            )


def test_preconditioned_warm_start(numpy_reference):
    """x0 is given in the original coordinates and starts the scaled iteration at D x0: from
    the solution itself the fit stops at once (from z0 = x0 it would start far off), within
    the stopping rule's bound."""
    from problems import error_bound

    X, y, sw = _badly_scaled(m=600, per=5, seed=12)
    for alpha in (None, 2.0):
        fit = functools.partial(lsq.lstsq if alpha is None else functools.partial(lsq.ridge, alpha=alpha),
                                method="lsmr", fit_intercept=True, sample_weight=sw, precondition="columns", **PC)  # fmt: skip
        cold = fit(X, y)
        warm = fit(X, y, x0=cold.coef)
        assert int(warm.n_iter) <= 1 < int(cold.n_iter)
        A, b, D, z_star = _scaled_system(X.toarray(), y, sw, alpha)
        bound = error_bound(A, b, D * warm.coef, None, PC["atol"], PC["btol"], 2.2e-16)
        assert np.linalg.norm(D * warm.coef - z_star) <= bound < 1e-6 * np.linalg.norm(z_star)


def test_sparse_column_norms_without_densifying(numpy_reference):
    """The norms the preconditioner scales by: those of the centered, weighted X, from X's
    squared entries (duplicates of a COO summed first, X untouched); a zero column and a
    constant one (centered to rounding) get 0, and keep scale 1."""
    from lsq_backends._problem._operator import centered, linear_map

    rng = np.random.default_rng(13)
    dense = rng.standard_normal((50, 5)) * np.array([1e200, 1.0, 1e-3, 1.0, 1.0])  # squares over/underflow
    dense[:, 3], dense[:, 4] = 0.0, 7.0
    rows, cols = np.nonzero(dense)
    half = dense[rows, cols] / 2  # every entry stored as two halves
    X = sp.coo_array((np.concatenate([half, half]), (np.tile(rows, 2), np.tile(cols, 2))), shape=dense.shape)
    before = X.data.copy()
    w = rng.uniform(0.5, 2.0, 50)
    mean = (w @ dense / w.sum())[None]
    norms = centered(np, linear_map(X, np, np.float64, "cpu"), np.sqrt(w)[:, None], mean).norms()
    want = np.linalg.norm(np.sqrt(w)[:, None] * (dense - mean) / [1e200, 1, 1, 1, 1], axis=0) * [1e200, 1, 1, 1, 1]
    np.testing.assert_allclose(norms[0, :3], want[:3], rtol=1e-12)
    assert norms[0, 3] == 0 and norms[0, 4] == 0
    np.testing.assert_array_equal(X.data, before)


def test_inputs_untouched(numpy_reference):
    """X's entries, y and the weights are read, never written, though a float64 y is used
    without a copy: with and without the scaling (y at 2**700), centering, weights,
    preconditioning and a penalty, 1-D and 2-D y."""
    A, Y, sw = _problem(seed=9)
    for y in (Y, Y[:, 0], Y * 2.0**700):
        for method in ("lsmr", "lsqr"):
            for kw in ({}, {"fit_intercept": True, "sample_weight": sw}, {"precondition": "columns"}):
                before = [a.copy() for a in (A.data, y, sw)]
                lsq.lstsq(A, y, method=method, **kw)
                lsq.ridge(A, y, 0.5, method=method, **kw)
                for a, b in zip((A.data, y, sw), before, strict=True):
                    np.testing.assert_array_equal(a, b)


def test_precondition_refused(numpy_reference):
    A, Y, _ = _problem(k=0, seed=14)
    for bad in ("column", "jacobi", True, 1):
        with pytest.raises(ValueError, match=r"precondition must be None or one of \('columns',\); got"):
            lsq.lstsq(A, Y, precondition=bad)
        with pytest.raises(ValueError, match="precondition must be None"):
            lsq.ridge(A.toarray(), Y, 1.0, method="lsqr", precondition=bad)
    for method in ("auto", "qr", "svd"):
        with pytest.raises(
            ValueError, match=f"precondition apply to method='lsqr' or 'lsmr' only; got method='{method}'"
        ):
            lsq.lstsq(A.toarray(), Y, method=method, precondition="columns")
    for X in (sl.aslinearoperator(A), lsq.operator(lambda v: A @ v, lambda u: A.T @ u, A.shape)):
        with pytest.raises(TypeError, match="precondition='columns' scales X's columns by their norms"):
            lsq.ridge(X, Y, 1.0, precondition="columns")


def test_preconditioned_each_backend(be):
    """Dense X of every backend (Dask included), SciPy X beside y of the backend, and the
    backend's own sparse kinds: the NumPy preconditioned fit (counts equal, coefficients to
    rounding), ridge per target included."""
    A, Y, sw = _problem(seed=15)
    A = sp.csr_array(A @ sp.diags(np.repeat([1e3, 1.0, 1e-3, 1.0], 10)))
    alpha = np.array([0.01, 3.0])
    kw = {"method": "lsmr", "fit_intercept": True, "precondition": "columns", **KW}
    want = lsq.lstsq(A, Y, sample_weight=sw, **kw)
    want_r = lsq.ridge(A, Y, alpha, per_target=True, sample_weight=sw, **kw)
    y, w, a = be.asarray(Y), be.asarray(sw), be.asarray(alpha)
    kinds = [be.asarray(A.toarray())] + ([] if be.lazy else [A, *_native(be, A)])
    for X in kinds:
        for got, ref in (
            (lsq.lstsq(X, y, sample_weight=w, **kw), want),
            (lsq.ridge(X, y, a, per_target=True, sample_weight=w, **kw), want_r),
        ):
            np.testing.assert_array_equal(be.to_numpy(got.n_iter), ref.n_iter)
            np.testing.assert_allclose(be.to_numpy(got.coef), ref.coef, rtol=1e-9, atol=1e-12 * np.abs(ref.coef).max())
            np.testing.assert_allclose(be.to_numpy(got.intercept), ref.intercept, rtol=1e-9)


def test_preconditioned_under_jit(jax_sparse):
    jax, jnp, jsparse = jax_sparse

    A, Y, sw = _problem(seed=16)
    A = sp.csr_array(A @ sp.diags(np.repeat([1e3, 1.0, 1e-3, 1.0], 10)))
    kw = {"method": "lsmr", "sample_weight": jnp.asarray(sw), "precondition": "columns", **KW}
    want = lsq.ridge(A, Y, 0.5, sample_weight=sw, precondition="columns", **KW)
    fit = jax.jit(lambda X, y: lsq.ridge(X, y, 0.5, **kw))
    for X in (jsparse.BCOO.from_scipy_sparse(A), jnp.asarray(A.toarray())):
        got = fit(X, jnp.asarray(Y))
        np.testing.assert_array_equal(np.asarray(got.n_iter), want.n_iter)
        np.testing.assert_allclose(np.asarray(got.coef), want.coef, rtol=1e-9, atol=1e-12 * np.abs(want.coef).max())


@pytest.mark.parametrize("method", ["lsmr", "lsqr"])
def test_scale_of_x_y_weights_and_penalty(eager, method):
    """Sparse X, y, weights and a penalty scaled by powers of two from 2**-990 to 2**990 (about
    1e+-298; X's entries to 2**+-530, whose squares would leave float64's range): the fit of the
    unscaled problem, scaled back exactly (a power of two changes no rounding, so the same
    iterations), as dense X is rescaled. Before, y at 1e200 gave coefficients off by 40%."""
    A, Y, sw = _problem(m=60, n=8, seed=5)
    kw = dict(method=method, fit_intercept=True, **KW)
    for ex, ey, ew in (
        (0, 660, 0),
        (0, -660, 0),
        (530, 0, 0),
        (-530, 0, 0),
        (0, 0, 990),
        (0, 0, -990),
        (-300, 300, -300),
    ):
        sx, sy, s_w = 2.0**ex, 2.0**ey, 2.0**ew
        ridge = abs(2 * ex + ew) < 1000  # the penalty in the new units, 0.5 * w * x**2, is in range
        want = lsq.ridge(A, Y, 0.5, sample_weight=sw, **kw) if ridge else lsq.lstsq(A, Y, sample_weight=sw, **kw)
        for X in [A * sx, *_native(eager, A * sx)]:
            args = (X, eager.asarray(Y * sy), *((0.5 * s_w * sx * sx,) if ridge else ()))
            fit = lsq.ridge if ridge else lsq.lstsq
            got = fit(*args, sample_weight=eager.asarray(sw * s_w), **kw)
            where = f"X*2**{ex}, y*2**{ey}, w*2**{ew}, {type(X).__name__}"
            assert eager.to_numpy(got.n_iter).tolist() == want.n_iter.tolist(), where
            np.testing.assert_allclose(eager.to_numpy(got.coef) * (sx / sy), want.coef, rtol=1e-12, err_msg=where)
            np.testing.assert_allclose(eager.to_numpy(got.intercept) / sy, want.intercept, rtol=1e-12, atol=1e-14)
        if max(abs(ex), abs(ey), abs(ew)) < 500:  # rss in range
            np.testing.assert_allclose(eager.to_numpy(got.rss) / (sy * sy * s_w), want.rss, rtol=1e-12)
