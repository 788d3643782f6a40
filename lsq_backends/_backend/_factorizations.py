"""Factorizations (Cholesky, QR, SVD, eigh) and the triangular solves and inverses that use their
factors, as each array library needs them called: part of the :mod:`._compat` layer. One module, as in
LAPACK: both look up the same routines (:func:`numpy_lapack`). Each function names the quirk it handles
(how a library reports failure, which route avoids forming Q) and ends in the standard call.

``cholesky``: callers check the diagonal of the factor (positive, finite) instead of catching
exceptions, which would not work under ``jax.jit`` and would differ across libraries.

``checked_cholesky``: the factor is tested on the device (no host read), in O(p^2). Its pivots
must be positive and finite, and its rows' squared norms must reproduce diag(a). That holds for
a true factor up to rounding (~p eps); it is off by O(1) in the rows a failed factorization never
reached.

``svd``: after :func:`qr_implicit` on NumPy the factor went through SciPy's LAPACK, so SciPy's
SVD follows it. NumPy and SciPy ship separate OpenBLAS thread pools. Switching pools between two
calls costs the wait of the other pool's spinning threads (design notes).

``cupy_svd``: CuPy's 2-D SVD (and that of a stack past 32 x 32) is cuSOLVER's gesvd on a C-order copy
read as a column-major matrix (``cupy/linalg/_decomposition.py``): x^T where x has at least as many
columns as rows, x itself where it is tall. For square x cuSOLVER factors x^T, where NumPy's LAPACK
factors x. The SVD of a graded triangular factor keeps its relative accuracy only in LAPACK's
orientation: the first reflector of the bidiagonalization then spans one column of R (a tiny corner
stays exact), not a row that mixes it with entries 1e200 times larger. Transposed (GPU run, reproduced
with LAPACK's gesvd on x^T), NIST Pontius lost 6 digits (5.7 against 12.2) and the condition number of
diagnostics' [1, X] at X ~ 1e200 came out 1.45e17 instead of 1.19e202. So x^T is handed over and the
factors swapped back (small stacks go to gesvdj in x's own orientation: left alone). LAPACK's SVD
drivers also scale a matrix whose largest entry lies outside [sqrt(safmin) / eps, its inverse] before
factoring it; cuSOLVER documents no such step, and its SVD of a 4 x 4 factor at 1e-300 (ridge at X ~
1e-300, alpha = 1: the penalty sets the problem's scale, X keeps its own) erred by 4e-14 and 6e-12 where
NumPy's by 4e-15 and 4e-16, while the Householder QR of the same X (``qr`` ridge) passed. So each matrix
is divided by the power of two of its largest entry (exact) and its singular values are multiplied back.

``qr``, ``qr_apply``, ``qr_implicit`` of stacks of small matrices on CuPy and CUDA PyTorch:
the library's QR loops over the matrices, one solver call each; Householder's steps run over the
whole stack instead (:mod:`._stack_qr`).

``retry_on_cpu``: torch's CUDA eigh and svd (cuSOLVER's Jacobi and QR-iteration drivers) raise
on matrices the CPU's LAPACK factors (clustered or tiny singular values). The matrices here are
small (p x p), so the retry costs one round trip of p^2 numbers, on failure only.

**Triangular solves and inverses**, which the array API standard lacks: each library's own solver
is used where it has one (SciPy, jax.scipy, cupyx, torch); every other library gets the standard
fallback, LU of the triangle; stacks of small triangles on libraries without a batched triangular
solve: :mod:`._small_stacks`.
"""

from __future__ import annotations

import array_api_compat as _aac

from ._control import lapack_in_order
from ._dask_blocks import (
    dask_per_matrix,
    dask_solve_triangular,
    dask_tsqr_apply,
    numpy_eigh,
    numpy_qr,
    numpy_safe_cholesky,
    numpy_svd,
)
from ._devices import eye_like
from ._precision import full_float32
from ._products import dots, matmul
from ._small_stacks import (
    batch_last,
    cupy_batched_solve,
    inverts_by_rows,
    stack_inverse,
    substitute,
    substitutes,
)
from ._stack_qr import apply_q, apply_qt, householder_stack, lapack_reflectors, loops_over_stacks

device = _aac.device


def _nan_like(xp, a):
    return xp.full(a.shape, float("nan"), dtype=a.dtype, device=device(a))


