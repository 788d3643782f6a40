"""method="lsqr": against scipy.sparse.linalg.lsqr, and against the direct solution within the
error that its stopping rule (atol, btol) allows on the problem's measured singular values."""

from __future__ import annotations

import numpy as np
import pytest
from problems import check_within_bound

import lsq_backends as lsq
from lsq_backends.check.problems import design

sl = pytest.importorskip("scipy.sparse.linalg")


def _problem(m, n, k=None, cond=20.0, seed=0, rank=None):
    rng = np.random.default_rng(seed)
    X = design(rng, (m, n), cond, rank=rank)
    y = rng.standard_normal((m,) if k is None else (m, k))
    return X, y


@pytest.fixture
def eager(be):
    if be.lazy:
        pytest.skip("lsqr on Dask computes per block of iterations (slow here): see test_dask")
    return be


@pytest.mark.parametrize("shape", [(40, 8), (12, 30)])
@pytest.mark.parametrize("alpha", [None, 0.3])
def test_same_iterates_as_scipy(eager, shape, alpha):
    """Same recurrence, same stopping rule: on a well-conditioned problem (cond 3, where
    rounding cannot reorder the tests) the same iteration count and the same x."""
    X, y = _problem(*shape, cond=3.0)
    kw = dict(atol=1e-8, btol=1e-8)
    if alpha is None:
        res = lsq.lstsq(eager.asarray(X), eager.asarray(y), method="lsqr", **kw)
    else:
        res = lsq.ridge(eager.asarray(X), eager.asarray(y), alpha, method="lsqr", fit_intercept=False, **kw)
    x, _, itn = sl.lsqr(X, y, damp=np.sqrt(alpha or 0.0), conlim=0, iter_lim=2 * min(shape), **kw)[:3]
    assert int(eager.to_numpy(res.n_iter)) == itn
    np.testing.assert_allclose(eager.to_numpy(res.coef), x, rtol=1e-10, atol=1e-12 * np.abs(x).max())


@pytest.mark.parametrize("shape", [(60, 10), (20, 60)])
def test_close_to_scipy_when_harder(eager, shape):
    """cond 30: the trajectories part once the Lanczos vectors lose orthogonality (both need
    more than the min(m, n) iterations of exact arithmetic on the wide problem), and a rounding
    difference (a matrix product with a k-column block here, a vector product in SciPy) then
    moves the stop by a few iterations: counts within 10%, and the answer within the stopping
    rule's bound of the exact solution."""
    X, y = _problem(*shape, cond=30.0, seed=1)
    res = lsq.lstsq(eager.asarray(X), eager.asarray(y), method="lsqr")
    itn = sl.lsqr(X, y, atol=1e-6, btol=1e-6, conlim=0, iter_lim=2 * min(shape))[2]
    assert abs(int(eager.to_numpy(res.n_iter)) - itn) <= max(1, 0.1 * itn)
    check_within_bound(res, eager, X, y, atol=1e-6, btol=1e-6)


@pytest.mark.parametrize(
    ("shape", "k", "dtype"),
    [((80, 12), None, "float64"), ((80, 12), 3, "float64"), ((15, 40), 2, "float64"), ((80, 12), 2, "float32")],
)
def test_lstsq_within_bound(eager, shape, k, dtype):
    X, y = _problem(*shape, k=k, seed=2)
    sw = np.linspace(0.5, 2.0, shape[0])
    for kw in ({}, {"fit_intercept": True, "sample_weight": sw}):
        args = [eager.asarray(a, dtype) for a in (X, y)]
        kwa = {k_: (eager.asarray(v, dtype) if k_ == "sample_weight" else v) for k_, v in kw.items()}
        res = lsq.lstsq(*args, method="lsqr", **kwa)
        assert res.coef.dtype == args[0].dtype and res.rank.shape == ()
        assert tuple(res.n_iter.shape) == (() if k is None else (k,))
        tol = 1e-6 if dtype == "float64" else 100 * float(np.finfo(np.float32).eps)  # the defaults
        check_within_bound(res, eager, X, y, sw=kw.get("sample_weight"), fit_intercept=bool(kw), atol=tol, btol=tol,
                           dtype=np.dtype(dtype))  # fmt: skip
        # rss is that of the returned coefficients, from the residual itself.
        coef, b = (eager.to_numpy(a).astype(np.float64) for a in (res.coef, res.intercept))
        w = kw.get("sample_weight", np.ones(shape[0]))
        R = y - X @ coef - b
        rss = np.sum(w.reshape((-1,) + (1,) * (R.ndim - 1)) * R**2, axis=0)
        eps = float(np.finfo(np.dtype(dtype)).eps)
        scale = 100 * eps * (np.linalg.norm(y) + np.linalg.norm(X) * np.linalg.norm(coef)) ** 2
        np.testing.assert_allclose(eager.to_numpy(res.rss), rss, rtol=100 * eps, atol=scale)


