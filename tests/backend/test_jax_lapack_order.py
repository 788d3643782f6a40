"""JAX on a CPU: the LAPACK routines of a compiled stacked fit run one after the other
(``_control.lapack_in_order``).

jaxlib's batched LAPACK kernels split their batch over the thread pool they run on and wait for the parts; two of
them at once on a pool of two workers wait for good (the JAX page's known limits). XLA's runtime starts a
routine once its operands are ready, so no two can run at once where, in every computation of the compiled
program, each LAPACK call depends on the one before it: what this checks, in the optimized HLO (the stall itself
needs a 2-core machine: ``python -m benchmarks.xla_stall --fit``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import lsq_backends as lsq

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")


@pytest.fixture
def jax(request):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax session")
    jax = pytest.importorskip("jax")
    if jax.default_backend() != "cpu":
        pytest.skip("the ordering applies on JAX's CPU backend")
    return jax


def _lapack_calls_out_of_order(hlo):
    """Pairs of consecutive LAPACK custom calls of one computation where the later does not depend on the
    earlier (operands followed through the computation's instructions)."""
    bad = []
    for block in hlo.split("\n}\n"):
        deps, order = {}, []
        for line in block.split("\n"):
            m = _INSTRUCTION.match(line)
            if m is None:
                continue
            name, rest = m.groups()
            used = {o for o in re.findall(r"%([\w.\-]+)", rest.split(", metadata=")[0]) if o in deps}
            deps[name] = set().union(used, *(deps[o] for o in used))
            if 'custom_call_target="lapack_' in rest:
                order.append(name)
        bad += [(a, b) for a, b in zip(order, order[1:], strict=False) if a not in deps[b]]
    return bad


@pytest.mark.parametrize("method", ["auto", "qr", "svd", "normal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stacked_fit_runs_lapack_routines_in_order(jax, method, dtype):
    rng = np.random.default_rng(0)
    X = jax.numpy.asarray(rng.standard_normal((40, 12, 3)).astype(dtype))
    y = jax.numpy.asarray(rng.standard_normal((40, 12)).astype(dtype))
    fit = jax.jit(lambda X, y: lsq.lstsq(X, y, method=method).coef)
    hlo = fit.lower(X, y).compile().as_text()
    assert "lapack_" in hlo
    assert _lapack_calls_out_of_order(hlo) == []
    pairs = zip(np.asarray(X, np.float64), np.asarray(y, np.float64), strict=True)
    ref = np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in pairs])
    np.testing.assert_allclose(
        np.asarray(fit(X, y), np.float64), ref, rtol=0, atol=1e-3 if dtype == np.float32 else 1e-10
    )
