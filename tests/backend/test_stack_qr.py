"""Stacks of small problems on the GPU libraries, tested on the CPU (and on the device in the
cupy and torch-cuda sessions).

The H100 self-check (CuPy 14.2, torch 2.11) on 10000 problems of 64 x 8:

- CuPy made 113 host reads in every direct fit (226 in float32 ``auto`` and ``qr``) where
  torch-cuda made 1-2: the rank certificate of a stack of small factors substituted entry by
  entry, with 28 calls of array-api-compat's ``clip``, which writes through boolean masks whose
  counts CuPy reads on the host (4 reads a call). Off NumPy the certificate now takes the
  batched triangular inverse, as ``condition_estimate`` does: a few dozen operations, no clip.
- float32 ``auto`` and ``svd`` took 0.68 s / 0.64 s on CuPy and 0.86 s / 0.94 s on torch-cuda
  (float64: 10-40 ms): their condition gates send float32 to Householder QR, which CuPy
  (``linalg.qr``: geqrf and orgqr) and CUDA torch (``ormqr``) run as one cuSOLVER call per
  matrix. Such stacks now take Householder's steps over the whole stack
  (``_backend/_stack_qr.py``).

Tolerances: Householder QR is backward stable, ``X + dX = Q R`` with ``||dX|| <= c m n eps
||X||`` and ``||Q^T Q - I|| <= c m n eps`` (c = 1 here, measured ~4); two such R of one X
differ by at most ``kappa`` times that (the R factor's condition), and a solve from either
meets the self-check's bound (``lsq_backends.check.problems.threshold``)."""

from __future__ import annotations

import collections

import cupy_standin
import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._backend import _compat, _factorizations, _stack_qr
from lsq_backends._solvers.linalg import rank
from lsq_backends.check.problems import design, threshold


def _stack(rng, dtype, batch=20, m=64, n=8, kappa=50.0):
    return design(rng, (batch, m, n), kappa).astype(dtype)


def _explicit_q(xp, reflectors, n, m):
    eye = np.broadcast_to(np.eye(n), (*reflectors[0][1].shape, n, n)).astype(reflectors[0][1].dtype)
    return np.asarray(_stack_qr.apply_q(xp, reflectors, eye, m))


def _assert_householder(X, Q, R, y=None, qty=None):
    """Backward error and orthogonality within m n eps (module docstring); R upper triangular."""
    m, n = X.shape[-2:]
    tol = m * n * np.finfo(X.dtype).eps
    Xd, Qd, Rd = (np.asarray(a, dtype=np.float64) for a in (X, Q, R))
    back = np.linalg.norm(Xd - Qd @ Rd, axis=(-2, -1)) / np.linalg.norm(Xd, axis=(-2, -1))
    orth = np.linalg.norm(np.swapaxes(Qd, -1, -2) @ Qd - np.eye(n), axis=(-2, -1))
    assert back.max() <= tol and orth.max() <= tol, (back.max() / tol, orth.max() / tol)
    assert np.all(np.tril(np.asarray(R), -1) == 0)
    if y is not None:
        yd = np.asarray(y, dtype=np.float64)
        ref = np.swapaxes(Qd, -1, -2) @ yd
        err = np.linalg.norm(np.asarray(qty, dtype=np.float64) - ref, axis=(-2, -1)) / np.linalg.norm(yd, axis=(-2, -1))
        assert err.max() <= tol, err.max() / tol


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(9, 40, 5), (6, 5, 5)], ids=["tall", "square"])
def test_householder_stack_is_lapacks(dtype, shape, numpy_reference):
    """The steps over the stack give LAPACK's R (its signs too) and a backward-stable QR, also on a
    zero column, an input already triangular (every tau 0: R is X exactly), entries near the
    underflow threshold (the scaled norms) and a NaN, which stays in its own matrix."""
    rng = np.random.default_rng(0)
    batch, m, n = shape
    X = design(rng, shape, 100.0).astype(dtype)
    X[1, :, 2] = 0
    X[2] = np.triu(X[2])
    X[3] *= 1e-150 if dtype == np.float64 else 1e-30
    xp = _compat.array_namespace(X)
    R, reflectors = _stack_qr.householder_stack(xp, X)
    Q = _explicit_q(xp, reflectors, n, m)
    y = rng.standard_normal((batch, m, 2)).astype(dtype)
    _assert_householder(X, Q, R, y, _stack_qr.apply_qt(xp, reflectors, y))
    np.testing.assert_array_equal(R[2], X[2, :n])
    ref = np.linalg.qr(X.astype(np.float64), mode="r")
    scale = np.max(np.abs(ref), axis=(-2, -1), keepdims=True)
    assert np.max(np.abs(R - ref) / scale) <= 100.0 * m * n * np.finfo(dtype).eps  # kappa * m n eps
    Xn = X.copy()
    Xn[4, 3, 1] = np.nan
    Rn, refl_n = _stack_qr.householder_stack(xp, Xn)
    assert np.all(np.isnan(Rn[4, 1:, 1:][np.triu_indices(n - 1)]))
    keep = [i for i in range(batch) if i != 4]
    np.testing.assert_array_equal(Rn[keep], R[keep])


