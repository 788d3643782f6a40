"""Spectral factorizations: one factorization that serves every ridge penalty at once.

With the eigendecomposition ``X^T X = V diag(lam) V^T`` (in X's range), the ridge solution for
any penalty is ``coef(alpha) = V diag(f) P`` with ``f = 1 / (lam + alpha)`` and
``P = V^T X^T Y``: after one factorization, a path of penalties costs O(n p k) per penalty.
Two routes give the factors (p = min(m, n)):

- ``gram``: the eigendecomposition of the small Gram matrix, ``X^T X`` for tall X (one pass
  over X plus an n x n ``eigh``) or ``X X^T`` for wide X (then ``V = X^T U``, not orthonormal,
  ``P = U^T Y``). Fast; its eigenvalues carry absolute errors ~ eps * lam_max, so the error in
  coef grows like eps * (lam_max + alpha) / (lam_min + alpha), the condition number of the
  regularized normal matrix.
- ``svd``: Householder QR of X, then the SVD of the n x n factor (tall X), or the SVD of X (wide
  X): ``lam = s**2``, ``P = diag(s) U^T Q^T Y``. Error ~ eps * sqrt of that condition number.

A direction whose regularized eigenvalue ``lam + alpha`` is at the route's noise level (see
``_cut``) gets a zero filter factor: with ``alpha = 0`` the path point is the minimum-norm
least-squares solution; a penalty above the noise level keeps every direction.

For leave-one-out the factors also give, in the sample space, ``F = X V`` (fitted values
``F diag(f) P``) and the leverage weights ``L`` with ``diag(X (X^T X + alpha I)^-1 X^T) = L f``
(no division by an eigenvalue, so rank-deficient X is safe).

``_cut``: with an intercept the reference is the largest column before centering, since
centering leaves noise at that scale. Eigenvalues of a formed Gram matrix carry absolute errors
~ eps * lam_max, so the ``gram`` route's level is at least ``gram_noise * lam_max``. The
worst-case ``c * lam_max`` dropped real directions of cond-100 float32 data at m = 2000.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._backend import _compat
from .._backend._compat import full_int, matmul, mT
from .._problem._operator import LinearMap
from ._record import Solution
from .linalg._operators import asked, path_factor
from .linalg._shared import count, default_cutoff, gram_noise


class Spectrum(NamedTuple):
    lam: Any  # (..., p) eigenvalues of X^T X (>= 0)
    cut: Any  # (..., 1) noise level: a direction with lam + alpha <= cut gets no filter factor
    V: Any  # (..., n, p)
    P: Any  # (..., p, k)
    F: Any  # (..., m, p) X V, or None
    L: Any  # (..., m, p) leverage weights, or None
    s: Any  # (..., p) singular values (svd route), or None
    U: Any = None  # (..., m, m) wide X: left singular (eigen) vectors, X X^T = U diag(lam) U^T


def _cut(xp, X, lam, offset_sq, gram, colsq=None):
    """Noise level (..., 1) of the eigenvalues: ``c**2`` times the largest, or with an intercept times the largest
    squared column norm before centering where larger; ``c``: ``lstsq``'s default cutoff on singular values
    (``_shared.default_cutoff``). On the ``gram`` route at least ``gram_noise * lam_max`` (``_shared.gram_noise``)."""
    m, n = X.shape[-2:]
    c = default_cutoff(xp, X, m, n, None)
    ref = xp.max(lam, axis=-1, keepdims=True)
    cut = c * c * ref
    if offset_sq is not None:
        colsq = _compat.column_squares(xp, X) if colsq is None else colsq
        scale2 = xp.max(colsq + offset_sq, axis=-1, keepdims=True)
        cut = xp.maximum(cut, c * c * scale2)
    return xp.maximum(cut, gram_noise(xp, X, m, n) * ref) if gram else cut


def gram(xp, X, Y, offset_sq=None, *, samples=False):
    """The ``gram`` route; ``samples`` also computes ``F`` and ``L`` (for leave-one-out). X may be a
    ``_operator.LinearMap`` with a Gram product (a sparse X, any shape: ``X^T X``; no ``samples``)."""
    m, n = X.shape[-2:]
    F = L = None
    if isinstance(X, LinearMap):
        G = X.gram()
        lam, V = _compat.eigh(xp, G)
        lam = xp.maximum(lam, xp.zeros_like(lam))
        P = matmul(xp, mT(xp, V), X.rmatvec(Y))
        colsq = _compat.diagonal(xp, G)
        return Spectrum(lam, _cut(xp, X, lam, offset_sq, True, colsq), V, P, None, None, None)
    if m >= n:
        lam, V = _compat.eigh(xp, matmul(xp, mT(xp, X), X))
        # Rounding leaves null directions' eigenvalues at +-eps * lam_max.
        lam = xp.maximum(lam, xp.zeros_like(lam))
        P = matmul(xp, mT(xp, V), matmul(xp, mT(xp, X), Y))
        if samples:
            F = matmul(xp, X, V)
            L = F * F
    else:
        lam, U = _compat.eigh(xp, matmul(xp, X, mT(xp, X)))
        lam = xp.maximum(lam, xp.zeros_like(lam))
        V = matmul(xp, mT(xp, X), U)  # X^T X (X^T U) = (X^T U) diag(lam)
        P = matmul(xp, mT(xp, U), Y)
        if samples:
            # X V = U diag(lam); the hat matrix is U diag(lam / (lam + alpha)) U^T. Eigenvalues
            # at the noise level (centering's null direction 1/sqrt(m), dependent rows) are 0
            # there: a noise eigenvalue e kept next to a tiny alpha would add e / alpha to
            # leverages whose 1 - H_ii is itself ~ alpha / lam (0.2% LOO errors at alpha 1e-5).
            noise = gram_noise(xp, X, m, n) * xp.max(lam, axis=-1, keepdims=True)
            F = U * xp.where(lam > noise, lam, xp.zeros_like(lam))[..., None, :]
            L = U * F
    return Spectrum(lam, _cut(xp, X, lam, offset_sq, True), V, P, F, L, None, None if m >= n else U)


def svd(xp, X, Y, offset_sq=None, *, samples=False):
    """The ``svd`` route; ``samples`` forms Q explicitly (for ``F = Q U diag(s)``)."""
    m, n = X.shape[-2:]
    if m >= n:
        if samples:
            Q, R = _compat.qr(xp, X)
            Z = matmul(xp, mT(xp, Q), Y)
        else:
            R, Z = _compat.qr_apply(xp, X, Y)  # Q applied implicitly where the library can
        u, s, vh = _compat.svd(xp, R)
    else:
        u, s, vh = _compat.svd(xp, X)
        Z = Y
    P = s[..., :, None] * matmul(xp, mT(xp, u), Z)
    if samples and m >= n:
        u = matmul(xp, Q, u)  # X = (Q u) diag(s) vh
    F = u * s[..., None, :] if samples else None
    L = F * F if samples else None
    lam = s * s
    return Spectrum(lam, _cut(xp, X, lam, offset_sq, False), mT(xp, vh), P, F, L, s, None if m >= n else u)


def project(xp, spec, Y):
    """``P`` (..., p, k) for targets ``Y`` (..., m, k) from the sample-space factor ``F`` (``samples=True``): one
    product, so a factorization made without targets serves any block of them. ``F^T Y`` is ``P`` except on the wide
    ``gram`` route, where ``F = U diag(lam)`` gives ``diag(lam) P``, divided out where ``lam > 0`` (a direction with
    ``lam = 0`` has zero columns in F and V in exact arithmetic: its P never counts)."""
    P = matmul(xp, mT(xp, spec.F), Y)
    n, p = spec.V.shape[-2:]
    if spec.s is not None or n == p:
        return P
    lam = spec.lam[..., :, None]
    return xp.where(lam > 0, P / xp.where(lam > 0, lam, xp.ones_like(lam)), xp.zeros_like(P))


def filters(xp, spec, alpha):
    """Filter factors ``1 / (lam + alpha)`` (zero for dropped directions) for penalties of any
    shape ``alpha.shape``: the result has shape ``alpha.shape + lam.shape``."""
    a = xp.reshape(alpha, tuple(alpha.shape) + (1,) * spec.lam.ndim)
    return inverse(xp, _compat.as_rank(xp, spec.lam, a.ndim) + a, spec.cut)


def inverse(xp, den, cut):
    """``1 / den`` where ``den > cut``, else 0 (no division by a dropped, maybe zero, entry)."""
    keep = den > _compat.as_rank(xp, cut, den.ndim)
    safe = xp.where(keep, den, xp.ones_like(den))
    return xp.where(keep, 1 / safe, xp.zeros_like(den))


def path_coef(xp, spec, alpha):
    """Coefficients (a, ..., n, k) for the path ``alpha`` (a,), and the rank (a, ...): that of
    the regularized system, the number of directions kept (``n`` for a penalty above the noise
    level; for wide X, the m directions of X's row space plus the n - m null directions that a
    positive penalty makes nonsingular)."""
    f = filters(xp, spec, alpha)  # (a, ..., p)
    coef = matmul(xp, spec.V, f[..., None] * _compat.as_rank(xp, spec.P, f.ndim + 1))
    n, p = spec.V.shape[-2:]
    rank = count(xp, f > 0, spec.lam)  # (a, ...)
    a = xp.reshape(alpha, tuple(alpha.shape) + (1,) * (rank.ndim - 1))
    extra = xp.where(a > 0, full_int(xp, tuple(rank.shape), n - p, spec.lam), xp.zeros_like(rank))
    return coef, rank + extra


def over_alphas(xp, A, B):
    """``A (..., r, p) @ B (a, ..., p, k)`` as ONE matrix product over all penalties, laid out
    as (..., p, a * k): a Python loop (or a broadcast matmul, which loops inside) would make a
    matrix-vector pass over A per penalty. Returns (a, ..., r, k)."""
    a, p, k = B.shape[0], B.shape[-2], B.shape[-1]
    nb = B.ndim - 3
    Bt = xp.permute_dims(B, tuple(range(1, nb + 1)) + (nb + 1, 0, nb + 2))  # (..., p, a, k)
    C = matmul(xp, A, xp.reshape(Bt, tuple(B.shape[1 : nb + 1]) + (p, a * k)))  # (..., r, a * k)
    C = xp.reshape(C, tuple(C.shape[:-1]) + (a, k))
    return xp.permute_dims(C, (nb + 1,) + tuple(range(nb + 1)) + (nb + 2,))


def auto_ok(xp, spec, alpha, X):
    """Scalar: is the ``gram`` route accurate enough for the whole path? Its error grows like
    eps * cond with cond = (lam_max + alpha) / (lam_min + alpha), worst at the smallest
    penalty; accepted up to ``auto``'s limit for the normal equations (squared, as cond is that
    of the Gram matrix: float64 1.0e6, error <~ 2e-10; float32 45). NaN compares False."""
    from .linalg.gram import kappa_limit

    amin = xp.min(alpha)
    lam_max = xp.max(spec.lam, axis=-1)
    lam_min = xp.min(spec.lam, axis=-1)
    # Multiplied out: no division by a zero lam_min + amin (that condition is infinite).
    return xp.all(lam_max + amin <= kappa_limit(xp, X) ** 2 * (lam_min + amin))


def solve_path(xp, X, Y, alpha, route, offset_sq=None, operators=False):
    """A ``Solution`` for each penalty of ``alpha`` (a,): coef (a, ..., n, k), rank (a, ...), s (``svd`` route), and
    with ``operators`` every penalty's ``_operators.Operators`` (``path_factor``). ``route`` (``Record.path_route``): ``"gram"``,
    ``"svd"`` (R alone does not diagonalize the penalties) or ``"auto"`` (``gram`` where :func:`auto_ok` holds)."""

    def solved(spec):  # coef, rank, and with ``operators`` the basis and filters of the path's Operators
        coef, rank = path_coef(xp, spec, alpha)
        return coef, rank, asked(operators, lambda: (spec.V if spec.U is None else spec.U, filters(xp, spec, alpha)))

    s = None
    if route == "svd":
        spec = svd(xp, X, Y, offset_sq)
        out, s = solved(spec), spec.s
    else:
        spec = gram(xp, X, Y, offset_sq)
        if route == "gram":
            out = solved(spec)
        else:
            out = _compat.branch(
                xp,
                auto_ok(xp, spec, alpha, X),
                lambda X, Y: solved(spec),
                lambda X, Y: solved(svd(xp, X, Y, offset_sq)),
                (X, Y),
            )
    coef, rank, parts = out
    if parts is None:
        return Solution(coef, rank, s)
    V = None if s is None else xp.where((spec.lam > spec.cut)[..., None, :], spec.V, xp.zeros_like(spec.V))
    return Solution(coef, rank, s, operators=path_factor(xp, *parts, V))
