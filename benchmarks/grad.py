"""Gradient rows: the cost of differentiating a fit, next to the fit itself.

For a ``grad`` case, each method gets two rows on JAX (both jitted) and PyTorch: ``lsq.lstsq``
(the fit) and ``grad d(c^T coef)/dX`` (the fit plus the gradient of a fixed linear function of
the coefficients with respect to X: reverse mode through the solution's derivative rule,
reusing the fit's factorization). The ratio of the two times is the cost of a gradient.
Elsewhere (NumPy, ...) the fit rows only: nothing differentiates there.
"""

from __future__ import annotations

import numpy as np

import lsq_backends as lsq


def grad_specs(case, be, methods, spec_type, fit_specs):
    """The fit rows (``fit_specs``) and, on JAX and PyTorch, a gradient row per method."""
    specs = list(fit_specs)
    if be.name not in ("jax", "torch"):
        return specs
    for m in methods:
        specs.append(
            spec_type("grad d(c^T coef)/dX", m, be.name, "lsq", _maker(be, m), coef=None, jitted=be.name == "jax")
        )
    return specs


def _weights(n, like_dtype):
    return np.linspace(1.0, 2.0, n).astype(like_dtype)


def _maker(be, method):
    if be.name == "jax":
        import jax
        import jax.numpy as jnp

        def loss(X, y, c):
            return jnp.sum(lsq.lstsq(X, y, method=method).coef * c)

        g = jax.jit(jax.grad(loss))

        def make(X, y, a):
            c = jnp.asarray(_weights(X.shape[-1], str(X.dtype)))
            return lambda: (g(X, y, c),)

        return make
    import torch

    def make(X, y, a):
        c = torch.as_tensor(_weights(X.shape[-1], str(X.dtype).split(".")[-1]), device=X.device)

        def run():
            Xg = X.detach().requires_grad_(True)
            torch.sum(lsq.lstsq(Xg, y, method=method).coef * c).backward()
            return (Xg.grad,)

        return run

    return make
