"""Products (and torch's triangular solves) at full float32 precision on PyTorch and CuPy,
whatever the user set globally.

PyTorch: a lowered setting (``set_float32_matmul_precision("medium"/"high")``, TF32 flags, the
per-backend ``fp32_precision`` knobs of torch >= 2.9) is forced to full precision around each
float32 product and triangular solve, and put back. CuPy: a TF32/BF16/FP16 compute type is forced
to PEDANTIC around each float32 product. The tests on real tensors run in their backend's session,
on its device: ``LSQ_BACKENDS=torch`` (the CPU), ``LSQ_BACKENDS=torch-cuda`` and
``LSQ_BACKENDS=cupy`` (skipped only where no CUDA device is usable). Each spy test records the
setting every guarded call actually ran under, so removing a guard fails it on any device; the
accuracy tests fail unguarded only where the hardware lowers precision (a GPU with TF32, a CPU
with bfloat16 units). The decision logic also runs with stand-ins in every session.
"""

from __future__ import annotations

import threading
import types

import cupy_standin
import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._backend import _precision

TORCH_DEVICES = {"cpu": "torch", "cuda": "torch-cuda"}  # device -> the session that tests it


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


def _knob(settings, device):
    """The setting a product on ``device`` reads, from :func:`_torch_settings`."""
    if settings[0] == "legacy":
        return settings[1]
    return settings[2] if device == "cuda" else settings[3]


def _torch_session(request, device):
    """torch for ``device`` in that device's session, with every precision setting a test
    changes put back afterwards."""
    session = TORCH_DEVICES[device]
    if session not in request.config._lsq_backends:
        pytest.skip(f"torch on {device} runs in the {session} backend's session")
    torch = pytest.importorskip("torch")
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device is usable here")
    saved = _torch_settings(torch)
    yield torch
    torch.set_float32_matmul_precision("highest")  # the legacy state first: it sets the knobs
    if saved[0] == "new":
        torch.backends.fp32_precision = saved[1]
        torch.backends.cuda.matmul.fp32_precision = saved[2]
        torch.backends.mkldnn.matmul.fp32_precision = saved[3]
    else:
        torch.set_float32_matmul_precision(saved[1])


@pytest.fixture(params=sorted(TORCH_DEVICES))
def torch_on(request):
    """(torch, device) for each device, in that device's session."""
    for torch in _torch_session(request, request.param):
        yield torch, request.param


@pytest.fixture
def torch(request):
    """torch in the CPU session: the guards' decision logic, driven with stand-in tensors."""
    yield from _torch_session(request, "cpu")


