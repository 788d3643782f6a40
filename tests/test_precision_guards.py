"""Products at full float32 precision on PyTorch and CuPy, whatever the user set globally.

PyTorch: a lowered setting (``set_float32_matmul_precision("medium"/"high")``, TF32 flags, the
per-backend ``fp32_precision`` knobs of torch >= 2.9) is forced to full precision around each
float32 product and put back. CuPy's compute-type override is tested with a stand-in module (no
GPU here). The torch tests run in the torch backend's session
(``LSQ_BACKENDS=torch pytest tests/test_precision_guards.py``); the stand-in tests in every one.
"""

from __future__ import annotations

import sys
import threading
import types

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends import _precision


def _session(request, name):
    if name not in request.config._lsq_backends:
        pytest.skip(f"runs in the {name} backend's session")
    return pytest.importorskip(name)


def _torch_settings(torch):
    """Everything the user may have set, as readable now (the new per-backend knobs where
    torch has them: reading the legacy ones raises once both APIs were used)."""
    if hasattr(torch.backends, "fp32_precision"):
        return (
            "new",
            torch.backends.fp32_precision,
            torch.backends.cuda.matmul.fp32_precision,
            torch.backends.mkldnn.matmul.fp32_precision,
        )
    return ("legacy", torch.get_float32_matmul_precision())


@pytest.fixture
def torch(request):
    """torch, with every precision setting a test changes put back afterwards."""
    torch = _session(request, "torch")
    saved = _torch_settings(torch)
    yield torch
    if saved[0] == "new":
        torch.backends.fp32_precision = saved[1]
        torch.backends.cuda.matmul.fp32_precision = saved[2]
        torch.backends.mkldnn.matmul.fp32_precision = saved[3]
    else:
        torch.set_float32_matmul_precision(saved[1])


