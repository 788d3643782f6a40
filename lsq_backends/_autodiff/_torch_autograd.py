"""The derivative rules of ``_derivatives`` as a ``torch.autograd.Function``: the fit runs
once, keeping its factor, and ``backward`` applies the transposed rule (``_rule.cotangent``)
with it. The same code serves CPU and CUDA tensors."""

from __future__ import annotations

from .._solvers import record
from ._derivatives import path_primal, primal
from ._rule import cotangent, linearize, singular_cotangent

_FUNCTION: list = []


def _function():
    """The ``autograd.Function`` subclasses, made on first use (torch is imported only then):
    the fit, and the pass-through of ``refine``."""
    if _FUNCTION:
        return _FUNCTION
    import torch

    class Fit(torch.autograd.Function):
        @staticmethod
        def forward(ctx, X, Y, alpha, run, xp, path):
            coef, rank, s, n_iter, fac = run(X, Y, alpha, True)
            ctx.xp, ctx.fac, ctx.s = xp, fac, s
            ctx.alpha_shape = None if alpha is None else tuple(alpha.shape)
            ctx.lin = linearize(xp, fac, X, Y, coef, alpha, path)
            outputs = tuple(a for a in (coef, rank, s, n_iter) if a is not None)
            ctx.mark_non_differentiable(*(a for a in (rank, n_iter) if a is not None))
            ctx.layout = tuple(a is not None for a in (coef, rank, s, n_iter))
            return outputs

        @staticmethod
        def backward(ctx, *grads):
            xp, lin = ctx.xp, ctx.lin
            it = iter(grads)
            g_coef, _, g_s, _ = (next(it) if present else None for present in ctx.layout)
            X_bar, Y_bar, a_bar = cotangent(xp, lin, g_coef, ctx.alpha_shape)
            if g_s is not None:
                X_bar = X_bar + singular_cotangent(xp, ctx.fac.V, ctx.s, lin.X, g_s)
            return X_bar, Y_bar, a_bar, None, None, None

    class PassThrough(torch.autograd.Function):
        @staticmethod
        def forward(ctx, base, value):
            return value.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    _FUNCTION.extend([Fit, PassThrough])
    return _FUNCTION


def torch_fit(xp, X, Y, alpha, run, layout, path=False):
    """``(coef, rank, s, n_iter)`` of ``run`` (``run(X, Y, alpha, operators)`` as
    ``_derivatives.primal``), differentiable by the rule; ``layout``: which of the four are
    not None (``s`` for the svd method, ``n_iter`` for lsqr and lsmr); ``path``: a penalty path."""
    it = iter(_function()[0].apply(X, Y, alpha, run, xp, path))
    return tuple(next(it) if present else None for present in layout)


def solve(xp, X, Y, alpha, method, given):
    """``(coef, rank, s, n_iter)`` as the solver gives them (``given``: ``_solvers.Given``), differentiated by the
    rule in PyTorch's autograd (``_derivatives.solve`` for JAX)."""

    def run(X, Y, alpha, operators):
        return primal(xp, X, Y, alpha, method, given, operators)

    rec = record(method)
    return torch_fit(xp, X, Y, alpha, run, (True, True, rec.singular_values, rec.iterative))


def solve_path_rule(xp, X, Y, alpha, method, offset_sq):
    """A penalty path's ``(coef, rank, s)``, differentiated by the rule per penalty."""

    def run(X, Y, alpha, operators):
        return path_primal(xp, X, Y, alpha, method, offset_sq, operators)

    return torch_fit(xp, X, Y, alpha, run, (True, True, record(method).path_singular_values, False), True)[:3]


def detach(xp, a):
    """``a`` without derivatives (None stays None)."""
    return None if a is None else a.detach()


def pass_through(xp, base, value):
    """``value`` with the derivatives of ``base`` (``_derivatives.pass_through``)."""
    return _function()[1].apply(base, value)
