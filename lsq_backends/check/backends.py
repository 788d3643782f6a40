"""The array backends the self-check, the test suite and the benchmarks run on, found on this
machine without importing any of them before they are asked for.

Each :class:`Backend` puts NumPy data on its device, reads results back, synchronizes (so a
timing is honest) and knows its own least-squares solver and a bare ``X.T @ X`` to compare with.

A backend is named by its library and device (``torch-cuda``), or by its library alone for the
library's default device: ``jax`` is JAX's default device (a GPU where JAX has one), ``torch``
is PyTorch's, the CPU.
"""

from __future__ import annotations

import importlib
import os

import numpy as np

__all__ = [
    "ALL_NAMES", "LIBRARIES", "XLA_CPU_NO_DEADLOCK", "Backend", "BackendUnavailableError", "avoid_xla_cpu_deadlock",
    "find_backends", "unknown_names",
]  # fmt: skip

#: Every backend, as a library on one device (``jax-<platform>`` also accepts other JAX platforms).
ALL_NAMES = ("numpy", "array_api_strict", "dask", "jax-cpu", "jax-gpu", "torch-cpu", "torch-cuda", "cupy")
#: library name -> the module it is imported as; the name alone picks the library's default device.
LIBRARIES = {
    "numpy": "numpy",
    "array_api_strict": "array_api_strict",
    "dask": "dask.array",
    "jax": "jax",
    "torch": "torch",
    "cupy": "cupy",
}
DASK_BLOCKS = 4  # row blocks per Dask array


class BackendUnavailableError(Exception):
    """The backend cannot run here (not installed, no device); the message says why."""


