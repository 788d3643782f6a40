"""The CUDA branches' logic, tested on the CPU: what they must do is known from the libraries'
documented behaviour; the GPU run (``python -m lsq_backends.check``) confirms it there."""

from __future__ import annotations

import importlib.util
import types

import cupy_standin
import numpy as np
import pytest
import scipy.linalg

import lsq_backends as lsq
from lsq_backends._backend import _compat, _devices, _factorizations
from lsq_backends._solvers.linalg import rank
from lsq_backends._solvers.linalg._krylov import sym_ortho


def _partial_factor(a):
    """What LAPACK's potrf leaves for a matrix that is not positive definite, as CuPy returns
    it under its default error state: the lower triangle, no exception, no NaN."""
    c, info = scipy.linalg.lapack.dpotrf(a, lower=1, clean=1)
    assert info > 0
    return np.tril(c)


@pytest.mark.parametrize(
    "a",
    [
        np.array([[4.0, 2, 2], [2, 1, 1], [2, 1, 5]]),  # singular: stops at the second pivot
        np.array([[1.0, 2], [2, 1]]),  # indefinite
        np.ones((3, 3)),  # rank one
        np.diag([1.0, 2.0, -3.0]),  # the last pivot fails, the rows above are a true factor
    ],
)
def test_checked_cholesky_rejects_partial_factors(a, numpy_reference):
    xp = _compat.array_namespace(a)
    got = _compat.checked_cholesky(xp, _partial_factor(a), a)
    assert np.all(np.isnan(got))


def test_checked_cholesky_keeps_true_factors(numpy_reference):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 50, 6)) * np.logspace(0, 6, 6)  # badly scaled columns
    A = np.swapaxes(X, -1, -2) @ X
    L = np.linalg.cholesky(A)
    xp = _compat.array_namespace(A)
    np.testing.assert_array_equal(_compat.checked_cholesky(xp, L, A), L)
    # One bad matrix in a stack: only its factor becomes NaN.
    A[2] = _partial = np.array(np.diag([1.0, 2, 3, 4, 5, -6]))
    L = np.tril(np.where(np.isnan(L), 0, L))
    L[2] = _partial_factor(_partial)
    got = _compat.checked_cholesky(xp, L, A)
    assert np.all(np.isnan(got[2])) and np.all(np.isfinite(np.delete(got, 2, axis=0)))


def test_retry_on_cpu_after_a_convergence_failure(numpy_reference):
    torch = pytest.importorskip("torch")
    from lsq_backends._backend._factorizations import retry_on_cpu

    calls = []

    def flaky(a):
        calls.append(a.device.type)
        if len(calls) == 1:
            raise torch.linalg.LinAlgError("linalg.eigh: The algorithm failed to converge")
        return torch.linalg.eigh(a)

    a = torch.eye(3, dtype=torch.float64) * 2
    w, v = retry_on_cpu(flaky, a)
    assert calls == ["cpu", "cpu"] and torch.allclose(w, torch.full((3,), 2.0, dtype=torch.float64))
    with pytest.raises(ValueError, match="other"):
        retry_on_cpu(lambda a: (_ for _ in ()).throw(ValueError("other")), a)  # not a solver failure: raised


@pytest.mark.parametrize("p", [2, 3, 5])
def test_cupy_qr_r_is_the_r_factor(monkeypatch, p, numpy_reference):
    """CuPy's ``qr(mode="r")`` returns R alone; array-api-compat's wrapper would unpack it into
    ``QRResult(*R)``: a TypeError for p != 2, and for p = 2 (one feature and one target in a
    QRAccumulator) a silently wrong "R" (its second row)."""
    cupy = cupy_standin.install(monkeypatch)
    x = np.random.default_rng(0).standard_normal((7, p))
    r = _factorizations.qr_r(cupy.xp, x)
    ref = np.linalg.qr(x, mode="r")
    assert r.shape == (p, p)
    np.testing.assert_allclose(np.abs(r), np.abs(ref), rtol=1e-12, atol=1e-12)


def test_cupy_cholesky_under_errstate_raise(monkeypatch, numpy_reference):
    """A caller's ``cupyx.errstate(linalg="raise")`` must not turn a singular Gram matrix into an
    exception: the factorization reports NaN, as everywhere, and the solver falls back."""
    cupy = cupy_standin.install(monkeypatch)
    singular = np.array([[4.0, 2, 2], [2, 1, 1], [2, 1, 5]])
    good = np.array([[4.0, 2, 0], [2, 5, 1], [0, 1, 3]])
    import cupyx

    with cupyx.errstate(linalg="raise"):
        assert np.all(np.isnan(_factorizations.cholesky(cupy.xp, singular)))
        np.testing.assert_allclose(_factorizations.cholesky(cupy.xp, good), np.linalg.cholesky(good), rtol=1e-14)
        assert cupy.errstate == "raise"  # the caller's setting is back after each call
    assert np.all(np.isnan(_factorizations.cholesky(cupy.xp, singular)))


