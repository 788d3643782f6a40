"""Streaming sufficient statistics: what the two accumulators share.

A chunk of rows ``Z = [X, Y]`` (weights ``w``) is summarized by its weight total ``W``, its
weighted mean ``mu`` and a matrix ``M`` of its centered cross-products: the co-moment matrix
``C = sum_i w_i (z_i - mu)(z_i - mu)^T`` itself (``NormalAccumulator``) or a triangular factor
``R`` with ``R^T R = C`` (``QRAccumulator``). Two summaries combine by the pairwise update of
Chan, Golub and LeVeque, generalized to co-moments::

    W = W_a + W_b,   delta = mu_b - mu_a,   mu = mu_a + (W_b / W) delta,
    C = C_a + C_b + (W_a W_b / W) delta delta^T

whose factored form is ``R = qr([R_a; R_b; sqrt(W_a W_b / W) delta^T])``. Nothing is ever
summed uncentered, so columns with a large offset (1e8 with a spread of 1) keep their digits
for a fit with an intercept. The uncentered statistics a fit without one needs are recovered at
the end from ``C + W mu mu^T`` (or the factor of ``[R; sqrt(W) mu^T]``). The means themselves
are kept relative to a shift ``K`` (the weighted mean of the first chunk with positive weight,
as rounded). A mean near 1e8 stored in floating point is off by ``ulp(1e8)`` = 1.5e-8. That
would enter ``delta`` and cost C about ``eps * |mean| / spread`` relative (measured 3.5e-10 on
1e8 + N(0, 1) data). ``z - K`` is exact for data near ``K``, and so are the small means of the
shifted data.

An update is a merge with the chunk's own summary: the state stays O(p^2), p = n_features +
n_targets, however many rows went in. Every step is array-API code without value reads (zero
weights are handled with ``where``), so an update traces under ``jax.jit`` and ``jax.lax.scan``.

Scale. The statistics square the data. Kept as they come, columns around 1e200 overflowed
them and columns around 1e-200 underflowed (float32: 1e+-25), and so did weights near
1e+-300. The state keeps them at unit scale with a running power of two per column and one
for the weights (``_scaling``). Column j of ``sqrt(w) [X, Y]`` is divided by ``2**g_j`` and
``sqrt(w)`` by ``2**r``. So ``C`` (``R``) holds ``C_ij / 2**(g_i + g_j)`` (``R_ij / 2**g_j``),
``W`` holds ``W / 4**r`` and the means ``mu_j / 2**(g_j - r)``. Each chunk's exponents are
chosen on the device from its own magnitudes (log2, as ``_scaling``). Where a chunk needs a
larger exponent than the state holds, the state is rescaled first, exactly, by powers of two.
(What falls below the range then is below rounding next to the new data.) ``solve`` brings
the columns of X to one common exponent, as a penalty and the minimum-norm solution are defined
for X as a whole. It maps the fit back as ``_scaling.unscale`` does for the in-memory fits.
"""

from __future__ import annotations

import copy
import importlib
import threading
from typing import Any, NamedTuple

from .._backend import _compat
from .._backend._compat import matmul, mT
from .._problem._input import check_bool, validate
from .._problem._prepare import prepare
from .._problem._scaling import empty_exponent, exponent, log2_abs, make_scale, powers, times


class StreamState(NamedTuple):
    """State of an accumulator: a NamedTuple of arrays, hence a JAX pytree.

    Attributes
    ----------
    weight : array, shape ()
        Total weight (the number of rows without ``sample_weight``).
    count : array, shape ()
        Number of rows seen (sets the default rank cutoff, as ``m`` does in :func:`lstsq`).
    shift : array, shape (p,)
        The point the means are measured from (the first chunk's rounded weighted mean).
    mean : array, shape (p,)
        Weighted mean of ``[X, Y] - shift``, p = n_features + n_targets.
    stat : array, shape (p, p)
        Centered co-moment matrix (normal) or its upper triangular factor (QR).
    scale : array, shape (p,)
        Exponents ``g``: the statistics are those of ``sqrt(w) [X, Y]`` divided by ``2**g``
        column by column (integer values, in the data's float dtype; see the module docstring).
    weight_scale : array, shape ()
        Exponent ``r``: ``weight`` is the total divided by ``4**r``.
    """

    weight: Any
    count: Any
    shift: Any
    mean: Any
    stat: Any
    scale: Any
    weight_scale: Any


