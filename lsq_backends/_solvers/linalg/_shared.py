"""Small array-API helpers the solvers share (no solver logic here).

``pivot_ratios``: the ratio is against the column as given, before centering. It is then the
same in every unit the column is measured in, so only dependence decides. A column that
centering reduced to rounding noise (a constant column next to an intercept) is seen as
dependent too.

``gram_noise``: each entry of a formed Gram matrix is a sum of max(m, n) products. Its error
grows like ``sqrt(max(m, n)) * eps`` with high probability (Higham and Mary's probabilistic
rounding-error analysis, 2019), not the worst case ``max(m, n) * eps``. The factorization of
the min(m, n)-square matrix adds ``min(m, n) * eps``. Measured here: at most 2 eps * lam_max on
exactly rank-deficient centered float32 and float64 data up to 200000 x 200. The worst-case
factor made float32 fits at m = 200000 (``eps * m = 0.024``) take cond-100 data for rank
deficient (65% error).

``default_cutoff``: below float64 the default is what the factorization can resolve. The QR (or
Gram) pass sums max(m, n) products per entry: a backward error ~ sqrt(max(m, n)) eps ||X||
with high probability, and the factorization adds ~ min(m, n) eps, as for ``gram_noise``. The
worst case ``eps * max(m, n)`` reached 0.06 in float32 at m = 500000. There ``svd``, ``qr``,
``normal`` and ``auto`` all dropped the second direction of correlated two-column data
(s2/s1 = 5e-3) and returned 10x SciPy's residual. NumPy itself solves float32 input in float64
(cutoff ~1e-10 there).

``gated``: traced (JAX) or lazy (Dask), the branches cost no host read, and the attempt is
skipped where the gate fails. Eager, the attempt runs before the gate is read, so that the gate
and its check are read together: one host read, with wasted work only where the fallback
follows. NumPy, where reading is free, reads the gate first and skips the attempt where it
fails (CholeskyQR2's three passes before shifted CholeskyQR3 on ill-conditioned X).
"""

from __future__ import annotations

import math

from ..._backend import _compat


def count(xp, mask, like):
    """Number of True entries along the last axis, in the default integer dtype."""
    _, int_dtype = _compat.default_dtypes(xp, _compat.device(like))
    return xp.sum(xp.astype(mask, int_dtype), axis=-1)


def add_penalty(xp, a, alpha):
    """``a + alpha * I`` for a stack ``a`` (..., p, p); ``alpha`` (1,) (one penalty) or (k,) (one per target).
    Per-target penalties give a stack (..., k, p, p) of k systems, one per target."""
    eye = _compat.eye_like(xp, a, a.shape[-1])
    if alpha.shape[0] == 1:
        return a + _compat.as_rank(xp, alpha[0] * eye, a.ndim)
    return a[..., None, :, :] + _compat.as_rank(xp, alpha[:, None, None] * eye[None, :, :], a.ndim + 1)


def split_targets(xp, b, alpha):
    """Right-hand sides (..., p, k) laid out to match :func:`add_penalty`: unchanged, or as
    (..., k, p, 1) when each target has its own penalty."""
    if alpha is None or alpha.shape[0] == 1:
        return b
    return xp.moveaxis(b, -1, -2)[..., None]


def merge_targets(xp, w, alpha):
    """Inverse of :func:`split_targets` for solutions (..., k, n, 1) -> (..., n, k)."""
    if alpha is None or alpha.shape[0] == 1:
        return w
    return xp.moveaxis(w[..., 0], -2, -1)


def pivot_ratios(xp, pivots, colsq, offset_sq):
    """|pivot_j| / ||column j||, the scale-free rank test of the triangular factors, the column taken before
    centering (module docstring). ``pivots``, ``colsq`` (..., p), or (..., k, p) per target; ``colsq``: squared
    column norms of the matrix factorized (the centered X, plus alpha for ridge). ``offset_sq`` (..., n): what
    centering removed (sum(w) * mean**2), or None."""
    ref = colsq
    if offset_sq is not None:
        ref = ref + (offset_sq[..., None, :] if colsq.ndim > offset_sq.ndim else offset_sq)
    ref = xp.sqrt(ref)
    return xp.abs(pivots) / _compat.positive_or_one(xp, ref)


def gram_noise(xp, a, m, n):
    """Relative rounding noise of the eigenvalues (and squared Cholesky pivots) of a formed Gram matrix of an
    m x n matrix: ``eps * (sqrt(max(m, n)) + min(m, n))``, a probable bound, not the worst case (module docstring)."""
    return _compat.eps(xp, a) * (math.sqrt(max(m, n, 1)) + min(m, n))


def default_cutoff(xp, a, m, n, rcond):
    """Relative singular-value cutoff: ``rcond`` when given (honoured exactly), else the default. float64: NumPy's
    ``eps * max(m, n)`` (``numpy.linalg.lstsq``'s, as JAX and PyTorch too). Narrower dtypes (float32): the
    factorization's probable rounding noise ``eps * (sqrt(max(m, n)) + min(m, n))`` relative to the largest
    singular value, as :func:`gram_noise` (see the module docstring)."""
    if rcond is not None:
        return rcond
    if _compat.finfo(xp, a.dtype).bits >= 64:
        return _compat.eps(xp, a) * max(m, n, 1)
    return _compat.eps(xp, a) * (math.sqrt(max(m, n, 1)) + min(m, n))


def gated(xp, gate, attempt, fallback, operands):
    """A fast route (``attempt(X, Y) -> (result, good)``: CholeskyQR2, refined normal equations) where its ``gate``
    passes and its own check ``good`` holds, else ``fallback(X, Y)``. NumPy reads the gate first; traced JAX and
    Dask branch without a host read; other eager libraries run the attempt, then read gate and check together.
    See the module docstring."""
    if _compat.traits(xp).free_to_read:  # read as the branches go: nothing to wait for
        if not _compat.read_now(xp, gate):
            return fallback(*operands)
        result, good = attempt(*operands)
        return result if _compat.read_now(xp, good) else fallback(*operands)
    if _compat.is_lazy(gate):

        def tried(*ops):
            result, good = attempt(*ops)
            return _compat.branch(xp, good, lambda *_: result, fallback, ops)

        return _compat.branch(xp, gate, tried, fallback, operands)
    result, good = attempt(*operands)
    return _compat.branch(xp, gate & good, lambda *_: result, fallback, operands)


def relative_pivots(xp, R):
    """|R_jj| / max_i ||R[:, i]||: near zero for a column that depends on the ones before it
    or whose norm is negligible next to the largest (the scale SVD's cutoff uses too)."""
    d = xp.abs(_compat.diagonal(xp, R))
    norms = xp.max(xp.linalg.vector_norm(R, axis=-2), axis=-1, keepdims=True)
    return d / _compat.positive_or_one(xp, norms)
