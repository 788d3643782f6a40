"""Exactly-rank-r curves for the derivative tests: ``X(t) = (A + t A1)(B + t B1)^T`` has rank r
for every small t and a known ``X'(0)``, so central differences along it are the derivative of
the minimum-norm solution on the rank-r matrices, the one the rules promise."""

from __future__ import annotations

import numpy as np


def curve(m, n, seed=0, rank=4):
    """``(X_of, dX, y, c)``: ``X_of(t)`` (m, n) of rank exactly ``rank``, ``dX = X'(0)``, a
    target y (m,) and a weight c (n,) for a scalar loss of the coefficients."""
    rng = np.random.default_rng(seed)
    A, A1 = rng.standard_normal((2, m, rank))
    B, B1 = rng.standard_normal((2, n, rank))
    return (
        (lambda t: (A + t * A1) @ (B + t * B1).T),
        A1 @ B.T + A @ B1.T,
        rng.standard_normal(m),
        rng.standard_normal(n),
    )