def _is_linalg_error(exc: BaseException) -> bool:
    # numpy.linalg.LinAlgError (NumPy, CuPy, array-api-strict) and torch's _LinAlgError.
    return any(t.__name__.endswith("LinAlgError") for t in type(exc).__mro__)


def checked_cholesky(xp, L, a):
    """``L`` where it is the Cholesky factor of ``a``, NaN where the factorization failed. A failure
    leaves a partial factor, LAPACK-style: a non-positive pivot where it stopped, the untouched
    input below it. Tested on the device in O(p^2) (module docstring)."""
    d = xp.linalg.diagonal(L)
    diag_a = xp.linalg.diagonal(a)
    rows = xp.sum(L * L, axis=-1)
    tol = 64 * xp.finfo(a.dtype).eps * a.shape[-1]
    good = xp.all((d > 0) & xp.isfinite(d) & (xp.abs(rows - diag_a) <= tol * xp.abs(diag_a)), axis=-1)
    return xp.where(good[..., None, None], L, _nan_like(xp, a))


def cholesky_ex(xp, a):
    """``(L, info)``: the lower Cholesky factor of the stack ``a`` and, where the library reports failures
    per matrix without a synchronization (PyTorch's ``cholesky_ex``), its integer ``info`` (0: success),
    else None, the failure then NaN in ``L`` (:func:`cholesky`). One operator on PyTorch, where
    :func:`cholesky` adds the selection of a NaN factor."""
    if _aac.is_torch_namespace(xp):
        import torch

        return torch.linalg.cholesky_ex(a)
    return cholesky(xp, a), None


def cholesky(xp, a):
    """Lower Cholesky factor of the stack ``a``; NaN instead of an exception where it fails (callers
    check the factor's diagonal; module docstring)."""
    if _aac.is_jax_namespace(xp):
        # JAX already returns NaN for a matrix that is not positive definite.
        return lapack_in_order(xp, xp.linalg.cholesky, a)
    if _aac.is_torch_namespace(xp):
        # torch.linalg.cholesky raises; cholesky_ex reports failures per matrix without a sync.
        import torch

        L, info = torch.linalg.cholesky_ex(a)
        return xp.where((info == 0)[..., None, None], L, _nan_like(xp, a))
    if _aac.is_dask_namespace(xp):
        # Quirk: dask's cholesky returns the UPPER factor, needs square chunks and raises inside
        # compute() on failure. The Gram matrix is small: factor it as one block with NumPy.
        a = a.rechunk({-2: -1, -1: -1})
        return a.map_blocks(numpy_safe_cholesky, dtype=a.dtype)
    if _aac.is_cupy_namespace(xp):
        # Quirk: under CuPy's default error state a failed factorization raises nothing and
        # returns the lower triangle of whatever cuSOLVER left, not NaN. Reading cuSOLVER's
        # info would synchronize: the factor is tested on the device instead. A caller's
        # ``cupyx.errstate(linalg="raise")`` would read that info (a synchronization) and
        # raise out of the fallback a singular Gram matrix takes: factor under "ignore".
        import cupyx

        with cupyx.errstate(linalg="ignore"):
            L = xp.linalg.cholesky(a)
        return checked_cholesky(xp, L, a)
    if 0 < a.shape[-1] <= LAPACK_SMALL:
        # Small NumPy factors: SciPy's LAPACK potrf, cheaper than numpy.linalg.cholesky's
        # dispatch (design notes); a failure (info > 0) is NaN as below.
        potrf = numpy_lapack(xp, "potrf", a)
        if potrf is not None:
            L, info = potrf(a, lower=1, clean=1)
            return L if info == 0 else _nan_like(xp, a)
    try:
        # NumPy, CuPy and array-api-strict raise LinAlgError (CuPy returns NaN unless its
        # errstate says 'raise'); the caller's diagonal check covers both.
        return xp.linalg.cholesky(a)
    except Exception as exc:  # noqa: BLE001 -- re-raised below unless it is a LinAlgError
        if not _is_linalg_error(exc):
            raise
        return _nan_like(xp, a)