@pytest.mark.parametrize("shape", [(60, 10), (15, 40)])
def test_ridge_damping(eager, shape):
    """Ridge = damped LSQR, one penalty per target, intercept unpenalized; rank n for alpha > 0."""
    X, y = _problem(*shape, k=3, seed=3)
    alpha = np.array([0.05, 1.0, 20.0])
    res = lsq.ridge(
        eager.asarray(X), eager.asarray(y), eager.asarray(alpha), method="lsqr", atol=1e-9, btol=1e-9, per_target=True
    )
    check_within_bound(res, eager, X, y, alpha=alpha, fit_intercept=True, atol=1e-9, btol=1e-9)
    assert int(eager.to_numpy(res.rank)) == shape[1]
    # Stronger damping, better conditioning: no more iterations.
    n_iter = eager.to_numpy(res.n_iter)
    assert n_iter[0] >= n_iter[1] >= n_iter[2]
    assert int(eager.to_numpy(lsq.lstsq(eager.asarray(X), eager.asarray(y), method="lsqr").rank)) == -1


@pytest.mark.parametrize("rank", [None, 9])
def test_wide_gives_minimum_norm(eager, rank):
    """From x0 = 0 the iterates stay in the row space of X: the minimum-norm solution."""
    X, y = _problem(14, 50, rank=rank, seed=4, cond=10.0)
    res = lsq.lstsq(eager.asarray(X), eager.asarray(y), method="lsqr", atol=1e-10, btol=1e-10)
    coef = eager.to_numpy(res.coef)
    _, s, vt = np.linalg.svd(X)
    null = vt[int(np.sum(s > 1e-10 * s[0])) :]  # the null space of X
    assert np.linalg.norm(null @ coef) <= 1e-10 * np.linalg.norm(coef)
    check_within_bound(res, eager, X, y, atol=1e-10, btol=1e-10)


@pytest.mark.parametrize("shape", [(30, 4), (7, 10)])
@pytest.mark.parametrize("weighted", [False, True])
def test_constant_column_next_to_intercept(eager, shape, weighted):
    """A column that centering reduces to rounding noise (a constant next to the intercept)
    gets a zero coefficient, as from the direct methods, and the rest is the fit without it,
    within LSQR's bound (LSQR normalized the noise into a direction: coefficients ~1e33)."""
    X, y = _problem(*shape, seed=8, cond=5.0)
    X[:, 1] = 0.1
    sw = np.linspace(0.5, 2.0, shape[0]) if weighted else None
    kw = {"fit_intercept": True, "atol": 1e-10, "btol": 1e-10}
    swd = None if sw is None else eager.asarray(sw)
    res = lsq.lstsq(eager.asarray(X), eager.asarray(y), method="lsqr", sample_weight=swd, **kw)
    coef = eager.to_numpy(res.coef)
    assert coef[1] == 0.0
    rest = [0] + list(range(2, shape[1]))
    check_within_bound(res._replace(coef=eager.asarray(coef[rest])), eager, X[:, rest], y, sw=sw, **kw)
    direct = lsq.lstsq(X, y, method="svd", fit_intercept=True, sample_weight=sw)
    scale = np.linalg.norm(direct.coef) + abs(direct.intercept)
    assert abs(float(eager.to_numpy(res.intercept)) - direct.intercept) <= 1e-6 * scale
    # The issue's own case: one constant column, nothing else.
    Xc, yc = np.full((10, 1), 0.1), np.arange(10.0)
    one = lsq.lstsq(eager.asarray(Xc), eager.asarray(yc), method="lsqr", fit_intercept=True)
    assert eager.to_numpy(one.coef)[0] == 0.0 and float(eager.to_numpy(one.intercept)) == pytest.approx(4.5)


def test_constant_column_float32_and_ridge(eager):
    """float32 (its own default cutoff); ridge with a zero penalty drops the column as least
    squares does, a positive one keeps it (full rank, as the direct methods)."""
    X, y = _problem(40, 5, seed=9, cond=5.0)
    X[:, 3] = 0.1
    res = lsq.lstsq(eager.asarray(X.astype(np.float32)), eager.asarray(y.astype(np.float32)), method="lsqr",
                    fit_intercept=True)  # fmt: skip
    assert eager.to_numpy(res.coef)[3] == 0.0
    direct = lsq.lstsq(X, y, method="svd", fit_intercept=True)
    np.testing.assert_allclose(eager.to_numpy(res.coef), direct.coef, atol=1e-3 * np.linalg.norm(direct.coef))
    zero = lsq.ridge(eager.asarray(X), eager.asarray(y), 0.0, method="lsqr")
    assert eager.to_numpy(zero.coef)[3] == 0.0
    pos = lsq.ridge(eager.asarray(X), eager.asarray(y), 1.0, method="lsqr", atol=1e-12, btol=1e-12)
    np.testing.assert_allclose(eager.to_numpy(pos.coef), lsq.ridge(X, y, 1.0, method="svd").coef, atol=1e-8)


