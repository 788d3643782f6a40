"""The layer that knows about individual array libraries: solvers call only this module.

Every solver is written against the Python array API standard. The standard lacks a few things a
least-squares library needs (a triangular solve, a value-dependent branch that survives
``jax.jit``, full-precision matrix products on GPUs), and some libraries deviate from it. Each
branch below names the quirk it handles; every function ends in a standard fallback so that any
other array-API library works, only more slowly.

Nothing here imports JAX, PyTorch, CuPy or Dask at module level: a branch is taken only when the
caller's arrays already come from that library, so the library is already imported.

Four private helpers belong to this layer and are reached through it: :mod:`._control`
(``cond``, ``loop``, ``jit``: branches and loops that survive tracing), :mod:`._triangular`
(triangular solves and inverses, which the standard lacks), :mod:`._dask_blocks` (the
NumPy code that runs inside Dask tasks) and :mod:`._precision` (full float32 products).
"""

from __future__ import annotations

import array_api_compat as _aac

from ._control import cond, jit, loop
from ._dask_blocks import _dask_per_matrix, _dask_tsqr_apply, _numpy_safe_cholesky
from ._dask_blocks import numpy_argmin0, numpy_eigh, numpy_qr, numpy_svd
from ._precision import full_float32
from ._triangular import SMALL_STACK, _scipy_for, batch_last, cho_solve, solve_triangular, triangular_inverse

__all__ = [
    "align_rows",
    "argmin0",
    "array_namespace",
    "batch_last",
    "cho_solve",
    "SMALL_STACK",
    "cholesky",
    "cond",
    "default_dtypes",
    "diagonal",
    "gram",
    "device",
    "eigh",
    "is_lazy",
    "is_readable",
    "jit",
    "loop",
    "matmul",
    "one_pass_qr",
    "qr",
    "qr_apply",
    "qr_implicit",
    "qr_r",
    "solve_triangular",
    "triangular_inverse",
    "svd",
    "update_fresh",
    "zero_first_row",
]

device = _aac.device


def array_namespace(*arrays):
    """The namespace of the arrays, ignoring ``None`` and Python scalars."""
    # type(), not isinstance: NumPy scalars (np.float64 subclasses float) are arrays here.
    return _aac.array_namespace(*(a for a in arrays if a is not None and type(a) not in (int, float, bool)))


def is_lazy(x) -> bool:
    """True for arrays whose values cannot be read without tracing/computing (JAX tracers, Dask)."""
    return _aac.is_lazy_array(x)


def is_readable(x) -> bool:
    """True when the values of ``x`` can be read now (for printing, never in a solver path).

    Quirk: array-api-compat calls every JAX array lazy, since any may be traced; concrete JAX
    arrays outside ``jax.jit`` are readable, tracers are not. Dask graphs never are.
    """
    if _aac.is_jax_array(x):
        import jax

        return not isinstance(x, jax.core.Tracer)
    return not is_lazy(x)


def align_rows(xp, a, like):
    """``a`` (..., m, k) with its rows laid out as those of ``like`` (..., m, n)."""
    if _aac.is_dask_namespace(xp):
        # Quirk: a new (m, 1) array (ones, arange) or the caller's y and weights may be chunked
        # unlike X; combining them made Dask split and re-merge X's chunks (a copy of X in
        # every pass, a third of a fit's time at 2e6 x 20). Rechunk the thin one instead.
        return a.rechunk({a.ndim - 2: like.chunks[-2]})
    return a


def argmin0(xp, x):
    """Index of the first minimum along axis 0 (of a small array: penalties by targets).

    Quirk: Dask's argmin graph holds ``dask.array.chunk.argmin``, which names itself
    ``numpy.argmin`` without being it, so plain pickle refuses the result and every fitted
    estimator holding it. One block along the axis, NumPy's argmin on it."""
    if _aac.is_dask_namespace(xp):
        import numpy as np

        return x.rechunk({0: -1}).map_blocks(numpy_argmin0, drop_axis=0, dtype=np.intp)
    return xp.argmin(x, axis=0)


