"""JAX derivatives of lstsq and ridge: the solution's rule (custom_jvp), not the solver's steps.

Rank-deficient X: central finite differences along curves of exactly rank r; full rank up to
cond 1e8: the analytic derivative within the perturbation bound of least squares; y: pinv(X);
lsqr: reverse mode through its loop by implicit differentiation; alpha and sample_weight:
finite differences; X = 0: finite. Every check is jitted (one compilation each, small shapes);
finite differences take the NumPy fits (the same solution, no compilation)."""

from __future__ import annotations

import numpy as np
import pytest
from problems import rel_err

import lsq_backends as lsq
from lsq_backends.check.problems import threshold

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

METHODS = ("auto", "normal", "qr", "svd", "lsqr")
M, N, RANK = 12, 6, 4
H = 1e-5  # central difference step: truncation ~H**2, rounding ~eps/H, both far below 1e-6
LSQR_TOL = 1e-10  # lsqr's atol/btol where it is compared with finite differences


def _curve(seed=0):
    """X(t) = (A + t A1)(B + t B1)^T: rank exactly RANK for every small t; X'(0) exact."""
    rng = np.random.default_rng(seed)
    A, A1 = rng.standard_normal((2, M, RANK))
    B, B1 = rng.standard_normal((2, N, RANK))
    y, c = rng.standard_normal(M), rng.standard_normal(N)
    return (lambda t: (A + t * A1) @ (B + t * B1).T), A1 @ B.T + A @ B1.T, y, c


def _options(method):
    return {"atol": LSQR_TOL, "btol": LSQR_TOL, "max_iter": 200} if method == "lsqr" else {}


def _fd(f, t0=0.0):
    return (np.asarray(f(t0 + H)) - np.asarray(f(t0 - H))) / (2 * H)


def _stacked(r):
    return np.concatenate([np.asarray(r.coef), np.reshape(np.asarray(r.intercept), (1,))])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_rank_deficient_jvp_equals_finite_differences(method, fit_intercept):
    """rank 4 of 6: every method's tangent (coef and intercept) along a rank-preserving curve
    equals central differences to 1e-6, with no NaN (the solvers' own steps gave NaN)."""
    X_of, dX, y, _ = _curve()
    kw = dict(method=method, fit_intercept=fit_intercept, **_options(method))

    def fit(X):
        r = lsq.lstsq(X, jnp.asarray(y), **kw)
        return jnp.concatenate([r.coef, jnp.reshape(r.intercept, (1,))])

    (_, tan) = jax.jit(lambda X, dX: jax.jvp(fit, (X,), (dX,)))(jnp.asarray(X_of(0.0)), jnp.asarray(dX))
    fd = _fd(lambda t: _stacked(lsq.lstsq(X_of(t), y, **kw)))
    assert np.all(np.isfinite(np.asarray(tan)))
    assert rel_err(tan, fd) < 1e-6


@pytest.mark.parametrize("method", METHODS)
def test_rank_deficient_jit_grad_equals_eager_grad(method):
    X_of, dX, y, c = _curve(1)
    X = jnp.asarray(X_of(0.0))

    def loss(X, y):
        return lsq.lstsq(X, y, method=method, **_options(method)).coef @ jnp.asarray(c)

    eager = jax.grad(loss, argnums=(0, 1))(X, jnp.asarray(y))
    traced = jax.jit(jax.grad(loss, argnums=(0, 1)))(X, jnp.asarray(y))
    for a, b in zip(eager, traced, strict=False):
        assert np.all(np.isfinite(np.asarray(a)))
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12)
    # <grad, X'(0)> is the derivative of the loss along the rank-preserving curve.
    fd = _fd(lambda t: np.asarray(lsq.lstsq(X_of(t), y, method=method, **_options(method)).coef) @ c)
    assert abs(float(jnp.sum(eager[0] * jnp.asarray(dX))) - fd) < 1e-6 * max(abs(fd), 1.0)


