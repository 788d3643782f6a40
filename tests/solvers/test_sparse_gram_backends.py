"""The Gram route on the sparse kinds of PyTorch (COO, CSR, CSC), JAX (BCOO, BCSR) and CuPy: ``normal``
and ``auto`` form ``X^T W X`` by the library's own sparse product (JAX: pairs of entries in a row), the
intercept a rank-one correction, then ``normal``'s solve. Against the dense fit of the same data by the SVD,
within the normal equations' bound eps cond**2; the minimum-norm solution where X is rank-deficient or
wide; ``positive=True``; leave-one-out and GCV ``ridge_cv`` (the Gram matrix's eigendecomposition); under
``jax.jit`` traced, without a host read; X never densified."""

from __future__ import annotations

import numpy as np
import pytest
from problems import center, cond

import lsq_backends as lsq

sp = pytest.importorskip("scipy.sparse")
EPS = np.finfo(np.float64).eps


def _problem(m=300, n=25, k=2, seed=0, grade=0.0):
    """Sparse X of full column rank, its columns graded over ``grade`` decades (cond ~ 10**grade)."""
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=0.15, random_state=seed) + sp.eye(m, n)
    A = sp.csr_array(A @ sp.diags_array(np.logspace(0, -grade, n)))
    Y = rng.standard_normal((m, k)) + 3.0
    return A, Y, rng.uniform(0.5, 2.0, m)


def _kinds(be, A):
    """X in the backend's own sparse kinds, on its device; the test is skipped where it has none."""
    if be.library == "torch":  # from A's arrays, never dense (test_never_densified's X would be 960 MB)
        import torch

        dev = be.asarray(np.zeros(1)).device
        C = sp.coo_array(A)
        index = torch.asarray(np.vstack([C.row, C.col]).astype(np.int64), device=dev)
        coo = torch.sparse_coo_tensor(index, torch.asarray(C.data, device=dev), A.shape).coalesce()
        return [coo, coo.to_sparse_csr(), coo.to_sparse_csc()]
    if be.library == "jax":
        from jax.experimental import sparse as jsparse

        return [jsparse.BCOO.from_scipy_sparse(A), jsparse.BCSR.from_scipy_sparse(A)]
    if be.library == "cupy":
        import cupyx.scipy.sparse as csp

        return [csp.csr_matrix(A), csp.csc_matrix(A), csp.coo_matrix(A)]
    pytest.skip(f"{be.library} has no sparse kind of its own (SciPy's: test_sparse_gram.py)")


def _cond(A, sw, fit_intercept):
    """The condition number of the weighted, centered design (``problems.center``)."""
    return cond(center(A.toarray(), np.zeros(A.shape[0]), sw, fit_intercept)[0])


@pytest.mark.parametrize("method", ["auto", "normal"])
@pytest.mark.parametrize("grade", [0.0, 3.0])
def test_same_as_dense(be, method, grade):
    A, Y, sw = _problem(grade=grade)
    y = be.asarray(Y)
    for X in _kinds(be, A):
        for fit_intercept in (False, True):
            for weights in (None, sw):
                kappa = _cond(A, weights, fit_intercept)
                kw = dict(method=method, fit_intercept=fit_intercept)
                w = None if weights is None else be.asarray(weights)
                dense = dict(kw, method="svd", sample_weight=weights)
                per = np.array([0.1, 10.0])
                fits = [
                    (lsq.lstsq(X, y, sample_weight=w, **kw), lsq.lstsq(A.toarray(), Y, **dense)),
                    (lsq.ridge(X, y, 0.3, sample_weight=w, **kw), lsq.ridge(A.toarray(), Y, 0.3, **dense)),
                    (
                        lsq.ridge(X, y, be.asarray(per), per_target=True, sample_weight=w, **kw),
                        lsq.ridge(A.toarray(), Y, per, per_target=True, **dense),
                    ),
                ]
                for got, want in fits:
                    bound = 50 * EPS * kappa**2
                    assert got.n_iter is None and got.istop is None
                    assert type(got.coef) is type(y)
                    coef, intercept = be.to_numpy(got.coef), be.to_numpy(got.intercept)
                    assert np.abs(coef - want.coef).max() <= bound * np.abs(want.coef).max()
                    assert np.abs(intercept - want.intercept).max() <= bound * (np.abs(Y).max() + 1)
                    np.testing.assert_allclose(be.to_numpy(got.rss), want.rss, rtol=bound)
                    np.testing.assert_array_equal(be.to_numpy(got.rank), want.rank)


