"""Triangular solves and inverses, which the array API standard lacks: part of the
:mod:`._compat` layer (solvers reach these through it).

Each library's own solver is used where it has one (SciPy, jax.scipy, cupyx, torch). Stacks of
small triangles on NumPy are solved by substitution vectorized over the stack. Every other
library gets the standard fallback, LU of the triangle.

``_substitute``: the substitution is written with elementwise operations over the whole stack,
n**2 / 2 array operations in all. NumPy's batched LU (``linalg.solve``) would pay a few
microseconds per matrix instead. Backward stable, as any substitution.

``batch_last``: NumPy's elementwise operations on a strided entry ``a[..., i, j]`` of a stack
are far slower than on a contiguous vector (design notes). Flattening the stack, problems last,
forces one copy instead.
"""

from __future__ import annotations

import array_api_compat as _aac

from ._control import lapack_in_order
from ._dask_blocks import dask_solve_triangular
from ._devices import eye_like
from ._precision import full_float32


def scipy_for(xp):
    """The SciPy-like module that has ``solve_triangular`` for ``xp``, or None."""
    if _aac.is_numpy_namespace(xp):
        try:  # SciPy is optional: NumPy alone has no triangular solve.
            import scipy.linalg
        except ImportError:
            return None
        return scipy.linalg
    if _aac.is_jax_namespace(xp):
        import jax.scipy.linalg

        return jax.scipy.linalg
    if _aac.is_cupy_namespace(xp):
        import cupyx.scipy.linalg

        return cupyx.scipy.linalg
    return None


