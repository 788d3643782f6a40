"""The temporaries of ``refine`` (the double-double residuals) as documented: about
8 m n k + 5 m n elements, measured with tracemalloc on NumPy (which reports its allocations).
``pytest -s tests/solvers/test_refine_memory.py`` prints the measured peaks (the docs' figures)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from array_api_compat import array_namespace

from lsq_backends._solvers.linalg.refine import refine


@pytest.mark.parametrize("k", [1, 4])
def test_refine_temporaries(k, numpy_reference):
    rng = np.random.default_rng(0)
    m, n = 2000, 20
    X, Y = rng.standard_normal((m, n)), rng.standard_normal((m, k))
    W = np.linalg.lstsq(X, Y, rcond=None)[0]
    xp = array_namespace(X)
    refine(xp, X, Y, W, np.asarray(n), 1)  # warm up (first-call allocations of the namespace)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        W1, _ = refine(xp, X, Y, W, np.asarray(n), 2)
        peak = (tracemalloc.get_traced_memory()[1] - base) / 8  # float64 elements
    finally:
        tracemalloc.stop()
    print(f"refine, m = {m}, n = {n}, k = {k}: peak {peak / (m * n):.1f} m n elements")
    assert peak <= 8.5 * m * n * k + 5.5 * m * n
    # and it still refines: a well-conditioned problem's refined solution is NumPy's
    np.testing.assert_allclose(W1, W, rtol=1e-12, atol=1e-12)