@pytest.mark.parametrize("method", METHODS)
def test_jacfwd_wrt_y_is_pinv_and_jacrev_agrees(method):
    X_of, _, y, _ = _curve(2)
    X = jnp.asarray(X_of(0.0))
    pinv = np.linalg.pinv(np.asarray(X))

    def coef(y):
        return lsq.lstsq(X, y, method=method, **_options(method)).coef

    fwd = jax.jit(jax.jacfwd(coef))(jnp.asarray(y))
    tol = 1e-8 if method == "lsqr" else 1e-12
    np.testing.assert_allclose(np.asarray(fwd), pinv, atol=tol * np.abs(pinv).max())
    if method == "svd":  # reverse mode (the transposed rule) gives the same Jacobian
        rev = jax.jit(jax.jacrev(coef))(jnp.asarray(y))
        np.testing.assert_allclose(np.asarray(rev), np.asarray(fwd), atol=tol * np.abs(pinv).max())


@pytest.mark.parametrize("method", METHODS[:4])
def test_full_rank_jvp_within_conditioning_bound(method):
    """jvp = t1 + t2, t1 = pinv(X)(-dX w), t2 = (X^T X)^-1 dX^T r, the analytic derivative from
    X's exact SVD factors, within the conditioning of each term: t1 is a least-squares solution
    with right-hand side v = -dX w (eps * (kappa + kappa**2 eta_v) for QR and SVD factors,
    eta_v = ||v - X pinv(X) v|| / (||X|| ||t1||); eps * kappa**2 for normal, and auto, which may
    use either), t2 the inverse Gram matrix applied to a vector (eps * kappa**2). cond 1e2 with
    a large residual; 1e5 and 1e8 consistent (t2 = 0: the QR/SVD bound is then eps * kappa).
    One compilation for all three."""
    f = jax.jit(lambda X, y, dX: jax.jvp(lambda X: lsq.lstsq(X, y, method=method).coef, (X,), (dX,))[1])
    for kappa, residual in ((1e2, 1e-1), (1e5, 0.0), (1e8, 0.0)):
        err, bound = _full_rank_case(f, method, kappa, residual)
        assert err < bound, (kappa, err, bound)


