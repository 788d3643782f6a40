"""Passes over X per eager fit. A tall fit is bandwidth-bound on a GPU: every operation that
reads or writes an array of X's size costs about as much as the product ``X.T @ X`` itself.
Counted on PyTorch on the CPU (the same code path as CUDA) by a ``TorchDispatchMode``, which
sees every operator torch runs: an operator with an input or output of at least half X's size
is one pass; views (outputs aliasing an input: transposes, slices, reshapes) are free.

Two tests per fit: the count stays within its ceiling (today's figure: it may shrink, growth
must raise the ceiling here on purpose), and within the budget of a pipeline shaped for the GPU
(one Gram product, ``X^T y``, the residual and ``X^T r`` of the one refinement step: 4 passes
for ``normal`` and ``auto``; 7 for ``qr`` and ``svd``; at most 2 more with an intercept; ridge
as its method).

And the operators of a fit, views excluded, whatever their size: on a GPU each is a kernel launch
and its dispatch on the host, and a mid-sized fit is bound by their count (an H100 took 6 ms for
a 200000 x 50 fit whose Gram product took 0.12 ms). Held to today's figures as ceilings."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import lsq_backends as lsq

torch = pytest.importorskip("torch")

M, N = 4000, 32  # tall: every X-sized array is far larger than anything else of the fit
# (method, intercept) -> (passes, operators) today; operators: every one but views, of any size
# (the scaling's powers of two took 115 more; an intercept's shifts 2 more when they were taken
# before the Gram route's data, with weights of their own; the condition estimate's power iteration
# 16 more when each normalization selected a divisor of 1 for a zero norm; normal and auto 267 and 290,
# 304 and 327 with an intercept, before the lean route; qr and svd one fewer since a residual's sum of
# squares is one product; with an intercept 5 fewer since the centered residual is formed, one
# m x k subtraction, where its corrections on the n x n side took six operators, and y's mean is one reduction;
# with an intercept and no weights 10 fewer on the lean route, which leaves the plain means' rounding to its refinement;
# 2 more (3 with weights) for its test of each column's resolution against its offset; then 4 fewer
# (3 with an intercept) when the certificate compared per column where it reduced to one number, and took
# the Cholesky factor's info uncast into its one concatenation; auto 1 fewer when its residual-angle test was one
# fused operator without a division; 1 fewer when one problem of at most 64 columns asked its pivot test as an
# outer product, where the smallest pivot's reduction and its product took two)
CEILING = {
    ("normal", False): (4, 28),
    ("normal", True): (6, 36),
    ("auto", False): (4, 30),
    ("auto", True): (6, 38),
    ("qr", False): (6, 288),
    ("qr", True): (8, 322),
    ("svd", False): (6, 304),
    ("svd", True): (8, 342),
}
BUDGET = {"normal": 4, "auto": 4, "qr": 7, "svd": 7}
INTERCEPT_EXTRA = 2


def counter(size):
    """A dispatch mode counting, per operator name, the operators that read or write a tensor
    of at least ``size`` elements, views excluded."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            view = any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns)
            tensors = [*args, *(kwargs or {}).values(), *(out if isinstance(out, (list, tuple)) else [out])]
            tensors = [t for a in tensors for t in (a if isinstance(a, (list, tuple)) else [a])]
            if not view and any(isinstance(t, torch.Tensor) and t.numel() >= size for t in tensors):
                self.ops[func.overloadpacket.__name__] += 1
            return out

        @property
        def count(self):
            return sum(self.ops.values())

    return Passes()


@pytest.fixture(scope="module")
def problem(request):
    if "torch" not in request.config._lsq_backends:
        pytest.skip("counted on PyTorch: runs in the torch backend's session")
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((M, N)))[0]
    V = np.linalg.qr(rng.standard_normal((N, N)))[0]
    X = (U * np.geomspace(1.0, 1e-2, N)) @ V.T  # cond 100: the common path, no fallback
    y = X @ rng.standard_normal(N) + 1e-3 * rng.standard_normal(M)
    return torch.asarray(X), torch.asarray(y)


