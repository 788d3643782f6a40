"""Absorbed fixed effects (``absorb=`` of :func:`lsq_backends.lstsq` and :func:`lsq_backends.diagnostics`):
the factor codes checked, every column of [X, y] partialled out of the K factors, the absorbed rank.

``partial_out``: conjugate gradient on the symmetric sweep, checked by plain sweeps. ``P_k`` subtracts factor
k's (weighted) group means (:func:`lsq_backends._backend._compat.segment_sum`: O(m c + G c) memory, no m x G
dummy matrix), ``Q_k = I - P_k``, from all columns of [X, y] at once. By Frisch-Waugh-Lovell, the regression
of the residualized y on the residualized X without an intercept gives the coefficients, residuals and rss of
the regression with one dummy column per group (the intercept lies in their span). Sweeps ``Q_K .. Q_1`` (the
method of alternating projections) converge to V's part orthogonal to every dummy, but linearly, at a rate set
by how well the factors mix: 206 sweeps to 1e-14 on the benchmark's panel, thousands where few workers move.
The symmetric sweep ``T = Q_1 .. Q_K .. Q_1`` is self-adjoint and positive semidefinite in the weighted inner
product and fixes exactly that part, ``R``; ``D = V - R`` lies in the dummies' span S, on which ``I - T`` is
positive definite, so conjugate gradient solves ``(I - T) D = (I - T) V`` from ``D = 0`` (reghdfe's ``cg``
acceleration), keeping ``R = V - D`` and the residual ``(I - T) R`` (the move a symmetric sweep would make),
each column with its own steps. It converges at about the square root of the sweeps' rate: 18 steps of
``2K - 1`` projections on that panel, 9 where plain sweeps take 4,554 (tests). Every factor but the largest
is solved exactly first where together they have at most ``DIRECT_MAX`` groups (``_direct``): eliminating the
largest factor's effects (its group means, ``P_a``) leaves, for the others' (dummies ``D_s``), the normal
equations ``S f = D_s^T W (I - P_a) V`` with ``S = D_s^T W (I - P_a) D_s``, a G_s x G_s matrix made on the host
from the codes (and weights: one copy of them) as sparse products and factored by LAPACK's pivoted Cholesky
(``pstrf``), which stops at S's rank: its null space (a constant shift between factors per connected part of the
design, groups without weight, a factor nested in another) is left out, and as the system is consistent, any
solution gives the same projection ``R = (I - P_a)(V - D_s f)``: two projections of the largest factor and one
sum of each other, in one step. The conjugate gradient starts from it (its first test, met: no step) and the
checking sweep follows, so the result passes the same tests; where the factor is inexact (a design that barely
connects) the steps finish the work. On the benchmark's 10^6-row panel the partialling out took 0.32 s instead
of 3.0-4.0 s (tens of steps). A column freezes once no entry
of its residual exceeds ``tol`` times its largest magnitude at the start; plain sweeps then run from the result
until one moves no entry by more than that bound (one, in the measurements), so the result passes the test the
sweeps alone stopped on: a sweep's output that the last sweep moved by at most ``tol`` of the column's scale.
No such test bounds the distance to the exact projection (it is up to that move over one minus the rate): on
the test's slow design the result lies within 3e-14 of it, the sweeps stopped by that test alone 2e-12 away.
Each phase runs at most ``max_iter`` times (the sweeps none if CG reached it); ``n_iter``, steps plus sweeps,
is capped at ``max_iter``, which then means no convergence. One factor takes one sweep, exact. The loops are
``_compat.loop``: a ``lax.while_loop`` on traced JAX, a read every 10th iteration on GPU libraries.

``absorbed_rank``: the rank of the dummy matrix, counted on the host from the codes. One factor: its
groups with observations. Two: ``G1 + G2 - c``, c the connected components of the bipartite graph
of groups joined by observations (exact). More: the first two exactly, plus ``G_k - 1`` for each further
factor, an upper bound on the rank (as reghdfe and fixest count): ``df_resid`` is then at most one
per redundant further factor too small, and the standard errors err on the large side.

``nested`` (``fixef_k="nested"``, cluster covariances): a factor is nested in the clusters where each of its
groups lies within one cluster (of either column, for two-way clusters). Its dummies then vary only within
clusters, and the cluster sums that the meat is made of leave no degree of freedom to them: the small-sample
correction counts, as ``p``'s absorbed part, the rank of the factors not nested, or 1 (the constant they all
span) where every factor is nested. This is pyfixest's ``ssc(k_fixef="nonnested")`` (fixest's
``fixef.K = "nested"``): its count of the factors not nested, ``sum G - (K - 1)``, is their rank on connected
designs. ``df_resid`` and the other covariances still count every factor.

``singletons`` (``drop_singletons=True``): the rows alone in their group of some factor are dropped, then
again those that the drop left alone, until none remain (as fixest, pyfixest and reghdfe): the largest set
of rows in which every group of every factor has two or more, whatever the order of the drops. A singleton
fits its own dummy exactly (zero residual) and adds nothing to the coefficients, but it counts in ``m`` and
in the absorbed rank. Found on the host from the codes' host copy (concrete codes only), then the rows are
taken from X, y, the weights and the codes by one index (no read of X or y).
"""

