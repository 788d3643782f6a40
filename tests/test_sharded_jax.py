"""JAX with X sharded by rows over 4 simulated CPU devices: a jitted ``normal`` fit (least
squares and ridge, with and without an intercept) all-reduces the n x n Gram matrix and never
moves X, and returns the one-device answer.

The fits run in a subprocess (``sharded_jax_run.py``): ``XLA_FLAGS`` gives JAX 4 devices only
if set before JAX is imported, and the rest of the suite must keep its single device.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from problems import cond, tolerance

pytest.importorskip("jax")
M, N, K = 4000, 8, 2
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run(request):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax backend's session")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    script = str(Path(__file__).with_name("sharded_jax_run.py"))
    out = subprocess.run(
        [sys.executable, script, str(M), str(N), str(K)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


CASES = ("lstsq", "ridge_intercept")


def test_four_devices_and_row_shards(run):
    assert run["devices"] == 4
    for case in CASES:
        assert run[case]["shard_rows"] == [M // 4]


@pytest.mark.parametrize("case", CASES)
def test_gram_is_all_reduced_and_x_never_moves(run, case):
    res = run[case]
    fallback = set(res["fallback"])
    main = [c for c in res["collectives"] if c[0] not in fallback]
    # The Gram matrix (n x n) is summed across devices by an all-reduce ...
    assert any(kind == "all-reduce" and [N, N] in shapes for _, kind, shapes, _ in main), main
    # ... and nothing outside the fallback branch is an all-gather, all-to-all or
    # collective-permute, or carries an operand with a row dimension of X (M or M / 4).
    assert all(kind == "all-reduce" for _, kind, _, _ in main), main
    assert all(max(max(s, default=0) for s in shapes) < M // 4 for _, _, shapes, _ in main), main
    # X is gathered only inside the rank-deficiency fallback (the QR of X in lax.cond's false
    # branch), which runs only when the Gram matrix is numerically singular.
    gathers = [c for c in res["collectives"] if c[1] != "all-reduce"]
    assert all(c[0] in fallback for c in gathers), gathers


@pytest.mark.parametrize("case", CASES)
def test_sharded_equals_one_device(run, case):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((M, N)) @ np.diag(np.logspace(0, -1, N)) + 3.0
    kappa = cond(X - X.mean(0)) if "intercept" in case else cond(X)
    tol = tolerance("normal", np.float64, kappa, M, N)
    sharded, single = run[case]["sharded"], run[case]["single"]
    for a, b in zip(sharded, single, strict=False):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=0)