def passes(problem, fit):
    X, y = problem
    fit(X, y)  # warm-up: lazy imports and caches
    with counter(X.numel() // 2) as c:
        fit(X, y)
    return c


def _lstsq(method, intercept):
    return lambda X, y: lsq.lstsq(X, y, method=method, fit_intercept=intercept)


FITS = {(method, intercept): _lstsq(method, intercept) for method, intercept in CEILING}


def test_bare_gram_product_is_one_pass(problem):
    c = passes(problem, lambda X, y: X.T @ X)
    assert c.count == 1, dict(c.ops)


@pytest.mark.parametrize(("method", "intercept"), list(CEILING), ids=lambda v: str(v))
def test_passes_within_ceiling(problem, method, intercept):
    c = passes(problem, FITS[method, intercept])
    assert c.count <= CEILING[method, intercept][0], f"{c.count} passes: {dict(c.ops)}"


@pytest.mark.parametrize("intercept", [False, True])
def test_ridge_as_its_method(problem, intercept):
    ridge = passes(problem, lambda X, y: lsq.ridge(X, y, 1.0, method="normal", fit_intercept=intercept))
    plain = passes(problem, FITS["normal", intercept])
    assert ridge.count <= plain.count, f"ridge {dict(ridge.ops)}, lstsq {dict(plain.ops)}"


def _budget_cases():
    for method, intercept in CEILING:
        budget = BUDGET[method] + (INTERCEPT_EXTRA if intercept else 0)
        yield pytest.param(method, intercept, budget, id=f"{method}-{intercept}")


@pytest.mark.parametrize(("method", "intercept", "budget"), list(_budget_cases()))
def test_passes_within_budget(problem, method, intercept, budget):
    c = passes(problem, FITS[method, intercept])
    assert c.count <= budget, f"{c.count} passes: {dict(c.ops)}"


@pytest.mark.parametrize(("method", "intercept"), list(CEILING), ids=lambda v: str(v))
def test_operators_within_ceiling(problem, method, intercept):
    X, y = problem
    fit = FITS[method, intercept]
    fit(X, y)
    with counter(0) as c:
        fit(X, y)
    assert c.count <= CEILING[method, intercept][1], f"{c.count} operators: {c.ops.most_common(12)}"


# The lean route's other common fits: today's operators (the lean-route page's target is 40 for each, with an
# intercept; weights with an intercept are above it). A penalty given as
# a number is a fill the first time only (``_devices.constants(shared=True)``): counted on the second call.
# Weighted with an intercept, 11 above the unweighted 36: the roots, their squares and total (3), its root and the
# unit vector root / sqrt(total) (2), the shares (1; the means are products, as the plain means are reductions), the
# weighting of the two shifted copies (2), the Gram matrix's correction by the means' rounding (``_gram_data.TallGram
# .products``: the unit vector beside V in B's product, and one ``addcmul``: 2, which the plain means leave out) and
# the resolution test's product by sqrt(total) (1); 58 before B's and the means' corrections were left to the
# refinement, 48 before the unit vector (a division fewer in A's correction, in the residual's centering, and the
# total's root taken once).
VARIANTS = {
    "weighted normal, intercept": (
        47,
        lambda X, y, w: lsq.lstsq(X, y, sample_weight=w, method="normal", fit_intercept=True),
    ),
    "ridge, intercept": (40, lambda X, y, w: lsq.ridge(X, y, 1.0, fit_intercept=True)),
    "ridge normal, intercept": (38, lambda X, y, w: lsq.ridge(X, y, 1.0, method="normal", fit_intercept=True)),
    "ridge, no intercept": (33, lambda X, y, w: lsq.ridge(X, y, 1.0, fit_intercept=False)),
    "float32 normal": (37, lambda X, y, w: lsq.lstsq(X, y, method="normal")),
    "stack of 100, normal": (29, lambda X, y, w: lsq.lstsq(X, y, method="normal")),
}
DATA = {  # the problem as the variant takes it, made before counting
    "float32 normal": lambda X, y: (X.float(), y.float()),
    "stack of 100, normal": lambda X, y: (X[:2000, :8].reshape(100, 20, 8), y[:2000].reshape(100, 20)),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_lean_variants_operators_within_ceiling(problem, name):
    X, y = DATA.get(name, lambda X, y: (X, y))(*problem)
    w = torch.linspace(0.5, 2.0, X.shape[0], dtype=X.dtype)
    ceiling, fit = VARIANTS[name]
    fit(X, y, w)
    with counter(0) as c:
        fit(X, y, w)
    assert c.count <= ceiling, f"{c.count} operators: {c.ops.most_common(12)}"