def test_signs_on_cupy_read_nothing(monkeypatch, numpy_reference):
    """array-api-compat's CuPy ``sign`` puts NaN back through a boolean mask, which CuPy counts
    on the host: on the GPU, LSMR's four rotations an iteration read 4 times (801 reads in one
    200000 x 50 fit) and the power iteration's start vector once. ``_compat.sign`` reads nothing."""
    cupy = cupy_standin.install(monkeypatch)
    x = cupy_standin.ndarray(np.array([-2.0, -0.0, 0.0, 3.0, np.nan]))
    np.testing.assert_array_equal(_compat.sign(cupy.xp, x), np.sign(np.asarray(x)))
    a, b = cupy_standin.ndarray(np.array([3.0, 0.0, -1.0])), cupy_standin.ndarray(np.array([4.0, 0.0, 2.0]))
    c, s, r = sym_ortho(cupy.xp, a, b)
    np.testing.assert_allclose(r, [5.0, 0.0, np.sqrt(5.0)], rtol=1e-15)
    g = np.random.default_rng(0).standard_normal((40, 20))
    A = cupy_standin.ndarray(g.T @ g)  # p > 16: power iteration from a +-1 start vector
    assert np.isfinite(rank.condition_estimate(cupy.xp, cupy_standin.ndarray(np.linalg.cholesky(A)), A))
    np.testing.assert_array_equal(_compat.clip(cupy.xp, x, -1.0, 2.0), [-1.0, -0.0, 0.0, 2.0, np.nan])
    assert cupy.host_reads == 0
    cupy.xp.sign(x)
    assert cupy.host_reads == 1, "the stand-in counts array-api-compat's sign"


def test_device_scope_enters_the_cupy_input_device(monkeypatch, numpy_reference):
    """array-api-compat ignores ``device=`` in CuPy's creation functions: arrays land on the
    current device. The scope makes the device of the first CuPy argument current."""
    cupy_standin.install(monkeypatch)
    on1 = cupy_standin.ndarray(np.ones(3), device_id=1)
    state = types.SimpleNamespace(state=(cupy_standin.ndarray(np.ones(2), device_id=2),))
    for args, want in [
        ((None, np.ones(2), 0.5, on1), 1),
        (((np.ones(1), on1),), 1),
        ((state, on1), 2),
        ((np.ones(2),), 0),
    ]:
        with _devices.device_scope(*args):
            assert cupy_standin.Device.current[-1] == want
    assert cupy_standin.Device.current == [0]

    @_devices.on_input_device
    def fit(X, y, *, sample_weight=None):
        return cupy_standin.Device.current[-1]

    assert fit(np.ones(2), np.ones(2), sample_weight=on1) == 1
    assert fit(on1, None) == 1 and fit(np.ones(2), None) == 0


def test_every_entry_point_enters_its_input_device(monkeypatch, numpy_reference):
    """Each public entry point opens the scope with its inputs (the accumulator for ``solve`` and
    ``merge``): the one mechanism, on every path. The decorated ones (``lstsq``, ``ridge``,
    ``ridge_cv``) go straight on with a NumPy X, which has no device to enter: they are given X
    as a list, which they convert after entering the scope."""
    seen = []
    real = _devices.device_scope

    def spy(*objs):
        seen.append(objs)
        return real(*objs)

    monkeypatch.setattr(_devices, "device_scope", spy)
    monkeypatch.setattr(_compat, "device_scope", spy)  # the entry decorator of lstsq, ridge, ridge_cv
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 3)), rng.standard_normal(30)
    acc, other = lsq.QRAccumulator(), lsq.QRAccumulator().update(X, y)
    rows = X.tolist()
    calls = [
        ("lstsq", rows, lambda: lsq.lstsq(rows, y)),
        ("ridge", rows, lambda: lsq.ridge(rows, y, 1.0)),
        ("ridge_cv", rows, lambda: lsq.ridge_cv(rows, y, [0.1, 1.0])),
        ("nnls", X, lambda: lsq.nnls(X, y)),
        ("diagnostics", X, lambda: lsq.diagnostics(X, y)),
        ("update", X, lambda: acc.update(X, y)),
        ("step", X, lambda: acc.step(None, X, y)),
        ("solve", acc, lambda: acc.solve()),
        ("merge", acc, lambda: acc.merge(other)),
    ]
    if importlib.util.find_spec("sklearn") is not None:
        from lsq_backends.estimators import LinearRegression, Ridge, RidgeCV

        for est in (LinearRegression(), Ridge(), RidgeCV()):
            name = type(est).__name__
            calls += [
                (f"{name}.fit", X, lambda est=est: est.fit(X, y)),
                (f"{name}.predict", X, lambda est=est: est.predict(X)),
                (f"{name}.score", X, lambda est=est: est.score(X, y)),
            ]
    for name, given, call in calls:
        seen.clear()
        call()
        assert seen and any(o is given for o in seen[0]), name


