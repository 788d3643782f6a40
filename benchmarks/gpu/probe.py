"""Targeted GPU probes for lsq_backends (the questions the test suite and the self-check do not ask).

Run from the repository root (``python -m benchmarks.gpu`` runs it as its probe stage):

    python benchmarks/gpu/probe.py [NAME ...]   # one JSON line per finding; ~30-60 s on an H100

Each probe is independent (an exception is reported, the next probe runs), and its lines are
printed as they are found (a timeout keeps them). Without a GPU the CUDA probes report
"skipped". Probes, in the order they run:

  qr_r      _compat.qr_r and QRAccumulator on CuPy (array-api-compat's qr wrapper and mode="r")
  errstate  a rank-deficient normal fit under cupyx.errstate(linalg="raise")
  potrf     what cuSOLVER leaves in a failed Cholesky (CuPy 2-D and batched, small and blocked
            sizes) and whether _compat.cholesky turns it into NaN; a rank-deficient normal fit
            against numpy.linalg.lstsq (CuPy: normal, auto, qr)
  tf32      float32 fits with TF32 switched on the way users switch it (torch legacy and new API,
            CuPy compute type), with the package's guard on and off; a bare X.T @ X for scale;
            torch.linalg.solve_triangular (cuBLAS trsm, not guarded) with TF32 on and off
  goal      normal vs a bare X.T @ X and qr vs torch.linalg.lstsq at 10**6 x 256 (torch-cuda)
  syncs     host reads and hidden CUDA syncs per torch-cuda fit (sync debug mode)
  jax_cond  time of a jitted fit (its lean route and full route the branches of a lax.cond), an eager
            one (the lean route compiled alone), the bare refined pipeline jitted (XLA GPU
            conditionals copy the predicate to the host)
  svd       cuSOLVER's gesvd through CuPy against LAPACK: graded triangular factors as CuPy hands
            them over (transposed) and as _compat.svd does, and matrices at 1e-300 ... 1e300
            (LAPACK scales them first), next to cuSOLVER's QR at the same scales
  absorb    the absorbed two-way fit (lstsq, and diagnostics with clusters) of a 10**6-row worker-firm
            panel on CuPy and torch-cuda against NumPy's in the same process
  goal_cupy normal and auto at 10**6 x 256 on CuPy against a bare X.T @ X and cupy.linalg.lstsq
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import sys
import time
import traceback
import warnings

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
warnings.simplefilter("ignore")

import numpy as np  # noqa: E402

import lsq_backends as lsq  # noqa: E402
from lsq_backends._backend import _compat, _products  # noqa: E402

RNG = np.random.default_rng(0)


def report(name, **fields):
    print(json.dumps({"probe": name, **fields}, default=str), flush=True)


def probe(needs=None):
    """A probe: an exception is reported and the next probe runs. With ``needs`` ("cupy" or
    "torch") it is given that module, or reported skipped where it has no usable CUDA device."""

    def wrap(fn):
        @functools.wraps(fn)
        def run():
            t0 = time.perf_counter()
            try:
                module = cuda_module(needs) if needs else None
                if needs and module is None:
                    report(fn.__name__, status="skipped", why=f"no usable CUDA {needs}")
                else:
                    fn(*([module] if needs else []))
            except Exception as exc:  # noqa: BLE001
                where = traceback.format_exc().splitlines()[-3:]
                report(fn.__name__, status="error", error=f"{type(exc).__name__}: {exc}"[:400], where=where)
            report(fn.__name__ + ".done", seconds=round(time.perf_counter() - t0, 2))

        return run

    return wrap


def cuda_module(name):
    """``cupy`` or ``torch`` where it has a usable CUDA device, else None."""
    try:
        module = importlib.import_module(name)
        return module if module.cuda.is_available() else None
    except Exception:  # noqa: BLE001
        return None


def design(m, n, cond, dup=None, dtype=np.float64):
    U = np.linalg.qr(RNG.standard_normal((m, n)))[0]
    V = np.linalg.qr(RNG.standard_normal((n, n)))[0]
    X = (U * np.geomspace(1, 1 / cond, n)) @ V.T
    if dup is not None:
        X[:, dup[1]] = X[:, dup[0]]
    return X.astype(dtype)


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a, dtype=np.float64) - b) / np.linalg.norm(b))


def timed(call, sync, repeat=5):
    """``(result, median ms)`` of ``repeat`` calls of ``call`` after one untimed call, ``sync()`` waiting for the
    device after each."""
    call()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = call()
        sync()
        times.append(time.perf_counter() - t0)
    return out, round(1e3 * sorted(times)[len(times) // 2], 2)


@probe("cupy")
def potrf(cp):
    xp = _compat.array_namespace(cp.empty(0))
    for p in (3, 8, 64, 300):  # 300: past cuSOLVER's panel width (a blocked factorization)
        X = design(4 * p, p, 10.0, dup=(0, p // 2))
        A = X.T @ X  # singular: a dependent column
        B = A + np.eye(p)
        B[-1, -1] = -1.0  # e_p^T B e_p < 0: indefinite
        for label, a in (("singular", A), ("indefinite", B)):
            raw = cp.linalg.cholesky(cp.asarray(a)).get()
            L = _compat.cholesky(xp, cp.asarray(a)).get()
            report(
                "potrf",
                p=p,
                case=label,
                raw_has_nan=bool(np.isnan(raw).any()),
                raw_min_pivot=float(np.nanmin(np.diag(raw))),
                raw_first_bad_pivot=int(np.argmax(~(np.diag(raw) > 0))),
                compat_all_nan=bool(np.isnan(L).all()),
                compat_any_nan=bool(np.isnan(L).any()),
            )
    batch = np.stack([A, B, np.eye(p)])
    L = _compat.cholesky(xp, cp.asarray(batch)).get()
    report(
        "potrf",
        case="batched [singular, indefinite, identity]",
        nan_per_matrix=[bool(np.isnan(L[i]).all()) for i in range(3)],
        identity_ok=bool(np.allclose(L[2], np.eye(p))),
    )
    # end to end: a rank-deficient normal fit must give the minimum-norm solution
    X = design(2000, 40, 100.0, dup=(3, 5))
    y = X @ RNG.standard_normal(40) + 1e-3 * RNG.standard_normal(2000)
    ref = np.linalg.lstsq(X, y, rcond=None)[0]
    for method in ("normal", "auto", "qr"):
        r = lsq.lstsq(cp.asarray(X), cp.asarray(y), method=method)
        report("potrf", case=f"cupy rank-deficient {method}", rank=int(r.rank), err=rel(r.coef.get(), ref))


@probe("cupy")
def qr_r(cp):
    xp = _compat.array_namespace(cp.empty(0))
    for n in (2, 5):
        try:
            R = _compat.qr_r(xp, cp.asarray(RNG.standard_normal((20, n))))
            report("qr_r", n=n, type=type(R).__name__, shape=getattr(R, "shape", None))
        except Exception as exc:  # noqa: BLE001
            report("qr_r", n=n, error=f"{type(exc).__name__}: {exc}"[:200])
    X = RNG.standard_normal((100, 4))
    y = X @ np.arange(1.0, 5.0) + 2.0
    try:
        r = (
            lsq.QRAccumulator()
            .update(cp.asarray(X[:50]), cp.asarray(y[:50]))
            .update(cp.asarray(X[50:]), cp.asarray(y[50:]))
        )
        report("qr_r", accumulator_coef=r.solve().coef.get().tolist())
    except Exception as exc:  # noqa: BLE001
        report("qr_r", accumulator_error=f"{type(exc).__name__}: {exc}"[:200])


@probe("cupy")
def errstate(cp):
    import cupyx

    X = design(500, 10, 10.0, dup=(1, 2))
    y = X @ np.ones(10)
    with cupyx.errstate(linalg="raise"):
        try:
            r = lsq.lstsq(cp.asarray(X), cp.asarray(y), method="normal")
            report("errstate", status="ok", rank=int(r.rank))
        except Exception as exc:  # noqa: BLE001
            report("errstate", status="raised", error=f"{type(exc).__name__}: {exc}"[:200])


@contextlib.contextmanager
def guard(on):
    """The package's float32 precision guard as it is (``on``), or switched off in every module
    that uses it."""
    if on:
        yield
        return
    users = [m for name, m in sys.modules.items() if name.startswith("lsq_backends") and hasattr(m, "full_float32")]
    real = [(m, m.full_float32) for m in users]
    for m in users:
        m.full_float32 = lambda xp, *arrays: contextlib.nullcontext()
    try:
        yield
    finally:
        for m, f in real:
            m.full_float32 = f


def tf32_fits(put, get, label, X, y, ref, gram_ref):
    Xd, yd = put(X), put(y)
    for on in (True, False):
        with guard(on):
            errs = {m: rel(get(lsq.lstsq(Xd, yd, method=m).coef), ref) for m in ("normal", "qr", "svd", "auto")}
        report("tf32", setting=label, guard=on, **errs)
    G = get(_products.matmul(_compat.array_namespace(Xd), Xd.T, Xd))
    report("tf32", setting=label, guarded_gram_err=rel(G, gram_ref))


@probe()
def tf32():
    torch, cp = cuda_module("torch"), cuda_module("cupy")
    if torch is None and cp is None:
        return report("tf32", status="skipped", why="no CUDA torch, no usable CuPy")
    X = design(20000, 50, 30.0, dtype=np.float32)
    y = (X.astype(np.float64) @ RNG.standard_normal(50)).astype(np.float32)
    ref = np.linalg.lstsq(X.astype(np.float64), y.astype(np.float64), rcond=None)[0]
    X64 = X.astype(np.float64)
    gram_ref = X64.T @ X64
    if torch is not None:
        put, get = (lambda a: torch.asarray(a, device="cuda")), (lambda t: t.double().cpu().numpy())
        Xt = put(X)
        for label, on, off in (
            (
                "torch allow_tf32=True (legacy)",
                lambda: setattr(torch.backends.cuda.matmul, "allow_tf32", True),
                lambda: setattr(torch.backends.cuda.matmul, "allow_tf32", False),
            ),
            (
                "torch set_float32_matmul_precision('high')",
                lambda: torch.set_float32_matmul_precision("high"),
                lambda: torch.set_float32_matmul_precision("highest"),
            ),
            (
                "torch cuda.matmul.fp32_precision='tf32' (new)",
                lambda: setattr(torch.backends.cuda.matmul, "fp32_precision", "tf32"),
                lambda: setattr(torch.backends.cuda.matmul, "fp32_precision", "ieee"),
            ),
        ):
            try:  # one way of switching failing (torch's legacy and new knobs mixed) leaves the others
                on()
                bare = rel((Xt.T @ Xt).double().cpu().numpy(), gram_ref)
                report("tf32", setting=label, bare_gram_err=bare)
                tf32_fits(put, get, label, X, y, ref, gram_ref)
            except Exception as exc:  # noqa: BLE001
                report("tf32", setting=label, status="error", error=f"{type(exc).__name__}: {exc}"[:300])
            finally:
                off()
        # cuBLAS trsm (torch.linalg.solve_triangular) is not wrapped by the guard
        n = 2048
        M = RNG.standard_normal((n, n)) / np.sqrt(n) + 4 * np.eye(n)
        L = np.tril(M)
        Bm = RNG.standard_normal((n, 4096))
        exact = np.linalg.solve(L, Bm)
        Lt, Bt = put(L.astype(np.float32)), put(Bm.astype(np.float32))
        for flag in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = flag
            x = torch.linalg.solve_triangular(Lt, Bt, upper=False).double().cpu().numpy()
            report("tf32", case="torch solve_triangular float32 2048x4096", allow_tf32=flag, err=rel(x, exact))
        torch.backends.cuda.matmul.allow_tf32 = False
    else:
        report("tf32", status="skipped torch", why="no CUDA torch")
    if cp is not None:
        from cupy._core import _routines_linalg as rl

        before = rl.get_compute_type(cp.float32)
        rl.set_compute_type(cp.float32, rl.COMPUTE_TYPE_TF32)
        Xc = cp.asarray(X)
        report(
            "tf32",
            setting="cupy COMPUTE_TYPE_TF32 (as CUPY_TF32=1)",
            bare_gram_err=rel((Xc.T @ Xc).get(), gram_ref),
            compute_type_before=int(before),
        )
        tf32_fits(cp.asarray, lambda a: a.get(), "cupy TF32", X, y, ref, gram_ref)
        rl.set_compute_type(cp.float32, before)
        # the guard also switches the DEFAULT (already full FP32) compute type to PEDANTIC: cost of that
        A = cp.asarray(RNG.standard_normal((8192, 8192)).astype(np.float32))
        times = {}
        for ct in ("DEFAULT", "PEDANTIC"):
            rl.set_compute_type(cp.float32, getattr(rl, f"COMPUTE_TYPE_{ct}"))
            A @ A
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(5):
                A @ A
            cp.cuda.Device().synchronize()
            times[ct] = (time.perf_counter() - t0) / 5
        rl.set_compute_type(cp.float32, before)
        report("tf32", case="cupy 8192^2 float32 matmul seconds", **times)
    else:
        report("tf32", status="skipped cupy", why="no usable CuPy")


@probe("torch")
def syncs(torch):
    from lsq_backends.check import count_host_reads

    X = design(20000, 50, 100.0)
    y = X @ RNG.standard_normal(50) + 1e-3 * RNG.standard_normal(20000)
    Xd, yd = torch.asarray(X, device="cuda"), torch.asarray(y, device="cuda")
    calls = {f"lstsq {m}": (lambda m=m: lsq.lstsq(Xd, yd, method=m)) for m in ("auto", "normal", "qr", "svd")}
    calls["lstsq normal +intercept"] = lambda: lsq.lstsq(Xd, yd, method="normal", fit_intercept=True)
    calls["ridge 1.0"] = lambda: lsq.ridge(Xd, yd, 1.0)
    calls["ridge path(7)"] = lambda: lsq.ridge(Xd, yd, torch.logspace(-3, 3, 7, dtype=torch.float64, device="cuda"))
    Xr = X.copy()
    Xr[:, 5] = Xr[:, 3]
    Xrd = torch.asarray(Xr, device="cuda")
    calls["lstsq normal rank-deficient"] = lambda: lsq.lstsq(Xrd, yd, method="normal")
    for name, call in calls.items():
        call()
        torch.cuda.synchronize()
        with count_host_reads("torch-cuda") as reads:
            call()
        report("syncs", call=name, reads=reads.count, hidden=reads.hidden, events=reads.events)


@probe()
def jax_cond():
    try:
        import jax
    except ImportError:
        return report("jax_cond", status="skipped", why="no jax")
    if jax.default_backend() == "cpu":
        return report("jax_cond", status="skipped", why="JAX default backend is the CPU")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    X = jnp.asarray(design(20000, 50, 10.0))
    y = jnp.asarray(RNG.standard_normal(20000))
    fit = jax.jit(lsq.lstsq, static_argnames=("method",))
    hi = jax.lax.Precision.HIGHEST

    @jax.jit
    def bare(X, y):  # the normal path without its branches: Gram, Cholesky, two solves
        L = jnp.linalg.cholesky(jnp.matmul(X.T, X, precision=hi))
        z = jax.scipy.linalg.solve_triangular(L, jnp.matmul(X.T, y, precision=hi), lower=True)
        return jax.scipy.linalg.solve_triangular(L.T, z, lower=False)

    @jax.jit
    def bare_refined(X, y):  # the lean route's arithmetic without its certificate: one step of refinement
        L = jnp.linalg.cholesky(jnp.matmul(X.T, X, precision=hi))
        w = jax.scipy.linalg.cho_solve((L, True), jnp.matmul(X.T, y, precision=hi))
        r = y - jnp.matmul(X, w, precision=hi)
        return w + jax.scipy.linalg.cho_solve((L, True), jnp.matmul(X.T, r, precision=hi))

    out = {}
    for name, f in (
        ("lsq normal", lambda: fit(X, y, method="normal").coef),
        ("lsq lsqr", lambda: fit(X, y, method="lsqr").coef),
        ("bare cholesky", lambda: bare(X, y)),
        ("bare refined", lambda: bare_refined(X, y)),
        ("lsq normal, eager", lambda: lsq.lstsq(X, y, method="normal").coef),
        ("jnp.linalg.lstsq", lambda: jnp.linalg.lstsq(X, y)[0]),
    ):
        f().block_until_ready()
        t0 = time.perf_counter()
        for _ in range(20):
            r = f()
        r.block_until_ready()
        out[name] = round((time.perf_counter() - t0) / 20 * 1e3, 3)
    n_iter = int(fit(X, y, method="lsqr").n_iter)
    report(
        "jax_cond",
        ms_per_call=out,
        lsqr_iterations=n_iter,
        hlo_conditionals=fit.lower(X, y, method="normal").compile().as_text().count("conditional("),
    )


@probe("torch")
def goal(torch):
    """The H100 goal: normal <= 1.3x a bare X^T X, qr >= 3x faster than
    torch.linalg.lstsq (gels), at 10**6 x 256 (float32 and float64; data made on the device)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        _goal_one(torch, dtype, g)
        torch.cuda.empty_cache()