class Backend:
    """One array library on one device.

    Attributes
    ----------
    name : str
        Library and device, as ``--backends`` spells it (``"torch-cuda"``).
    library : str
        The library alone (``"torch"``), a key of :data:`LIBRARIES`.
    xp : module
        The array namespace of its arrays (``array_api_compat.array_namespace``).
    device : object
        The device arrays are put on (``None`` where the library has one implicit device).
    device_name : str
        Human-readable device (GPU model where there is one).
    version : str
        The library's version.
    modes : tuple of str
        ``("eager",)``, or ``("eager", "jit")`` for JAX.
    default : bool
        On the library's default device (what the library's name alone picks).
    """

    def __init__(self, name, module, xp, device=None, device_name="cpu", modes=("eager",), version=None, default=True):
        self.name, self.module, self.xp, self.device = name, module, xp, device
        self.device_name, self.modes, self.default = device_name, modes, default
        self.version = version or getattr(module, "__version__", "?")
        self.library = name.split("-")[0]
        self._jitted = {}

    def __repr__(self):
        return f"Backend({self.name!r}, device={self.device_name!r})"

    # -- data ------------------------------------------------------------------------------
    def asarray(self, a, /, dtype=None):
        """The NumPy array (or array-like) ``a``, cast to ``dtype`` if given, as an array of this
        backend on its device; Dask arrays come in :data:`DASK_BLOCKS` row blocks."""
        a = np.asarray(a) if dtype is None else np.asarray(a).astype(dtype)
        if self.library == "dask":
            rows = -(-a.shape[0] // DASK_BLOCKS) if a.ndim else ()
            return self.module.from_array(a, chunks=(max(rows, 1),) + a.shape[1:] if a.ndim else ())
        if self.library == "jax":
            import jax

            # The default device uncommitted, as jnp.asarray makes it; another one committed.
            return jax.device_put(a, None if self.default else self.device)
        if self.device is not None:
            return self.xp.asarray(a, device=self.device)
        return self.xp.asarray(a)

    def to_numpy(self, x, /):
        """A result array (or one :meth:`finish` computed) as a NumPy array; ``None`` stays
        ``None``."""
        if x is None:
            return None
        if self.library == "dask":
            x = x.compute() if hasattr(x, "compute") else x
        elif self.library == "torch":
            x = x.detach().cpu().numpy()
        elif self.library == "cupy":
            x = x.get()
        elif self.library == "array_api_strict":
            x = np.asarray(x.to_device(self.module.asarray(0).device))
        return np.asarray(x)

    @property
    def lazy(self):
        """Results are computed only when read (Dask)."""
        return self.library == "dask"

    def finish(self, out, /):
        """Wait until ``out`` (an array, a tuple of arrays or None) is really computed."""
        if self.library == "jax":
            import jax

            return jax.block_until_ready(out)
        if self.library == "dask":
            import dask

            return dask.compute(out)[0]
        if self.name == "torch-cuda":
            self.module.cuda.synchronize()
        elif self.library == "cupy":
            self.module.cuda.Device().synchronize()
        return out

    # -- calls -----------------------------------------------------------------------------
    def fitter(self, func, mode, *, ridge=False):
        """``func`` (``lsq_backends.lstsq``, or ``ridge`` with ``ridge=True``) as called in
        ``mode``: JAX's jit mode wraps it in ``jax.jit`` with the options static."""
        if mode == "eager":
            return func
        import jax

        static = ("method", "rcond", "fit_intercept", "check_finite")
        if ridge:
            static = ("method", "fit_intercept", "check_finite", "per_target")
        key = (func, static)
        if key not in self._jitted:
            self._jitted[key] = jax.jit(func, static_argnames=static)
        return self._jitted[key]

    def native_lstsq(self, X, y, /):
        """A zero-argument call of this library's own least-squares solver on ``(X, y)``, or
        ``None`` where it has none for this shape."""
        batched = X.ndim == 3
        m, n = X.shape[-2:]
        if self.library == "numpy":
            if batched:
                return lambda: [np.linalg.lstsq(a, b, rcond=None)[0] for a, b in zip(X, y, strict=False)]
            return lambda: np.linalg.lstsq(X, y, rcond=None)[0]
        if self.library == "torch":
            # gelsd (the SVD, as NumPy) on the CPU; CUDA has only gels, for tall full-rank X.
            if self.name == "torch-cuda":
                return None if m < n else (lambda: self.module.linalg.lstsq(X, y[..., None]).solution)
            return lambda: self.module.linalg.lstsq(X, y[..., None], driver="gelsd").solution
        if self.library == "jax":
            import jax
            import jax.numpy as jnp

            solve = jax.vmap(jnp.linalg.lstsq) if batched else jnp.linalg.lstsq
            fn = self._jit_once(("lstsq", batched), lambda: jax.jit(lambda a, b: solve(a, b)[0]))
            return lambda: fn(X, y)
        if self.library == "cupy":
            return None if batched else (lambda: self.module.linalg.lstsq(X, y, rcond=None)[0])
        if self.library == "dask":
            # Dask's TSQR: tall X in row blocks only.
            return None if batched or m < n else (lambda: self.module.linalg.lstsq(X, y)[0])
        return None  # array-api-strict: the standard has no lstsq

    def gram(self, X, /):
        """A zero-argument call of a bare ``X.T @ X`` (full precision on JAX)."""
        if self.library == "jax":
            import jax
            import jax.numpy as jnp

            highest = jax.lax.Precision.HIGHEST
            fn = self._jit_once(
                "gram", lambda: jax.jit(lambda a: jnp.matmul(jnp.swapaxes(a, -1, -2), a, precision=highest))
            )
            return lambda: fn(X)
        xp = self.xp
        return lambda: xp.matmul(xp.matrix_transpose(X), X)

    def _jit_once(self, key, make):
        if key not in self._jitted:
            self._jitted[key] = make()
        return self._jitted[key]


def _import(module):
    try:
        return importlib.import_module(module)
    except Exception as exc:
        msg = f"{module} cannot be imported ({type(exc).__name__}: {exc})"
        raise BackendUnavailableError(msg) from exc


def _namespace(array):
    import array_api_compat

    return array_api_compat.array_namespace(array)


def _numpy():
    return [Backend("numpy", np, _namespace(np.empty(0)))]


def _strict():
    strict = _import("array_api_strict")
    # A device other than the default one: an array the library makes on the default device
    # fails when combined with the inputs, and the device check below sees it.
    try:
        device = strict.Device("device1")
    except Exception:  # noqa: BLE001 -- older releases have one device
        device = None
    label = "device1 (non-default)" if device is not None else "cpu"
    return [Backend("array_api_strict", strict, strict, device, label)]


def _dask():
    dask = _import("dask")
    da = _import("dask.array")
    return [Backend("dask", da, _namespace(da.empty(0)), None, "cpu (threaded scheduler)", version=dask.__version__)]


def _torch():
    torch = _import("torch")
    xp = _namespace(torch.empty(0))
    found = [Backend("torch-cpu", torch, xp, torch.device("cpu"), "cpu")]
    if torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
        found.append(Backend("torch-cuda", torch, xp, device, torch.cuda.get_device_name(device), default=False))
    return found


#: XLA's CPU runtime can stop for good inside a compiled fit (every thread idle, the result never
#: ready): the QR of a stack of 10000 64 x 8 problems hung in 2 of 2 runs of ten calls (``qr``,
#: ``svd``, ``auto``; jaxlib 0.10, 2 cores), in none of 6 with XLA's memory-minimizing scheduler.
XLA_CPU_NO_DEADLOCK = "--xla_cpu_enable_concurrency_optimized_scheduler=false"


def avoid_xla_cpu_deadlock():
    """Add :data:`XLA_CPU_NO_DEADLOCK` to ``XLA_FLAGS`` unless the caller chose that flag; XLA
    reads its flags when JAX first runs, so this works only before that."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_enable_concurrency_optimized_scheduler" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {XLA_CPU_NO_DEADLOCK}".strip()


def _jax():
    # Without this, JAX takes 75% of the GPU's memory when it starts, and CuPy or PyTorch in the
    # same process then run out of memory. Set before the first import of JAX only.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    avoid_xla_cpu_deadlock()
    jax = _import("jax")
    jax.config.update("jax_enable_x64", True)  # float64 checks need it; before any array
    import jax.numpy as jnp

    platforms = {"cpu": jax.devices("cpu")[0]}
    for device in jax.devices():
        platforms.setdefault(_jax_platform(device), device)
    found = []
    for platform, device in platforms.items():
        label = f"{device} {getattr(device, 'device_kind', '')}".strip()
        default = device == jax.devices()[0]
        found.append(Backend(f"jax-{platform}", jax, jnp, device, label, ("eager", "jit"), default=default))
    return found


def _jax_platform(device):
    return "gpu" if device.platform in ("gpu", "cuda", "rocm") else device.platform


def _cupy():
    cupy = _import("cupy")
    try:
        usable = cupy.cuda.is_available()
    except Exception as exc:
        msg = f"cupy is installed but CUDA is unusable ({type(exc).__name__}: {exc})"
        raise BackendUnavailableError(msg) from exc
    if not usable:
        msg = "cupy is installed but no CUDA device is usable"
        raise BackendUnavailableError(msg)
    device = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(device.id)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    return [Backend("cupy", cupy, _namespace(cupy.empty(0)), device, name)]


_FINDERS = {"numpy": _numpy, "array_api_strict": _strict, "dask": _dask, "torch": _torch, "jax": _jax, "cupy": _cupy}


def unknown_names(names):
    """The names in ``names`` that are no backend (``jax-<platform>`` is one for any platform)."""
    known = (*ALL_NAMES, *LIBRARIES)
    return [n for n in names if n not in known and not (n.startswith("jax-") and len(n) > 4)]


def find_backends(names=None):
    """The backends to run.

    Parameters
    ----------
    names : list of str, optional
        Backends asked for (:data:`ALL_NAMES`, or a library of :data:`LIBRARIES` for its
        default device); ``None``: every one that can run here.

    Returns
    -------
    backends : list of Backend
        In the order asked for (one per name).
    skipped : list of (name, reason)
        Not asked for by name and unable to run here.
    failed : list of (name, reason)
        Asked for by name and unable to run here.
    """
    if names is not None:
        unknown = unknown_names(names)
        if unknown:
            msg = f"unknown backend(s) {unknown}; choose from {', '.join((*ALL_NAMES, *LIBRARIES))}"
            raise ValueError(msg)
    wanted = list(ALL_NAMES) if names is None else list(dict.fromkeys(names))
    skipped, failed = [], []
    found = {}
    for library in dict.fromkeys(n.split("-")[0] for n in wanted):
        try:
            mine = _FINDERS[library]()
        except BackendUnavailableError as exc:
            for name in (n for n in wanted if n.split("-")[0] == library):
                (skipped if names is None else failed).append((name, str(exc)))
            continue
        found.update({b.name: b for b in mine})
        if library in wanted and library not in found:  # the library's name: its default device
            found[library] = next(b for b in mine if b.default)
        for name in (n for n in wanted if n.split("-")[0] == library):
            if name not in found:
                have = ", ".join(b.name for b in mine)
                (skipped if names is None else failed).append((name, f"{name}: no such device here (found {have})"))
    extra = [b for name, b in found.items() if names is None and name not in wanted]
    backends = [found[n] for n in wanted if n in found] + extra
    return backends, skipped, failed