def qr(xp, x):
    """Reduced QR of the stack ``x`` (..., m, n) with m >= n: (Q (..., m, n), R (..., n, n))."""
    if loops_over_stacks(xp, x) and not _needs_grad(x):
        # Quirk: CuPy's and CUDA torch's QR of a stack loop over its matrices (module
        # docstring); Q is formed from the reflectors applied to the identity.
        r, reflectors = _stack_reflectors(xp, x)
        n = x.shape[-1]
        eye = xp.broadcast_to(eye_like(xp, x, n), tuple(r.shape))
        return apply_q(xp, reflectors, eye, x.shape[-2]), r
    if _aac.is_dask_namespace(xp):
        if x.ndim > 2 or x.numblocks[0] == 1:
            # Quirk: a one-block input goes through delayed in dask's qr/svd, which copies the
            # whole upstream graph under new keys (it was computed twice); small: one NumPy call.
            return dask_per_matrix(numpy_qr, "(m,n)->(m,p),(p,n)", x, 2, x.shape[-1])
        # Quirk: dask's TSQR needs one chunk across the columns.
        x = x.rechunk({1: -1})
    if _aac.is_jax_namespace(xp):  # stacks on a CPU: one LAPACK routine at a time
        return lapack_in_order(xp, xp.linalg.qr, x, mode="reduced")
    q, r = xp.linalg.qr(x, mode="reduced")
    return q, r


def qr_implicit(xp, x):
    """Reduced QR of the tall stack ``x`` (..., m, n), m >= n: ``(R, q_times)`` with ``q_times(c) =
    Q @ c`` for ``c`` (..., n, k). Q is applied from its Householder reflectors (LAPACK's ormqr)
    where the library can. Forming Q (orgqr) costs about as much as the factorization, and the
    wide solvers only ever need Q times a small matrix."""
    m, n = x.shape[-2:]
    if loops_over_stacks(xp, x):
        # Quirk: CuPy's QR and CUDA torch's ormqr loop over a stack's matrices (module docstring).
        r, reflectors = _stack_reflectors(xp, x)
        return r, lambda c: apply_q(xp, reflectors, c, m)
    if _aac.is_torch_namespace(xp):
        import torch

        h, tau = torch.geqrf(x)

        def q_times(c):
            pad = torch.zeros((*c.shape[:-2], m - n, c.shape[-1]), dtype=c.dtype, device=c.device)
            return torch.ormqr(h, tau, torch.cat([c, pad], dim=-2), left=True, transpose=False)

        return torch.triu(h[..., :n, :]), q_times
    if _aac.is_numpy_namespace(xp) and x.ndim == 2 and min(m, n) > 0 and scipy_for(xp) is not None:
        # numpy.linalg.qr always forms Q, which geqrf does not (design notes); ormqr of one
        # column is negligible.
        import numpy as np
        from scipy.linalg import lapack

        geqrf, ormqr = lapack.get_lapack_funcs(("geqrf", "ormqr"), (x,))
        lwork = int(geqrf(x, lwork=-1)[2][0].real)
        h, tau, _, info = geqrf(x, lwork=max(lwork, 1), overwrite_a=False)
        if info != 0:
            msg = f"LAPACK geqrf failed (info={info})"
            raise RuntimeError(msg)

        def q_times(c):
            full = np.zeros((m, c.shape[-1]), dtype=h.dtype)
            if c.shape[-1] == 0:
                return full
            full[:n] = c
            lw = int(ormqr("L", "N", h, tau, full, -1)[1][0].real)
            out, _, info = ormqr("L", "N", h, tau, full, max(lw, 1), overwrite_c=True)
            if info != 0:
                msg = f"LAPACK ormqr failed (info={info})"
                raise RuntimeError(msg)
            return out

        return np.triu(h[:n]), q_times
    q, r = qr(xp, x)
    return r, lambda c: matmul(xp, q, c)