def _conditioned(rng, m, n, kappa, dtype):
    """X (m, n) with singular values from 1 to 1/kappa, and y = X w exactly representable."""
    u, _ = np.linalg.qr(rng.standard_normal((m, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    X = ((u * np.geomspace(1.0, 1.0 / kappa, n)) @ v.T).astype(dtype)
    return X, rng.standard_normal(n)


@pytest.mark.parametrize("setting", ["medium", "high"])
def test_torch_float32_fit_under_lowered_setting(torch_on, setting):
    """Accurate to the float32 error bounds, and the user's setting is left as it was. (On a
    CPU without bfloat16 units the setting cannot lower anything: on a GPU or an AMX CPU this
    is the test that fails unguarded; the spy test below fails everywhere.)"""
    torch, device = torch_on
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
    Xd, yd = torch.asarray(X, device=device), torch.asarray(y, device=device)
    for method, bound in [
        ("normal", 10 * n * eps * kappa**2),
        ("auto", 10 * n * eps * kappa**2),
        ("qr", 10 * n * eps * kappa),
        ("svd", 10 * n * eps * kappa),
    ]:
        coef = lsq.lstsq(Xd, yd, method=method).coef.double().cpu().numpy()
        assert np.linalg.norm(coef - ref) <= bound * np.linalg.norm(ref), method
        assert _torch_settings(torch) == before
    assert torch.get_float32_matmul_precision() == setting


def _spy(monkeypatch, torch):
    """Record, for every product ``_compat.matmul`` makes and every triangular solve, the dtype,
    device and the settings torch reads for it."""
    import array_api_compat

    xp = array_api_compat.array_namespace(torch.empty(0))
    seen, real_matmul, real_solve = [], xp.matmul, torch.linalg.solve_triangular

    def matmul(a, b, **kw):
        seen.append(("matmul", a.dtype, _torch_settings(torch)))
        return real_matmul(a, b, **kw)

    def solve_triangular(a, b, **kw):
        seen.append(("solve", a.dtype, _torch_settings(torch)))
        return real_solve(a, b, **kw)

    monkeypatch.setattr(xp, "matmul", matmul)
    monkeypatch.setattr(torch.linalg, "solve_triangular", solve_triangular)
    return seen


@pytest.mark.parametrize("setting", ["medium", "high", "knob"])
def test_torch_products_and_solves_run_unlowered(torch_on, monkeypatch, setting):
    """Under a lowered setting each float32 product and triangular solve runs with the knob of
    its device at full precision; float64 calls and unlowered settings change nothing."""
    torch, device = torch_on
    seen = _spy(monkeypatch, torch)
    X = np.random.default_rng(2).standard_normal((40, 3))
    y = X @ np.ones(3)
    X64, y64 = torch.asarray(X, device=device), torch.asarray(y, device=device)
    X32, y32 = X64.float(), y64.float()
    lsq.lstsq(X64, y64, method="normal")  # float64, setting highest
    if setting == "knob":  # the per-backend knob of this device alone (torch >= 2.9)
        if not hasattr(torch.backends, "fp32_precision"):
            pytest.skip("torch < 2.9 has no per-backend knobs")
        knob = torch.backends.cuda.matmul if device == "cuda" else torch.backends.mkldnn.matmul
        knob.fp32_precision = "tf32" if device == "cuda" else "bf16"
    else:
        torch.set_float32_matmul_precision(setting)
    lowered = _torch_settings(torch)
    n_highest = len(seen)
    lsq.lstsq(X64, y64, method="normal")  # float64, lowered: untouched
    lsq.lstsq(X32, y32, method="normal")
    lsq.lstsq(X32, y32, method="qr")
    assert _torch_settings(torch) == lowered
    f32 = [(kind, s) for kind, dt, s in seen if dt == torch.float32]
    f64 = [s for _, dt, s in seen if dt == torch.float64]
    assert {kind for kind, _ in f32} == {"matmul", "solve"}
    assert all(s == lowered for s in f64[n_highest:])
    full = "highest" if lowered[0] == "legacy" else "ieee"
    lowered_here = _knob(lowered, device) not in ("highest", "ieee", "none")
    for kind, s in f32:
        assert _knob(s, device) == (full if lowered_here else _knob(lowered, device)), kind


class _FakeTensor:
    def __init__(self, torch, kind, dtype):
        self.device, self.dtype = types.SimpleNamespace(type=kind), dtype


_USERS = {
    "allow_tf32": lambda torch: setattr(torch.backends.cuda.matmul, "allow_tf32", True),
    "medium": lambda torch: torch.set_float32_matmul_precision("medium"),
    "high": lambda torch: torch.set_float32_matmul_precision("high"),
    "new_tf32": lambda torch: setattr(torch.backends.cuda.matmul, "fp32_precision", "tf32"),
    "new_bf16_cpu": lambda torch: setattr(torch.backends.mkldnn.matmul, "fp32_precision", "bf16"),
    "generic_tf32": lambda torch: setattr(torch.backends, "fp32_precision", "tf32"),
    "highest": lambda torch: None,
}
_LEGACY_USERS = ("allow_tf32", "medium", "high")


def _legacy_getters(torch):
    """What the legacy getters answer (an exception's type where one raises)."""
    out = []
    for get in (torch.get_float32_matmul_precision, lambda: torch.backends.cuda.matmul.allow_tf32):
        try:
            out.append(get())
        except RuntimeError as exc:
            out.append(type(exc).__name__)
    return out


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
@pytest.mark.parametrize("user", sorted(_USERS))
def test_torch_guard_forces_and_restores(torch, user, kind):
    """The decision and save/restore, driven with stand-in tensors (torch's knobs can be set
    without a GPU): forced wherever any backend is lowered (one decision for all devices),
    through the API the user set, and put back exactly."""
    import array_api_compat

    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("torch < 2.9: the legacy path is tested with a stand-in below")
    m, c = torch.backends.cuda.matmul, torch.backends.mkldnn.matmul
    _USERS[user](torch)
    before = _torch_settings(torch)
    xp = array_api_compat.array_namespace(torch.empty(0))
    a32, a64 = _FakeTensor(torch, kind, torch.float32), _FakeTensor(torch, kind, torch.float64)
    with _precision.full_float32(xp, a64, a64):
        assert _torch_settings(torch) == before  # float64: nothing touched
    full = user == "highest"  # already full precision: left alone
    with _precision.full_float32(xp, a32, a32):
        inside = (m.fp32_precision, c.fp32_precision)
        assert inside == (("none", "none") if full else ("ieee", "ieee")) or user.startswith("new")
        assert "tf32" not in inside and "bf16" not in inside
        with _precision.full_float32(xp, a32, a32):  # nested: still forced
            assert (m.fp32_precision, c.fp32_precision) == inside
        if user in _LEGACY_USERS:  # forced through the legacy API: its getters answer
            assert _legacy_getters(torch) == ["highest", False]
    assert _torch_settings(torch) == before
    if user in _LEGACY_USERS:  # the legacy getters answer as before
        assert _legacy_getters(torch) == [{"allow_tf32": "high"}.get(user, user), True]
    if user == "generic_tf32":  # an unset knob is left unset: it still follows the generic one
        torch.backends.fp32_precision = "ieee"
        assert m.fp32_precision == "ieee"


@pytest.mark.parametrize("user", _LEGACY_USERS)
def test_torch_legacy_getters_answer_in_other_threads(torch, user):
    """While one thread's float32 product runs under a legacy setting, another thread's legacy
    getters (``allow_tf32``, ``get_float32_matmul_precision``) answer: forcing the new
    per-backend knob alone made ``allow_tf32`` raise there ("mix of the legacy and new APIs")."""
    import array_api_compat

    if not hasattr(torch.backends, "fp32_precision"):
        pytest.skip("torch < 2.9 has one API")
    _USERS[user](torch)
    xp = array_api_compat.array_namespace(torch.empty(0))
    a32 = _FakeTensor(torch, "cuda", torch.float32)
    answers = []
    with _precision.full_float32(xp, a32, a32):
        t = threading.Thread(target=lambda: answers.append(_legacy_getters(torch)))
        t.start()
        t.join(5)
    assert answers == [["highest", False]]


def test_torch_legacy_api_forces_and_restores():
    """torch < 2.9 (no per-backend knobs): the one global precision is forced and put back."""
    state = {"p": "high"}
    fake = types.SimpleNamespace(
        backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace())),
        get_float32_matmul_precision=lambda: state["p"],
        set_float32_matmul_precision=lambda p: state.update(p=p),
    )
    state["p"] = "medium"
    restore = _precision.torch_force(fake)
    assert state["p"] == "highest"
    restore()
    assert state["p"] == "medium"
    state["p"] = "highest"
    assert _precision.torch_force(fake) is None


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


# --- CuPy: the compute type --------------------------------------------------------------


@pytest.mark.parametrize("asked", ["TF32", "BF16", "FP16"])
def test_cupy_lowered_compute_type_is_overridden_and_restored(monkeypatch, asked):
    cupy = cupy_standin.install(monkeypatch, compute_type=asked)  # CUPY_TF32=1, or set by hand
    routines, types_ = cupy.linalg_routines, cupy_standin.COMPUTE_TYPES
    restore = _precision.cupy_force(cupy.bare, np.float32)
    assert cupy.compute_type == types_["PEDANTIC"]
    restore()
    assert cupy.compute_type == types_[asked]
    assert routines.get_compute_type(np.float32) == types_[asked]


@pytest.mark.parametrize("current", ["DEFAULT", "FP32", "PEDANTIC", "FP64"])
def test_cupy_full_precision_compute_type_is_left_alone(monkeypatch, current):
    """CuPy's default is full float32 already: no process-wide write on every product."""
    cupy = cupy_standin.install(monkeypatch, compute_type=current)
    assert _precision.cupy_force(cupy.bare, np.float32) is None
    assert cupy.compute_type == cupy_standin.COMPUTE_TYPES[current]


def test_cupy_without_the_private_api_runs_unguarded(monkeypatch):
    cupy = cupy_standin.install(monkeypatch, compute_api=False)
    assert _precision.cupy_force(cupy.bare, np.float32) is None


@pytest.fixture
def cupy(request):
    if "cupy" not in request.config._lsq_backends:
        pytest.skip("runs in the cupy backend's session")
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():
        pytest.skip("cupy is installed but no CUDA device is usable here")
    from cupy._core import _routines_linalg as routines

    saved = routines.get_compute_type(cupy.float32)
    yield cupy
    routines.set_compute_type(cupy.float32, saved)


@pytest.mark.parametrize("asked", ["TF32", "DEFAULT"])
def test_cupy_products_run_unlowered(cupy, monkeypatch, asked):
    """On CuPy itself: with TF32 asked for (CUPY_TF32=1's setting), every float32 product runs
    PEDANTIC, the fit is accurate to the float32 bounds, and TF32 is back afterwards; with the
    default, nothing is written."""
    import array_api_compat
    from cupy._core import _routines_linalg as routines

    want = getattr(routines, f"COMPUTE_TYPE_{asked}")
    routines.set_compute_type(cupy.float32, want)
    if routines.get_compute_type(cupy.float32) != want:  # CuPy falls back to DEFAULT, with a warning
        pytest.skip("TF32 needs a GPU of compute capability 8.0 or higher")
    xp = array_api_compat.array_namespace(cupy.empty(0))
    seen, real = [], xp.matmul

    def matmul(a, b, **kw):
        seen.append((a.dtype, routines.get_compute_type(cupy.float32)))
        return real(a, b, **kw)

    monkeypatch.setattr(xp, "matmul", matmul)
    rng = np.random.default_rng(1)
    kappa, n = 100.0, 8
    X, _ = _conditioned(rng, 500, n, kappa, np.float32)
    y = (X.astype(np.float64) @ rng.standard_normal(n)).astype(np.float32)
    ref = np.linalg.lstsq(X.astype(np.float64), y.astype(np.float64), rcond=None)[0]
    eps = float(np.finfo(np.float32).eps)
    for method, bound in [("normal", 10 * n * eps * kappa**2), ("qr", 10 * n * eps * kappa)]:
        coef = cupy.asnumpy(lsq.lstsq(cupy.asarray(X), cupy.asarray(y), method=method).coef).astype(np.float64)
        assert np.linalg.norm(coef - ref) <= bound * np.linalg.norm(ref), method
    f32 = {ct for dt, ct in seen if dt == np.float32}
    assert f32 == ({routines.COMPUTE_TYPE_PEDANTIC} if asked == "TF32" else {want})
    assert routines.get_compute_type(cupy.float32) == want
