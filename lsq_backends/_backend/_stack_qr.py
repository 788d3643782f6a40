"""Householder QR of stacks of small tall matrices as array operations over the whole stack, for
the libraries whose own QR of a stack is a loop of solver calls: part of the :mod:`._compat`
layer (reached through ``_factorizations.qr``, ``qr_apply`` and ``qr_implicit``).

Quirk (``loops_over_stacks``): CuPy's ``linalg.qr`` of a stack runs cuSOLVER's geqrf and then
orgqr once per matrix (``cupyx/_cusolver.pyx``, ``_geqrf_orgqr_batched``: a C loop, one call
each), and PyTorch's CUDA ``ormqr`` and ``orgqr`` do the same (``apply_ormqr``/``apply_orgqr``
in ATen's ``BatchLinearAlgebraLib.cpp``; its ``geqrf`` is cuBLAS's batched one for m <= 256).
Each solver call costs about as much whatever the matrix's size, so a stack of many small
problems pays it once a matrix: float32 ``auto`` and ``svd``, whose condition gates send float32
stacks to Householder QR, took 25-90 times their float64 fits (design notes).

Where the stack holds more matrices than they have columns, the n reflector steps run instead
as array operations on the whole stack, a dozen kernel launches a column. The algorithm is
LAPACK's (geqr2, dlarfg, dorm2r), the same reflectors and the same R up to rounding: reflector
j maps column j of the trailing matrix ``[alpha; x]`` to ``beta e_1``, ``beta = -sign(alpha)
||[alpha; x]||`` (sign(0) = +1), ``H = I - tau v v^T``, ``v = [1; x / (alpha - beta)]``, ``tau =
(beta - alpha) / beta``, and ``H = I`` (tau = 0) where x is zero. The norm is scaled by the
column's largest entry (LAPACK's dnrm2 and dlapy2 neither overflow nor underflow either). On
PyTorch the reflectors come from ``torch.geqrf`` (batched) and only their application is
written out here.
"""

from __future__ import annotations

import math

import array_api_compat as _aac
import numpy as _np

from ._products import matmul

device = _aac.device


def loops_over_stacks(xp, x) -> bool:
    """True where the library's QR of the tall stack ``x`` (..., m, n) would loop over its matrices
    (module docstring) and the stack has more matrices than columns: the n steps over the
    whole stack are then fewer launches than the per-matrix calls."""
    if x.ndim < 3:
        return False
    m, n = x.shape[-2:]
    if not 0 < n <= m or math.prod(x.shape[:-2]) < max(n, 2):
        return False
    if _aac.is_cupy_namespace(xp):
        return True
    return _aac.is_torch_namespace(xp) and torch_on_cuda(x)


def torch_on_cuda(x) -> bool:
    """``x`` is a CUDA tensor (a function of its own, so that tests on the CPU can say yes)."""
    return x.device.type == "cuda"


def householder_stack(xp, x):
    """Householder QR of the tall stack ``x`` (..., m, n): ``(R (..., n, n), reflectors)``, reflector j
    a pair ``(v (..., m - j), tau (...,))`` with ``v[..., 0] = 1`` (module docstring)."""
    n = x.shape[-1]
    batch = tuple(x.shape[:-2])
    a = x
    rows, reflectors = [], []
    for j in range(n):
        col = a[..., :, 0]
        alpha = col[..., 0]
        one = xp.ones_like(alpha)
        if col.shape[-1] > 1:
            rest = col[..., 1:]
            big = xp.max(xp.abs(rest), axis=-1)
            keep = big == 0  # nothing below the diagonal: H = I (LAPACK's tau = 0); NaN: False
            c = xp.maximum(big, xp.abs(alpha))
            c = xp.where(c > 0, c, one)
            s = col / c[..., None]
            hyp = c * xp.sqrt(xp.sum(s * s, axis=-1))
            beta = xp.where(alpha >= 0, -hyp, hyp)
            tau = xp.where(keep, xp.zeros_like(alpha), (beta - alpha) / xp.where(keep, one, beta))
            v = xp.concat([one[..., None], rest / xp.where(keep, one, alpha - beta)[..., None]], axis=-1)
            diag = xp.where(keep, alpha, beta)
        else:  # the last column of a square matrix: nothing below it
            tau, v, diag = xp.zeros_like(alpha), one[..., None], alpha
        reflectors.append((v, tau))
        trail = a[..., :, 1:]
        if trail.shape[-1] > 0:
            trail = _reflect(xp, v, tau, trail)
        row = [diag[..., None], trail[..., 0, :]]
        if j:
            row.insert(0, xp.zeros((*batch, j), dtype=x.dtype, device=device(x)))
        rows.append(xp.concat(row, axis=-1))
        a = trail[..., 1:, :]
    return xp.stack(rows, axis=-2), reflectors


def lapack_reflectors(xp, h, tau):
    """The reflectors of LAPACK's compact form (geqrf's ``h``, v_j below its diagonal, and ``tau``
    (..., n)) as :func:`householder_stack` returns them."""
    one = xp.ones_like(h[..., :1, 0])
    return [(xp.concat([one, h[..., j + 1 :, j]], axis=-1), tau[..., j]) for j in range(h.shape[-1])]


def _reflect(xp, v, tau, c):
    """``(I - tau v v^T) c`` for ``c`` (..., len(v), k)."""
    w = matmul(xp, v[..., None, :], c)  # (..., 1, k)
    return c - v[..., :, None] * (tau[..., None, None] * w)


def apply_qt(xp, reflectors, c):
    """``(Q^T c)[..., :n, :]`` for ``c`` (..., m, k), Q = H_1 ... H_n: H_1 first, and row j is final
    once H_j is applied (the later reflectors act on the rows below it)."""
    out, cur = [], c
    for v, tau in reflectors:
        cur = _reflect(xp, v, tau, cur)
        out.append(cur[..., :1, :])
        cur = cur[..., 1:, :]
    return xp.concat(out, axis=-2)


def apply_q(xp, reflectors, c, m):
    """``Q @ c`` (..., m, k) for ``c`` (..., n, k): H_n first, on ``[c; 0]``, each reflector
    acting on the rows from its own down."""
    n = len(reflectors)
    batch = tuple(_np.broadcast_shapes(tuple(reflectors[0][0].shape[:-1]), tuple(c.shape[:-2])))
    c = xp.broadcast_to(c, (*batch, n, c.shape[-1]))
    cur = xp.zeros((*batch, m - n, c.shape[-1]), dtype=c.dtype, device=device(c))
    for j in range(n - 1, -1, -1):
        v, tau = reflectors[j]
        cur = _reflect(xp, v, tau, xp.concat([c[..., j : j + 1, :], cur], axis=-2))
    return cur
