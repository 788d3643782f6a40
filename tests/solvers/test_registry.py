"""The solver contract: every method's ``solve`` returns a ``Solution`` from every branch, the
method lists and the capability rows come from the one registry (``lsq_backends._solvers``),
and nothing outside the solver layer compares method names (it asks the record)."""

from __future__ import annotations

import ast
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends import _types
from lsq_backends._backend import _compat
from lsq_backends._solvers import DEFAULT, METHODS, RECORDS, Given, Solution, check_method, record
from lsq_backends.capabilities import CAPABILITIES, FEATURES, NOTES
from lsq_backends.check.problems import LSTSQ_METHODS, PATH_METHODS

pytestmark = pytest.mark.usefixtures("numpy_reference")

PACKAGE = Path(lsq.__file__).resolve().parent
# Comparisons of a method name allowed outside the solver layer: (file, source). None today.
ALLOWED: set[tuple[str, str]] = set()


def _named(node):
    """Whether ``node`` is a method name literal, or a tuple/list/set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in METHODS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(isinstance(e, ast.Constant) and e.value in METHODS for e in node.elts)
    return False


def compared_names(source):
    """The comparisons (==, !=, in, not in) in ``source`` of a method name literal with an
    expression that mentions a method (``method == "lsmr"``, ``m.method in ("svd", "qr")``):
    not those of other strings that happen to share a name (``mode == "svd"``, a CV mode)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if any(map(_named, operands)) and any("method" in ast.unparse(o).lower() for o in operands):
            out.append(ast.unparse(node))
    return out


def test_the_scan_sees_a_comparison():
    assert compared_names("if method == 'lsmr' or self.method in ('svd', 'qr'): pass") == [
        "method == 'lsmr'",
        "self.method in ('svd', 'qr')",
    ]
    assert compared_names("route = spectral.svd if mode == 'svd' else None") == []


def test_no_method_name_compared_outside_the_solver_layer():
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if "_solvers" in path.relative_to(PACKAGE).parts:
            continue
        rel = str(path.relative_to(PACKAGE))
        found |= {(rel, c) for c in compared_names(path.read_text())}
    assert found <= ALLOWED, sorted(found - ALLOWED)
    assert len(ALLOWED) <= 2


def test_the_lists_come_from_the_registry():
    assert METHODS == tuple(typing.get_args(_types.Method))
    with pytest.raises(ValueError, match=", ".join(map(repr, METHODS))):  # the registry's own check
        check_method("no_such_method", None)
    assert DEFAULT in METHODS
    assert [r.name for r in RECORDS] == list(METHODS)
    for rec in RECORDS:
        assert record(rec.name) is rec
        assert rec.solve.__module__ == f"lsq_backends._solvers.{rec.name}"
        assert set(CAPABILITIES[f"lstsq:{rec.name}"]) == set(FEATURES)
        assert all((f"lstsq:{rec.name}", f) in NOTES for f in rec.notes)
        assert rec.error_bound in ("cond", "cond**2", "either", "tol")
        assert rec.path_route in ((None,) if rec.iterative else ("gram", "svd", "auto"))
        assert rec.matrix_free is None or record(rec.matrix_free).iterative
        assert not rec.stops or rec.iterative
        assert not rec.forms_gram or not rec.iterative
    assert LSTSQ_METHODS == METHODS
    assert PATH_METHODS == tuple(r.name for r in RECORDS if not r.iterative)


def _problem(m, n, rank, seed=0):
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((m, min(m, n))))
    v, _ = np.linalg.qr(rng.standard_normal((n, min(m, n))))
    s = np.logspace(0, -2, min(m, n))
    s[rank:] = 0.0
    X = (u * s) @ v.T
    return X, rng.standard_normal((m, 2))


# (m, n, rank): tall full rank (Cholesky, CholeskyQR2), tall ill-conditioned full rank
# (shifted CholeskyQR3), tall and wide rank deficient (the rank fallbacks), wide full rank.
SHAPES = [(40, 6, 6), (40, 6, None), (40, 6, 4), (5, 12, 5), (5, 12, 3)]