def qr_apply(xp, x, y):
    """``(R, Q^T y)`` of the reduced QR of ``x`` (..., m, n), m >= n. Q is not formed where the
    library can apply it implicitly (LAPACK's ormqr): half the flops of forming Q."""
    n = x.shape[-1]
    if loops_over_stacks(xp, x) and not _needs_grad(x, y):
        # Quirk: CuPy's QR and CUDA torch's ormqr loop over a stack's matrices (module docstring).
        r, reflectors = _stack_reflectors(xp, x)
        return r, apply_qt(xp, reflectors, y)
    if _aac.is_dask_namespace(xp) and x.ndim == 2:
        # Dask's TSQR forms Q (held in memory between its two stages) and Q^T y is one more
        # pass: the R factor of [X | y], reduced as a tree, has R and Q^T y in one pass.
        return dask_tsqr_apply(x, y)
    if _aac.is_torch_namespace(xp):
        # torch.geqrf/ormqr: Householder vectors applied in place of an explicit Q. Quirk:
        # they have no derivative; inputs that require grad take torch.linalg.qr, which has.
        import torch

        if torch.is_grad_enabled() and (x.requires_grad or y.requires_grad):
            q, r = torch.linalg.qr(x)
            return r, matmul(xp, q.mT, y)
        a, tau = torch.geqrf(x)
        qty = torch.ormqr(a, tau, y, left=True, transpose=True)[..., :n, :]
        return torch.triu(a[..., :n, :]), qty
    if _aac.is_numpy_namespace(xp) and x.ndim == 2 and scipy_for(xp) is not None:
        # numpy.linalg.qr always forms Q (orgqr); scipy's qr_multiply applies it (ormqr). Quirk: given
        # a C-ordered x it holds two copies of it (its own and f2py's Fortran one); one Fortran copy
        # of ours, handed over to be overwritten, is the only one (same data to LAPACK, same result).
        import numpy
        import scipy.linalg

        try:
            xf = numpy.array(x, order="F", copy=True)
            cq, r = scipy.linalg.qr_multiply(xf, xp.linalg.matrix_transpose(y), mode="right", overwrite_a=True)
            return r, xp.linalg.matrix_transpose(cq)
        except ValueError:  # it refuses NaN/Inf (reachable with check_finite=False)
            pass
    q, r = qr(xp, x)
    return r, matmul(xp, xp.linalg.matrix_transpose(q), y)


def _stack_reflectors(xp, x):
    """``(R, reflectors)`` of the stack ``x`` (:mod:`._stack_qr`): torch's own batched geqrf on
    PyTorch (cuBLAS's for m <= 256), the steps written out elsewhere."""
    if _aac.is_torch_namespace(xp):
        import torch

        h, tau = torch.geqrf(x)
        return torch.triu(h[..., : x.shape[-1], :]), lapack_reflectors(xp, h, tau)
    return householder_stack(xp, x)


def _needs_grad(*arrays):
    """Torch tensors of which one carries a derivative (torch.geqrf has none; torch.linalg.qr has)."""
    if not _aac.is_torch_array(arrays[0]):
        return False
    import torch

    return torch.is_grad_enabled() and any(a.requires_grad for a in arrays)


def svd(xp, x, *, after_qr_implicit=False):
    """Thin SVD ``x = U @ diag(s) @ Vh`` of the stack ``x`` (..., m, n). ``after_qr_implicit``: ``x`` is
    the factor of a :func:`qr_implicit` just made; on NumPy SciPy's SVD then follows SciPy's QR, in
    one BLAS thread pool (module docstring)."""
    if after_qr_implicit and _aac.is_numpy_namespace(xp) and x.ndim == 2 and scipy_for(xp) is not None:
        import scipy.linalg

        return scipy.linalg.svd(x, full_matrices=False, check_finite=False)
    if _aac.is_dask_namespace(xp):
        p = min(x.shape[-2:])
        # The solvers take SVDs of small matrices only (the n x n factor R, or a wide X with
        # m < n rows): one NumPy call per matrix. (Dask's own svd of a one-block input goes
        # through delayed, which recomputed the whole upstream graph.)
        return dask_per_matrix(numpy_svd, "(m,n)->(m,p),(p),(p,n)", x, 3, p)
    if _aac.is_numpy_namespace(xp) and x.shape[-2] < x.shape[-1]:
        # Quirk: NumPy's gesdd on a wide C-order matrix is slower than on its transpose (a
        # free view, F-order to LAPACK; design notes).
        # x^T = V S U^T, so the factors swap roles.
        v, s, ut = xp.linalg.svd(xp.linalg.matrix_transpose(x), full_matrices=False)
        return xp.linalg.matrix_transpose(ut), s, xp.linalg.matrix_transpose(v)
    if _aac.is_torch_namespace(xp) and x.device.type == "cuda":
        return retry_on_cpu(lambda a: xp.linalg.svd(a, full_matrices=False), x)
    if _aac.is_cupy_namespace(xp) and 0 not in tuple(x.shape):
        return cupy_svd(xp, x)
    if _aac.is_jax_namespace(xp):  # stacks on a CPU: one LAPACK routine at a time
        return lapack_in_order(xp, xp.linalg.svd, x, full_matrices=False)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    return u, s, vh


