"""The suite runs JAX in its cheap compile mode whoever starts it (``pytest`` alone, not only
``nox``): the settings come from tests/conftest.py, before JAX starts. A plain ``pytest`` runs
on parallel workers."""

from __future__ import annotations

import os

import pytest


def test_plain_pytest_runs_on_workers(request):
    """A plain ``pytest`` runs on one worker per core, at most four (tests/conftest.py; the
    README's stated time assumes two on two cores); ``-n 0`` runs one process."""
    config = request.config
    if not config.pluginmanager.hasplugin("xdist"):
        pytest.skip("pytest-xdist is not installed, or not loaded (-p no:xdist)")
    if not hasattr(config, "workerinput"):  # one process: only where the caller asked for it
        assert config.option.numprocesses == 0, "a plain pytest ran in one process"
        pytest.skip("the caller asked for one process (-n 0)")
    assert 1 <= config.workerinput["workercount"] <= 4


def test_jax_compiles_in_cheap_mode():
    jax = pytest.importorskip("jax")
    if os.environ.get("JAX_DISABLE_MOST_OPTIMIZATIONS") == "0":
        pytest.skip("the caller turned cheap compilation off")
    assert jax.config.read("jax_disable_most_optimizations")
    assert "--xla_cpu_use_fusion_emitters=false" in os.environ.get("XLA_FLAGS", "")