def default_dtypes(xp, dev):
    """(default real float, default integer) of ``xp`` on ``dev``."""
    info = xp.__array_namespace_info__()
    try:
        d = info.default_dtypes(device=dev)
    except TypeError:  # some wrapped namespaces take no device argument
        d = info.default_dtypes()
    return d["real floating"], d["integral"]


def matmul(xp, a, b):
    """``a @ b`` at the full precision of the dtype.

    Quirk: on GPUs and TPUs JAX multiplies float32 matrices in TF32/bfloat16 passes by default,
    which destroys a Gram matrix (~3 correct digits). Ask for ``Precision.HIGHEST``. PyTorch
    and CuPy take it from process-wide settings a user may have lowered (TF32, bfloat16):
    forced to full float32 around the call and put back (:mod:`._precision`).
    """
    if _aac.is_jax_namespace(xp):
        import jax

        return xp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)
    with full_float32(xp, a, b):
        return xp.matmul(a, b)


def diagonal(xp, a):
    """Diagonal of a stack of square matrices, shape (..., p).

    Quirk: NumPy returns a strided view, and elementwise work on it over a stack of small
    matrices measured 1.7x slower than on a copy (0.39 against 0.23 ms for one division and
    square root on the diagonals of 10000 8x8 factors; the copy costs 0.08 ms).
    """
    d = xp.linalg.diagonal(a)
    if _aac.is_numpy_namespace(xp) and a.ndim > 2:
        return xp.asarray(d, copy=True)
    return d


# Row block of ``gram`` on NumPy: ~256 KB of float64, so X^T Y reads the block from cache.
GRAM_BLOCK_ELEMENTS = 1 << 15
GRAM_BLOCK_MAX_COLUMNS = 64


