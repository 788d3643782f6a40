"""Derivatives of the solution: one rule, wired into JAX and PyTorch."""

from __future__ import annotations

import array_api_compat

from . import _derivatives, _torch_autograd


def rule_of(xp, X, Y, alpha):
    """The module whose ``solve`` (``solve_path_rule`` for a path) differentiates by the
    solution's rule (``_derivatives`` for JAX, ``_torch_autograd`` for tensors that require
    grad), or None."""
    if not _derivatives.wanted(xp, X, Y, alpha):
        return None
    return _torch_autograd if array_api_compat.is_torch_namespace(xp) else _derivatives