def cupy_svd(xp, x):
    """Thin SVD of the CuPy stack ``x`` (..., m, n), no dimension 0, with cuSOLVER given the matrix LAPACK would
    factor and each matrix scaled by a power of two to a largest entry in [0.5, 1) (module docstring)."""
    import cupy

    m, n = x.shape[-2:]
    big = xp.max(xp.abs(x), axis=(-2, -1), keepdims=True)
    e = xp.frexp(big)[1]  # big = f 2**e, 0.5 <= f < 1 (e = 0 for a zero matrix)
    a = xp.ldexp(x, -e)
    by_jacobi = x.ndim > 2 and (n <= 32 or cupy.cuda.runtime.is_hip)  # CuPy's gesvdj: x's own orientation
    if m == n and not by_jacobi:
        v, s, ut = xp.linalg.svd(xp.linalg.matrix_transpose(a), full_matrices=False)
        u, vh = xp.linalg.matrix_transpose(ut), xp.linalg.matrix_transpose(v)
    else:
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return u, xp.ldexp(s, e[..., 0]), vh


def eigh(xp, a):
    """Eigenvalues (ascending, (..., p)) and eigenvectors ((..., p, p)) of the symmetric stack
    ``a`` (a small Gram matrix: the one factorization behind a ridge path)."""
    if _aac.is_dask_namespace(xp):
        # Quirk: dask.array has no eigh (none in array-api-compat 1.16 either). The matrix is
        # small: factor each one as a single block with NumPy, as for cholesky above.
        return dask_per_matrix(numpy_eigh, "(i,j)->(p),(i,p)", a, 2, a.shape[-1])
    if _aac.is_torch_namespace(xp) and a.device.type == "cuda":
        return retry_on_cpu(xp.linalg.eigh, a)
    if _aac.is_jax_namespace(xp):  # stacks on a CPU: one LAPACK routine at a time
        return lapack_in_order(xp, xp.linalg.eigh, a)
    w, v = xp.linalg.eigh(a)
    return w, v


def retry_on_cpu(fn, a):
    """``fn(a)`` of a small (p, p) ``a``, retried on the CPU when CUDA's solver fails to converge (torch's
    CUDA eigh and svd; module docstring)."""
    try:
        return fn(a)
    except Exception as exc:  # noqa: BLE001 -- re-raised unless it is a LinAlgError
        if not _is_linalg_error(exc) and "converge" not in str(exc):
            raise
        return tuple(t.to(a.device) for t in fn(a.cpu()))


def qr_r(xp, x):
    """Only the R factor (p, p) of the QR of a tall 2-D ``x`` (m, p), m >= p: Q is never formed,
    which halves the work of the repeated small factorizations of streaming TSQR."""
    if _aac.is_numpy_namespace(xp):
        import numpy as np

        try:
            from scipy.linalg import lapack
        except ImportError:
            return np.linalg.qr(x, mode="r")  # skips orgqr, but copies x and R
        # LAPACK's geqrf on one Fortran-order copy of x, keeping only the p x p triangle:
        # scipy.linalg.qr(mode="r") would allocate a full (m, p) R as well.
        (geqrf,) = lapack.get_lapack_funcs(("geqrf",), (x,))
        a = geqrf(x, overwrite_a=False)[0]
        return np.triu(a[: x.shape[-1]])
    if _aac.is_torch_namespace(xp):
        # torch.geqrf leaves R in the upper triangle of its output and Q as reflectors.
        import torch

        return torch.triu(torch.geqrf(x)[0][: x.shape[-1], :])
    if _aac.is_jax_namespace(xp):
        # jnp.linalg.qr takes mode="r" and skips forming Q (the standard's signature lacks it).
        return lapack_in_order(xp, xp.linalg.qr, x, mode="r")
    if _aac.is_cupy_namespace(xp):
        # Quirk: cupy.linalg.qr(mode="r") returns R alone, which array-api-compat's wrapper
        # unpacks into QRResult(*R) (a TypeError, or for two columns the rows of R taken as
        # Q and R): CuPy's own function.
        import cupy

        return cupy.linalg.qr(x, mode="r")
    return qr(xp, x)[1]