def _full_rank_case(f, method, kappa, residual):
    rng = np.random.default_rng(3)
    m, n = 20, 5
    U, _ = np.linalg.qr(rng.standard_normal((m, m)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.logspace(0, -np.log10(kappa), n)
    X = (U[:, :n] * s) @ V.T
    r0 = U[:, n:] @ rng.standard_normal(m - n)
    # w and r as constructed (r orthogonal to X's range): recomputed from y through the exact
    # factors, r would hold X's rounding (~eps ||y||), which (X^T X)^-1 amplifies by kappa**2.
    w, r = rng.standard_normal(n), residual * r0 / np.linalg.norm(r0)
    y = X @ w + r
    dX = rng.standard_normal((m, n))
    pinv, ginv = (V / s) @ U[:, :n].T, (V / s**2) @ V.T
    v = -dX @ w
    t1, t2 = pinv @ v, ginv @ dX.T @ r
    tan = f(jnp.asarray(X), jnp.asarray(y), jnp.asarray(dX))
    eta_v = np.linalg.norm(v - X @ t1) / (s[0] * np.linalg.norm(t1))
    bound = threshold(method, np.float64, kappa, m, n, eta_v) * np.linalg.norm(t1)
    bound += threshold("normal", np.float64, kappa, m, n) * np.linalg.norm(t2)
    return rel_err(tan, t1 + t2), bound / np.linalg.norm(t1 + t2)


@pytest.mark.parametrize("kappa", [10.0])
def test_grad_through_lsqr_is_pinv_transpose_c(kappa):
    """Reverse mode through lsqr's lax.while_loop (implicit differentiation): grad of c^T w
    with respect to y is pinv(X)^T c, to lsqr's tolerance (error ~ cond * atol)."""
    rng = np.random.default_rng(4)
    m, n = 40, 6
    U, _ = np.linalg.qr(rng.standard_normal((m, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    X = (U * np.logspace(0, -np.log10(kappa), n)) @ V.T
    y, c = rng.standard_normal(m), rng.standard_normal(n)
    g = jax.jit(jax.grad(lambda y: lsq.lstsq(jnp.asarray(X), y, method="lsqr").coef @ jnp.asarray(c)))(jnp.asarray(y))
    ref = np.linalg.pinv(X).T @ c
    atol = 1e-6  # lsqr's default atol = btol in float64
    assert rel_err(g, ref) < 10 * kappa * np.sqrt(n) * atol


@pytest.mark.parametrize("method", METHODS)
def test_ridge_grad_wrt_alpha_and_sample_weight(method):
    """d/d alpha and d/d sample_weight of a loss of ridge's coef and intercept (rank-deficient
    X, intercept fitted) against central differences."""
    X_of, _, y, c = _curve(5)
    X = jnp.asarray(X_of(0.0))
    sw0 = np.random.default_rng(5).uniform(0.5, 2.0, M)

    def loss(alpha, sw):
        r = lsq.ridge(X, jnp.asarray(y), alpha, method=method, sample_weight=sw, **_options(method))
        return r.coef @ jnp.asarray(c) + 2.0 * r.intercept

    def loss_np(alpha, sw):
        r = lsq.ridge(np.asarray(X), y, alpha, method=method, sample_weight=sw, **_options(method))
        return float(r.coef @ c + 2.0 * r.intercept)

    ga, gw = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(0.7), jnp.asarray(sw0))
    fa = (loss_np(0.7 + H, sw0) - loss_np(0.7 - H, sw0)) / (2 * H)
    e = np.zeros(M)
    e[3] = 1.0
    fw = (loss_np(0.7, sw0 + H * e) - loss_np(0.7, sw0 - H * e)) / (2 * H)
    assert abs(float(ga) - fa) < 1e-6 * max(abs(fa), 1.0)
    assert abs(float(gw[3]) - fw) < 1e-6 * max(abs(fw), 1.0)


@pytest.mark.parametrize("method", METHODS)
def test_lstsq_grad_wrt_sample_weight(method):
    X_of, _, y, c = _curve(6)
    X = jnp.asarray(X_of(0.0))
    sw0 = np.random.default_rng(6).uniform(0.5, 2.0, M)

    def loss(sw, X, y, c):
        r = lsq.lstsq(X, y, method=method, sample_weight=sw, fit_intercept=True, **_options(method))
        return r.coef @ c + r.intercept

    g = jax.jit(jax.grad(loss))(jnp.asarray(sw0), X, jnp.asarray(y), jnp.asarray(c))
    e = np.zeros(M)
    e[7] = 1.0
    fd = (float(loss(sw0 + H * e, np.asarray(X), y, c)) - float(loss(sw0 - H * e, np.asarray(X), y, c))) / (2 * H)
    assert abs(float(g[7]) - fd) < 1e-6 * max(abs(fd), 1.0)


@pytest.mark.parametrize("method", METHODS)
def test_zero_X_has_finite_derivatives(method):
    """X = 0 (rank 0): every direction changes the rank; the rule gives dw = 0, never NaN;
    ridge is smooth there (dw/dX = y-terms / alpha)."""
    X, y = jnp.zeros((M, N)), jnp.asarray(np.arange(M, dtype=float))

    def loss(X):
        return jnp.sum(lsq.lstsq(X, y, method=method).coef) + jnp.sum(lsq.ridge(X, y, 2.0, method=method).coef)

    g = jax.jit(jax.grad(loss))(X)
    assert np.all(np.isfinite(np.asarray(g)))
    # ridge at X = 0: w = 0, dw = dX^T (y - ybar) / alpha, so grad = (y - ybar) 1^T / alpha.
    yc = np.asarray(y) - np.mean(np.asarray(y))
    np.testing.assert_allclose(np.asarray(g), np.outer(yc, np.ones(N)) / 2.0, atol=1e-10)


def test_vmap_of_grad_equals_a_loop():
    X_of, _, y, c = _curve(7)
    Xs = jnp.stack([jnp.asarray(X_of(t)) for t in (0.0, 0.1, 0.2)])

    def loss(X):
        return lsq.lstsq(X, jnp.asarray(y), method="svd").coef @ jnp.asarray(c)

    batched = jax.jit(jax.vmap(jax.grad(loss)))(Xs)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(jax.grad(loss)(Xs[i])), rtol=1e-10, atol=1e-12)


def test_singular_values_tangent():
    """svd's singular values: ds_i = u_i^T dX v_i."""
    X_of, dX, y, _ = _curve(8)
    X = X_of(0.0)
    s_of = jax.jit(
        lambda X, dX: jax.jvp(lambda X: lsq.lstsq(X, jnp.asarray(y), method="svd").singular_values, (X,), (dX,))[1]
    )
    ds = np.asarray(s_of(jnp.asarray(X), jnp.asarray(dX)))
    u, _, vh = np.linalg.svd(X)
    np.testing.assert_allclose(ds[:RANK], np.einsum("ij,ik,kj->j", u[:, :RANK], dX, vh[:RANK].T), rtol=1e-9)
    assert np.all(ds[RANK:] == 0)


@pytest.mark.parametrize("method", ["normal", "svd"])
def test_per_target_alphas(method):
    """One penalty per target (one of them 0: a minimum-norm least-squares target on
    rank-deficient X): the alpha gradient and the X tangent against central differences."""
    X_of, dX, _, _ = _curve(9)
    rng = np.random.default_rng(9)
    Y, C, a0 = rng.standard_normal((M, 3)), rng.standard_normal((N, 3)), np.array([0.3, 1.0, 0.0])

    def loss(X, alpha, Y, C):
        r = lsq.ridge(X, Y, alpha, method=method, per_target=True)
        return (r.coef * C).sum() + r.intercept.sum()

    def both(X, alpha, dX):
        ga = jax.grad(loss, argnums=1)(X, alpha, jnp.asarray(Y), jnp.asarray(C))
        tan = jax.jvp(lambda X: loss(X, alpha, jnp.asarray(Y), jnp.asarray(C)), (X,), (dX,))[1]
        return ga, tan

    ga, tan = jax.jit(both)(jnp.asarray(X_of(0.0)), jnp.asarray(a0), jnp.asarray(dX))
    e = np.array([0.0, 1.0, 0.0])
    fa = (float(loss(X_of(0.0), a0 + H * e, Y, C)) - float(loss(X_of(0.0), a0 - H * e, Y, C))) / (2 * H)
    fx = (float(loss(X_of(H), a0, Y, C)) - float(loss(X_of(-H), a0, Y, C))) / (2 * H)
    assert abs(float(ga[1]) - fa) < 1e-6 * max(abs(fa), 1.0)
    assert abs(float(tan) - fx) < 1e-6 * max(abs(fx), 1.0)


@pytest.mark.parametrize("cv", [None, "gcv", 3])
@pytest.mark.parametrize("rank_deficient", [False, True])
def test_ridge_cv_score_gradient_wrt_alpha(cv, rank_deficient):
    """Gradient-based tuning of the penalty: the cross-validation score of ``ridge_cv`` is
    differentiable in alpha (the factorization does not depend on it: only the filter factors
    do), also on a rank-deficient X, and matches central differences in log alpha."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 5))
    if rank_deficient:
        X[:, 4] = X[:, 0] + X[:, 1]
    y = X @ rng.standard_normal(5) + 0.3 * rng.standard_normal(30)
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def score(log_alpha):
        return lsq.ridge_cv(Xj, yj, jnp.exp(log_alpha)[None], cv=cv).scores[0]

    g = float(jax.jit(jax.grad(score))(jnp.asarray(0.3)))
    h = 1e-5
    fd = float(score(jnp.asarray(0.3 + h)) - score(jnp.asarray(0.3 - h))) / (2 * h)
    # Central differences: truncation ~h^2 |f'''|, rounding ~eps |f| / h.
    assert np.isfinite(g)
    assert abs(g - fd) <= 1e-6 * max(abs(fd), 1e-3), (g, fd)
