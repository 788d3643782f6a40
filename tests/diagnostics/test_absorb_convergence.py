"""The partialling out of absorbed fixed effects (``partial_out``): it stops on its tolerance, warns at its
limit, and on a worker-firm panel that barely mixes takes tens of conjugate gradient steps where the plain
alternating projections take thousands, nearer the exact projection, on every backend (JAX under jax.jit),
with the coefficients of the dummy regression."""

from __future__ import annotations

import numpy as np
import pytest
from test_absorb import N, _data, _dummies, _jit_or_not, _reference, _rel

import lsq_backends as lsq
from lsq_backends._problem import _absorb
from lsq_backends._problem._absorb import absorb_codes, absorbed_rank, partial_out


@pytest.mark.parametrize("k", [2, 3])
def test_converges(numpy_reference, monkeypatch, k):
    """The steps stop on their tolerance, well before the limit; the partialled-out columns are orthogonal
    to every dummy. Without the direct solve (below), the conjugate gradient alone."""
    X, y, _, codes = _data(k, k)
    V = np.column_stack([X, y])
    factors = absorb_codes(np, X, codes, None, None)
    monkeypatch.setattr(_absorb, "DIRECT_MAX", 0)
    out, n_iter = partial_out(np, V, factors, max_iter=5000)
    assert 3 < int(n_iter) < 5000
    D = np.hstack([np.eye(g)[codes[:, j]] for j, g in enumerate(factors.counts)])
    assert np.max(np.abs(D.T @ out)) < 1e-10 * np.max(np.abs(V))
    _, stopped = partial_out(np, V, factors, max_iter=3)
    assert int(stopped) == 3  # the limit: not converged


def _slow_mixing(seed):
    """Codes (480, 2) of a connected worker-firm panel that barely mixes: 120 workers seen 4 times at 8
    firms, 1 in 10 moving once; X (480, 3) shifted by firm, y."""
    rng = np.random.default_rng(seed)
    worker = np.repeat(np.arange(120), 4)
    home, other, moves = rng.integers(0, 8, 120), rng.integers(0, 8, 120), rng.random(120) < 0.1
    firm = np.where(moves[worker] & (np.arange(480) % 4 >= 2), other[worker], home[worker])
    X = rng.standard_normal((480, 3)) * np.array([1.0, 3.0, 0.5]) + firm[:, None] * np.array([0.25, 1.0, 0.0])
    y = X @ np.array([1.0, -2.0, 0.5]) + np.sin(worker) + rng.standard_normal(480)
    return X, y, np.column_stack([worker, firm])


def _alternating_projections(V, codes):
    """The plain method (NumPy): sweeps of group-mean subtractions until one moves no entry by more than
    1e-14 of its column's largest magnitude; the result and the sweeps taken."""
    bound, sweeps = 1e-14 * np.max(np.abs(V), axis=0), 0
    while True:
        W = V
        for c in codes.T:
            W = W - (np.stack([np.bincount(c, col) for col in W.T], 1) / np.bincount(c)[:, None])[c]
        sweeps += 1
        if np.all(np.abs(W - V) <= bound):
            return W, sweeps
        V = W


def test_accelerated_on_slow_mixing(numpy_reference):
    """On a design where the plain alternating projections take thousands of sweeps, the conjugate gradient
    takes tens of steps, lands nearer the exact projection, and the coefficients agree with statsmodels'
    dummy regression to 1e-10 (weighted too)."""
    X, y, codes = _slow_mixing(2)
    assert absorbed_rank(absorb_codes(np, X, codes, None, None)) == 127  # connected: G1 + G2 - 1
    V = np.column_stack([X, y])
    slow, sweeps = _alternating_projections(V, codes)
    fast, n_iter = partial_out(np, V, absorb_codes(np, X, codes, None, None))
    assert sweeps > 1000 and 1 < int(n_iter) < 40
    Q = np.linalg.qr(_dummies(codes))[0]
    exact = V - Q @ (Q.T @ V)
    scale = np.max(np.abs(V), axis=0)
    assert np.max(np.abs(fast - exact) / scale) < 2e-13
    assert np.max(np.abs(fast - exact) / scale) < np.max(np.abs(slow - exact) / scale)
    for w in (None, np.random.default_rng(3).uniform(0.2, 3.0, 480)):
        ref = _reference(X, y, w, codes)
        assert _rel(lsq.lstsq(X, y, absorb=codes, sample_weight=w).coef, ref.params[:N]) < 1e-10
        assert _rel(lsq.diagnostics(X, y, absorb=codes, sample_weight=w).stderr, ref.bse[:N]) < 1e-8