@pytest.mark.parametrize("shared", [False, True], ids=["eager-branches", "shared-branches"])
@pytest.mark.parametrize("operators", [False, True])
@pytest.mark.parametrize("ridge", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("method", [r.name for r in RECORDS if not r.iterative])
def test_direct_solvers_return_a_solution_from_every_branch(monkeypatch, method, shape, ridge, operators, shared):
    """Rank-deficient and full-rank, tall and wide, least squares and ridge, with and without
    the derivative operators; ``shared``: the branches JAX compiles into one program (``normal``'s rank
    fallback is then the Gram matrix's eigendecomposition)."""
    traits = _compat.traits
    monkeypatch.setattr(_compat, "traits", lambda xp: traits(xp)._replace(branches_share_memory=shared))
    m, n, rank = shape
    X, Y = _problem(m, n, rank)
    if rank is None:  # cond 1e9: past CholeskyQR2's gate
        X = X @ np.diag(np.logspace(0, -9, n))
    alpha = np.array([0.5]) if ridge else None
    rec = record(method)
    sol = rec.solve(np, X, Y, alpha, operators=operators)
    assert type(sol) is Solution
    assert sol.coef.shape == (n, 2) and np.all(np.isfinite(sol.coef))
    assert (sol.s is not None) == rec.singular_values
    assert (sol.operators is not None) == operators
    assert sol.n_iter is None and sol.istop is None
    if rank is not None and not ridge:  # the minimum-norm solution on every branch
        ref = np.linalg.lstsq(X, Y, rcond=None)[0]
        cond = 100.0  # of the kept part: ~ eps cond, or eps cond**2 for the normal equations
        bound = 100 * np.finfo(float).eps * cond ** (2 if rec.error_bound == "cond**2" else 1)
        np.testing.assert_allclose(sol.coef, ref, rtol=0, atol=bound * np.abs(ref).max())
        assert int(sol.rank) == rank


@pytest.mark.parametrize("ridge", [False, True])
@pytest.mark.parametrize("shape", [(40, 6), (5, 12)], ids=str)
@pytest.mark.parametrize("method", [r.name for r in RECORDS if r.forms_gram])
def test_the_deferred_check_runs_in_the_solver_between_its_steps(method, shape, ridge):
    """X's deferred test (``Given.check``) runs once, on the Gram product, from a solver's own step: never from
    inside a constructor of the solver layer (where a reader of the solver would not see it)."""
    callers = []

    def check(A, offset_sq):
        callers.append(sys._getframe(1).f_code.co_name)
        p = min(shape)
        assert A.shape == (p, p) and offset_sq is None

    m, n = shape
    X, Y = _problem(m, n, min(m, n))
    record(method).solve(np, X, Y, np.array([0.5]) if ridge else None, Given(check=check))
    assert len(callers) == 1 and callers[0] != "__init__", callers


@pytest.mark.parametrize("ridge", [False, True])
@pytest.mark.parametrize("method", [r.name for r in RECORDS if r.iterative])
def test_iterative_solvers_return_a_solution(method, ridge):
    X, Y = _problem(30, 5, 5)
    rec = record(method)
    sol = rec.solve(np, X, Y, np.array([0.5]) if ridge else None, Given(options={"atol": 1e-12, "btol": 1e-12}))
    assert type(sol) is Solution
    assert sol.coef.shape == (5, 2) and sol.n_iter.shape == (2,)
    assert (sol.istop is not None) == rec.stops
    assert sol.s is None and sol.operators is None


def test_estimator_tol_reaches_every_iterative_method():
    """``tol`` is the stopping tolerance of the iterative methods, LSMR's too."""
    X, Y = _problem(60, 8, 8, seed=3)
    y = Y[:, 0]
    for rec in RECORDS:
        if rec.iterative:
            got = lsq.Ridge(alpha=0.1, method=rec.name, tol=1e-2).fit(X, y).coef_
            want = lsq.ridge(X, y, 0.1, method=rec.name, atol=1e-2, btol=1e-2).coef
            np.testing.assert_array_equal(got, want)
            default = lsq.Ridge(alpha=0.1, method=rec.name).fit(X, y).coef_
            assert np.abs(got - default).max() > 1e-8, rec.name  # the tolerance made a difference


def test_docs_do_not_deny_an_option_a_method_has():
    """No page of the docs says the Krylov methods have no preconditioner: every iterative
    record takes ``precondition`` (the docs had drifted from the records once)."""
    docs = PACKAGE.parent / "docs"
    if not docs.is_dir():
        pytest.skip("the docs are not beside the package (an installed wheel)")
    assert all("precondition" in r.options for r in RECORDS if r.iterative)
    denials = [(p.name, line) for p in sorted(docs.glob("*.md")) for line in p.read_text().splitlines()]
    assert [d for d in denials if "no preconditioner" in d[1]] == []