def test_constant_column_derivative_is_the_direct_methods(eager):
    """Differentiated, the dropped column keeps X's own derivative: the gradient with respect
    to X is the direct methods' (the rule's at a dropped direction), not zero in that column."""
    if eager.library not in ("torch", "jax"):
        pytest.skip("PyTorch autograd and JAX")
    X, y = _problem(20, 3, seed=10, cond=5.0)
    X[:, 1] = 0.1

    def loss(Xa, method):
        kw = {"atol": 1e-12, "btol": 1e-12} if method == "lsqr" else {}
        r = lsq.lstsq(Xa, eager.asarray(y), method=method, fit_intercept=True, **kw)
        return eager.xp.sum(r.coef) + r.intercept

    grads = {}
    for method in ("lsqr", "svd"):
        if eager.library == "torch":
            Xa = eager.asarray(X)
            Xa.requires_grad_(True)
            loss(Xa, method).backward()
            grads[method] = eager.to_numpy(Xa.grad)
        else:
            import jax

            grads[method] = np.asarray(jax.grad(lambda Xa, m=method: loss(Xa, m))(eager.asarray(X)))
    assert np.abs(grads["svd"][:, 1]).max() > 1e-2  # the column's derivative is not zero ...
    np.testing.assert_allclose(grads["lsqr"], grads["svd"], atol=1e-8)  # ... and LSQR's is the same


def test_targets_run_independently(eager):
    """Each column keeps its own scalars and stops on its own: the counts of separate fits
    (within one: a k-column product rounds differently from a vector one); a zero target stops
    at once with zero coefficients; scaling a target by 1e3 changes nothing."""
    X, y = _problem(50, 10, k=2, seed=5, cond=30.0)
    u = np.linalg.svd(X, full_matrices=False)[0]
    # The third target lies in 3 left singular directions: a Krylov space of dimension 3.
    Y = np.stack([y[:, 0], np.zeros(50), 1e3 * u[:, :3] @ y[:3, 1]], axis=1)
    res = lsq.lstsq(eager.asarray(X), eager.asarray(Y), method="lsqr")
    alone = [int(lsq.lstsq(X, Y[:, j], method="lsqr").n_iter) for j in range(3)]
    n_iter = eager.to_numpy(res.n_iter)
    assert n_iter[1] == alone[1] == 0
    assert np.all(np.abs(n_iter - alone) <= 1) and alone[2] <= 4 < alone[0]
    np.testing.assert_array_equal(eager.to_numpy(res.coef)[:, 1], 0.0)
    res = lsq.lstsq(eager.asarray(X), eager.asarray(Y[:, [0, 2]]), method="lsqr")
    check_within_bound(res, eager, X, Y[:, [0, 2]], atol=1e-6, btol=1e-6)


def test_batched_stack(eager):
    Xs = np.stack([_problem(30, 6, seed=s)[0] for s in range(3)])
    ys = np.stack([_problem(30, 6, seed=s)[1] for s in range(3)])
    res = lsq.lstsq(eager.asarray(Xs), eager.asarray(ys), method="lsqr", atol=1e-10, btol=1e-10)
    assert tuple(res.coef.shape) == (3, 6) and tuple(res.n_iter.shape) == (3,)
    for i in range(3):
        itn = sl.lsqr(Xs[i], ys[i], atol=1e-10, btol=1e-10, conlim=0, iter_lim=12)[2]
        assert abs(int(eager.to_numpy(res.n_iter)[i]) - itn) <= 1
        np.testing.assert_allclose(eager.to_numpy(res.coef)[i], np.linalg.lstsq(Xs[i], ys[i])[0], rtol=1e-7)


def test_max_iter_stops_early(eager):
    X, y = _problem(60, 10, seed=6, cond=100.0)
    res = lsq.lstsq(eager.asarray(X), eager.asarray(y), method="lsqr", max_iter=3)
    assert int(eager.to_numpy(res.n_iter)) == 3
    x = sl.lsqr(X, y, iter_lim=3, conlim=0)[0]  # three steps of the same recurrence
    np.testing.assert_allclose(eager.to_numpy(res.coef), x, rtol=1e-10)


def test_empty_and_other_methods(eager):
    res = lsq.lstsq(eager.asarray(np.zeros((0, 3))), eager.asarray(np.zeros(0)), method="lsqr")
    assert int(eager.to_numpy(res.n_iter)) == 0
    np.testing.assert_array_equal(eager.to_numpy(res.coef), 0.0)
    X, y = _problem(20, 4)
    assert lsq.lstsq(eager.asarray(X), eager.asarray(y), method="qr").n_iter is None