from __future__ import annotations

import operator
import warnings
from typing import NamedTuple

from .._backend import _compat
from ._input import failure, validate

# Steps (and then sweeps): the limit, and the tolerance (relative to a column's largest magnitude) by dtype.
MAX_SWEEPS = 10_000
# The Schur complement of every factor but the largest is factored on the host where they have at most this many
# groups together (a dense G x G factorization, 0.1 s at 2048), and the partialling out is exact in one step. Its
# cost, G**3 / 3 for the factorization and sum(k**2) + m (K - 1)**2 for the sparse products (k: the distinct groups
# of the other factors in each group of the largest), at most this many times m: designs that cost more mix well
# (balanced panels), where the conjugate gradient takes a few steps (2000 stores x 500 days, 9e5 rows: 5 steps in
# 0.7-1.0 s; the solve, at sum(k**2) = 4e8 within the budget, 0.64 s).
DIRECT_MAX = 2048
DIRECT_BUDGET = 1024
_TOL = {"float64": 1e-14, "float32": 1e-6}


class Factors(NamedTuple):
    """Checked factor codes (m, K) in the data's namespace and device, each factor's static group count, the
    codes as a NumPy array (None for traced or lazy codes), and the rows kept where singletons were dropped."""

    codes: object
    counts: tuple
    host: object = None
    kept: object = None  # NumPy index of the rows kept by ``drop_singletons`` (None: all rows)
    dropped: int = 0  # the rows it dropped


