"""Derivatives of the solution: one rule, wired into JAX and PyTorch."""
