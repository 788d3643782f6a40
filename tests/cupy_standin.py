"""A stand-in for CuPy that runs on NumPy, for testing the CuPy branches without a GPU.

It reproduces what those branches depend on, from CuPy's and array-api-compat's sources:

- ``cupy``: the bare library (NumPy's functions; ``linalg.qr(mode="r")`` returns R alone, as
  CuPy's does; ``linalg.cholesky`` honours ``cupyx.errstate``: under ``linalg="raise"`` a
  failed factorization raises ``LinAlgError``, under the default ``"ignore"`` it returns
  what potrf left, the lower triangle of a partial factor, with no NaN).
- ``array_api_compat.cupy``: the namespace ``array_namespace`` gives for CuPy arrays, made of
  array-api-compat's NumPy wrappers, which are the same generic code it runs on CuPy (its
  ``linalg.qr`` unpacks the library's result into ``QRResult(*...)``).
- ``cupyx.errstate``, ``cupyx.scatter_add`` and ``cupyx.scipy.linalg``.
- ``cupy._core._routines_linalg``: the private per-dtype compute type of matrix products
  (``COMPUTE_TYPE_*`` with CuPy's values, ``get_compute_type``/``set_compute_type``).
- ``cupy.cuda.Device``: a context manager that records which device is current, and
  ``cupy.ndarray``: a NumPy array on such a device.
- ``array_api_compat.cupy.sign``: array-api-compat's, which puts NaN back through a boolean mask,
  whose count CuPy reads on the host; each call is counted in ``host_reads``.
- ``linalg.svd`` (:func:`cusolver_svd`): CuPy's calls of cuSOLVER (``cupy/linalg/_decomposition.py``,
  ``cupy/cusolver.pyx``). gesvd gets the C-order copy read in column-major order: x^T where x has at least
  as many columns as rows, x where it is tall; a stack of matrices up to 32 x 32 goes to gesvdj in its own
  orientation. LAPACK's gesvd stands in for cuSOLVER's (``unscaled=True``: :func:`unscaled_svd`, an SVD that
  computes with the entries as given, as cuSOLVER's does and LAPACK's drivers do not).
"""

from __future__ import annotations

import contextlib
import sys
import types

import array_api_compat.numpy as compat_numpy
import numpy as np
import scipy.linalg
from array_api_compat._internal import get_xp
from array_api_compat.common import _aliases

# cupy/_core/_routines_linalg.pyx
COMPUTE_TYPES = {"DEFAULT": 1, "PEDANTIC": 2, "FP16": 3, "FP32": 4, "FP64": 5, "BF16": 6, "TF32": 7}


def _public(module):
    return {k: v for k, v in vars(module).items() if not k.startswith("__")}


class Device:
    """``cupy.cuda.Device``: entering it makes it current (recorded in ``current``)."""

    current: list = [0]

    def __init__(self, id=0):
        self.id = id

    def __enter__(self):
        Device.current.append(self.id)
        return self

    def __exit__(self, *exc):
        Device.current.pop()

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


class ndarray(np.ndarray):  # noqa: N801 (CuPy's name: array-api-compat tests for cupy.ndarray)
    """A CuPy array: a NumPy array on a :class:`Device` (``device_id``)."""

    def __new__(cls, a, device_id=0):
        obj = np.asarray(a).view(cls)
        obj.device_id = device_id
        return obj

    def __array_finalize__(self, obj):
        self.device_id = getattr(obj, "device_id", 0)

    @property
    def device(self):
        return Device(self.device_id)


class StandIn(types.SimpleNamespace):
    """The installed stand-in: ``bare``, ``xp``, ``errstate`` (the current ``linalg`` mode),
    ``compute_type`` (float32's), ``linalg_routines``, ``host_reads`` (see the module docstring)."""


def unscaled_svd(a):
    """Thin SVD (u, s, vh) of tall ``a`` by one-sided Jacobi on the entries as given: its sums of squares underflow
    for entries below ~1e-154 (at 1e-300 it sees a zero matrix: s = 0, u NaN), where LAPACK's drivers scale first.
    Relatively accurate at ordinary scales."""
    a = np.array(a, dtype=np.float64)
    n = a.shape[1]
    v = np.eye(n)
    eps = np.finfo(np.float64).eps
    for _ in range(50):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                alpha, beta, gamma = a[:, i] @ a[:, i], a[:, j] @ a[:, j], a[:, i] @ a[:, j]
                if abs(gamma) <= eps * np.sqrt(alpha) * np.sqrt(beta):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2 * gamma)
                t = np.sign(zeta) / (abs(zeta) + np.hypot(1.0, zeta)) if zeta else 1.0
                c = 1 / np.hypot(1.0, t)
                rot = np.array([[c, c * t], [-c * t, c]])
                a[:, [i, j]] = a[:, [i, j]] @ rot
                v[:, [i, j]] = v[:, [i, j]] @ rot
        if not rotated:
            break
    s = np.sqrt(np.sum(a * a, axis=0))
    order = np.argsort(-s, kind="stable")
    with np.errstate(divide="ignore", invalid="ignore"):
        return a[:, order] / s[order], s[order], v[:, order].T