def absorb_codes(xp, X, absorb, n_groups, checks):
    """``absorb`` (m,) or (m, K) as :class:`Factors` of X's namespace and device. Shape, dtype and the
    group counts raise now; concrete codes are read now (one copy to the host) for their range and
    counts, traced or lazy ones checked in ``checks``. ``n_groups``: None (``max + 1``) or ints."""
    import numpy as np

    if hasattr(absorb, "to_numpy") and not _compat.is_array(absorb):  # pandas
        absorb = absorb.to_numpy()
    try:
        codes = xp.asarray(absorb, device=_compat.device(X))
    except (TypeError, ValueError) as exc:
        msg = f"absorb must be integer factor codes of shape (m,) or (m, K); got {type(absorb).__name__} ({exc})"
        raise TypeError(msg) from exc
    m = X.shape[-2]
    if not _compat.isdtype(xp, codes.dtype, "integral"):
        msg = f"absorb must hold integer factor codes (e.g. from pandas.factorize); got dtype {codes.dtype}"
        raise TypeError(msg)
    shape = tuple(codes.shape)
    codes = codes[:, None] if codes.ndim == 1 else codes
    if codes.ndim != 2 or codes.shape[0] != m or codes.shape[1] < 1:
        msg = f"absorb must have shape ({m},) or ({m}, K) to match X of shape {tuple(X.shape)}; got shape {shape}"
        raise ValueError(msg)
    k = codes.shape[1]
    lazy = _compat.is_array(absorb) and _compat.is_lazy(absorb)
    host = None if lazy else np.asarray(_compat.to_numpy(absorb) if _compat.is_array(absorb) else absorb).reshape(m, k)
    if n_groups is None:
        if lazy:
            msg = (
                "absorb_n_groups must be given when the absorb codes are traced (jax.jit) or lazy (Dask): it is static"
            )
            raise ValueError(msg)
        counts = tuple(int(host[:, j].max()) + 1 if m else 1 for j in range(k))
    else:
        given = tuple(n_groups) if isinstance(n_groups, tuple | list) else (n_groups,)
        try:
            bad = len(given) != k or any(isinstance(g, bool) for g in given)
            counts = tuple(operator.index(g) for g in given)
        except TypeError:
            bad, counts = True, (0,)
        if bad or min(counts) < 1:
            msg = f"absorb_n_groups must be {k} positive int(s), one per column of absorb; got {n_groups!r}"
            raise ValueError(msg)
    msg = "absorb must hold codes in [0, n_groups) of each factor (e.g. from pandas.factorize); some lie outside"
    if host is not None:
        if m and not ((host >= 0) & (host < np.asarray(counts)[None, :])).all():
            raise ValueError(msg)
    else:
        limits = xp.asarray(counts, dtype=codes.dtype, device=_compat.device(codes))
        checks.add(xp.all((codes >= 0) & (codes < limits[None, :])), failure(ValueError, msg))
    return Factors(codes, counts, host)


class _Sweep(NamedTuple):
    V: object  # (..., m, c): the columns partialled out so far
    done: object  # 0-d bool
    n_iter: object  # 0-d int: sweeps that changed V


class _CG(NamedTuple):
    R: object  # (..., m, c): V minus a combination of dummies, the columns partialled out so far
    P: object  # (..., m, c): the search directions, one per column
    res: object  # (..., m, c): R - T R, by recursion
    rho: object  # (..., 1, c): <res, res>_w
    spent: object  # (..., 1, c) bool: the columns whose res is within the bound (frozen)
    done: object  # 0-d bool: every column spent
    n_iter: object  # 0-d int: steps that changed R


def _projector(xp, factors, w, like):
    """``(project, sums)``: ``project(W, j)`` W's (weighted) group means of factor j, one per row (the projection
    P_j W); ``sums(W, j)`` its (weighted) group sums, (..., G_j, c)."""
    codes, counts = factors.codes, factors.counts
    segments = [_compat.prepare_segments(xp, codes[:, j], g) for j, g in enumerate(counts)]  # summed every step
    ones = xp.ones((*(1,) * (like.ndim - 2), like.shape[-2], 1), dtype=like.dtype, device=_compat.device(like))
    inverses = []
    for j, g in enumerate(counts):
        total = _compat.segment_sum(xp, ones if w is None else xp.broadcast_to(w, (*w.shape[:-1], 1)), segments[j], g)
        inverses.append(_safe_ratio(xp, 1.0, total))

    def sums(W, j):
        return _compat.segment_sum(xp, W if w is None else w * W, segments[j], counts[j])

    def project(W, j):
        return xp.take(sums(W, j) * inverses[j], codes[:, j], axis=-2)

    return project, sums


