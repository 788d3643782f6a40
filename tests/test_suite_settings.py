"""The suite runs JAX in its cheap compile mode whoever starts it (``pytest`` alone, not only
``nox``): the settings come from tests/conftest.py, before JAX starts."""

from __future__ import annotations

import os

import pytest


def test_jax_compiles_in_cheap_mode():
    jax = pytest.importorskip("jax")
    if os.environ.get("JAX_DISABLE_MOST_OPTIMIZATIONS") == "0":
        pytest.skip("the caller turned cheap compilation off")
    assert jax.config.read("jax_disable_most_optimizations")
    assert "--xla_cpu_use_fusion_emitters=false" in os.environ.get("XLA_FLAGS", "")