def _goal_one(torch, dtype, g):
    m, n = 1_000_000, 256
    X = torch.randn(m, n, device="cuda", dtype=dtype, generator=g)
    noise = 0.01 * torch.randn(m, device="cuda", dtype=dtype, generator=g)
    y = X @ torch.randn(n, device="cuda", dtype=dtype, generator=g) + noise
    sync = torch.cuda.synchronize
    t = {
        "bare X.T@X": timed(lambda: X.T @ X, sync)[1],
        "torch.linalg.lstsq(gels)": timed(lambda: torch.linalg.lstsq(X, y[:, None]), sync)[1],
    }
    for method in ("normal", "auto", "qr"):
        t[f"lsq {method}"] = timed(lambda method=method: lsq.lstsq(X, y, method=method), sync)[1]
    report(
        "goal",
        dtype=str(dtype),
        ms=t,
        normal_over_gram=round(t["lsq normal"] / t["bare X.T@X"], 2),
        gels_over_qr=round(t["torch.linalg.lstsq(gels)"] / t["lsq qr"], 2),
    )
    _profile(torch, "normal", lambda: lsq.lstsq(X, y, method="normal"), dtype)


@probe("cupy")
def goal_cupy(cp):
    """The goal's size on CuPy: ``normal`` and ``auto`` at 10**6 x 256 against a bare X^T X (median ms of 5) and
    ``cupy.linalg.lstsq`` (its SVD: one call, after one untimed), float32 and float64, data made on the device."""
    g = cp.random.default_rng(0)
    for dtype in (cp.float32, cp.float64):
        _goal_cupy_one(cp, dtype, g)
        cp.get_default_memory_pool().free_all_blocks()