def _direct(xp, factors, weights, like):
    """``solve(V, project, sums)``: the exact partialling out through the Schur complement of every factor but the
    largest (module docstring: ``partial_out``), factored on the host from the codes (and weights); None where it
    does not apply (one factor, more than ``DIRECT_MAX`` groups in the others or a cost over ``DIRECT_BUDGET``,
    weights per problem of a stack, lazy or traced data or weights, no SciPy)."""
    import numpy as np

    counts, host = factors.counts, factors.host
    if len(counts) < 2 or host is None or host.shape[0] == 0 or _compat.is_lazy(like):
        return None
    if weights is not None and (weights.ndim != 1 or _compat.is_lazy(weights)):
        return None
    big = max(range(len(counts)), key=counts.__getitem__)
    rest = [j for j in range(len(counts)) if j != big]
    sizes = [counts[j] for j in rest]
    m, ga, gs = host.shape[0], counts[big], sum(sizes)
    if gs > DIRECT_MAX:
        return None
    try:
        import scipy.sparse
        from scipy.linalg import lapack
    except ImportError:
        return None
    starts = [sum(sizes[:i]) for i in range(len(rest))]
    w = np.ones(m) if weights is None else np.asarray(_compat.to_numpy(weights), dtype=np.float64)
    a = np.asarray(host[:, big], dtype=np.intp)
    b = np.concatenate([np.asarray(host[:, j], dtype=np.intp) + s0 for j, s0 in zip(rest, starts, strict=True)])
    ws = np.tile(w, len(rest))
    C = scipy.sparse.csr_array((ws, (np.tile(a, len(rest)), b)), shape=(ga, gs))  # D_a^T W D_s
    C.sum_duplicates()
    k = np.diff(C.indptr).astype(np.float64)
    if gs**3 / 3 + float(k @ k) + m * len(rest) ** 2 > DIRECT_BUDGET * m:
        return None
    rows = np.tile(np.arange(m), len(rest))
    E, Ew = (scipy.sparse.csr_array((v, (rows, b)), shape=(m, gs)) for v in (np.ones(m * len(rest)), ws))
    na = np.bincount(a, w, minlength=ga)
    inv = scipy.sparse.diags_array(np.divide(1.0, na, out=np.zeros(ga), where=na > 0))
    S = (E.T @ Ew).toarray() - (C.T @ inv @ C).toarray()  # D_s^T W (I - P_a) D_s, semidefinite
    # Its null space (a constant shift between factors per connected part of the design, groups without weight,
    # and whatever else the design repeats) is left out by the pivoted factorization: the system S f = r is
    # consistent, and any solution gives the same projection (I - P_a)(V - D_s f).
    L, piv, rank, info = lapack.dpstrf(S, lower=1)
    if info < 0:
        return None
    piv = piv - 1  # LAPACK's pivots count from 1
    place = np.full(gs, rank)  # where each group's effect is in the solved (rank) entries; the rest are zero
    place[piv[:rank]] = np.arange(rank)
    device = _compat.device(like)
    L = xp.asarray(np.tril(L[:rank, :rank]), dtype=like.dtype, device=device)
    order, place = (xp.asarray(v, device=device) for v in (piv[:rank], place))
    codes = factors.codes

    def solve(V, project, sums):
        if rank == 0:  # every other factor's dummies lie in the largest one's span
            return V - project(V, big)
        r = xp.concat([sums(V - project(V, big), j) for j in rest], axis=-2)  # (..., gs, c)
        r = xp.take(r, order, axis=-2)
        if r.ndim == 2:
            f = _compat.cho_solve(xp, L, r)  # the other factors' effects
        else:  # a stack sharing the codes: its problems side by side as columns of one solve
            shape, (g, c) = tuple(r.shape), tuple(r.shape[-2:])
            flat = xp.reshape(xp.permute_dims(xp.reshape(r, (-1, g, c)), (1, 0, 2)), (g, -1))
            f = xp.reshape(xp.permute_dims(xp.reshape(_compat.cho_solve(xp, L, flat), (g, -1, c)), (1, 0, 2)), shape)
        f = xp.take(xp.concat([f, xp.zeros_like(f[..., :1, :])], axis=-2), place, axis=-2)
        W = V
        for j, s0, g in zip(rest, starts, sizes, strict=True):
            W = W - xp.take(f[..., s0 : s0 + g, :], codes[:, j], axis=-2)
        return W - project(W, big)  # the largest factor's, exactly

    return solve