def test_dask(be):
    """On Dask the fit computes per block of iterations (persisted state): same answer."""
    if not be.lazy:
        pytest.skip("Dask only")
    X, y = _problem(30, 6, k=2, cond=3.0)
    res = lsq.ridge(be.asarray(X), be.asarray(y), 0.5, method="lsqr", atol=1e-8, btol=1e-8)
    ref = lsq.ridge(X, y, 0.5, method="lsqr", atol=1e-8, btol=1e-8)
    assert type(res.coef) is type(be.asarray(X))
    np.testing.assert_array_equal(be.to_numpy(res.n_iter), ref.n_iter)
    np.testing.assert_allclose(be.to_numpy(res.coef), ref.coef, rtol=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "lsqr", "atol": -1e-3}, "atol must be"),
        ({"method": "lsqr", "btol": 1.0}, "btol must be"),
        ({"method": "lsqr", "atol": "small"}, "atol must be"),
        ({"method": "lsqr", "max_iter": 0}, "max_iter must be"),
        ({"method": "lsqr", "max_iter": 2.5}, "max_iter must be"),
        ({"method": "lsqr", "max_iter": True}, "max_iter must be"),
        ({"method": "qr", "atol": 1e-8}, "apply to method='lsqr' or 'lsmr' only"),
        ({"max_iter": 10}, "apply to method='lsqr' or 'lsmr' only"),
        ({"method": "lsqr", "refine": 1}, "refine applies to the direct methods"),
    ],
)
def test_bad_options(kwargs, match):
    X, y = _problem(10, 3)
    with pytest.raises(ValueError, match=match):
        lsq.lstsq(X, y, **kwargs)
    if "refine" not in kwargs:
        with pytest.raises(ValueError, match=match):
            lsq.ridge(X, y, 1.0, **kwargs)


def test_stays_on_device(strict_device):
    X, y = _problem(20, 30, k=2)
    Xd, yd = strict_device.asarray(X), strict_device.asarray(y)
    sw = strict_device.asarray(np.linspace(0.5, 1.5, 20))
    for res in (
        lsq.lstsq(Xd, yd, method="lsqr", fit_intercept=True, sample_weight=sw),
        lsq.ridge(Xd, yd, strict_device.asarray([0.1, 1.0]), method="lsqr", sample_weight=sw, per_target=True),
        lsq.lstsq(strict_device.asarray(np.zeros((0, 3))), strict_device.asarray(np.zeros(0)), method="lsqr"),
    ):
        for field in res:
            if field is not None:
                assert field.device == strict_device.device


def test_jit_vmap(request):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    X, y = _problem(40, 70, k=2, seed=7, cond=3.0)  # cond 3: rounding cannot change the path
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    static = ("method", "fit_intercept", "atol", "btol", "max_iter", "per_target")
    fit = jax.jit(lsq.ridge, static_argnames=static)
    for kw in ({"atol": 1e-9, "btol": 1e-9}, {"max_iter": 4}):
        traced = fit(Xj, yj, jnp.asarray([0.0, 2.0]), method="lsqr", per_target=True, **kw)
        eager = lsq.ridge(X, y, np.array([0.0, 2.0]), method="lsqr", per_target=True, **kw)
        assert isinstance(traced, lsq.LstsqResult)
        np.testing.assert_array_equal(np.asarray(traced.n_iter), eager.n_iter)
        np.testing.assert_allclose(np.asarray(traced.coef), eager.coef, rtol=1e-9, atol=1e-12)
    # vmap: each problem of the batch keeps its own count (the loop runs to the slowest).
    Xs = jnp.stack([Xj, 0.5 * Xj[:, ::-1]])
    ys = jnp.stack([yj[:, 0], yj[:, 1]])
    n_iter = jax.jit(jax.vmap(lambda a, b: lsq.lstsq(a, b, method="lsqr").n_iter))(Xs, ys)
    assert np.asarray(n_iter).tolist() == [
        int(lsq.lstsq(np.asarray(a), np.asarray(b), method="lsqr").n_iter) for a, b in zip(Xs, ys, strict=False)
    ]


def test_inputs_not_modified(eager):
    X, y = _problem(20, 30, k=2)
    sw = np.linspace(0.5, 1.5, 20)
    for a in (X, y, sw):
        a.setflags(write=False)  # a write into NumPy inputs would raise
    args = [eager.asarray(a) for a in (X, y, sw)]
    lsq.lstsq(args[0], args[1], method="lsqr", fit_intercept=True, sample_weight=args[2])
    lsq.ridge(args[0], args[1], 0.5, method="lsqr", sample_weight=args[2])
    for a, ref in zip(args, (X, y, sw), strict=False):
        np.testing.assert_array_equal(eager.to_numpy(a), ref)