def _exact(V, codes, w=None):
    """V's part orthogonal (weighted by w) to every dummy of ``codes``, by the SVD of the weighted dummies."""
    r = np.ones(len(V)) if w is None else np.sqrt(w)
    D = r[:, None] * np.hstack([np.eye(c.max() + 1)[c] for c in codes.T])  # rank deficient: an orthonormal basis
    U, sv, _ = np.linalg.svd(D, full_matrices=False)
    Q = U[:, sv > 1e-10 * sv[0]]
    return (r[:, None] * V - Q @ (Q.T @ (r[:, None] * V))) / r[:, None]


def _components_design(seed):
    """Codes (600, 2) of three disconnected worker-firm panels (a null space of three constant shifts), the larger
    factor second, with groups that have no rows (code gaps): X (600, 2), y."""
    rng = np.random.default_rng(seed)
    worker = rng.integers(0, 150, 600)
    block = worker % 3  # workers of block b stay at firms 3 f + b
    firm = 3 * rng.integers(0, 4, 600) + block
    firm = np.where(firm == 4, 13, firm)  # firm 4 has no rows
    X = rng.standard_normal((600, 2)) + np.sin(worker)[:, None]
    return X, X @ np.array([1.0, -1.0]) + np.cos(firm) + rng.standard_normal(600), np.column_stack([firm, worker])


def _three_way(seed):
    """The slowly mixing panel with a third factor, the period (5 groups, every worker seen in 4 of them), and a
    fourth, nested in the firms (2 groups each: a rank the components do not count)."""
    X, y, codes = _slow_mixing(seed)
    period = (np.tile(np.arange(4), 120) + np.repeat(np.arange(120), 4)) % 5
    return X, y, np.column_stack([codes, period, 2 * codes[:, 1] + np.arange(480) % 2])


@pytest.mark.parametrize("design", ["slow mixing", "three components", "four factors"])
@pytest.mark.parametrize("weighted", [False, True])
def test_direct_solve_is_exact(numpy_reference, monkeypatch, design, weighted):
    """One step through the Schur complement of every factor but the largest (its null space, a constant per
    connected component and what the other factors repeat, left out by the pivoted factorization) and one
    checking sweep, no conjugate gradient step; the exact projection within 1e-13 of each column's scale, where the
    conjugate gradient alone takes tens of steps."""
    designs = {"slow mixing": _slow_mixing, "three components": _components_design, "four factors": _three_way}
    X, y, codes = designs[design](2 if design != "three components" else 5)
    w = np.random.default_rng(6).uniform(0.2, 3.0, len(y)) if weighted else None
    V = np.column_stack([X, y])
    factors = absorb_codes(np, X, codes, None, None)
    out, n_iter = partial_out(np, V, factors, w)
    assert int(n_iter) == 2  # the solve and the sweep that checks it
    exact = _exact(V, codes, w)
    scale = np.max(np.abs(V), axis=0)
    assert np.max(np.abs(out - exact) / scale) < 1e-13
    monkeypatch.setattr(_absorb, "DIRECT_MAX", 0)
    alone, steps = partial_out(np, V, factors, w)
    assert int(steps) > 5 and np.max(np.abs(alone - exact) / scale) < 2e-13