def _conditioned(rng, m, n, kappa, dtype):
    """X (m, n) with singular values from 1 to 1/kappa, and y = X w exactly representable."""
    u, _ = np.linalg.qr(rng.standard_normal((m, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    X = ((u * np.geomspace(1.0, 1.0 / kappa, n)) @ v.T).astype(dtype)
    return X, rng.standard_normal(n)


@pytest.mark.parametrize("setting", ["medium", "high"])
def test_torch_float32_fit_under_lowered_setting(torch, setting):
    """Accurate to the float32 error bounds, and the user's setting is left as it was. (On this
    CPU without bfloat16 units the setting cannot lower anything: on a GPU or an AMX CPU this
    is the test that fails unguarded; the spy test below fails here.)"""
    rng = np.random.default_rng(1)
    kappa, n = 100.0, 8
    X, _ = _conditioned(rng, 500, n, kappa, np.float32)
    w = rng.standard_normal(n)
    y = (X.astype(np.float64) @ w).astype(np.float32)
    ref = np.linalg.lstsq(X.astype(np.float64), y.astype(np.float64), rcond=None)[0]
    torch.set_float32_matmul_precision(setting)
    before = _torch_settings(torch)
    eps = float(np.finfo(np.float32).eps)
    # Normwise relative error bounds with a modest constant: eps n kappa^2 for the normal
    # equations, eps n kappa for QR and the SVD (zero residual). TF32 products (eps 2^-11)
    # would give ~4e-1 and ~5e-2 here, bfloat16 (2^-8) worse.
    for method, bound in [
        ("normal", 10 * n * eps * kappa**2),
        ("auto", 10 * n * eps * kappa**2),
        ("qr", 10 * n * eps * kappa),
        ("svd", 10 * n * eps * kappa),
    ]:
        coef = lsq.lstsq(torch.asarray(X), torch.asarray(y), method=method).coef.double().numpy()
        assert np.linalg.norm(coef - ref) <= bound * np.linalg.norm(ref), method
        assert _torch_settings(torch) == before
    assert torch.get_float32_matmul_precision() == setting


def _spy(monkeypatch, torch):
    """Record, for every product ``_compat.matmul`` makes, the setting torch reads for it."""
    import array_api_compat

    xp = array_api_compat.array_namespace(torch.empty(0))
    seen, real = [], xp.matmul

    def spy(a, b, **kw):
        seen.append((a.dtype, _torch_settings(torch)))
        return real(a, b, **kw)

    monkeypatch.setattr(xp, "matmul", spy)
    return seen


def test_torch_cpu_products_run_unlowered(torch, monkeypatch):
    """With "medium" (oneDNN bfloat16 on CPUs that have it), each float32 product runs with the
    CPU knob at full precision; float64 products and unlowered settings change nothing."""
    seen = _spy(monkeypatch, torch)
    X = np.random.default_rng(2).standard_normal((40, 3))
    y = X @ np.ones(3)
    lsq.lstsq(torch.asarray(X), torch.asarray(y), method="normal")  # float64, setting highest
    torch.set_float32_matmul_precision("medium")
    lowered = _torch_settings(torch)
    lsq.lstsq(torch.asarray(X), torch.asarray(y), method="normal")  # float64, "medium": untouched
    lsq.lstsq(torch.asarray(X, dtype=torch.float32), torch.asarray(y, dtype=torch.float32), method="normal")
    assert _torch_settings(torch) == lowered
    f32 = [s for dt, s in seen if dt == torch.float32]
    f64 = [s for dt, s in seen if dt == torch.float64]
    assert f32 and f64
    assert all(s == lowered for s in f64[len(f64) // 2 :])
    if lowered[0] == "new":
        assert all(s[3] == "ieee" for s in f32)
        assert all(s[3] in ("none", "ieee") for s in f64[: len(f64) // 2])
    else:
        assert all(s[1] == "highest" for s in f32)


class _FakeTensor:
    def __init__(self, torch, kind, dtype):
        self.device, self.dtype = types.SimpleNamespace(type=kind), dtype


@pytest.mark.parametrize("user", ["allow_tf32", "medium", "high", "new_tf32", "generic_tf32", "highest"])
def test_torch_cuda_guard_forces_and_restores(torch, user):
    """The CUDA decision and save/restore, driven with stand-in CUDA tensors (torch's cuBLAS
    knobs can be set without a GPU)."""
    import array_api_compat

    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("torch < 2.9: the legacy path is tested with a stand-in below")
    m = torch.backends.cuda.matmul
    {
        "allow_tf32": lambda: setattr(m, "allow_tf32", True),
        "medium": lambda: torch.set_float32_matmul_precision("medium"),
        "high": lambda: torch.set_float32_matmul_precision("high"),
        "new_tf32": lambda: setattr(m, "fp32_precision", "tf32"),
        "generic_tf32": lambda: setattr(torch.backends, "fp32_precision", "tf32"),
        "highest": lambda: None,
    }[user]()
    before = _torch_settings(torch)
    xp = array_api_compat.array_namespace(torch.empty(0))
    a32, a64 = _FakeTensor(torch, "cuda", torch.float32), _FakeTensor(torch, "cuda", torch.float64)
    with _precision.full_float32(xp, a64, a64):
        assert _torch_settings(torch) == before  # float64: nothing touched
    full = "none" if user == "highest" else "ieee"  # already full precision: left alone
    with _precision.full_float32(xp, a32, a32):
        assert m.fp32_precision == full
        with _precision.full_float32(xp, a32, a32):  # nested: still forced
            assert m.fp32_precision == full
        assert m.fp32_precision == full
    assert _torch_settings(torch) == before
    if user in ("allow_tf32", "medium", "high"):  # the legacy getters work again afterwards
        assert torch.get_float32_matmul_precision() == {"allow_tf32": "high"}.get(user, user)
        assert m.allow_tf32 is True
    if user == "generic_tf32":  # an unset knob is left unset: it still follows the generic one
        torch.backends.fp32_precision = "ieee"
        assert m.fp32_precision == "ieee"


def test_torch_legacy_api_forces_and_restores():
    """torch < 2.9 (no per-backend knobs): the one global precision is forced and put back."""
    state = {"p": "high"}
    fake = types.SimpleNamespace(
        backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace())),
        get_float32_matmul_precision=lambda: state["p"],
        set_float32_matmul_precision=lambda p: state.update(p=p),
    )
    for kind in ("cuda", "cpu"):
        state["p"] = "medium"
        restore = _precision.torch_force(fake, kind)
        assert state["p"] == "highest"
        restore()
        assert state["p"] == "medium"
    state["p"] = "highest"
    assert _precision.torch_force(fake, "cuda") is None


def test_override_counts_nesting_and_threads():
    """The user's value is restored once, when the last block that forced it ends."""
    calls = []

    def force():
        calls.append("force")
        return lambda: calls.append("restore")

    guard = _precision.Override()
    inside, release = threading.Event(), threading.Event()

    def other():
        with guard(force):
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(5)
    with guard(force):
        with guard(force):
            pass
    assert calls == ["force"]  # the other thread's block is still open
    release.set()
    t.join(5)
    assert calls == ["force", "restore"]


# --- CuPy: the compute type, with a stand-in for its private module ------------------------


def _fake_cupy(monkeypatch, current, *, api=True):
    linalg = types.ModuleType("cupy._core._routines_linalg")
    if api:
        linalg.COMPUTE_TYPE_DEFAULT, linalg.COMPUTE_TYPE_PEDANTIC, linalg.COMPUTE_TYPE_TF32 = 1, 2, 7
        state = {"f": current}
        linalg.get_compute_type = lambda dtype: state["f"]
        linalg.set_compute_type = lambda dtype, ct: state.update(f=ct)
        linalg.state = state
    core = types.ModuleType("cupy._core")
    core._routines_linalg = linalg
    cupy = types.ModuleType("cupy")
    cupy._core, cupy.float32 = core, np.float32
    for name, mod in [("cupy", cupy), ("cupy._core", core), ("cupy._core._routines_linalg", linalg)]:
        monkeypatch.setitem(sys.modules, name, mod)
    return cupy, linalg


def test_cupy_tf32_is_overridden_and_restored(monkeypatch):
    cupy, linalg = _fake_cupy(monkeypatch, current=7)  # CUPY_TF32=1
    restore = _precision.cupy_force(cupy, np.float32)
    assert linalg.state["f"] == linalg.COMPUTE_TYPE_PEDANTIC
    restore()
    assert linalg.state["f"] == linalg.COMPUTE_TYPE_TF32
    linalg.state["f"] = linalg.COMPUTE_TYPE_PEDANTIC
    assert _precision.cupy_force(cupy, np.float32) is None


def test_cupy_without_the_private_api_runs_unguarded(monkeypatch):
    cupy, _ = _fake_cupy(monkeypatch, current=None, api=False)
    assert _precision.cupy_force(cupy, np.float32) is None
