"""JAX with X sharded by rows over 4 simulated CPU devices: a jitted ``normal`` fit (least
squares and ridge, with and without an intercept, and rank-deficient X) all-reduces the n x n
Gram matrix and never moves X, not even in its rank fallback; it returns the one-device
answer; and its compiled temporaries stay near one shard of X per device.

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

from lsq_backends.check.problems import threshold

pytest.importorskip("jax")
M, N, K = 4000, 8, 2
M_MEM, N_MEM = 40000, 50  # the size whose compiled temporaries are measured
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run(request):
    if "jax" not in request.config._lsq_backends:
        pytest.skip("runs in the jax backend's session")
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4".strip()  # keep the session's
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    script = str(Path(__file__).resolve().parents[1] / "sharded_jax_run.py")
    argv = [sys.executable, script, *map(str, (M, N, K, M_MEM, N_MEM))]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


CASES = ("lstsq", "ridge_intercept", "rank_deficient")


def _data(case):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((M, N)) @ np.diag(np.logspace(0, -1, N)) + 3.0
    if case == "rank_deficient":
        X[:, -1] = X[:, 0]
    return X, rng.standard_normal((M, K))


def test_four_devices_and_row_shards(run):
    assert run["devices"] == 4
    for case in CASES:
        assert run[case]["shard_rows"] == [M // 4]


@pytest.mark.parametrize("case", CASES)
def test_gram_is_all_reduced_and_x_never_moves(run, case):
    res = run[case]
    # The Gram matrix (n x n) is summed across devices by an all-reduce ...
    assert any(kind == "all-reduce" and [N, N] in shapes for _, kind, shapes, _ in res["collectives"])
    # ... and nothing, the rank fallback's branch included (the eigendecomposition of that Gram
    # matrix, not a QR of X), is an all-gather, all-to-all or collective-permute, or carries an
    # operand with a row dimension of X (M or M / 4).
    assert res["fallback"], "the rank test's branch is compiled"
    assert all(kind == "all-reduce" for _, kind, _, _ in res["collectives"]), res["collectives"]
    assert all(max(max(s, default=0) for s in shapes) < M // 4 for _, _, shapes, _ in res["collectives"])


@pytest.mark.parametrize("case", CASES)
def test_sharded_equals_one_device(run, case):
    X, _ = _data(case)
    s = np.linalg.svd(X - X.mean(0) if "intercept" in case else X, compute_uv=False)
    kappa = s[0] / s[N - 2] if case == "rank_deficient" else s[0] / s[-1]  # of the kept part
    tol = threshold("normal", np.float64, kappa, M, N)
    sharded, single = run[case]["sharded"], run[case]["single"]
    for a, b in zip(sharded, single, strict=False):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=0)


def test_rank_deficient_fallback_gives_minimum_norm(run):
    """The fallback branch (the Gram matrix's eigendecomposition) on sharded X: the rank and
    NumPy's minimum-norm solution, within the normal equations' bound on the kept part."""
    X, Y = _data("rank_deficient")
    coef, _, _, s = np.linalg.lstsq(X, Y, rcond=None)
    assert run["rank_deficient"]["rank"] == [N - 1, N - 1]
    tol = threshold("normal", np.float64, s[0] / s[N - 2], M, N)
    got = np.asarray(run["rank_deficient"]["sharded"][0])
    assert np.linalg.norm(got - coef) <= tol * np.linalg.norm(coef)


@pytest.mark.parametrize("case", ["lstsq", "ridge_intercept"])
def test_temporaries_stay_near_one_shard(run, case):
    """A compiled sharded fit's temporaries per device (``memory_analysis``, which counts both
    branches of the rank test: XLA reserves them whichever runs) are at most 1.5 times one
    shard of X: no gathered X, no transposed copy of it. Before the Gram-side fallback they
    were 9 times a shard (the QR fallback's all-gather of X and its work arrays)."""
    mem = run["memory"][case]
    assert mem["temp"] <= 1.5 * mem["shard"], mem