def _safe_ratio(xp, a, b):
    """``a / b`` where ``b > 0``, else 0 (a column whose step is spent, an empty group); ``a`` b's shape or a number."""
    return xp.where(b > 0, a / _compat.positive_or_one(xp, b), xp.zeros_like(b))


def _conjugate_gradient(xp, V, k, project, dot, bound, max_iter):
    """Conjugate gradient on ``(I - T) D = (I - T) V`` for every column at once, ``R = V - D`` kept
    (module docstring: ``partial_out``). Returns the final :class:`_CG`."""

    def sym(Z):  # T Z = Q_1 Q_2 .. Q_K .. Q_2 Q_1 Z
        for j in (*range(k), *range(k - 2, -1, -1)):
            Z = Z - project(Z, j)
        return Z

    def step(s):
        AP = s.P - sym(s.P)
        alpha = xp.where(s.spent, xp.zeros_like(s.rho), _safe_ratio(xp, s.rho, dot(s.P, AP)))
        R, res = s.R - alpha * s.P, s.res - alpha * AP  # a spent column (all, once done) stays as it is
        rho = dot(res, res)
        P = res + xp.where(s.spent, xp.zeros_like(rho), _safe_ratio(xp, rho, s.rho)) * s.P
        spent = s.spent | (xp.max(xp.abs(res), axis=-2, keepdims=True) <= bound)
        return _CG(R, P, res, rho, spent, xp.all(spent), s.n_iter + xp.astype(~s.done, s.n_iter.dtype))

    res = V - sym(V)
    spent = xp.max(xp.abs(res), axis=-2, keepdims=True) <= bound
    zero = xp.asarray(0, device=_compat.device(V))
    start = _CG(V, res, res, dot(res, res), spent, xp.all(spent), zero)
    return _compat.loop(xp, step, start, max_iter, lambda s: s.done)


def partial_out(xp, V, factors, weights=None, max_iter=None):
    """``V`` (..., m, c) minus its projection on the dummies of ``factors`` (:class:`Factors`), the
    projection weighted by ``weights`` (m,) or (..., m) if given; and the steps taken (0-d int array).
    ``n_iter == max_iter`` means no convergence (module docstring: ``partial_out``)."""
    counts = factors.counts
    max_iter = MAX_SWEEPS if max_iter is None else max_iter
    tol = _TOL["float32" if V.dtype == xp.float32 else "float64"]
    w = None if weights is None else _compat.as_rank(xp, weights[..., None], V.ndim)
    project, sums = _projector(xp, factors, w, V)
    bound = tol * xp.max(xp.abs(V), axis=-2, keepdims=True)

    def sweep(s):
        W = s.V
        for j in range(len(counts)):
            W = W - project(W, j)
        moved = xp.all(xp.abs(W - s.V) <= bound)
        keep = s.done
        return _Sweep(xp.where(keep, s.V, W), keep | moved, s.n_iter + xp.astype(~keep, s.n_iter.dtype))

    zero = xp.asarray(0, device=_compat.device(V))
    if len(counts) == 1:  # one projection: exact after one sweep
        end = sweep(_Sweep(V, xp.asarray(False, device=_compat.device(V)), zero))
        return end.V, xp.ones_like(end.n_iter)

    def dot(A, B):  # each column's (weighted) dot product, (..., 1, c): without an m x c product where it can
        return _compat.dots(xp, A if w is None else w * A, B)[..., None, :]

    direct = _direct(xp, factors, weights, V)
    start = V if direct is None else direct(V, project, sums)  # CG from there: no step where it is exact
    cg = _conjugate_gradient(xp, start, len(counts), project, dot, bound, max_iter)
    # Sweeps until one moves no entry by more than the bound: today's test, on CG's result (none if CG failed).
    end = _compat.loop(xp, sweep, _Sweep(cg.R, cg.n_iter >= max_iter, zero), max_iter, lambda s: s.done)
    steps = cg.n_iter + end.n_iter + int(direct is not None)
    return end.V, xp.minimum(steps, xp.asarray(max_iter, device=_compat.device(V)))