def solve_triangular(xp, a, b, *, lower: bool):
    """Solve ``a @ x = b`` for triangular stacks ``a`` (..., n, n) and ``b`` (..., n, k).

    The standard has no triangular solve; each library's own is reached here.
    """
    if _aac.is_torch_namespace(xp):
        # torch.linalg.solve_triangular needs a matrix right-hand side (b is always 2-D here).
        # Quirk: on CUDA it is cuBLAS's trsm, on the handle torch switches to TF32 math with
        # the matmul precision: float32 solves (the X-sized one of shifted CholeskyQR3) are
        # guarded as products are (``_precision``).
        import torch

        with full_float32(xp, a, b):
            return torch.linalg.solve_triangular(a, b, upper=not lower)
    if _aac.is_dask_namespace(xp):
        # dask.array.linalg.solve_triangular is 2-D only and needs matching square chunks;
        # the triangle is small, so solve it as one block with SciPy.
        a = a.rechunk({-2: -1, -1: -1})
        b = b.rechunk({-2: -1, -1: -1})
        return dask_solve_triangular(a, b, lower)
    lapack = numpy_lapack(xp, "trtrs", a, b)
    if lapack is not None:
        # One LAPACK call: scipy.linalg.solve_triangular's validation and dispatch cost more
        # than the solve at the sizes of a small fit (design notes).
        x, info = lapack(a, b, lower=lower)
        if info > 0:
            import numpy as np

            msg = f"singular triangular matrix: zero diagonal entry {info}"
            raise np.linalg.LinAlgError(msg)
        return x
    sp = scipy_for(xp)
    if sp is not None and a.ndim > 2 and _aac.is_cupy_namespace(xp) and _cupy_batched_solve():
        # cupyx's solve_triangular takes stacks (one batched cuBLAS call) since CuPy 14.
        batch = tuple(xp.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
        a = xp.ascontiguousarray(xp.broadcast_to(a, batch + tuple(a.shape[-2:])))
        b = xp.ascontiguousarray(xp.broadcast_to(b, batch + tuple(b.shape[-2:])))
        return sp.solve_triangular(a, b, lower=lower, check_finite=False)
    if sp is not None and (a.ndim == 2 or _aac.is_jax_namespace(xp)):
        # jax.scipy broadcasts over stacks in one kernel. SciPy (>= 1.15) accepts stacks but
        # loops over them in Python (design notes), and cupyx's is 2-D only: stacks take the
        # standard paths below instead. JAX's stacks on a CPU: one LAPACK routine at a time (``lapack_in_order``).
        if _aac.is_jax_namespace(xp):
            return lapack_in_order(xp, sp.solve_triangular, a, b, lower=lower, check_finite=False)
        return sp.solve_triangular(a, b, lower=lower, check_finite=False)
    if _substitutes(xp, a, b):
        return _substitute(xp, a, b, lower)
    # Standard fallback: LU on a triangular matrix needs no row exchanges and is backward stable.
    return xp.linalg.solve(a, b)


def numpy_lapack(xp, name, a, b=None):
    """SciPy's LAPACK routine ``name`` for a 2-D NumPy ``a`` of float32 or float64 (and ``b``, 2-D of at least one
    column and ``a``'s dtype), else None (no SciPy, another library, dtype or shape). Looked up once per routine and
    dtype: ``get_lapack_funcs`` costs about half the routine on a small factor (design notes)."""
    if not (_aac.is_numpy_namespace(xp) and a.ndim == 2):
        return None
    if b is not None and (b.ndim != 2 or b.shape[-1] == 0 or b.dtype != a.dtype):
        return None
    key = (name, a.dtype)
    fn = _LAPACK.get(key, _LAPACK)
    if fn is _LAPACK:  # not looked up yet
        fn = None
        if a.dtype.kind == "f" and a.dtype.itemsize in (4, 8) and scipy_for(_np_namespace()) is not None:
            from scipy.linalg import lapack

            fn = lapack.get_lapack_funcs((name,), dtype=a.dtype)[0]
        _LAPACK[key] = fn
    return fn


_LAPACK: dict = {}


def _np_namespace():
    import numpy as np

    return np


def _cupy_batched_solve():
    import cupy

    return int(cupy.__version__.split(".")[0]) >= 14


def cho_solve(xp, L, b, *, Lt=None):
    """Solve ``L L^T x = b`` for lower Cholesky factors ``L`` (..., n, n), ``b`` (..., n, k). ``Lt``, if
    given, is ``batch_last(xp, L)``. On stacks of small factors the two sweeps share that one copy
    of the stack (and so does the condition estimate, ``rank.condition_estimate``)."""
    lapack = numpy_lapack(xp, "potrs", L, b)
    if lapack is not None:  # both sweeps in one LAPACK call
        return lapack(L, b, lower=True)[0]
    if _aac.is_torch_namespace(xp) and L.ndim == b.ndim:
        # One operator where two triangular solves took two (each a kernel launch and a Python dispatch on a GPU).
        import torch

        if L.dtype == torch.float64 == b.dtype:  # no precision to force
            return torch.cholesky_solve(b, L)
        with full_float32(xp, L, b):
            return torch.cholesky_solve(b, L)
    if _substitutes(xp, L, b):
        if Lt is None and tuple(L.shape[:-2]) == tuple(b.shape[:-2]):
            Lt = batch_last(xp, L)  # one copy for both sweeps
        z = _substitute(xp, L, b, True, at=Lt)
        return _substitute(xp, L, z, False, at=Lt, transpose=True)
    z = solve_triangular(xp, L, b, lower=True)
    return solve_triangular(xp, xp.linalg.matrix_transpose(L), z, lower=False)


# Stacks of triangles up to this size are solved by substitution vectorized over the stack.
SMALL_STACK = 16


def _substitutes(xp, a, b):
    """Stacks of small triangles and one right-hand side, on libraries without a batched
    triangular solve of their own (NumPy, CuPy before 14, array-api-strict): substitution."""
    own = _aac.is_torch_namespace(xp) or _aac.is_dask_namespace(xp) or _aac.is_jax_namespace(xp)
    own = own or (_aac.is_cupy_namespace(xp) and _cupy_batched_solve())
    return not own and a.ndim > 2 and a.shape[-1] <= SMALL_STACK and b.shape[-1] == 1


def _substitute(xp, a, b, lower, *, at=None, transpose=False):
    """Forward (or back) substitution for a stack of small triangles and one right-hand side,
    elementwise over the whole stack (module docstring). ``transpose`` solves with ``a^T`` (``lower``
    then describes ``a^T``); ``at`` is ``batch_last(a)`` if the caller already has it."""
    n = a.shape[-1]
    batch = tuple(a.shape[:-2]) if a.ndim >= b.ndim else tuple(b.shape[:-2])
    if at is None or tuple(a.shape[:-2]) != batch:
        at = batch_last(xp, xp.broadcast_to(a, batch + (n, n)))
    bt = batch_last(xp, xp.broadcast_to(b, batch + (n, 1)))
    entry = (lambda i, j: at[j, i, ...]) if transpose else (lambda i, j: at[i, j, ...])  # noqa: E731
    rows = [None] * n
    for i in range(n) if lower else range(n - 1, -1, -1):
        s = bt[i, 0, ...]
        for j in range(i) if lower else range(i + 1, n):
            s = s - entry(i, j) * rows[j]
        rows[i] = s / at[i, i, ...]
    return xp.reshape(xp.stack(rows, axis=-1), batch + (n, 1))


def batch_last(xp, a):
    """The stack ``a`` (..., p, q) as a (p, q, N) array, the N = prod(...) problems along its last,
    contiguous axis. One copy, for code that works entry by entry over a whole stack (module
    docstring)."""
    p, q = a.shape[-2:]
    flat = xp.reshape(a, (-1, p, q))
    return xp.reshape(xp.reshape(xp.permute_dims(flat, (1, 2, 0)), (-1,)), (p, q, flat.shape[0]))


# Triangles up to this size are inverted by SciPy's LAPACK (trtri) on NumPy: a single-threaded
# call at these sizes, cheaper than numpy.linalg.inv's dispatch (design notes).
LAPACK_SMALL = 32


def inverse_diagonal(xp, L):
    """The diagonal of ``(L L^T)^-1`` (..., n) for lower Cholesky factors ``L`` (..., n, n): the squared
    column norms of ``L^-1``. PyTorch: ``cholesky_inverse``, one operator where the triangular inverse,
    its identity, the squares and their sum took five (NaN where its CPU kernel refuses a zero pivot, a
    failed factor)."""
    if _aac.is_torch_namespace(xp):
        import torch

        try:
            return torch.linalg.diagonal(torch.cholesky_inverse(L))
        except RuntimeError:  # a zero pivot (CPU): the factorization failed
            return torch.full(L.shape[:-1], float("nan"), dtype=L.dtype, device=L.device)
    Li = triangular_inverse(xp, L, lower=True)
    return xp.sum(Li * Li, axis=-2)


def triangular_inverse(xp, a, *, lower: bool):
    """Inverse of the triangular stack ``a``."""
    if 0 < a.shape[-1] <= LAPACK_SMALL:
        trtri = numpy_lapack(xp, "trtri", a)
        if trtri is not None:
            inv, info = trtri(a, lower=int(lower))
            if info == 0:
                return inv
    if _aac.is_numpy_namespace(xp):
        # NumPy's own LAPACK, not SciPy's: SciPy's OpenBLAS is a second thread pool whose
        # spinning threads slow the next NumPy matrix product (design notes).
        return xp.linalg.inv(a)
    eye = xp.broadcast_to(eye_like(xp, a, a.shape[-1]), tuple(a.shape))
    return solve_triangular(xp, a, eye, lower=lower)
