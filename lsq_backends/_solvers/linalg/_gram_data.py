"""The data of a tall Gram-route fit (``normal``, ``auto``, and ``qr``/``svd``'s CholeskyQR2):
its Gram products, and the residual products that refine a solution, with the intercept
handled on the n x n side.

Without an intercept the products are those of X itself. With one, X and Y arrive uncentered
(weighted by ``root`` = sqrt(weights) row by row) and are shifted by ``x_shift``, ``y_shift``
near their means (where the products run by row blocks, :func:`sample_means` of ~1000 rows
spread over X, read without a pass; elsewhere the weighted means, taken by :meth:`TallGram.products`
in one product that sharded X reduces in place): with ``Z = root (X - x_shift)``, ``V = root (Y - y_shift)``,
``s = Z^T root``, ``t = V^T root`` and ``total`` the sum of the weights,

    A = Z^T Z - s s^T / total,     B = Z^T V - s t^T / total

are exactly the Gram products of the centered (and intercept-eliminated, see
``_center.eliminate_intercept``) data, whatever the shifts: ``s`` and ``t`` carry their
distance to the means, whose exact values ``shift + s / total`` follow. The shifts are near
the data, so the subtractions ``X - x_shift`` are exact or nearly so for columns offset by
1e8, and no product sees the offsets; a shift off the mean by d costs the Gram matrix a
factor ~(1 + d**2 / var) of its rounding (negligible for a sample mean), which the
refinement step removes: its residual pass shifts by means exact to rounding. The residual of
the centered problem is ``r = r' - root c`` with ``r' = V - Z W`` and ``c = root^T r' / total``,
so ``X_c^T r = Z^T r' - s c`` and ``||r||^2 = ||r'||^2 - total c^2`` (by row blocks; on whole arrays
``r`` itself is formed, one m x k subtraction, and its products taken as they are).

On NumPy (2-D X of many rows) each product is one pass over X in row blocks that stay in
cache: the block is shifted (again by the exact means for the residual) and weighted into a
small buffer, and the Gram product, the cross product with Y and the sums read it from there.
No X-sized array is made. Elsewhere the same formulas run on whole arrays, from one shifted
copy ``Z`` kept for the fit (its shifts the weighted means, so it needs no second shift): the
Gram product, ``Z^T [V root]`` (``B`` and ``s`` in one product), the residual ``V - Z W`` and
``Z^T r'``; CholeskyQR2's ``Q1 = X_c M`` is ``Z M`` corrected on the n x n side
(:meth:`TallGram.basis_products`). One sweep over X for the means and one for the copy beyond
the products without an intercept. Without weights the shifts are the plain means (one reduction
each) and ``s`` and ``t`` their rounding: where a refinement step follows (``refined``: ``normal``
and ``auto``, lean route or full), whose residual is centered exactly, the corrections by them are
left to it (``s = 0``): ten operators fewer. With weights the means are products, whose rounding (no cascaded
sum) is larger: the Gram matrix's correction by it stays (second order in it, but one refinement step leaves
about its square: 3e-12 at offsets of 1.7e9, cond 1e2), the others are left to the refinement (the means' rounding
then reaches the intercept alone, within its own conditioning: ``python -m benchmarks.lean --offsets-accuracy
--weighted``). CholeskyQR2, which has no such step, needs the corrections (``qr`` with columns offset by 1e8
and cond 1e3 erred by 1.3e-10, past QR's bound, without them):
its data (``qr``'s and ``svd``'s) is never refined, and a refined fit's fallbacks start anew from
:meth:`TallGram.arrays`. On 4000 x 32 data with
columns offset by 0 to 1.7e9 (``python -m benchmarks.lean --offsets-accuracy``: cond 1e2 and 1e5,
8 problems each, against the fit of the data centered in extended precision) the coefficients' and
the intercept's errors stayed within a factor 1.5 of those with the corrections (the intercept at
offset 1e8: median 4.0e-14 against 2.8e-14 relative)."""

from __future__ import annotations

from ..._backend import _compat
from ..._problem._center import eliminate_intercept

# Rows per block on NumPy: ~1 MB of float64, read from cache by every product of the block
# (the block size that measured best, design notes).
BLOCK_ELEMENTS = 1 << 17
MIN_ROWS = 256  # wide blocks: the Gram product of a thinner one runs well below BLAS speed
SAMPLE_ROWS = 1024


