"""``qr`` on tall X past CholeskyQR2's limit: shifted CholeskyQR3 on [X Y], not Householder.

Bound: a backward-stable QR errs by ~eps cond(X) (1 + cond(X) tan(theta)) relative to the
exact solution (taken from Björck's refinement with double-double residuals, whose error
shrinks by ~eps cond per step); the test allows 10 eps cond, which a Gram-based solution
(eps cond**2 >> 1 here) cannot meet.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends._solvers.linalg import householder

EPS = np.finfo(np.float64).eps


def _problem(m, n, cond, noise, seed):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((m, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    X = (U * np.geomspace(1.0, 1.0 / cond, n) * math.sqrt(m)) @ V.T
    signal = X @ rng.standard_normal(n)
    return X, signal + noise * np.linalg.norm(signal) / math.sqrt(m) * rng.standard_normal(m)


@pytest.mark.parametrize("cond", [1e8, 1e11])
@pytest.mark.parametrize("noise", [0.0, 1e-2])
def test_ill_conditioned_qr_is_householder_accurate(be, cond, noise):
    X, y = _problem(4000, 12, cond, noise, seed=int(math.log10(cond)))
    Y = np.column_stack([y, X[:, 0] + 1.0])  # two targets: one consistent with X
    ref = lsq.lstsq(X, Y, method="svd", rcond=1e-17, refine=4).coef
    got = be.to_numpy(lsq.lstsq(be.asarray(X), be.asarray(Y), method="qr", rcond=1e-15).coef)
    err = np.linalg.norm(got - ref, axis=0) / np.linalg.norm(ref, axis=0)
    assert np.all(err <= 10 * EPS * cond), err


def test_householder_only_where_shifted_cholqr3_fails(numpy_reference, monkeypatch):
    """cond 1e8 and 1e11 take shifted CholeskyQR3; an exactly dependent column (its check
    fails) still reaches Householder QR and the minimum-norm solution."""
    calls = []
    solve = householder.solve
    monkeypatch.setattr(householder, "solve", lambda *a, **k: calls.append(1) or solve(*a, **k))
    for cond in (1e8, 1e11):
        X, y = _problem(3000, 10, cond, 1e-3, seed=5)
        lsq.lstsq(X, y, method="qr", rcond=1e-15)
        assert not calls, cond
    X, y = _problem(3000, 10, 10.0, 1e-3, seed=6)
    X[:, 4] = X[:, 2]
    r = lsq.lstsq(X, y, method="qr")
    assert calls and int(r.rank) == 9
    np.testing.assert_allclose(r.coef, np.linalg.lstsq(X, y, rcond=None)[0], rtol=0, atol=1e-10)


def test_third_round_only_where_q1_is_ill_conditioned(numpy_reference, monkeypatch):
    """The third round repairs Q2's orthogonality, ~eps cond(Q1)**2: skipped at cond 1e8
    (cond(Q1) ~ 1e2: two Gram passes after the first), taken at cond 1e13 (cond(Q1) ~ 1e6:
    three), both within the Householder bound of the accuracy test above."""
    from lsq_backends._solvers.linalg import cholqr

    rounds = []
    after = cholqr._gram_after
    monkeypatch.setattr(cholqr, "_gram_after", lambda *a, **k: rounds.append(1) or after(*a, **k))
    for cond, passes in ((1e8, 1), (1e13, 2)):
        X, y = _problem(3000, 10, cond, 1e-2, seed=int(math.log10(cond)))
        ref = lsq.lstsq(X, y, method="svd", rcond=1e-17, refine=4).coef
        rounds.clear()
        got = lsq.lstsq(X, y, method="qr", rcond=1e-15).coef
        assert len(rounds) == passes, cond
        assert np.linalg.norm(got - ref) <= 10 * EPS * cond * np.linalg.norm(ref), cond
