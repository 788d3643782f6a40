"""Out-of-core least squares: accumulate row chunks, merge accumulators, solve at the end.

:class:`NormalAccumulator` keeps the centered co-moment (Gram) matrix of ``[X, y]``;
:class:`QRAccumulator` keeps its triangular factor (TSQR across chunks). Both hold O(p^2)
numbers, p = n_features + n_targets, whatever the number of rows, in the namespace, on the
device and in the float dtype of the first chunk. The shared update and merge (Chan, Golub and
LeVeque's pairwise formulas) are in ``_stream``.
"""

from __future__ import annotations

import functools

from .._backend import _compat
from .._backend._compat import all_true, diagonal, eps, full_int, matmul, mT
from .._problem._input import as_real, check_bool, validate_alpha
from .._problem._scaling import scaled_alpha, times, unscale
from .._result import LstsqResult
from .._solvers import (
    Given,
    add_penalty,
    certified,
    check_method,
    filtered_solve,
    householder_solve,
    merge_targets,
    split_targets,
)
from ._stream import Accumulator, canonical, gram


def _alpha(meta, alpha):
    """None for least squares (a zero number, NumPy's scalars too), else the validated (1,) or
    (k,) penalty: an accumulator solves for one penalty, so a 1-D alpha is one per target (no
    paths here)."""
    if as_real(alpha) == 0:
        return None
    per_target = getattr(alpha, "ndim", 0) == 1 or isinstance(alpha, (list, tuple))
    return validate_alpha(meta.xp, alpha, meta.k, meta.dtype, meta.device, per_target)


def _default_cutoff(xp, state, n, rcond):
    """``rcond``, or the default of :func:`lstsq` with m the rows seen (an array: no value
    read): NumPy's ``eps * max(m, n)`` in float64, the probable rounding noise
    ``eps * (sqrt(max(m, n)) + min(m, n))`` in float32 (the worst case dropped real
    directions of tall float32 streams: 0.024 at 200000 rows)."""
    if rcond is not None:
        return rcond
    count = state.count
    n_ = xp.full((), float(n), dtype=count.dtype, device=_compat.device(count))
    if xp.finfo(state.mean.dtype).bits >= 64:
        return eps(xp, state.mean) * xp.maximum(count, n_)
    return eps(xp, state.mean) * (xp.sqrt(xp.maximum(count, n_)) + xp.minimum(count, n_))


_SOLVES: dict = {}


class _Solvable(Accumulator):
    """``solve`` for both accumulators; each defines ``_solve(xp, n, fit_intercept, rcond,
    state, alpha) -> (coef (n, k), rank, rss (k,))``, an array function (jitted on JAX)."""

    @_compat.on_input_device
    def solve(self, alpha=0.0, *, fit_intercept=True, rcond=None):
        """Least squares (``alpha=0``) or ridge on every row accumulated so far.

        Parameters
        ----------
        alpha : float or array of shape (k,)
            Ridge penalty on the coefficients (never on the intercept), as :func:`ridge`.
        fit_intercept : bool
            Fit an unpenalized intercept (the default, as :func:`ridge`).
        rcond : float in [0, 1), optional
            Relative cutoff for small singular values; default as :func:`lstsq`'s, with the
            rows seen so far as m.

        Returns
        -------
        LstsqResult
            ``coef``, ``intercept``, ``rank``, ``rss`` (see the class docstring for its
            accuracy) and ``singular_values=None``, in the accumulator's namespace, device
            and dtype.
        """
        rcond = check_method("auto", rcond)
        fit_intercept = check_bool(fit_intercept, "fit_intercept")
        xp, state = self._ready()
        self._check_intercept(xp, fit_intercept)
        alpha = _alpha(self._meta, alpha)
        meta = self._meta
        # One compiled call on JAX (eagerly, each small operation would compile alone).
        key = (type(self), xp, meta.n, fit_intercept, rcond)
        if key not in _SOLVES:
            _SOLVES[key] = _compat.jit(xp, functools.partial(_solved, type(self), xp, meta.n, fit_intercept, rcond))
        W, intercept, rank, rss = _SOLVES[key](state, alpha)
        if meta.y_vector:
            W, intercept, rss = W[:, 0], intercept[0], rss[0]
        return LstsqResult(W, intercept, rank, rss, None)


def _solved(cls, xp, n, fit_intercept, rcond, state, alpha):
    """(coef, intercept, rank, rss) of ``cls``'s fit of ``state``: solved with the columns of
    X at one scale (``_stream.canonical``) and mapped back exactly."""
    state, scale = canonical(xp, state, n, cls._scale_stat)
    if alpha is not None:
        alpha = scaled_alpha(xp, scale, alpha)
    if n == 0:
        # As lstsq with n = 0: zero coefficients, rank 0, all of y is residual.
        W = xp.zeros((0, state.stat.shape[0]), dtype=state.stat.dtype, device=_compat.device(state.stat))
        rss = diagonal(xp, state.stat)
        if not fit_intercept:
            rss = rss + state.weight * (state.shift + state.mean) ** 2
        rank = full_int(xp, (), 0, W)
    else:
        W, rank, rss = cls._solve(xp, n, fit_intercept, rcond, state, alpha)
    if fit_intercept:
        # (K_y + mu_y) - (K_x + mu_x) @ W, in the order that keeps the small terms' digits.
        intercept = state.shift[n:] - matmul(xp, state.shift[None, :n], W)[0, :]
        intercept = intercept + (state.mean[n:] - matmul(xp, state.mean[None, :n], W)[0, :])
    else:
        intercept = xp.zeros((W.shape[1],), dtype=W.dtype, device=_compat.device(W))
    out = unscale(xp, LstsqResult(W, intercept, rank, rss, None), scale, False)
    return out.coef, out.intercept, out.rank, out.rss