def test_rank_deficient_and_wide_are_minimum_norm(be):
    """Duplicated and zero columns (the Gram matrix's eigendecomposition decides), and a wide X: the dense
    minimum-norm solution and rank, within eps cond**2 of the kept part (cond ~ 10 here)."""
    rng = np.random.default_rng(1)
    B = sp.random(200, 8, density=0.3, random_state=1).toarray() + np.eye(200, 8)
    cases = [np.hstack([B, B[:, :2], np.zeros((200, 1))]), sp.random(20, 50, density=0.3, random_state=2).toarray()]
    for D in cases:
        y = rng.standard_normal(D.shape[0])
        for X in _kinds(be, sp.csr_array(D)):
            for fit_intercept in (False, True):
                got = lsq.lstsq(X, be.asarray(y), method="normal", fit_intercept=fit_intercept)
                want = lsq.lstsq(D, y, method="svd", fit_intercept=fit_intercept)
                assert int(be.to_numpy(got.rank)) == int(want.rank)
                tol = 1e-12 * np.abs(want.coef).max()
                np.testing.assert_allclose(be.to_numpy(got.coef), want.coef, rtol=0, atol=tol)
                np.testing.assert_allclose(be.to_numpy(got.intercept), want.intercept, rtol=0, atol=1e-12)


def test_positive(be):
    """``positive=True`` (the estimators): the active-set method on the Gram matrix, as the dense fit."""
    A, Y, sw = _problem(k=1, seed=4)
    y = Y[:, 0] + A @ np.linspace(-1.0, 1.0, A.shape[1])  # some coefficients want to be negative
    for make in (lambda: lsq.LinearRegression(positive=True), lambda: lsq.Ridge(3.0, positive=True)):
        want = make().fit(A.toarray(), y, sample_weight=sw)
        for X in _kinds(be, A):
            got = make().fit(X, be.asarray(y), sample_weight=be.asarray(sw))
            coef = be.to_numpy(got.coef_)
            assert np.all(coef >= 0) and np.any(coef == 0)
            np.testing.assert_allclose(coef, want.coef_, rtol=0, atol=1e-12 * np.abs(want.coef_).max())
            np.testing.assert_allclose(be.to_numpy(got.intercept_), want.intercept_, rtol=1e-12)


def test_never_densified(be, monkeypatch):
    """400000 x 300 with 2 entries a row (a dense X: 960 MB): no conversion of X to a dense array (each is
    refused here), and the fit is the SciPy Gram route's."""
    rng = np.random.default_rng(5)
    m, n = 400_000, 300
    rows, cols = np.repeat(np.arange(m), 2), rng.integers(0, n, 2 * m)
    A = sp.csr_array((rng.standard_normal(2 * m), (rows, cols)), shape=(m, n))
    y, sw = A @ rng.standard_normal(n) + rng.standard_normal(m), rng.uniform(0.5, 2.0, m)
    want = lsq.ridge(A, y, 1.0, fit_intercept=True, sample_weight=sw)
    alphas = np.array([0.1, 1.0, 10.0])
    cv = lsq.ridge_cv(A[:, :20], y, alphas, sample_weight=sw)
    kinds = _kinds(be, A)
    _refuse_dense(be, monkeypatch, m)
    for X in kinds:
        got = lsq.ridge(X, be.asarray(y), 1.0, fit_intercept=True, sample_weight=be.asarray(sw))
        assert got.n_iter is None
        np.testing.assert_allclose(be.to_numpy(got.coef), want.coef, rtol=1e-10, atol=1e-12)
    few = _kinds(be, A[:, :20])[0]  # leave-one-out: X's products on blocks of columns of V (20 here, not 300)
    got = lsq.ridge_cv(few, be.asarray(y), alphas, sample_weight=be.asarray(sw))
    np.testing.assert_allclose(be.to_numpy(got.cv_values), cv.cv_values, rtol=1e-9, atol=1e-12)


def _refuse_dense(be, monkeypatch, m):
    """Every way of the library's to make a sparse matrix of m rows dense raises."""

    def refused(original):
        def to_dense(self, *args, **kwargs):
            assert self.shape[0] != m, "X was densified"
            return original(self, *args, **kwargs)

        return to_dense

    if be.library == "torch":
        import torch

        for name in ("to_dense", "todense"):
            if hasattr(torch.Tensor, name):
                monkeypatch.setattr(torch.Tensor, name, refused(getattr(torch.Tensor, name)))
    elif be.library == "jax":
        from jax.experimental import sparse as jsparse

        for cls in (jsparse.BCOO, jsparse.BCSR):
            monkeypatch.setattr(cls, "todense", refused(cls.todense))
    else:
        import cupyx.scipy.sparse as csp

        for cls in (csp.csr_matrix, csp.csc_matrix, csp.coo_matrix):
            monkeypatch.setattr(cls, "toarray", refused(cls.toarray))
            monkeypatch.setattr(cls, "todense", refused(cls.todense))