def _safe(xp, w):
    return xp.where(w > 0, w, xp.ones_like(w))


def pairwise_merge(xp, a, b, combine, scale_stat=None):
    """Chan-Golub-LeVeque merge of two summaries; ``combine(stat_a, stat_b, v)`` adds the correction row
    ``v = sqrt(W_a W_b / W) delta`` (1, p) to the two statistics. ``b.stat`` may be any matrix ``combine`` takes
    (the chunk's centered rows, for QR). Zero total weight (empty chunks, zero weights) gives zero corrections,
    never NaN. ``scale_stat`` (:func:`rescale`): the two are brought to common exponents first; else they share them."""
    if scale_stat is not None:
        g, r = xp.maximum(a.scale, b.scale), xp.maximum(a.weight_scale, b.weight_scale)
        a, b = rescale(xp, a, g, r, scale_stat), rescale(xp, b, g, r, scale_stat)
    w = a.weight + b.weight
    frac = b.weight / _safe(xp, w)
    shift = xp.where(a.weight > 0, a.shift, b.shift)
    # Both means relative to one shift: K_b - K_a is exact for nearby shifts (Sterbenz).
    mean_a = a.mean + (a.shift - shift)
    delta = b.mean + (b.shift - shift) - mean_a
    mean = mean_a + frac * delta
    v = xp.reshape(xp.sqrt(a.weight * frac) * delta, (1, -1))
    stat = combine(a.stat, b.stat, v)
    return StreamState(w, a.count + b.count, shift, mean, stat, a.scale, a.weight_scale)


def rescale(xp, state, g, r, scale_stat):
    """``state`` with exponents ``g`` (p,) and ``r`` (), at least its own: the statistic by
    ``2**-(g - g_old)`` column by column (``scale_stat(xp, stat, f)``, ``f`` a tuple of
    factors (p,)), the weight by ``4**-(r - r_old)``, the means and shift by the change of
    ``g - r``. Exact, short of underflow of what is negligible next to the larger scale."""
    de = (g - r) - (state.scale - state.weight_scale)
    fs, fw, fm = powers(xp, [(state.scale - g, 2), (2 * (state.weight_scale - r), 4), (-de, 2)])
    return StreamState(
        times(xp, state.weight, fw), state.count, times(xp, state.shift, fm), times(xp, state.mean, fm),
        scale_stat(xp, state.stat, fs), g, r,
    )  # fmt: skip


def _chunk_exponents(xp, Z, root):
    """(g (p,), r ()) of one chunk (see the module docstring): ``r`` from max sqrt(w), ``g_j``
    from ``max sqrt(w) * max_i |Z_ij|``, in log2 (no product can overflow), as ``_scaling``
    does; "empty" for a column (or weights) without magnitude, so that the state's prevails."""
    empty = empty_exponent(xp, Z.dtype)
    dev = _compat.device(Z)
    if Z.shape[0] == 0:
        return xp.full((Z.shape[1],), empty, dtype=Z.dtype, device=dev), xp.full((), empty, dtype=Z.dtype, device=dev)
    lz = log2_abs(xp, xp.max(xp.abs(Z), axis=0))
    if root is None:
        return exponent(xp, lz, empty), xp.zeros((), dtype=Z.dtype, device=dev)
    lr = log2_abs(xp, xp.max(root))
    return exponent(xp, lz + lr, empty), exponent(xp, lr, empty)