def cusolver_svd(a, full_matrices=True, *, unscaled=False):
    """``cupy.linalg.svd(a, full_matrices=False)`` as CuPy calls cuSOLVER (module docstring), on NumPy."""
    assert not full_matrices, "the stand-in takes thin SVDs only"
    a = np.asarray(a)
    rows, cols = a.shape[-2:]
    if a.ndim > 2 and rows <= 32 and cols <= 32:  # gesvdj, on a itself
        return np.linalg.svd(a, full_matrices=False)
    gesvd = unscaled_svd if unscaled else (lambda t: scipy.linalg.svd(t, full_matrices=False, lapack_driver="gesvd"))

    def one(b):
        if cols >= rows:  # the column-major copy is b^T = U S V^T: b = V S U^T
            u, s, vh = gesvd(b.T)
            return vh.T, s, u.T
        return gesvd(b)

    flat = [one(b) for b in a.reshape((-1, rows, cols))]
    return tuple(np.stack(f).reshape(a.shape[:-2] + f[0].shape) for f in zip(*flat, strict=True))


def install(monkeypatch, *, compute_type="DEFAULT", compute_api=True, unscaled_svd=False):
    """Put the stand-in modules into ``sys.modules`` (undone by ``monkeypatch``)."""
    state = StandIn(errstate="ignore", compute_type=COMPUTE_TYPES[compute_type], host_reads=0)

    def svd(a, full_matrices=True):
        return cusolver_svd(a, full_matrices, unscaled=unscaled_svd)

    def cholesky(a):
        c, info = scipy.linalg.lapack.dpotrf(np.asarray(a, dtype=np.float64), lower=1, clean=1)
        if info > 0 and state.errstate == "raise":
            raise np.linalg.LinAlgError(f"Error reported by potrf in cuSOLVER. devInfo = {info}")
        return np.tril(c).astype(a.dtype)

    bare = types.ModuleType("cupy")
    vars(bare).update(_public(np))
    bare.linalg = types.SimpleNamespace(**{**_public(np.linalg), "cholesky": cholesky, "svd": svd})
    bare.cuda = types.SimpleNamespace(Device=Device, runtime=types.SimpleNamespace(is_hip=False))
    bare.ndarray = ndarray
    bare.__version__ = "14.0.0"

    xp = types.ModuleType("array_api_compat.cupy")
    vars(xp).update(_public(compat_numpy))
    generic_sign = get_xp(bare)(_aliases.sign)  # array_api_compat/cupy/_aliases.py

    def sign(x, /, **kwargs):
        state.host_reads += 1  # it writes NaN back through a boolean mask, whose count CuPy reads
        return generic_sign(x, **kwargs)

    xp.sign = sign
    xp.linalg = types.SimpleNamespace(**{**_public(compat_numpy.linalg), "cholesky": cholesky, "svd": svd})

    @contextlib.contextmanager
    def errstate(linalg=None):
        before = state.errstate
        if linalg is not None:
            state.errstate = linalg
        try:
            yield
        finally:
            state.errstate = before

    cupyx = types.ModuleType("cupyx")
    cupyx.errstate = errstate
    cupyx.scatter_add = np.add.at  # cupyx.scatter_add(a, indices, values): NumPy's unbuffered add
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.linalg = scipy.linalg

    routines = types.ModuleType("cupy._core._routines_linalg")
    if compute_api:
        for name, value in COMPUTE_TYPES.items():
            setattr(routines, f"COMPUTE_TYPE_{name}", value)
        routines.get_compute_type = lambda dtype: state.compute_type
        routines.set_compute_type = lambda dtype, ct: setattr(state, "compute_type", ct)
    core = types.ModuleType("cupy._core")
    core._routines_linalg = routines
    bare._core = core
    state.bare, state.xp, state.linalg_routines = bare, xp, routines
    modules = {
        "cupy": bare, "cupy._core": core, "cupy._core._routines_linalg": routines,
        "cupyx": cupyx, "cupyx.scipy": cupyx.scipy, "cupyx.scipy.linalg": scipy.linalg,
    }  # fmt: skip
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return state