def gram(xp, X, Y):
    """``(X^T X, X^T Y)`` for tall X.

    Quirk: on NumPy each product is a separate pass over X from memory; for narrow X
    (n <= 64) the cross-product X^T Y costs ~20% of the Gram product (measured at
    200000 x 50), nearly all memory traffic. Both are formed block by block over the rows,
    so the second product reads each block from cache. Elsewhere: two products (XLA fuses,
    GPUs are not memory-bound the same way).
    """
    m, n = X.shape[-2:]
    rows = max(GRAM_BLOCK_ELEMENTS // max(n, 1), 1)
    if _aac.is_numpy_namespace(xp) and X.ndim == 2 and n <= GRAM_BLOCK_MAX_COLUMNS and m >= 4 * rows:
        A = B = None
        for i in range(0, m, rows):
            Xb, Yb = X[i : i + rows], Y[i : i + rows]
            XbT = xp.linalg.matrix_transpose(Xb)
            a, b = XbT @ Xb, XbT @ Yb
            A, B = (a, b) if A is None else (A + a, B + b)
        return A, B
    Xt = xp.linalg.matrix_transpose(X)
    return matmul(xp, Xt, X), matmul(xp, Xt, Y)


def update_fresh(xp, a, op, b):
    """``op(a, b)`` (``op`` a standard elementwise function name, e.g. "subtract"), where ``a``
    is (a view of) a temporary the caller made and holds no other reference to.

    Quirk: NumPy evaluates eagerly and fuses nothing, so each step of a chain on an X-sized
    array allocates another X-sized array; writing into the temporary keeps one. Other
    libraries get the standard out-of-place operation (in-place writes break ``jax.jit``,
    and XLA fuses the chain anyway).
    """
    if _aac.is_numpy_namespace(xp) and getattr(a, "flags", None) is not None and a.flags.writeable:
        return getattr(xp, op)(a, b, out=a)
    return getattr(xp, op)(a, b)


def zero_first_row(xp, a, first):
    """``a`` (..., m, k) with its first row set to zero; ``first`` (m, 1) is True on that row
    only, and ``a`` a temporary the caller made (as for :func:`update_fresh`).

    Quirk: on NumPy a ``where`` would allocate another X-sized array; the row is written in
    place. Other libraries select (XLA fuses it into the producer)."""
    if _aac.is_numpy_namespace(xp) and getattr(a, "flags", None) is not None and a.flags.writeable:
        a[..., :1, :] = 0
        return a
    return xp.where(first, xp.zeros((), dtype=a.dtype, device=device(a)), a)


def _nan_like(xp, a):
    return xp.full(a.shape, float("nan"), dtype=a.dtype, device=device(a))


def _is_linalg_error(exc: BaseException) -> bool:
    # numpy.linalg.LinAlgError (NumPy, CuPy, array-api-strict) and torch's _LinAlgError.
    return any(t.__name__.endswith("LinAlgError") for t in type(exc).__mro__)


def cholesky(xp, a):
    """Lower Cholesky factor of the stack ``a``; NaN instead of an exception where it fails.

    Callers check the diagonal of the factor (positive, finite) instead of catching exceptions,
    which would not work under ``jax.jit`` and would differ across libraries.
    """
    if _aac.is_jax_namespace(xp):
        # JAX already returns NaN for a matrix that is not positive definite.
        return xp.linalg.cholesky(a)
    if _aac.is_torch_namespace(xp):
        # torch.linalg.cholesky raises; cholesky_ex reports failures per matrix without a sync.
        import torch

        L, info = torch.linalg.cholesky_ex(a)
        return xp.where((info == 0)[..., None, None], L, _nan_like(xp, a))
    if _aac.is_dask_namespace(xp):
        # Quirk: dask's cholesky returns the UPPER factor, needs square chunks and raises inside
        # compute() on failure. The Gram matrix is small: factor it as one block with NumPy.
        a = a.rechunk({-2: -1, -1: -1})
        return a.map_blocks(_numpy_safe_cholesky, dtype=a.dtype)
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
    if _aac.is_dask_namespace(xp):
        if x.ndim > 2 or x.numblocks[0] == 1:
            # Quirk: a one-block input goes through delayed in dask's qr/svd, which copies the
            # whole upstream graph under new keys (it was computed twice); small: one NumPy call.
            return _dask_per_matrix(numpy_qr, "(m,n)->(m,p),(p,n)", x, 2, x.shape[-1])
        # Quirk: dask's TSQR needs one chunk across the columns.
        x = x.rechunk({1: -1})
    q, r = xp.linalg.qr(x, mode="reduced")
    return q, r


def qr_implicit(xp, x):
    """Reduced QR of the tall stack ``x`` (..., m, n), m >= n: ``(R, q_times)`` with
    ``q_times(c) = Q @ c`` for ``c`` (..., n, k), Q applied from its Householder reflectors
    (LAPACK's ormqr) where the library can: forming Q (orgqr) costs about as much as the
    factorization, and the wide solvers only ever need Q times a small matrix."""
    m, n = x.shape[-2:]
    if _aac.is_torch_namespace(xp):
        import torch

        h, tau = torch.geqrf(x)

        def q_times(c):
            pad = torch.zeros((*c.shape[:-2], m - n, c.shape[-1]), dtype=c.dtype, device=c.device)
            return torch.ormqr(h, tau, torch.cat([c, pad], dim=-2), left=True, transpose=False)

        return torch.triu(h[..., :n, :]), q_times
    if _aac.is_numpy_namespace(xp) and x.ndim == 2 and min(m, n) > 0 and _scipy_for(xp) is not None:
        # numpy.linalg.qr always forms Q. Measured at X^T of 200 x 5000 (one thread): geqrf
        # 24 ms, against 53 ms for numpy.linalg.qr; ormqr of one column is negligible.
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
    """``(R, Q^T y)`` of the reduced QR of ``x`` (..., m, n), m >= n, without forming Q where
    the library can apply it implicitly (LAPACK's ormqr): half the flops of forming Q."""
    n = x.shape[-1]
    if _aac.is_dask_namespace(xp) and x.ndim == 2:
        # Dask's TSQR forms Q (held in memory between its two stages) and Q^T y is one more
        # pass: the R factor of [X | y], reduced as a tree, has R and Q^T y in one pass.
        return _dask_tsqr_apply(x, y)
    if _aac.is_torch_namespace(xp):
        # torch.geqrf/ormqr: Householder vectors applied in place of an explicit Q.
        import torch

        a, tau = torch.geqrf(x)
        qty = torch.ormqr(a, tau, y, left=True, transpose=True)[..., :n, :]
        return torch.triu(a[..., :n, :]), qty
    if _aac.is_numpy_namespace(xp) and x.ndim == 2 and _scipy_for(xp) is not None:
        # numpy.linalg.qr always forms Q (orgqr); scipy's qr_multiply applies it (ormqr).
        import scipy.linalg

        try:
            cq, r = scipy.linalg.qr_multiply(x, xp.linalg.matrix_transpose(y), mode="right")
            return r, xp.linalg.matrix_transpose(cq)
        except ValueError:  # it refuses NaN/Inf (reachable with check_finite=False)
            pass
    q, r = qr(xp, x)
    return r, matmul(xp, xp.linalg.matrix_transpose(q), y)


def svd(xp, x, *, after_qr_implicit=False):
    """Thin SVD ``x = U @ diag(s) @ Vh`` of the stack ``x`` (..., m, n).

    ``after_qr_implicit``: ``x`` is the factor of a :func:`qr_implicit` just made. On NumPy that
    went through SciPy's LAPACK, so SciPy's SVD follows it. Quirk: NumPy and SciPy ship
    separate OpenBLAS thread pools, and switching pools between two calls cost the wait of
    the other pool's spinning threads: geqrf of the transpose of a 200 x 5000 X, then the SVD
    of its 200 x 200 factor, took 32 ms with NumPy's SVD and 21 ms with SciPy's (2 threads).
    """
    if after_qr_implicit and _aac.is_numpy_namespace(xp) and x.ndim == 2 and _scipy_for(xp) is not None:
        import scipy.linalg

        return scipy.linalg.svd(x, full_matrices=False, check_finite=False)
    if _aac.is_dask_namespace(xp):
        p = min(x.shape[-2:])
        # The solvers take SVDs of small matrices only (the n x n factor R, or a wide X with
        # m < n rows): one NumPy call per matrix. (Dask's own svd of a one-block input goes
        # through delayed, which recomputed the whole upstream graph.)
        return _dask_per_matrix(numpy_svd, "(m,n)->(m,p),(p),(p,n)", x, 3, p)
    if _aac.is_numpy_namespace(xp) and x.shape[-2] < x.shape[-1]:
        # Quirk: NumPy's gesdd on a wide C-order matrix measured ~2x slower than on its
        # transpose (a free view, F-order to LAPACK): 0.30 s against 0.16 s at 200 x 5000.
        # x^T = V S U^T, so the factors swap roles.
        v, s, ut = xp.linalg.svd(xp.linalg.matrix_transpose(x), full_matrices=False)
        return xp.linalg.matrix_transpose(ut), s, xp.linalg.matrix_transpose(v)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    return u, s, vh


def eigh(xp, a):
    """Eigenvalues (ascending, (..., p)) and eigenvectors ((..., p, p)) of the symmetric stack
    ``a`` (a small Gram matrix: the one factorization behind a ridge path)."""
    if _aac.is_dask_namespace(xp):
        # Quirk: dask.array has no eigh (none in array-api-compat 1.16 either). The matrix is
        # small: factor each one as a single block with NumPy, as for cholesky above.
        return _dask_per_matrix(numpy_eigh, "(i,j)->(p),(i,p)", a, 2, a.shape[-1])
    w, v = xp.linalg.eigh(a)
    return w, v


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
        # jnp.linalg.qr(mode="r") skips forming Q (the standard's signature lacks the mode).
        return xp.linalg.qr(x, mode="r")
    return qr(xp, x)[1]


def one_pass_qr(xp) -> bool:
    """True where Householder QR of a tall 2-D X is one pass over its rows (Dask: a tree of
    per-chunk QRs), cheaper than CholeskyQR2's three passes (Gram, X M, Q1^T Q1)."""
    # Quirk (Dask): every pass over X is a traversal of the whole graph on the workers.
    return _aac.is_dask_namespace(xp)