def _components(np, a, b, n):
    """Connected components of the graph on ``n`` nodes with edges ``a[i] - b[i]`` (NumPy, label propagation
    with pointer jumping): each node's smallest connected node."""
    label = np.arange(n)
    while True:
        edge = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, edge)
        np.minimum.at(new, b, edge)
        new = new[new]
        if np.array_equal(new, label):
            return label
        label = new


def absorbed_rank(factors):
    """The rank of the dummy matrix of :class:`Factors`, from their host copy (module docstring: ``absorbed_rank``)."""
    if factors.host is None:
        msg = (
            "diagnostics counts the absorbed rank from the absorb codes: pass them concrete (NumPy), not traced or lazy"
        )
        raise ValueError(msg)
    return _rank(factors.host)


def _rank(c):
    """The rank of the dummies of the NumPy codes ``c`` (m, K), K >= 1 (module docstring: ``absorbed_rank``)."""
    import numpy as np

    c = np.asarray(c, dtype=np.int64)
    present = [np.bincount(c[:, j]) > 0 for j in range(c.shape[1])]  # O(m), no sort
    sizes = [int(np.count_nonzero(p)) for p in present]
    rank = sizes[0]
    if c.shape[1] >= 2:
        # renumber the present groups 0.. so that the graph's nodes are the groups with observations
        a = (np.cumsum(present[0]) - 1)[c[:, 0]]
        b = (np.cumsum(present[1]) - 1)[c[:, 1]] + sizes[0]
        label = _components(np, a, b, sizes[0] + sizes[1])
        rank += sizes[1] - int(np.count_nonzero(label == np.arange(label.size)))  # a component's smallest node
    return rank + sum(size - 1 for size in sizes[2:])


def singletons(host):
    """Bool (m,): the rows of the NumPy codes ``host`` (m, K) dropped as singletons, in turn until every group of
    every factor left has two rows or more (module docstring: ``singletons``)."""
    import numpy as np

    keep = np.ones(host.shape[0], dtype=bool)
    while keep.any():
        before = int(keep.sum())
        for j in range(host.shape[1]):
            counts = np.bincount(host[keep, j], minlength=int(host[:, j].max()) + 1)
            keep &= counts[host[:, j]] > 1
        if int(keep.sum()) == before:
            break
    return ~keep


def _drop(xp, arrays, factors):
    """``(X, Y, weights)`` (rows on axis -2, -2, -1; weights may be None) and :class:`Factors` without the rows
    that are singletons; unchanged where there are none. Needs the codes' host copy."""
    import numpy as np

    if factors.host is None:
        msg = (
            "drop_singletons=True finds the singletons from the absorb codes on the host: pass them concrete "
            "(NumPy, or eager arrays), not traced (jax.jit) or lazy (Dask)"
        )
        raise ValueError(msg)
    dropped = singletons(factors.host)
    if not dropped.any():
        return arrays, factors
    if dropped.all():
        msg = "drop_singletons=True drops every observation: each lies in a group of one (of some absorb factor)"
        raise ValueError(msg)
    kept = np.flatnonzero(~dropped)
    index = xp.asarray(kept, device=_compat.device(factors.codes))
    X, Y, w = arrays
    w = None if w is None else xp.take(w, index, axis=-1)
    codes = xp.take(factors.codes, index, axis=0)
    return (xp.take(X, index, axis=-2), xp.take(Y, index, axis=-2), w), Factors(
        codes, factors.counts, factors.host[kept], kept, int(dropped.sum())
    )