def _goal_cupy_one(cp, dtype, g):
    m, n = 1_000_000, 256
    X = g.standard_normal((m, n), dtype=dtype)
    y = X @ g.standard_normal(n, dtype=dtype) + dtype(0.01) * g.standard_normal(m, dtype=dtype)

    sync = cp.cuda.Device().synchronize
    t = {"bare X.T@X": timed(lambda: X.T @ X, sync)[1]}
    for method in ("normal", "auto"):
        t[f"lsq {method}"] = timed(lambda method=method: lsq.lstsq(X, y, method=method), sync)[1]
    t["cupy.linalg.lstsq"] = timed(lambda: cp.linalg.lstsq(X, y, rcond=None), sync, repeat=1)[1]
    report("goal_cupy", dtype=dtype.__name__, ms=t, normal_over_gram=round(t["lsq normal"] / t["bare X.T@X"], 2),
           lstsq_over_normal=round(t["cupy.linalg.lstsq"] / t["lsq normal"], 2))  # fmt: skip


def _profile(torch, what, call, dtype, top=12):
    """Where one fit's GPU time goes: the kernels of most CUDA time (the first run measured
    ``normal`` at 4.7x a bare X^T X, its four passes over X predicting ~2x)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    events = sorted(prof.key_averages(), key=lambda e: -getattr(e, "self_device_time_total", 0))
    rows = [
        [e.key[:60], e.count, round(getattr(e, "self_device_time_total", 0) / 1e3, 3)] for e in events[:top]
    ]  # fmt: skip
    kernels = sum(e.count for e in events if getattr(e, "self_device_time_total", 0) > 0)
    report("goal.profile", call=what, dtype=str(dtype), top_ops_ms=rows, device_ops=kernels)


def _svd_errors(s, u, vh, a, ref):
    """Relative errors of the singular values (each against its own), ||a - u s vh|| / ||a||, and the factors'
    departure from orthonormality."""
    big = float(np.max(np.abs(a)))  # norms of a / big: no square over- or underflows
    back = (u * (np.asarray(s) / big)) @ vh
    eye = np.eye(len(ref))
    orth = max(float(np.max(np.abs(u.T @ u - eye))), float(np.max(np.abs(vh @ vh.T - eye))))
    return float(np.max(np.abs(s / ref - 1))), float(np.linalg.norm(back - a / big) / np.linalg.norm(a / big)), orth


@probe("cupy")
def svd(cp):
    """Graded: the R of [1, X] at X ~ 1e200 (corner ~1e-100) and Pontius-like [[1e7, 1e14], [0, 1e12]]; scales:
    the R of a 20 x 4 X. raw: cupy.linalg.svd(a) (cuSOLVER gets a^T), flipped: of a^T (cuSOLVER gets a), compat:
    _compat.svd. LAPACK's s as the reference (relatively accurate on these)."""
    xp = _compat.array_namespace(cp.empty(0))
    X = RNG.standard_normal((30, 4)) + 5.0
    Ra = np.linalg.qr(np.c_[np.ones(30) * 1e-100, X * 1e100])[1]
    cases = [("graded [1, X]", Ra), ("graded 2x2", np.array([[1e7, 1e14], [0.0, 1e12]]))]
    R = np.linalg.qr(RNG.standard_normal((20, 4)))[1]
    cases += [(f"R x {c:g}", R * c) for c in (1.0, 1e-150, 1e-200, 1e-250, 1e-300, 2.0**-1000, 1e300)]
    for label, a in cases:
        ref = np.linalg.svd(a, compute_uv=False)
        u, s, vh = cp.linalg.svd(cp.asarray(a), full_matrices=False)
        v, s2, ut = cp.linalg.svd(cp.asarray(a.T.copy()), full_matrices=False)
        u3, s3, vh3 = _compat.svd(xp, cp.asarray(a))
        out = {}
        for name, f in (("raw", (s, u.get(), vh.get())), ("flipped", (s2, ut.get().T, v.get().T)),
                        ("compat", (s3, u3.get(), vh3.get()))):  # fmt: skip
            out[name] = _svd_errors(f[0].get(), f[1], f[2], a, ref)
        report("svd", case=label, s_err_residual_orth=out)
    for c in (1.0, 1e-300):
        Xc = RNG.standard_normal((20, 4)) * c
        q, r = cp.linalg.qr(cp.asarray(Xc))
        report("svd", case=f"cupy qr at {c:g}", residual=rel((q @ r).get() / c, Xc / c),
               r_vs_lapack=rel(np.abs(r.get() / c), np.abs(np.linalg.qr(Xc / c)[1])))  # fmt: skip