@pytest.mark.parametrize("p", [4, 16])
def test_small_stack_condition_estimate_is_a_few_operations_off_numpy(p, numpy_reference):
    """The entry-by-entry substitution for stacks of small factors is tuned for NumPy; on a GPU
    library each of its ~p**3 / 6 operations is a kernel launch. Off NumPy the same bound comes
    from a batched inverse: a few dozen operations, whatever p."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    from lsq_backends._solvers.linalg.rank import condition_estimate

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 40, p)) * np.logspace(0, 3, p)
    A = np.swapaxes(X, -1, -2) @ X
    L = np.linalg.cholesky(A)
    ref = condition_estimate(_compat.array_namespace(A), L, A)
    xp = _compat.array_namespace(torch.empty(0))
    At, Lt = torch.asarray(A), torch.asarray(L)
    with Count():
        got = condition_estimate(xp, Lt, At)
    assert Count.n <= 40, Count.n
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10)


def _jax_session(request):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax backend's session")
    return pytest.importorskip("jax")


@pytest.mark.parametrize("target", [0, 35, 100])
def test_traced_loop_trips_of_ten_on_accelerators(monkeypatch, request, target):
    """XLA:GPU reads a while_loop's predicate on the host every trip: on accelerators a traced
    loop runs 10 iterations a trip (n // 10 + 1 reads for n iterations), and stops at
    max_iter exactly. Here on the CPU with the accelerator setting forced; the predicate
    evaluations are counted with a host callback."""
    jax = _jax_session(request)
    import jax.numpy as jnp

    from lsq_backends._backend import _control

    def run(per_trip):
        monkeypatch.setattr(_control, "steps_per_trip", lambda jax: per_trip)
        reads = []

        def done(s):
            jax.debug.callback(lambda: reads.append(1))
            return s[0] >= target

        def body(s):  # a finished state is left unchanged, as loop() requires
            return (jnp.where(s[0] >= target, s[0], s[0] + 1), s[1] + 1)

        fn = jax.jit(lambda s: _control.loop(jnp, body, s, 23, done))
        out = jax.block_until_ready(fn((jnp.asarray(0), jnp.asarray(0))))
        return int(out[0]), len(reads)

    count1, reads1 = run(1)
    count10, reads10 = run(10)
    assert count1 == count10 == min(target, 23)
    assert reads1 == min(target, 23) + 1
    assert reads10 == min(target, 23) // 10 + 1, reads10


def test_traced_lsqr_and_nnls_agree_with_trips_of_ten(monkeypatch, request):
    """The solvers' loops leave a finished state unchanged: trips of 10 give the same answer,
    iteration counts included."""
    jax = _jax_session(request)
    from lsq_backends._backend import _control

    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((60, 5)), rng.standard_normal(60)
    out = {}
    for per_trip in (1, 10):
        monkeypatch.setattr(_control, "steps_per_trip", lambda jax, k=per_trip: k)
        r = jax.jit(lambda X, y: lsq.lstsq(X, y, method="lsqr"))(X, y)
        n = jax.jit(lambda X, y: lsq.nnls(X, y))(X, y)
        out[per_trip] = [np.asarray(a) for a in (r.coef, r.n_iter, n.coef, n.n_iter)]
    for a, b in zip(out[1], out[10], strict=True):
        np.testing.assert_array_equal(a, b)


def _svd_through(monkeypatch, cupy, branch):
    """Every SVD of the package on the stand-in's cuSOLVER: through the CuPy branch, or (``branch=False``) called
    as the generic branch called CuPy's before."""
    if branch:
        monkeypatch.setattr(_compat, "svd", lambda xp, x, **_: _factorizations.svd(cupy.xp, x))
    else:
        monkeypatch.setattr(_compat, "svd", lambda xp, x, **_: tuple(cupy.xp.linalg.svd(x, full_matrices=False)))


@pytest.mark.parametrize("shape", [(7, 4), (4, 4), (4, 9), (3, 5, 5), (2, 40, 40), (2, 6, 3)])
@pytest.mark.parametrize("scale", [1.0, 1e-300, 1e300])
def test_cupy_svd_factors(monkeypatch, shape, scale, numpy_reference):
    """The factors of x in every orientation, batched or not, at the extremes of the exponent range (where the
    stand-in's SVD, which scales nothing, fails): x = u diag(s) vh within ~eps ||x||, u and vh orthonormal, s as
    LAPACK's."""
    cupy = cupy_standin.install(monkeypatch, unscaled_svd=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape) * np.logspace(-8, 0, shape[-1]) * scale
    u, s, vh = _factorizations.svd(cupy.xp, x)
    p = min(shape[-2:])
    assert u.shape == (*shape[:-1], p) and s.shape == (*shape[:-2], p) and vh.shape == (*shape[:-2], p, shape[-1])
    ref = np.linalg.svd(x / scale, compute_uv=False) * scale
    tol = 50 * max(shape) * np.finfo(np.float64).eps
    assert np.all(np.abs(s - ref) <= tol * ref[..., :1])
    back = (u * (s / scale)[..., None, :]) @ vh
    assert np.max(np.abs(back - x / scale)) <= tol * float(np.max(ref / scale))
    for q in (np.swapaxes(u, -1, -2) @ u, vh @ np.swapaxes(vh, -1, -2)):
        assert np.max(np.abs(q - np.eye(p))) <= tol


@pytest.mark.parametrize("branch", [False, True])
def test_cupy_svd_of_a_graded_factor_pontius(monkeypatch, branch, numpy_reference):
    """cuSOLVER reads CuPy's copy of a square matrix as its transpose (GPU run: the svd method on NIST Pontius,
    5.7 digits for a floor of 10). The stand-in, LAPACK's gesvd in cuSOLVER's place, loses them too (``branch``
    False); the branch hands cuSOLVER the factor itself."""
    from benchmarks import accuracy, nist

    _svd_through(monkeypatch, cupy_standin.install(monkeypatch), branch)
    ds = nist.load("Pontius")
    floor = nist.expected_digits(ds) - 1.5
    got = accuracy.lsq_fits(ds, ("svd",))["svd"][0]
    assert got >= floor if branch else got < floor - 3


@pytest.mark.parametrize("branch", [False, True])
def test_cupy_svd_of_a_graded_factor_condition_number(monkeypatch, branch, numpy_reference):
    """The condition number of diagnostics' [1, X] at X ~ 1e200, 1e202 (its R factor has a corner ~1e-100 next to
    entries ~1e100): GPU run 1.45e17, the stand-in called as before ~1e17; through the branch within 1e-10."""
    _svd_through(monkeypatch, cupy_standin.install(monkeypatch), branch)
    rng = np.random.default_rng(4)
    X, y, w = np.ldexp(rng.standard_normal((30, 4)) + 5.0, 664), rng.standard_normal(30), rng.uniform(0.5, 2.0, 30)
    want = np.linalg.cond(np.sqrt(w)[:, None] * np.c_[np.ones(30), X])
    err = abs(float(lsq.diagnostics(X, y, sample_weight=w).cond) / want - 1)
    assert err < 1e-10 if branch else err > 0.5


@pytest.mark.parametrize("branch", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_cupy_svd_scales_what_cusolver_does_not(monkeypatch, fit_intercept, branch, numpy_reference):
    """Ridge at X ~ 1e-300, alpha = 1: the penalty sets the problem's scale, so the SVD gets X's factor at 1e-300,
    which LAPACK's driver scales and cuSOLVER's does not (GPU run: errors 4e-14 and 6e-12). The stand-in's SVD
    scales nothing (called as before: no finite coef); through the branch the error is within c eps kappa
    (tests/problem/test_scale.py's bound)."""
    from problems import center

    from lsq_backends.check.problems import design, threshold

    _svd_through(monkeypatch, cupy_standin.install(monkeypatch, unscaled_svd=True), branch)
    rng = np.random.default_rng(0)
    X = design(rng, (20, 4), 30.0)
    y = X @ rng.standard_normal(4) + 0.05 * rng.standard_normal(20) + 2.0
    Xc, Yc, _, _ = center(X, y, None, fit_intercept)
    want = Xc.T @ Yc[:, 0]  # coef / 1e-300: (c^2 G + I)^-1 c b = c b up to c^2 ||G|| < 1e-590
    with np.errstate(invalid="ignore"):
        got = lsq.ridge(X * 1e-300, y, 1.0, method="svd", fit_intercept=fit_intercept).coef / 1e-300
    if not branch:
        assert not np.all(np.isfinite(got))
        return
    assert np.linalg.norm(got - want) <= threshold("svd", np.float64, 1.0, 20, 4) * np.linalg.norm(want)