def nested_rank(factors, groups):
    """The absorbed rank a cluster correction counts (module docstring: ``nested``): that of the factors not nested
    in the clusters ``groups`` ((m,) or (m, c) codes of the rows kept: :func:`kept_rows`), or 1 if all are."""
    import numpy as np

    if hasattr(groups, "to_numpy") and not _compat.is_array(groups):  # pandas
        groups = groups.to_numpy()
    if _compat.is_array(groups) and _compat.is_lazy(groups):
        msg = (
            "fixef_k='nested' compares the cluster codes with the absorb codes on the host: pass groups concrete "
            "(NumPy, or eager arrays), not traced (jax.jit) or lazy (Dask), or pass fixef_k='full'"
        )
        raise ValueError(msg)
    g = np.asarray(_compat.to_numpy(groups) if _compat.is_array(groups) else groups)
    g = g.reshape(g.shape[0], -1)
    c = np.asarray(factors.host)
    free = [j for j in range(c.shape[1]) if not any(_nested(np, c[:, j], g[:, i]) for i in range(g.shape[1]))]
    return _rank(c[:, free]) if free else 1


def _nested(np, f, g):
    """Whether every group of the codes ``f`` lies within one cluster of the codes ``g`` (NumPy, (m,) each): each
    group's cluster at one of its rows (the last written) is that of all its rows. O(m), no sort."""
    if f.size == 0:
        return True
    cluster = np.zeros(int(f.max()) + 1, dtype=g.dtype)
    cluster[f] = g
    return bool(np.all(cluster[f] == g))


def kept_rows(a, factors, like):
    """Per-row codes ``a`` ((m,) or (m, c); None, pandas or any array) without the rows ``drop_singletons``
    dropped (:class:`Factors` ``kept``), in the namespace and on the device of ``like``."""
    if a is None or factors is None or factors.kept is None:
        return a
    xp = _compat.array_namespace(like)
    if hasattr(a, "to_numpy") and not _compat.is_array(a):  # pandas
        a = a.to_numpy()
    a = xp.asarray(a, device=_compat.device(like))
    if a.ndim == 0 or a.shape[0] != factors.host.shape[0] + factors.dropped:
        return a  # the wrong shape: left for the covariance's own check to name
    return xp.take(a, xp.asarray(factors.kept, device=_compat.device(like)), axis=0)


def absorbed(X, y, sample_weight, absorb, n_groups, check_finite, drop_singletons=False):
    """The data of a fit with ``absorb``: validated (``validate``), the codes checked, singletons dropped if asked,
    every column of [X, y] partialled out in one batched solve. Returns ``(X, y, sample_weight, factors,
    n_iter)``, y in the caller's layout (a vector stays a vector)."""
    if absorb is None:
        name = "absorb_n_groups" if n_groups is not None else "drop_singletons"
        msg = f"{name} is used only with absorb= (the fixed effects' codes)"
        raise ValueError(msg)
    v = validate(X, y, sample_weight, fit_intercept=False, check_finite=check_finite)
    xp = v.xp
    factors = absorb_codes(xp, v.X, absorb, n_groups, v.checks)
    v.checks.read(xp)
    arrays = (v.X, v.Y, v.sample_weight)
    if drop_singletons:
        arrays, factors = _drop(xp, arrays, factors)
    X, Y, weights = arrays
    n = X.shape[-1]
    V, n_iter = partial_out(xp, xp.concat([X, Y], axis=-1), factors, weights)  # y's batch is X's
    if len(factors.counts) > 1 and not _compat.is_lazy(n_iter) and int(n_iter) >= MAX_SWEEPS:  # one read, at the end
        msg = (
            f"absorb: the partialling out did not converge in {MAX_SWEEPS} steps (factors that barely "
            "mix): the fit is that of partly partialled-out data"
        )
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
    Xr, Yr = V[..., :n], V[..., n:]
    return Xr, Yr[..., 0] if v.y_was_vector else Yr, weights, factors, n_iter