def chunk_summary(xp, X, Y, root, state, scale_stat):
    """``(state, chunk)``: ``state`` rescaled to the exponents this chunk needs, and the
    chunk's (weight, count, shift, mean, centered weighted rows D) at those exponents, its
    means taken relative to ``state``'s shift (or, while ``state`` holds no weight, to the
    chunk's own rounded mean)."""
    Z = xp.concat([X, Y], axis=-1)
    m = Z.shape[0]
    dev = _compat.device(Z)
    g_c, r_c = _chunk_exponents(xp, Z, root)
    g, r = xp.maximum(state.scale, g_c), xp.maximum(state.weight_scale, r_c)
    state = rescale(xp, state, g, r, scale_stat)
    fz, fr = powers(xp, [(r - g, 1), (-r, 1)])  # within the range: an empty column's zeros stay 0
    Z = times(xp, Z, fz)
    root = None if root is None else root * fr
    count = xp.full((), float(m), dtype=Z.dtype, device=dev)
    weights = None if root is None else root * root

    def weighted_sum(A):
        return xp.sum(A, axis=0) if weights is None else xp.sum(weights * A, axis=0)

    w = count if weights is None else xp.sum(weights)
    shift = xp.where(state.weight > 0, state.shift, weighted_sum(Z) / _safe(xp, w))
    Z = Z - shift[None, :]
    mean = weighted_sum(Z) / _safe(xp, w)
    D = Z - mean[None, :]
    if root is not None:
        D = root * D
    return state, StreamState(w, count, shift, mean, D, g, r)


def canonical(xp, state, n, scale_stat):
    """``(state', scale)``: ``state`` with the columns of X at one common exponent (the
    largest; y's keep theirs), as a fit of X as a whole needs, and the ``_scaling.Scale`` that
    maps its fit back (coef by ``2**(g_y - g_x)``, intercept ``2**(g_y - r)``, rss ``4**g_y``)."""
    g, r = state.scale, state.weight_scale
    gx = xp.max(g[:n]) if n else xp.full((), empty_exponent(xp, g.dtype), dtype=g.dtype, device=_compat.device(g))
    target = xp.concat([xp.broadcast_to(gx, (n,)), g[n:]])
    (f,) = powers(xp, [(g - target, 2)])
    state = StreamState(
        state.weight, state.count, times(xp, state.shift, f), times(xp, state.mean, f), scale_stat(xp, state.stat, f),
        target, r,
    )  # fmt: skip
    scale, _ = make_scale(xp, None, gx - r, g[n:] - r, r)
    return state, scale


def gram(xp, D):
    """D^T D at full precision."""
    return matmul(xp, mT(xp, D), D)


_KERNELS: dict = {}


def _kernel(cls, xp):
    """The update of ``cls`` as one function of arrays, compiled once per chunk shape on JAX
    (``_compat.jit``): eagerly, JAX would compile each of its ~30 operations per new shape."""
    key = (cls, xp)
    if key not in _KERNELS:

        def update(state, X, Y, root):
            state, chunk = chunk_summary(xp, X, Y, root, state, cls._scale_stat)
            chunk = chunk._replace(stat=cls._chunk_stat(xp, chunk.stat))
            return pairwise_merge(xp, state, chunk, lambda a, b, v: cls._combine(xp, a, b, v))

        _KERNELS[key] = _compat.jit(xp, update)
    return _KERNELS[key]


class Meta(NamedTuple):
    """What the first chunk fixes: namespace, device, dtype and shapes."""

    xp: Any
    device: Any
    dtype: Any
    n: int
    k: int
    y_vector: bool