@probe()
def absorb():
    """The absorbed two-way fit of ``benchmarks.econometrics``' 10**6-row worker-firm panel (10**5 workers, 10**3
    firms) on each CUDA library: ``lstsq`` and ``diagnostics`` with clusters by firm, median ms of 3 after one call,
    against NumPy's in the same process, and the coefficients' and standard errors' difference from NumPy's."""
    from benchmarks.econometrics import panel_data

    X, y, codes = panel_data(1_000_000)

    libraries = [("numpy", np.asarray, lambda: None, np.asarray)]
    cp, torch = cuda_module("cupy"), cuda_module("torch")
    if cp is not None:
        libraries.append(("cupy", cp.asarray, cp.cuda.Device().synchronize, cp.asnumpy))
    if torch is not None:
        libraries.append(
            ("torch-cuda", lambda a: torch.asarray(a, device="cuda"), torch.cuda.synchronize, lambda a: a.cpu().numpy())
        )
    ref = None
    for name, put, sync, get in libraries:
        Xd, yd, cd = put(X), put(y), put(codes)
        fit, t_fit = timed(lambda: lsq.lstsq(Xd, yd, absorb=cd), sync, repeat=3)  # noqa: B023
        diag, t_diag = timed(
            lambda: lsq.diagnostics(Xd, yd, absorb=cd, cov_type="cluster", groups=cd[:, 1]),  # noqa: B023
            sync,
            repeat=3,
        )
        coef, se = get(fit.coef), get(diag.stderr)
        ref = (coef, se) if ref is None else ref
        report("absorb", library=name, lstsq_ms=t_fit, diagnostics_ms=t_diag,
               coef_rel=rel(coef, ref[0]), stderr_rel=rel(se, ref[1]))  # fmt: skip


PROBES = (qr_r, errstate, svd, potrf, tf32, goal, syncs, jax_cond, absorb, goal_cupy)

if __name__ == "__main__":
    chosen = sys.argv[1:] or [p.__name__ for p in PROBES]
    report("env", numpy=np.__version__, lsq_backends=lsq.__version__, probes=chosen)
    for p in PROBES:
        if p.__name__ in chosen:
            p()