def sample_means(xp, X, Y):
    """Means of ~``SAMPLE_ROWS`` rows of X and Y spread evenly over them (a strided view, no
    pass over X), (..., 1, n) and (..., 1, k): the shifts of the products by row blocks, which
    only need to be near the means (sorted or drifting data included)."""
    step = max(X.shape[-2] // SAMPLE_ROWS, 1)
    Xs, Ys = X[..., ::step, :], Y[..., ::step, :]
    return _compat.reduce_mean(xp, Xs, axis=-2, keepdims=True), _compat.reduce_mean(xp, Ys, axis=-2, keepdims=True)


class TallGram:
    """Products of tall X (..., m, n) and Y (..., m, k), with an intercept when ``centered``
    (``root``: sqrt of the weights (..., m, 1), or None). Its shifts: the means of a sample of
    rows where the products run by row blocks (the residual shifts each block again by the exact
    means), else the weighted means, taken by :meth:`products` (one product, which sharded X
    reduces in place), so that the one shifted copy of X that every product reads is centered
    to rounding."""

    def __init__(self, xp, X, Y, root=None, centered=False, refined=False):
        self.xp = xp
        self.centered = centered
        self.refined = refined  # a refinement step follows the products: what it absorbs is left to it
        self.root = root
        self.x_shift = self.y_shift = None  # near the means (centered): module docstring
        self.s = self.t_mean = self.total = None  # s (..., n, 1); t_mean: V's mean (..., 1, k)
        self.unit = self.root_total = None  # weighted: root / sqrt(total), a unit vector, and sqrt(total)
        self._offset_sq = self._squares = None
        self.kept = None  # (Z, V): the one shifted copy, made by ``products`` (whole arrays)
        m, n = X.shape[-2:]
        rows = max(BLOCK_ELEMENTS // max(n, 1), MIN_ROWS)  # row blocks where X is 2-D and long
        self.rows = rows if (_compat.traits(xp).host_blas and X.ndim == 2) and m >= 4 * rows else None
        if centered:
            if root is None:  # the weights' total is m, a number (no array of ones, no sum, on whole arrays)
                self.weights, self.total = None, float(m)
            else:
                self.weights = root  # root of the weights, (..., m, 1)
                self._squares = root * root  # the weights again, for the total and the means
                self.total = _compat.reduce_sum(xp, self._squares, axis=-2, keepdims=True)  # (..., 1, 1)
                self.root_total = xp.sqrt(self.total)
                self.unit = root / self.root_total  # centers a residual in one product and one operator
            if self.rows is not None:
                self.x_shift, self.y_shift = sample_means(xp, X, Y)
        self.x_mean, self.y_mean = self.x_shift, self.y_shift  # exact after ``products``

    def _blocks(self, X, Y):
        """(Zb, Vb, rb) per row block: the shifted, weighted block (in reused buffers) and its
        weights' roots (None without centering)."""
        xp = self.xp
        m, n = X.shape
        if not self.centered:
            for i in range(0, m, self.rows):
                yield X[i : i + self.rows], Y[i : i + self.rows], None
            return
        zbuf = xp.empty((self.rows, n), dtype=X.dtype)
        vbuf = xp.empty((self.rows, Y.shape[-1]), dtype=Y.dtype)
        weights = xp.ones((m, 1), dtype=X.dtype) if self.weights is None else self.weights
        for i in range(0, m, self.rows):
            Xb, Yb, rb = X[i : i + self.rows], Y[i : i + self.rows], weights[i : i + self.rows]
            Z = xp.subtract(Xb, self.x_shift, out=zbuf[: Xb.shape[0]])
            V = xp.subtract(Yb, self.y_shift, out=vbuf[: Xb.shape[0]])
            if self.root is not None:
                xp.multiply(Z, rb, out=Z)
                xp.multiply(V, rb, out=V)
            yield Z, V, rb

    def products(self, X, Y):
        """``(A, B)``: the Gram matrix (..., n, n) and the cross product (..., n, k)."""
        xp = self.xp
        if not self.centered:
            return _compat.normal_products(xp, X, Y)  # blocked on NumPy where that pays (narrow X)
        if self.rows is None:
            # One shifted copy, kept for the residual: two passes over it (the Gram product, and
            # the cross product with Y and the weights' roots side by side), where shifting
            # again and a product of its own for the sums made four and a second copy. Its
            # shifts, the weighted means: one product each.
            if self.root is None:  # the plain means: one reduction each
                self.x_shift = _compat.reduce_mean(xp, X, axis=-2, keepdims=True)
                self.y_shift = _compat.reduce_mean(xp, Y, axis=-2, keepdims=True)
            else:
                p = _compat.mT(xp, self._squares / self.total)  # the weights' shares: one division, not one a mean
                self.x_shift, self.y_shift = _compat.matmul(xp, p, X), _compat.matmul(xp, p, Y)
            Z, V = X - self.x_shift, Y - self.y_shift
            if self.root is not None:
                Z, V = self.root * Z, self.root * V
            self.kept = Z, V
            A = _compat.matmul(xp, _compat.mT(xp, Z), Z)
            if self.root is None and self.refined:
                # Centered by their own means, Z's and V's column sums are the means' rounding: the corrections
                # by them (of A, B and the means) are left to the refinement step that follows (module
                # docstring). ``s`` is then 0, a number.
                self.s = self.t_mean = 0.0
                self.x_mean, self.y_mean = self.x_shift, self.y_shift
                return A, _compat.cross(xp, Z, V)
            # B and s = Z^T roots in one product (a sum of Z's columns alone would be a pass over X of its own)
            k, shape = V.shape[-1], (*V.shape[:-1], 1)
            if self.root is None:
                roots = xp.ones(shape, dtype=V.dtype, device=_compat.device(V))
            else:  # refined: the unit vector's, Z^T unit = s / sqrt(total), which A's correction alone needs
                roots = _compat.as_rank(xp, self.unit if self.refined else self.weights, V.ndim)
                roots = roots if tuple(roots.shape) == shape else xp.broadcast_to(roots, shape)  # shared by a batch
            Bs = _compat.cross(xp, Z, xp.concat([V, roots], axis=-1))
            B, s = Bs[..., :k], Bs[..., k:]  # (..., n, 1): Z^T roots, or Z^T unit where refined
            if self.refined and self.root is not None:
                # Weighted means are products, whose rounding (no cascaded sum) is larger: A's correction
                # (s s^T / total = u u^T, u = Z^T unit: the product's last column here; second order in it) is kept,
                # which one refinement step does not absorb at large offsets; B's and the means' (the refinement's
                # residual is centered exactly) are left to it, as without weights (``s`` 0).
                self.s, self.t_mean, self.x_mean, self.y_mean = 0.0, 0.0, self.x_shift, self.y_shift
                return _compat.add_product(xp, A, s, _compat.mT(xp, s), -1), B
            self.s = s
            if self.root is None:  # V's mean, one reduction (a product and its division took two)
                self.t_mean = _compat.reduce_mean(xp, V, axis=-2, keepdims=True)
            else:
                self.t_mean = _compat.mT(xp, _compat.matmul(xp, _compat.mT(xp, V), roots)) / self.total
        else:
            A = B = s = t = None
            for Z, V, rb in self._blocks(X, Y):
                Zt = Z.T
                a, b, s_, t_ = Zt @ Z, Zt @ V, Zt @ rb, V.T @ rb
                A, B, s, t = (a, b, s_, t_) if A is None else (A + a, B + b, s + s_, t + t_)
            self.s, self.t_mean = s, _compat.mT(xp, t) / self.total

        # s / total first: s s^T alone under- or overflows where the weights are tiny or huge
        s_mean, t_mean = _compat.mT(xp, self.s) / self.total, self.t_mean
        A, B = A - self.s * s_mean, B - self.s * t_mean
        # The exact means (the shifts only need to be near them), the shifts of the residual
        # pass, where they keep X^T r free of the offsets' rounding.
        self.x_mean = self.x_shift + s_mean
        self.y_mean = self.y_shift + t_mean
        if self.kept is None:  # the blocks are shifted again, by the exact means
            self.x_shift, self.y_shift = self.x_mean, self.y_mean
        return A, B

    @property
    def offset_sq(self):
        """What centering removed from X's squared column norms, ``total * mean**2`` (..., n), once the means are
        known (:meth:`products`), for the rank tests; None before, and without an intercept."""
        if self._offset_sq is None and self.s is not None:  # centered, the products made: the means known
            self._offset_sq = (self.total * self.x_mean * self.x_mean)[..., 0, :]
        return self._offset_sq

    @offset_sq.setter
    def offset_sq(self, value):
        self._offset_sq = value

    def residual(self, X, Y, W, cross=True):
        """``(h, rss)`` for the residual r = Y - X W of the (centered) problem: h = X^T r
        (..., n, k) and rss = ||r||^2 per target (..., k). Needs :meth:`products` first. With
        ``cross=False`` (whole arrays) h is None: rss alone, one pass over X."""
        xp = self.xp
        if self.rows is None:
            if self.centered:
                X, Y = self.kept
            R = _compat.minus_fresh(xp, Y, _compat.matmul(xp, X, W))
            if self.centered:  # the centered problem's residual r = r' - root c: X_c^T r = Z^T r, ||r||^2 its own
                if self.weights is None:
                    R = R - _compat.reduce_mean(xp, R, axis=-2, keepdims=True)
                else:  # root c = unit (unit^T r'): a product and one operator
                    unit = _compat.as_rank(xp, self.unit, R.ndim)
                    R = _compat.add_product(xp, R, unit, _compat.matmul(xp, _compat.mT(xp, unit), R), -1)
            h = _compat.cross(xp, X, R) if cross else None
            return h, _compat.sum_of_squares(xp, R, axis=-2)  # R is not used after this
        h = rss = c = s = None
        for Z, V, rb in self._blocks(X, Y):
            R = V - Z @ W
            h_, rss_ = Z.T @ R, xp.sum(R * R, axis=0)
            h, rss = (h_, rss_) if h is None else (h + h_, rss + rss_)
            if rb is not None:
                c_, s_ = rb.T @ R, Z.T @ rb
                c, s = (c_, s_) if c is None else (c + c_, s + s_)
        if self.centered:  # by blocks, the corrections on the n x n side: X_c^T r = h - s c, ||r||^2 less total c^2
            c = c / self.total
            h = None if h is None else h - s * c
            rss = rss - (self.total * c * c)[..., 0, :]
        return h, rss

    def basis_products(self, X, Y, M):
        """``(Q^T Q, Q^T Y)`` of ``Q = X M`` (M (..., n, n)), X and Y centered when this data is (:meth:`products`
        first): CholeskyQR2's second pass, three passes over X as without an intercept. Centered, ``Z M`` (the kept
        copy's) is the centered Q plus ``root u^T``, ``u = M^T s / total``: ``Q^T Q = P - q q^T / total`` and
        ``Q^T Y_c = (Z M)^T V - q t^T / total``, with ``P = (Z M)^T (Z M)`` and ``q = M^T s``."""
        xp = self.xp
        # refined data (``normal``, ``auto``, the lean route) leaves corrections to its refinement step, which CholeskyQR2
        # has not; their fallbacks take :meth:`arrays`, so only ``qr``'s and ``svd``'s own data arrive here
        assert not self.refined, "CholeskyQR2 needs the corrections a refined fit leaves out"
        if self.centered:
            X, Y = self.kept
        Q = _compat.matmul(xp, X, M)
        G, C = _compat.matmul(xp, _compat.mT(xp, Q), Q), _compat.cross(xp, Q, Y)
        if not self.centered:
            return G, C
        q = _compat.matmul(xp, _compat.mT(xp, M), self.s)  # (..., n, 1)
        qt = _compat.mT(xp, q) / self.total
        return G - q * qt, C - q * self.t_mean

    def whole(self):
        """This data with its products on whole arrays (centered: from the one kept shifted copy,
        which :meth:`basis_products` reads too), before :meth:`products`: shifted by the weighted
        means where the row blocks would have taken a sample's. Returns itself (changed in place:
        the caller's reference sees the exact means)."""
        if self.centered and self.rows is not None:
            self.x_shift = self.y_shift = self.x_mean = self.y_mean = None
        self.rows = None
        return self

    def arrays(self, X, Y):
        """The data as the other solvers take it (``eliminate_intercept``'s when centered: an
        X-sized copy, made only on a fallback route, or on a route that forms no Gram matrix,
        whose means and offsets, with no products before, are then the fit's)."""
        if not self.centered:
            return X, Y
        Xe, Ye, x_mean, y_mean, offset_sq = eliminate_intercept(self.xp, X, Y, self.root)
        if self.offset_sq is None:
            self.x_mean, self.y_mean, self.offset_sq = x_mean, y_mean, offset_sq
        return Xe, Ye