def _statistics(cls, xp, state, n, fit_intercept):
    """The statistic to solve with, and what centering removed from the squared column norms
    of X (for the rank tests; None without intercept). Without an intercept, the uncentered
    statistic: the centered one plus the row ``sqrt(W) mu`` (``C + W mu mu^T``)."""
    mean = state.shift + state.mean
    if fit_intercept:
        return state.stat, state.weight * mean[:n] * mean[:n]
    return cls._add_row(xp, state.stat, xp.sqrt(state.weight) * mean[None, :]), None


class NormalAccumulator(_Solvable):
    """Streaming normal equations: weight total, weighted means and centered co-moments.

    Each chunk is centered by its own weighted mean; chunks and accumulators are merged with
    the pairwise update ``C = C_a + C_b + (W_a W_b / W) delta delta^T`` (Chan, Golub and
    LeVeque), so a column around 1e8 with spread 1 keeps its digits with an intercept (the
    naive sum of ``[1, x]^T [1, x]`` loses all of them). Without an intercept the uncentered
    Gram matrix ``C + W mu mu^T`` is solved. Memory: p^2 + 3p + 3 numbers, p = n + k.

    ``solve`` factors the (centered) Gram matrix plus ``alpha I`` by Cholesky, with the rank
    decision of ``method="normal"`` (full rank certified by the inverse of the column-scaled
    factor, clear of the Gram matrix's rounding); otherwise it takes the minimum-norm solution
    from the SVD (= eigendecomposition) of that small matrix, dropping eigenvalues below
    ``max(rcond**2, c)`` times the largest, c the default cutoff (float64:
    ``eps * max(rows, n)``): no NaN, no exception. Accuracy:
    ``eps * cond(X_centered)**2`` in ``coef`` as for ``method="normal"``. ``rss`` comes from
    the statistics, ``S_yy - 2 w^T S_xy + w^T S_xx w`` (clipped at 0): its absolute error is
    about ``eps * S_yy``, so a fit that explains all but a fraction ``f`` of ``y``'s variance
    gets ``rss`` to a relative ``eps / f`` (use :class:`QRAccumulator` for near-exact fits).

    Methods ``update`` and ``merge`` (add a chunk, or another accumulator's rows, in place;
    both return self), ``copy`` (merge into a copy to keep both operands: ``a.copy().merge(b)``),
    ``step`` / ``with_state`` (pure form for ``jax.jit`` and ``jax.lax.scan``) and ``solve``.

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> rng = np.random.default_rng(0)
    >>> X = 1e8 + rng.standard_normal((1000, 3)); y = X @ [1.0, 2.0, 3.0] + 5.0
    >>> acc = lsq.NormalAccumulator()
    >>> for i in range(0, 1000, 300):
    ...     acc = acc.update(X[i:i + 300], y[i:i + 300])
    >>> r = acc.solve()
    >>> np.allclose(r.coef, [1.0, 2.0, 3.0], atol=1e-6)
    True
    """

    @staticmethod
    def _chunk_stat(xp, D):
        return gram(xp, D)

    @staticmethod
    def _scale_stat(xp, C, f):
        return times(xp, times(xp, C, tuple(g[:, None] for g in f)), f)

    @staticmethod
    def _add_row(xp, C, v):
        return C + gram(xp, v)

    @classmethod
    def _combine(cls, xp, a, b, v):
        return cls._add_row(xp, a + b, v)

    @classmethod
    def _solve(cls, xp, n, fit_intercept, rcond, state, alpha):
        S, offset_sq = _statistics(cls, xp, state, n, fit_intercept)
        Sxx, Sxy = S[:n, :n], S[:n, n:]
        A = Sxx if alpha is None else add_penalty(xp, Sxx, alpha)
        B = split_targets(xp, Sxy, alpha)
        L = _compat.cholesky(xp, A)
        cutoff = _default_cutoff(xp, state, n, rcond)
        # As gram.full_rank_test: the rank certified by the factor (``rank.certified``), clear
        # of the Gram matrix's rounding (the square root of the default cutoff, the
        # eigendecomposition's cut too); the eigendecomposition decides otherwise.
        resolution = xp.sqrt(_default_cutoff(xp, state, n, None))
        ok = all_true(xp, certified(xp, L, offset_sq, rcond, cutoff, resolution=resolution, colsq=diagonal(xp, A)))
        tol = xp.maximum(resolution, xp.full((), rcond or 0.0, dtype=S.dtype, device=_compat.device(S)))

        def cholesky(A, B):
            Z = _compat.solve_triangular(xp, L, B, lower=True)
            W = _compat.solve_triangular(xp, mT(xp, L), Z, lower=False)
            return merge_targets(xp, W, alpha), full_int(xp, (), n, W)

        def eigen(A, B):
            # A is symmetric positive semi-definite: its SVD is its eigendecomposition, and
            # pinv(A) B is the minimum-norm solution. Eigenvalues are squared singular values
            # of X: the cutoff is tol**2, relative to the largest column norm before centering
            # when that is larger (all-constant columns are pure rounding noise).
            u, s, vh = _compat.svd(xp, A)
            colsq = diagonal(xp, Sxx) if offset_sq is None else diagonal(xp, Sxx) + offset_sq
            W, rank, _ = filtered_solve(xp, (u, s, vh), B, None, tol * tol, n, xp.max(colsq))
            if alpha is not None:
                rank = xp.where(xp.all(alpha > 0), full_int(xp, (), n, W), xp.min(rank))
            return merge_targets(xp, W, alpha), rank

        W, rank = _compat.branch(xp, ok, cholesky, eigen, (A, B))
        syy = diagonal(xp, S)[n:]
        rss = xp.maximum(syy + xp.sum(W * (matmul(xp, Sxx, W) - 2 * Sxy), axis=0), xp.zeros_like(syy))
        return W, rank, rss