def test_direct_solve_where_it_applies(numpy_reference, monkeypatch):
    """The direct solve only where the factors but the largest have at most ``DIRECT_MAX`` groups together and its
    cost is within ``DIRECT_BUDGET`` (codes of any integer dtype): a costlier design and larger factors take the
    conjugate gradient, to the same projection."""
    X, y, codes = _slow_mixing(2)
    V = np.column_stack([X, y])
    _, n_iter = partial_out(np, V, absorb_codes(np, X, codes.astype(np.uint64), None, None))
    assert int(n_iter) == 2
    _, n_iter = partial_out(np, V, absorb_codes(np, X, _three_way(2)[2][:, :3], None, None))
    assert int(n_iter) == 2
    monkeypatch.setattr(_absorb, "DIRECT_MAX", 12)  # firms and periods: 13 groups
    _, n_iter = partial_out(np, V, absorb_codes(np, X, _three_way(2)[2][:, :3], None, None))
    assert int(n_iter) > 2
    monkeypatch.setattr(_absorb, "DIRECT_MAX", 2048)
    monkeypatch.setattr(_absorb, "DIRECT_BUDGET", 0.5)  # the cost: 8**3 / 3 + sum(k**2) + m = 801 > 0.5 * 480
    _, n_iter = partial_out(np, V, absorb_codes(np, X, codes, None, None))
    assert int(n_iter) > 2
    monkeypatch.setattr(_absorb, "DIRECT_BUDGET", 1024)
    monkeypatch.setattr(_absorb, "DIRECT_MAX", 7)  # the firms: 8 groups
    out, n_iter = partial_out(np, V, absorb_codes(np, X, codes, None, None))
    assert int(n_iter) > 2
    assert np.max(np.abs(out - _exact(V, codes)) / np.max(np.abs(V), axis=0)) < 2e-13


def test_warns_when_not_converged(numpy_reference, monkeypatch):
    X, y, _, codes = _data(2, 2)
    monkeypatch.setattr(_absorb, "MAX_SWEEPS", 2)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        lsq.lstsq(X, y, absorb=codes)


def test_backends_accelerated(be):
    """Every backend (JAX under jax.jit) on the slowly mixing panel: tens of steps, not thousands, and the
    coefficients of the NumPy fit to 1e-10; stacks (..., m, c) partialled out as each problem alone."""
    X, y, codes = _slow_mixing(2)
    factors = absorb_codes(be.xp, be.asarray(X), codes if be.lazy else be.asarray(codes), (120, 8), None)
    V = np.stack([np.column_stack([X, y]), np.column_stack([X, y]) * 2 - 1])
    w = np.random.default_rng(4).uniform(0.2, 3.0, (2, 480))
    out, n_iter = partial_out(be.xp, be.asarray(V), factors, be.asarray(w))
    assert 1 < int(be.to_numpy(n_iter)) < 40
    for i in range(2):
        alone, _ = partial_out(np, V[i], absorb_codes(np, X, codes, None, None), w[i])
        assert np.max(np.abs(be.to_numpy(out)[i] - alone)) < 1e-12 * np.max(np.abs(V[i]))
    fit = _jit_or_not(be, lsq.lstsq, ("absorb_n_groups",))
    r = fit(be.asarray(X), be.asarray(y), absorb=be.asarray(codes), absorb_n_groups=(120, 8))
    assert _rel(be.to_numpy(r.coef), lsq.lstsq(X, y, absorb=codes).coef) < 1e-10


def test_backends_direct_solve(be):
    """Every backend, eagerly, with concrete codes: the direct solve (one step and a checking sweep; lazy Dask
    data and traced JAX take the conjugate gradient), weighted and not, and a stack sharing the codes and the
    weights, to the exact projection."""
    X, y, codes = _components_design(5)
    factors = absorb_codes(be.xp, be.asarray(X), codes if be.lazy else be.asarray(codes), None, None)
    V = np.column_stack([X, y])
    stack = np.stack([V, 2 * V[:, ::-1] - 1, V**2])
    for w in (None, np.random.default_rng(6).uniform(0.2, 3.0, len(y))):
        for data in (V, stack):
            out, n_iter = partial_out(be.xp, be.asarray(data), factors, None if w is None else be.asarray(w))
            if not be.lazy:
                assert int(be.to_numpy(n_iter)) == 2
            exact = np.stack([_exact(d, codes, w) for d in data]) if data.ndim == 3 else _exact(data, codes, w)
            assert np.max(np.abs(be.to_numpy(out) - exact) / np.max(np.abs(data), axis=-2, keepdims=True)) < 1e-12