def test_under_jit_without_host_reads(request):
    """A jitted ``normal``, ``auto`` and ``positive=True`` fit of a BCOO X: traced through (no host read, which a
    trace would refuse), full rank and rank-deficient, the eager fit's results."""
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from jax.experimental import sparse as jsparse

    A, Y, sw = _problem(seed=6)
    B = sp.random(300, 8, density=0.3, random_state=1).toarray() + np.eye(300, 8)
    deficient = sp.csr_array(np.hstack([B, B[:, :2]]))
    for S in (A, deficient):
        X, y, w = jsparse.BCOO.from_scipy_sparse(S), jnp.asarray(Y), jnp.asarray(sw)
        for method in ("auto", "normal"):
            fit = jax.jit(lambda X, y, w, m=method: lsq.ridge(X, y, 0.5, method=m, fit_intercept=True, sample_weight=w))
            got, want = fit(X, y, w), lsq.ridge(S.toarray(), Y, 0.5, method="svd", fit_intercept=True, sample_weight=sw)
            np.testing.assert_allclose(np.asarray(got.coef), want.coef, rtol=1e-10, atol=1e-12)
            got = jax.jit(lambda X, y: lsq.lstsq(X, y, method=method))(X, y)
            want = lsq.lstsq(S.toarray(), Y, method="svd")
            assert int(got.rank) == int(want.rank)
            np.testing.assert_allclose(np.asarray(got.coef), want.coef, rtol=1e-10, atol=1e-11)
    est = jax.jit(lambda X, y: lsq.Ridge(3.0, positive=True).fit(X, y).coef_)
    np.testing.assert_allclose(
        np.asarray(est(jsparse.BCOO.from_scipy_sparse(A), jnp.asarray(Y[:, 0]))),
        lsq.Ridge(3.0, positive=True).fit(A.toarray(), Y[:, 0]).coef_, rtol=0, atol=1e-12,
    )  # fmt: skip


ALPHAS = np.logspace(-3, 3, 9)


@pytest.mark.parametrize("cv", [None, "gcv"])
def test_ridge_cv_leave_one_out_and_gcv(be, cv):
    """Leave-one-out and GCV from the eigendecomposition of the Gram matrix, in X's library: the dense route's
    errors, scores, choice and refit (``mode="svd"``) within eps times the regularized Gram matrix's condition
    number at the smallest penalty; with and without an intercept and weights, one penalty or one per target, a
    scoring; ``RidgeCV()`` alike."""
    A, Y, sw = _problem(m=150, n=12, seed=6)
    lam = np.linalg.eigvalsh(A.toarray().T @ A.toarray())
    bound = 1e3 * EPS * (lam[-1] + ALPHAS[0]) / (lam[0] + ALPHAS[0])
    for X in _kinds(be, A)[:2]:
        for fit_intercept, weights, per_target in ((False, None, False), (True, sw, True), (True, None, False)):
            for scoring in (None, "r2") if cv is None else (None,):
                kw = dict(cv=cv, fit_intercept=fit_intercept, alpha_per_target=per_target, scoring=scoring)
                w = None if weights is None else be.asarray(weights)
                got = lsq.ridge_cv(X, be.asarray(Y), ALPHAS, sample_weight=w, **kw)
                want = lsq.ridge_cv(A.toarray(), Y, ALPHAS, mode="svd", sample_weight=weights, **kw)
                np.testing.assert_array_equal(be.to_numpy(got.best_index), want.best_index)
                for g, r in zip(got, want, strict=True):
                    g = be.to_numpy(g)
                    assert g.shape == np.shape(r) and g.dtype == np.asarray(r).dtype
                    np.testing.assert_allclose(g, r, rtol=bound, atol=bound * np.abs(r).max())
    est = lsq.RidgeCV(alphas=ALPHAS, store_cv_results=cv is None, cv=cv)
    got = est.fit(_kinds(be, A)[0], be.asarray(Y[:, 0]), sample_weight=be.asarray(sw))
    ref = lsq.RidgeCV(alphas=ALPHAS, store_cv_results=cv is None, cv=cv, gcv_mode="svd")
    want = ref.fit(A.toarray(), Y[:, 0], sample_weight=sw)
    assert float(be.to_numpy(got.alpha_)) == want.alpha_
    np.testing.assert_allclose(be.to_numpy(got.coef_), want.coef_, rtol=1e-10)
    if cv is None:
        np.testing.assert_allclose(be.to_numpy(got.cv_results_), want.cv_results_, rtol=1e-10)