def test_only_looping_libraries_take_the_stack_steps(monkeypatch, numpy_reference):
    """NumPy (LAPACK in a C loop), torch on the CPU and every 2-D X keep the library's own QR: NumPy
    results are unchanged. A stack of fewer matrices than columns keeps it too (n steps of
    launches would cost more than the per-matrix calls)."""
    torch = pytest.importorskip("torch")
    X = np.zeros((20, 64, 8))
    assert not _stack_qr.loops_over_stacks(_compat.array_namespace(X), X)
    tx = torch.asarray(X)
    txp = _compat.array_namespace(tx)
    assert not _stack_qr.loops_over_stacks(txp, tx)
    monkeypatch.setattr(_stack_qr, "torch_on_cuda", lambda x: True)
    assert _stack_qr.loops_over_stacks(txp, tx)
    cupy = cupy_standin.install(monkeypatch)
    assert _stack_qr.loops_over_stacks(cupy.xp, X)
    assert not _stack_qr.loops_over_stacks(cupy.xp, X[:4])  # 4 matrices of 8 columns
    assert not _stack_qr.loops_over_stacks(cupy.xp, X[0])
    assert not _stack_qr.loops_over_stacks(cupy.xp, np.zeros((20, 4, 8)))  # wide


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cupy_stacks_skip_cupys_per_matrix_qr(monkeypatch, dtype, numpy_reference):
    """CuPy's ``linalg.qr`` of a stack is a loop of cuSOLVER calls, one geqrf and one orgqr a
    matrix (0.64 s for 10000 problems of 64 x 8 on an H100): ``qr``, ``qr_apply`` and
    ``qr_implicit`` of such a stack never call it, and are Householder QRs."""
    cupy = cupy_standin.install(monkeypatch)

    def refused(*args, **kwargs):
        raise AssertionError("the per-matrix loop of cupy.linalg.qr")

    monkeypatch.setattr(cupy.xp.linalg, "qr", refused)
    monkeypatch.setattr(cupy.bare.linalg, "qr", refused)
    rng = np.random.default_rng(1)
    X, y = _stack(rng, dtype), rng.standard_normal((20, 64, 1)).astype(dtype)
    Xc, yc = cupy_standin.ndarray(X), cupy_standin.ndarray(y)
    R, qty = _factorizations.qr_apply(cupy.xp, Xc, yc)
    Q, R2 = _factorizations.qr(cupy.xp, Xc)
    np.testing.assert_array_equal(R, R2)
    _assert_householder(X, Q, R, y, qty)
    R3, q_times = _factorizations.qr_implicit(cupy.xp, Xc)
    c = rng.standard_normal((20, 8, 2)).astype(dtype)
    np.testing.assert_array_equal(R3, R)
    err = np.abs(np.asarray(q_times(cupy_standin.ndarray(c)), dtype=np.float64) - Q.astype(np.float64) @ c)
    assert err.max() <= 64 * 8 * np.finfo(dtype).eps * np.abs(c).max() * 8