def one_pass_qr(xp) -> bool:
    """True where Householder QR of a tall 2-D X is one pass over its rows (Dask: a tree of
    per-chunk QRs). That is cheaper than CholeskyQR2's three passes (Gram, X M, Q1^T Q1)."""
    # Quirk (Dask): every pass over X is a traversal of the whole graph on the workers.
    return _aac.is_dask_namespace(xp)


# Triangular solves and inverses
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
    if sp is not None and a.ndim > 2 and _aac.is_cupy_namespace(xp) and cupy_batched_solve():
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
    if substitutes(xp, a, b):
        return substitute(xp, a, b, lower)
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
        if a.dtype.kind == "f" and a.dtype.itemsize in (4, 8) and scipy_for(xp) is not None:
            from scipy.linalg import lapack

            fn = lapack.get_lapack_funcs((name,), dtype=a.dtype)[0]
        _LAPACK[key] = fn
    return fn


_LAPACK: dict = {}


def cho_solve(xp, L, b, *, Lt=None, inverse=None):
    """Solve ``L L^T x = b`` for lower Cholesky factors ``L`` (..., n, n), ``b`` (..., n, k). ``Lt``, if
    given, is ``batch_last(xp, L)``. On stacks of small factors the two sweeps share that one copy
    of the stack (and so does the condition estimate, ``rank.condition_estimate``). ``inverse``: ``L^-1``
    where :func:`small_inverse` made it, two products then."""
    if inverse is not None:
        return matmul(xp, xp.linalg.matrix_transpose(inverse), matmul(xp, inverse, b))
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
    if substitutes(xp, L, b):
        if Lt is None and tuple(L.shape[:-2]) == tuple(b.shape[:-2]):
            Lt = batch_last(xp, L)  # one copy for both sweeps
        z = substitute(xp, L, b, True, at=Lt)
        return substitute(xp, L, z, False, at=Lt, transpose=True)
    if _aac.is_jax_namespace(xp):  # the second sweep reads L transposed (LAPACK's trans): no copy of L^T
        sp = scipy_for(xp)
        z = lapack_in_order(xp, sp.solve_triangular, L, b, lower=True, check_finite=False)
        return lapack_in_order(xp, sp.solve_triangular, L, z, trans=1, lower=True, check_finite=False)
    z = solve_triangular(xp, L, b, lower=True)
    return solve_triangular(xp, xp.linalg.matrix_transpose(L), z, lower=False)


# Triangles up to this size are inverted by SciPy's LAPACK (trtri) on NumPy: a single-threaded
# call at these sizes, cheaper than numpy.linalg.inv's dispatch (design notes).
LAPACK_SMALL = 32


def inverse_diagonal(xp, L, *, inverse=None):
    """The diagonal of ``(L L^T)^-1`` (..., n) for lower Cholesky factors ``L`` (..., n, n). PyTorch: ``cholesky_inverse``,
    one operator for five (NaN where its CPU kernel refuses a zero pivot, a failed factor); one small NumPy factor:
    LAPACK's ``potri``, one call for three (a failed factor: its info, or NaN through); else ``L^-1``'s column norms
    (``inverse``: ``L^-1``, where :func:`small_inverse` made it)."""
    if inverse is not None:
        return dots(xp, inverse, inverse)
    if _aac.is_torch_namespace(xp):
        import torch

        try:
            return torch.linalg.diagonal(torch.cholesky_inverse(L))
        except RuntimeError:  # a zero pivot (CPU): the factorization failed
            return torch.full(L.shape[:-1], float("nan"), dtype=L.dtype, device=L.device)
    potri = numpy_lapack(xp, "potri", L) if 0 < L.shape[-1] <= LAPACK_SMALL else None
    inv, info = potri(L, lower=1) if potri is not None else (None, 1)
    if info == 0:
        return inv.diagonal()
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
    if inverts_by_rows(xp, a):
        return stack_inverse(xp, a, lower=lower)  # a row at a time over the stack: NumPy's batched inv costs more
    if _aac.is_numpy_namespace(xp):
        # NumPy's own LAPACK, not SciPy's: SciPy's OpenBLAS is a second thread pool whose
        # spinning threads slow the next NumPy matrix product (design notes).
        return xp.linalg.inv(a)
    eye = xp.broadcast_to(eye_like(xp, a, a.shape[-1]), tuple(a.shape))
    return solve_triangular(xp, a, eye, lower=lower)