def test_ridge_cv_under_jit(request):
    """Leave-one-out of a BCOO X under ``jax.jit``: traced through (no host read), the eager fit's results."""
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    from jax.experimental import sparse as jsparse

    A, Y, sw = _problem(m=150, n=12, seed=6)
    fit = jax.jit(lambda X, y, w: lsq.ridge_cv(X, y, ALPHAS, fit_intercept=True, sample_weight=w))
    got = fit(jsparse.BCOO.from_scipy_sparse(A), jax.numpy.asarray(Y), jax.numpy.asarray(sw))
    want = lsq.ridge_cv(A.toarray(), Y, ALPHAS, mode="svd", fit_intercept=True, sample_weight=sw)
    for g, r in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), r, rtol=1e-10, atol=1e-12 * np.abs(r).max())


def test_jax_layouts(request):
    """A BCOO with a batch or a dense axis (no transpose of its own: made a plain BCOO, O(nnz)) and a BCSR: the
    Gram route's, LSMR's and leave-one-out's results as the dense fit's, eager and under ``jax.jit``."""
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from jax.experimental import sparse as jsparse

    A, Y, _ = _problem(m=60, n=6, k=1, seed=9)
    D, y = jnp.asarray(A.toarray()), jnp.asarray(Y[:, 0])
    want = lsq.lstsq(A.toarray(), Y[:, 0], method="svd", fit_intercept=True).coef
    cv = lsq.ridge_cv(A.toarray(), Y[:, 0], [0.1, 1.0]).coef
    layouts = [jsparse.BCOO.fromdense(D, n_batch=1), jsparse.BCOO.fromdense(D, n_dense=1), jsparse.BCSR.fromdense(D)]
    for X in layouts:
        for fit in (
            lambda X, y: lsq.lstsq(X, y, fit_intercept=True).coef,
            lambda X, y: lsq.lstsq(X, y, method="lsmr", atol=1e-12, btol=1e-12, fit_intercept=True).coef,
        ):
            np.testing.assert_allclose(np.asarray(fit(X, y)), want, rtol=1e-10)
            np.testing.assert_allclose(np.asarray(jax.jit(fit)(X, y)), want, rtol=1e-10)
        got = jax.jit(lambda X, y: lsq.ridge_cv(X, y, [0.1, 1.0]).coef)(X, y)
        np.testing.assert_allclose(np.asarray(got), cv, rtol=1e-10)


def test_operator_refused(numpy_reference):
    """An operator has no entries to form a Gram matrix from: ``normal`` and ``positive=True`` refuse it by name
    (``auto`` is LSMR for it), as do leave-one-out and GCV."""
    A, Y, _ = _problem(k=1)
    op = lsq.operator(lambda v: A @ v, lambda u: A.T @ u, A.shape)
    with pytest.raises(ValueError, match="method='normal' forms X's Gram matrix from a sparse matrix's entries"):
        lsq.lstsq(op, Y[:, 0], method="normal")
    assert lsq.lstsq(op, Y[:, 0]).istop is not None
    with pytest.raises(TypeError, match="positive=True forms X's Gram matrix from a sparse matrix's entries"):
        lsq.LinearRegression(positive=True).fit(op, Y[:, 0])
    with pytest.raises(TypeError, match="leave-one-out and 'gcv' form X's Gram matrix"):
        lsq.ridge_cv(op, Y[:, 0], [0.1, 1.0])


def test_cupy_gram_is_scipys_code(numpy_reference, monkeypatch):
    """No GPU here: CuPy's Gram product is SciPy's code on ``cupyx.scipy.sparse`` (its module's ``diags``, which
    has no ``diags_array``), run on a stand-in, a SciPy matrix whose type names a cupyx module."""
    import sys
    import types

    from lsq_backends._backend import _compat

    class csr_matrix(sp.csr_matrix):  # noqa: N801 (cupyx's name)
        __module__ = "cupyx.scipy.sparse._csr"

    used = []
    standin = types.ModuleType("cupyx.scipy.sparse")
    standin.diags = lambda d: used.append(d) or sp.diags(d)
    monkeypatch.setitem(sys.modules, "cupyx.scipy.sparse", standin)
    A, _, sw = _problem()
    G = _compat.sparse_gram(csr_matrix(A), sw[:, None])
    assert len(used) == 1
    np.testing.assert_allclose(G, A.toarray().T @ (sw[:, None] * A.toarray()), rtol=1e-13, atol=1e-13)