def _ops():
    pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.count = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.count[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    return Ops()


@pytest.mark.parametrize("method", ["auto", "svd", "qr"])
def test_cuda_torch_stacks_skip_the_per_matrix_ormqr(monkeypatch, method, numpy_reference):
    """torch's CUDA ``ormqr`` and ``orgqr`` loop over a stack (0.86-0.94 s in float32 ``auto`` and
    ``svd`` on 10000 problems of 64 x 8): with the device taken for CUDA, a float32 stack (past
    the float32 gates: Householder QR) runs neither, and every fit meets the self-check's bound."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(_stack_qr, "torch_on_cuda", lambda x: True)
    rng = np.random.default_rng(2)
    X = _stack(rng, np.float64, batch=30)
    w = rng.standard_normal(8)
    y = X @ w + 1e-3 * rng.standard_normal((30, 64))
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    X64, y64 = X32.astype(np.float64), y32.astype(np.float64)  # the data as rounded
    ref = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X64, y64, strict=True)])
    with _ops() as ops:
        r = lsq.lstsq(torch.asarray(X32), torch.asarray(y32), method=method)
    assert ops.count["ormqr"] == 0 and ops.count["orgqr"] == 0 and ops.count["linalg_qr"] == 0, ops.count
    s = np.linalg.svd(X64, compute_uv=False)
    kappa = s[:, 0] / s[:, -1]
    res = np.linalg.norm(y64 - np.einsum("bij,bj->bi", X64, ref), axis=-1)
    eta = res / (s[:, 0] * np.linalg.norm(ref, axis=-1))
    err = np.linalg.norm(r.coef.numpy().astype(np.float64) - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert np.all(err <= threshold(method, "float32", kappa, 64, 8, eta)), err.max()


@pytest.mark.parametrize("p", [4, 8, 16])
def test_small_stack_certificate_is_a_few_operations_off_numpy(monkeypatch, p, numpy_reference):
    """The certificate's substitution over a stack (~p**3 / 6 operations and p (p - 1) / 2 clips) is
    NumPy's; off NumPy one batched inverse: a few dozen operations whatever p, no ``clip``
    (array-api-compat's CuPy ``clip`` cost 4 host reads a call), the same answers."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 40, p)) * np.logspace(0, 3, p)
    X[3, :, 1] = X[3, :, 0]  # rank deficient: not certified
    X[7, :, -1] = 1e-9 * X[7, :, 0] + X[7, :, 1]  # nearly: not certified at the default cutoff
    R = np.linalg.qr(X, mode="r")
    R[9, 0, 0] = np.nan  # a failed factor: not certified
    cutoff = _compat.eps(_compat.array_namespace(R), R) * 40
    ref = rank.certified(_compat.array_namespace(R), R, None, None, cutoff)
    assert ref.sum() == 47 and not ref[[3, 7, 9]].any()
    with _ops() as ops:
        got = rank.certified(_compat.array_namespace(torch.empty(0)), torch.asarray(R), None, None, cutoff)
    assert sum(ops.count.values()) <= 80, sum(ops.count.values())
    np.testing.assert_array_equal(got.numpy(), ref)
    cupy = cupy_standin.install(monkeypatch)
    clips = []
    real = cupy.xp.clip
    monkeypatch.setattr(cupy.xp, "clip", lambda *a, **k: clips.append(1) or real(*a, **k))
    got = rank.certified(cupy.xp, cupy_standin.ndarray(R), None, None, cutoff)
    assert not clips, f"{len(clips)} clips: {4 * len(clips)} host reads on CuPy"
    np.testing.assert_array_equal(np.asarray(got), ref)


def test_stack_qr_on_the_session_device(be):
    """On the device itself (the cupy and torch-cuda sessions): a float32 stack's QR runs no
    per-matrix solver loop and is a backward-stable Householder QR."""
    if be.name not in ("cupy", "torch-cuda"):
        pytest.skip("a stack QR quirk of CuPy and CUDA torch")
    rng = np.random.default_rng(3)
    X, y = _stack(rng, np.float32, batch=200), rng.standard_normal((200, 64, 1)).astype(np.float32)
    xp, Xd, yd = be.xp, be.asarray(X), be.asarray(y)
    assert _stack_qr.loops_over_stacks(xp, Xd)
    if be.name == "cupy":
        import cupy

        calls = []
        real = cupy.linalg.qr
        cupy.linalg.qr = lambda *a, **k: calls.append(1) or real(*a, **k)
        try:
            R, qty = _factorizations.qr_apply(xp, Xd, yd)
            Q, _ = _factorizations.qr(xp, Xd)
        finally:
            cupy.linalg.qr = real
        assert not calls
    else:
        with _ops() as ops:
            R, qty = _factorizations.qr_apply(xp, Xd, yd)
            Q, _ = _factorizations.qr(xp, Xd)
        assert ops.count["ormqr"] == 0 and ops.count["orgqr"] == 0, ops.count
    _assert_householder(X, be.to_numpy(Q), be.to_numpy(R), y, be.to_numpy(qty))


@pytest.mark.parametrize("n", [1, 2, 8, 16])
def test_small_stack_inverse_and_the_solves_through_it(n, numpy_reference):
    """NumPy and array-api-strict stacks of small triangles: the inverse made a row at a time is LAPACK's to
    ``n eps cond`` (lower and upper), and the lean route's solves through it (``cho_solve(inverse=)``) and the
    inverse's diagonal agree with substitution's and with ``potri``'s to the same bound; other libraries and 2-D
    factors get no inverse (None)."""
    from lsq_backends._backend import _small_stacks

    rng = np.random.default_rng(n)
    A = design(rng, (50, 3 * n, n), 30.0)
    A = np.swapaxes(A, -1, -2) @ A  # cond 900
    L = np.linalg.cholesky(A)
    bound = 50 * n * np.finfo(np.float64).eps * 900
    for lower, T in ((True, L), (False, np.swapaxes(L, -1, -2))):
        inv = _small_stacks.stack_inverse(_compat.array_namespace(T), T, lower=lower)
        assert np.max(np.abs(inv - np.linalg.inv(T))) <= bound * np.max(np.abs(np.linalg.inv(T)))
        assert np.all(np.triu(inv, 1) == 0) if lower else np.all(np.tril(inv, -1) == 0)
    xp = _compat.array_namespace(L)
    Li = _compat.small_inverse(xp, L)
    b = rng.standard_normal((50, n, 1))
    x = _compat.cho_solve(xp, L, b, inverse=Li)
    exact = np.linalg.solve(A, b)
    assert np.max(np.abs(x - exact)) <= bound * 900 * np.max(np.abs(exact))  # cond(A) = cond(L)**2
    d = _compat.inverse_diagonal(xp, L, inverse=Li)
    ref = np.diagonal(np.linalg.inv(A), axis1=-2, axis2=-1)
    assert np.max(np.abs(d - ref) / ref) <= bound * 900
    strict = pytest.importorskip("array_api_strict")
    sxp = _compat.array_namespace(strict.asarray(L))
    Ls = strict.asarray(L)
    np.testing.assert_allclose(np.asarray(_compat.small_inverse(sxp, Ls)), Li, rtol=0, atol=bound)
    assert _compat.small_inverse(xp, L[0]) is None
    torch = pytest.importorskip("torch")
    assert _compat.small_inverse(_compat.array_namespace(torch.asarray(L)), torch.asarray(L)) is None