class QRAccumulator(_Solvable):
    """Streaming TSQR: weight total, weighted means and the R factor of the centered data.

    Keeps ``R`` with ``R^T R = C``, the centered co-moment matrix of ``[sqrt(w) X, sqrt(w) y]``
    (the columns of X, then of y), never the Gram matrix itself. A chunk ``D`` (its rows
    centered by the chunk's mean and weighted) is added by one QR,
    ``R = qr([R; D; sqrt(W_a W_b / W) delta^T])``, and two accumulators merge by the QR of
    ``[R_a; R_b; sqrt(W_a W_b / W) delta^T]``: the factored form of Chan's update.

    Why centered and not the factor of ``[sqrt(w), sqrt(w) X, sqrt(w) y]`` (ones first):
    Householder QR is backward stable column by column, so a column around 1e8 with spread 1
    would be perturbed by ``eps * 1e8`` relative to its spread and lose 8 digits; centering
    each chunk first removes the offset exactly as :func:`lstsq` does in memory, and the
    intercept, ``mu_y - mu_x @ coef``, stays unpenalized. A fit without intercept takes the
    factor of ``[R; sqrt(W) mu^T]`` (one (p+1) x p QR): ``R^T R + W mu mu^T`` is the uncentered
    Gram matrix. Memory: p^2 + 3p + 3 numbers, p = n + k.

    ``solve`` hands the blocks ``R_xx``, ``R_xy`` to the Householder QR solver of
    ``method="qr"`` (its rank decision, its SVD-of-R minimum-norm fallback, and for ridge its
    QR of ``[R_xx; sqrt(alpha) I]``). Accuracy ``eps * cond(X_centered)`` as in-memory QR.
    ``rss = ||R_xx w - R_xy||^2 + ||R_yy||^2`` per target, a sum of squares of the factor's
    entries with no cancellation: its error, ~``eps * ||y|| * ||r||``, is first order in the
    residual as for an rss computed from the data, i.e. a relative ``eps / sqrt(f)`` for a fit
    that leaves a fraction ``f`` of y's variance (``NormalAccumulator``: ``eps / f``).

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((1000, 3)); y = X @ [1.0, 2.0, 3.0] + 5.0
    >>> a = lsq.QRAccumulator().update(X[:600], y[:600])
    >>> b = lsq.QRAccumulator().update(X[600:], y[600:])
    >>> r = a.merge(b).solve()  # a now holds all 1000 rows; b is unchanged
    >>> bool(np.allclose(r.coef, [1.0, 2.0, 3.0]) and np.isclose(r.intercept, 5.0))
    True
    """

    @staticmethod
    def _chunk_stat(xp, D):
        return D  # the rows themselves: the QR of [R; D; v] in _combine factors them

    @staticmethod
    def _scale_stat(xp, R, f):
        return times(xp, R, f)  # R D is the R factor of Z D

    @staticmethod
    def _add_row(xp, R, v):
        return _compat.qr_r(xp, xp.concat([R, v], axis=0))

    @classmethod
    def _combine(cls, xp, a, b, v):
        return cls._add_row(xp, xp.concat([a, b], axis=0), v)

    @classmethod
    def _solve(cls, xp, n, fit_intercept, rcond, state, alpha):
        R, offset_sq = _statistics(cls, xp, state, n, fit_intercept)
        cutoff = _default_cutoff(xp, state, n, rcond)
        # R_xx is already triangular: the solver's own QR of it costs O(n^3) and no accuracy.
        W, rank = householder_solve(xp, R[:n, :n], R[:n, n:], alpha, Given(rcond, offset_sq), cutoff=cutoff)[:2]
        resid = matmul(xp, R[:, :n], W) - R[:, n:]
        return W, rank, xp.sum(resid * resid, axis=0)