class Accumulator:
    """Shared machinery of :class:`NormalAccumulator` and :class:`QRAccumulator`.

    Subclasses define ``_combine(xp, stat_a, stat_b, v)``, ``_chunk_stat(xp, D)`` (the
    chunk's statistic, given its centered weighted rows), ``_scale_stat(xp, stat, f)`` (the
    statistic of the columns scaled by ``f``, a tuple of factors) and ``_add_row(xp, stat, v)`` as
    static or class methods (they are compiled once per class on JAX), and ``_solve``.

    Threads: :meth:`update` and :meth:`merge` hold the accumulator's lock for their
    read-modify-write of the state, so chunks added from several threads at once all count
    (they are added one at a time). Pickling and ``copy.deepcopy`` keep the state's arrays as
    they are, the namespace by its module name (imported again on loading) and the device as
    the loaded arrays' (a JAX device does not pickle); the lock is not state: each copy gets
    its own.
    """

    def __init__(self):
        self.state = None
        self._meta = None
        self._lock = threading.Lock()

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items() if k != "_lock"}
        if self._meta is not None:  # a module does not pickle: its name does
            state["_meta"] = self._meta._replace(xp=self._meta.xp.__name__, device=None)
        return state

    def __setstate__(self, state):
        meta = state.get("_meta")
        if meta is not None and isinstance(meta.xp, str):
            dev = None if state["state"] is None else _compat.device(state["state"].stat)
            state = {**state, "_meta": meta._replace(xp=importlib.import_module(meta.xp), device=dev)}
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self):
        if self._meta is None:
            return f"{type(self).__name__}(empty)"
        m = self._meta
        return f"{type(self).__name__}(n_features={m.n}, n_targets={m.k}, dtype={m.dtype}, namespace={m.xp.__name__})"

    # -- validation ---------------------------------------------------------------------------
    def _validate(self, X, y, sample_weight, check_finite):
        """Validate a chunk as :func:`lstsq` does, then against what the first chunk fixed."""
        check_finite = check_bool(check_finite, "check_finite")
        if getattr(X, "ndim", 2) != 2:
            msg = f"X must be one chunk of rows of shape (m, n_features); got shape {tuple(X.shape)}"
            raise ValueError(msg)
        v = validate(X, y, sample_weight, fit_intercept=False, check_finite=check_finite)
        problem = prepare(v, keep_original=True)
        xp = problem.xp
        Xv, Y, root = problem.original
        meta = Meta(xp, _compat.device(Xv), Xv.dtype, Xv.shape[1], Y.shape[1], problem.y_was_vector)
        ref = self._meta
        if ref is None:
            return xp, Xv, Y, root, meta
        if xp is not ref.xp:
            msg = f"this chunk comes from {xp.__name__} but the accumulator holds {ref.xp.__name__} arrays (set by the first chunk)"
            raise TypeError(msg)
        if meta.device is not None and ref.device is not None and repr(meta.device) != repr(ref.device):
            msg = f"this chunk is on {meta.device!r} but the accumulator is on {ref.device!r} (set by the first chunk)"
            raise ValueError(msg)
        if meta.n != ref.n:
            msg = f"X must have {ref.n} columns, as the first chunk; got {meta.n}"
            raise ValueError(msg)
        if meta.y_vector != ref.y_vector or meta.k != ref.k:
            want = "(m,)" if ref.y_vector else f"(m, {ref.k})"
            msg = f"y must have shape {want}, as the first chunk; got shape {tuple(y.shape)}"
            raise ValueError(msg)
        if meta.dtype != ref.dtype:
            if any(xp.isdtype(a.dtype, "real floating") for a in (X, y) if hasattr(a, "dtype")):
                msg = f"this chunk has dtype {meta.dtype} but the accumulator holds {ref.dtype} (set by the first chunk); cast it first"
                raise TypeError(msg)
            # Integer chunks take the accumulator's float dtype, as they would have at the start.
            Xv, Y = xp.astype(Xv, ref.dtype), xp.astype(Y, ref.dtype)
            root = None if root is None else xp.astype(root, ref.dtype)
        return xp, Xv, Y, root, ref

    def _check_other(self, other):
        if type(other) is not type(self):
            msg = f"can only merge with another {type(self).__name__}; got {type(other).__name__}"
            raise TypeError(msg)
        a, b = self._meta, other._meta
        if a is None or b is None:
            return
        if a.xp is not b.xp or repr(a.device) != repr(b.device) or a.dtype != b.dtype:
            msg = f"cannot merge accumulators of different namespaces, devices or dtypes: {self!r} and {other!r}"
            raise ValueError(msg)
        if (a.n, a.k, a.y_vector) != (b.n, b.k, b.y_vector):
            msg = f"cannot merge accumulators of different shapes: {self!r} and {other!r}"
            raise ValueError(msg)

    # -- state --------------------------------------------------------------------------------
    def _empty_state(self, meta):
        xp, p = meta.xp, meta.n + meta.k
        zero = xp.zeros((), dtype=meta.dtype, device=meta.device)
        mean = xp.zeros((p,), dtype=meta.dtype, device=meta.device)
        stat = xp.zeros((p, p), dtype=meta.dtype, device=meta.device)
        empty = empty_exponent(xp, meta.dtype)  # no data yet: any chunk's exponents prevail
        scale = xp.full((p,), empty, dtype=meta.dtype, device=meta.device)
        return StreamState(
            zero, zero, mean, mean, stat, scale, xp.full((), empty, dtype=meta.dtype, device=meta.device)
        )

    @_compat.on_input_device
    def step(self, state, X, y, /, sample_weight=None, *, check_finite=True):
        """The pure update behind :meth:`update`: ``state`` plus one chunk, as a new state (``state=None``: from zero).

        Use it where state must be passed explicitly: ``jax.jit(acc.step)``, or ``jax.lax.scan(lambda s, c:
        (acc.step(s, *c), None), acc.state, (Xs, ys))`` over stacked chunks, then ``acc.with_state(s).solve()``."""
        xp, Xv, Y, root, meta = self._validate(X, y, sample_weight, check_finite)
        return self._step(state, xp, Xv, Y, root, meta)

    def _step(self, state, xp, X, Y, root, meta):
        if state is None:
            state = self._empty_state(meta)
        return _kernel(type(self), xp)(state, X, Y, root)

    @_compat.on_input_device
    def update(self, X, y, /, sample_weight=None, *, check_finite=True):
        """Add a chunk of rows (validated like :func:`lstsq`'s inputs); returns ``self``.

        The first chunk fixes the namespace, device, float dtype, ``n_features`` and the
        shape of ``y`` (vector or ``(m, k)``); a later chunk that differs raises
        (``TypeError`` for another library or float dtype, ``ValueError`` otherwise; integer
        chunks are cast). Chunks may have any number of rows, including one or zero. Safe to
        call from several threads at once: the updates take turns, and every row counts.
        """
        with self._lock:  # the first chunk's checks and every read-modify-write, one at a time
            xp, Xv, Y, root, meta = self._validate(X, y, sample_weight, check_finite)
            self.state = self._step(self.state, xp, Xv, Y, root, meta)
            self._meta = meta
        return self

    @_compat.on_input_device
    def merge(self, other):
        """Add the rows of ``other`` (an accumulator of the same kind) to this one, in place, as
        :meth:`update` adds a chunk; returns ``self``. ``other`` is not modified.

        Exact up to rounding and independent of the order of merges and updates: merging
        accumulators filled on different workers or devices' worth of chunks gives the same
        fit as one accumulator fed every chunk. To combine without changing either operand,
        merge into a copy: ``a.copy().merge(b)``.
        """
        self._check_other(other)
        with other._lock:  # a consistent snapshot of ``other`` (its state is never written in place)
            ostate, ometa = other.state, other._meta
        with self._lock:
            self._check_other(other)  # again: another thread may have added a first chunk meanwhile
            if ostate is None:
                return self
            if self.state is None:
                self.state, self._meta = ostate, ometa
                return self
            xp, cls = self._meta.xp, type(self)
            self.state = pairwise_merge(
                xp, self.state, ostate, lambda a, b, v: cls._combine(xp, a, b, v), cls._scale_stat
            )
        return self

    def copy(self):
        """An independent accumulator holding the same rows: updating or merging into either
        leaves the other as it was (the state's arrays are never written in place, so they
        are shared, not copied)."""
        return copy.copy(self)

    def with_state(self, state):
        """A copy of this accumulator holding ``state`` (from :meth:`step`)."""
        if self._meta is None:
            msg = "with_state needs an accumulator that has seen one chunk (it fixes the shapes)"
            raise ValueError(msg)
        new = copy.copy(self)
        new.state = state
        return new

    @property
    def n_features(self):
        return None if self._meta is None else self._meta.n

    def _ready(self):
        """Namespace and state for a solve; raises when nothing has been accumulated."""
        if self.state is None:
            msg = f"{type(self).__name__} has no data: call update() with a chunk first"
            raise ValueError(msg)
        return self._meta.xp, self.state

    def _check_intercept(self, xp, fit_intercept):
        w = self.state.weight
        if fit_intercept and not _compat.is_lazy(w) and not bool(w > 0):
            msg = "fit_intercept=True needs accumulated rows with a positive total weight"
            raise ValueError(msg)
