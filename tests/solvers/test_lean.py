"""The lean route of ``normal`` and ``auto`` (``_solvers/linalg/lean.py``): which problems it takes, what it
returns for them, and which it leaves to the full route.

Routing is observed where one route runs (the eager libraries): the full route is ``_api._full_fit``, counted
here. Every problem outside the common case (rank-deficient, nearly so, a negligible column, an ill-conditioned
one, off-scale data, NaN or infinity, a negative weight or penalty) must reach the full route, so that loosening
any bound of the gate fails a test here. Accepted problems must be as accurate as the full route's bound:
the refined normal equations err by ~eps cond (1 + cond tan) once their step converged (``test_gram_route``),
taken here with C = 20 against a reference exact to rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import lsq_backends as lsq
from lsq_backends import _api
from lsq_backends._solvers import lean

EPS = np.finfo(np.float64).eps
C = 20.0


def _problem(m, n, cond, noise=1e-6, seed=0):
    """X (m, n) with singular values from sqrt(m) to sqrt(m) / cond, y = X w + relative noise; w."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((m, n)))[0]
    V = np.linalg.qr(rng.standard_normal((n, n)))[0]
    X = (U * np.geomspace(1.0, 1.0 / cond, n) * math.sqrt(m)) @ V.T
    w = rng.standard_normal(n)
    signal = X @ w
    y = signal + noise * np.linalg.norm(signal) / math.sqrt(m) * rng.standard_normal(m)
    return X, y


@pytest.fixture
def full_fits(be, monkeypatch):
    """The methods of the fits that reached the full route, on a backend where one route runs (eager JAX: the full
    route is the fit compiled, counted where it is called, since a compiled fit is traced once per shape)."""
    if be.library == "dask":
        pytest.skip("Dask keeps the full route: routing is eager")
    calls = []
    if be.library == "jax":
        compiled = _api.compiled_fit

        def counted_jax(fn, static, X, y, sample_weight, kwargs, *args):
            calls.append(kwargs["method"])
            return compiled(fn, static, X, y, sample_weight, kwargs, *args)

        monkeypatch.setattr(_api, "compiled_fit", counted_jax)
        return calls
    full = _api._full_fit

    def counted(X, y, sample_weight, alpha, spec, by_gram=True):
        if by_gram:  # not the full route's own restart with the max |X| passes
            calls.append(spec.method)
        return full(X, y, sample_weight, alpha, spec, by_gram)

    monkeypatch.setattr(_api, "_full_fit", counted)
    return calls


def _fit(be, X, y, method="normal", **kwargs):
    X, y = be.asarray(X, np.float64), be.asarray(y, np.float64)
    for key in ("sample_weight",):
        if kwargs.get(key) is not None:
            kwargs[key] = be.asarray(kwargs[key], np.float64)
    if "alpha" in kwargs:
        alpha = kwargs.pop("alpha")
        return lsq.ridge(X, y, alpha, method=method, **kwargs)
    return lsq.lstsq(X, y, method=method, **kwargs)


COMMON = {
    "plain": ({}, (2000, 20, 100.0)),
    "intercept": ({"fit_intercept": True}, (2000, 20, 100.0)),
    "weights": ({"sample_weight": "w"}, (2000, 20, 100.0)),
    "ridge": ({"alpha": 1.0}, (2000, 20, 100.0)),
    "ridge per target": ({"alpha": "per-target", "per_target": True}, (2000, 20, 100.0)),
    "wider": ({}, (3000, 64, 30.0)),
}


@pytest.mark.parametrize("method", ["normal", "auto"])
@pytest.mark.parametrize("case", list(COMMON))
def test_common_problems_take_the_lean_route(be, full_fits, method, case):
    kwargs, (m, n, cond) = COMMON[case]
    kwargs = dict(kwargs)
    X, y = _problem(m, n, cond)
    if kwargs.get("sample_weight") == "w":
        kwargs["sample_weight"] = np.random.default_rng(1).uniform(0.5, 2.0, m)
    if kwargs.get("alpha") == "per-target":
        y = np.stack([y, 2 * y], axis=1)
        kwargs["alpha"] = be.asarray(np.array([0.5, 2.0]), np.float64)
    _fit(be, X, y, method, **kwargs)
    assert full_fits == [], f"{case}: the full route ran"


@pytest.mark.parametrize("method", ["normal", "auto"])
@pytest.mark.parametrize("cond", [1.0, 1e2, 1e3])
def test_accepted_fits_are_refined_to_qr_accuracy(be, full_fits, method, cond):
    """The refined error bound C eps cond (1 + cond tan): the unrefined normal equations (eps cond**2 = 2e-10
    at cond 1e3) would fail it. The reference: NumPy's SVD-based lstsq, whose own error is within eps cond."""
    X, y = _problem(4000, 12, cond, noise=1e-8)
    ref, *_ = np.linalg.lstsq(X, y, rcond=None)
    res = _fit(be, X, y, method)
    assert full_fits == []
    tan = np.linalg.norm(y - X @ ref) / np.linalg.norm(X @ ref)
    err = np.linalg.norm(be.to_numpy(res.coef) - ref) / np.linalg.norm(ref)
    assert err <= C * EPS * cond * (1 + cond * tan) + EPS * cond, err
    assert int(be.to_numpy(res.rank)) == 12
    rss = float(np.sum((y - X @ ref) ** 2))
    assert abs(float(be.to_numpy(res.rss)) - rss) <= C * EPS * cond * np.linalg.norm(y) ** 2


@pytest.mark.parametrize("offset", [1e6, 1e8, 1.7e9])
@pytest.mark.parametrize("weighted", [False, True])
def test_large_column_offsets_with_an_intercept_stay_lean_and_exact(be, full_fits, offset, weighted):
    """Columns offset by 1e8 and more (timestamps, prices): the lean route centers exactly on the n x n side and
    decides the rank of the centered problem. X = offset + E with E on a grid of the offset's own spacing, so
    that the data are exactly E shifted: the reference is the intercept fit of E, well conditioned."""
    rng = np.random.default_rng(2)
    m, n = 3000, 8
    step = np.spacing(offset) * 64
    E = np.round(rng.standard_normal((m, n)) / step) * step
    y = E @ rng.standard_normal(n) + 1e-3 * rng.standard_normal(m)
    X = offset + E
    assert np.array_equal(X - offset, E)
    w = rng.uniform(0.5, 2.0, m) if weighted else np.ones(m)
    A = np.c_[np.ones(m), E]
    ref = np.linalg.lstsq(np.sqrt(w)[:, None] * A, np.sqrt(w) * y, rcond=None)[0]
    res = _fit(be, X, y, "auto", fit_intercept=True, sample_weight=w if weighted else None)
    assert full_fits == []
    coef = be.to_numpy(res.coef)
    assert np.max(np.abs(coef - ref[1:])) / np.max(np.abs(ref[1:])) <= C * EPS * np.linalg.cond(A)
    # intercept of X: ref[0] - offset * sum(coef); its error is the offset times coef's
    intercept = ref[0] - offset * ref[1:].sum()
    assert abs(float(be.to_numpy(res.intercept)) - intercept) <= C * EPS * offset * np.abs(ref[1:]).sum() * n


@pytest.mark.parametrize("seed", range(8))
def test_weighted_means_rounding_is_corrected_at_large_offsets(be, full_fits, seed):
    """Weighted means are products, rounded to ~eps sqrt(m) |offset| (no cascaded sum): the Gram matrix of data
    shifted by them is off by total d d^T, second order in that rounding d, which one refinement step leaves at
    about (cond**2 |d|**2 / var)**2 (2.9e-12 at cond 1e2, offsets 1.7e9), past the refined bound; its correction
    (``_gram_data.TallGram.products``) keeps the error at QR's. The reference: the data centered by the weighted
    means in extended precision (``numpy.longdouble``), solved and refined twice."""
    if np.finfo(np.longdouble).eps >= EPS:
        pytest.skip("numpy.longdouble is float64 here: no extended-precision reference")
    rng = np.random.default_rng(seed)
    m, n, cond = 4000, 32, 1e2
    U, V = np.linalg.qr(rng.standard_normal((m, n)))[0], np.linalg.qr(rng.standard_normal((n, n)))[0]
    X = (U * np.geomspace(1, 1 / cond, n)) @ V.T * np.sqrt(m) + 1.7e9 * (1 + rng.random(n))
    y = X @ rng.standard_normal(n) + 3.0 + 0.1 * rng.standard_normal(m)
    w = rng.uniform(0.5, 2.0, m)
    Xl, yl, wl = X.astype(np.longdouble), y.astype(np.longdouble), w.astype(np.longdouble)
    root = np.sqrt(wl)[:, None]
    Xc, yc = root * (Xl - (wl @ Xl) / wl.sum()), root[:, 0] * (yl - (wl @ yl) / wl.sum())
    ref = np.linalg.lstsq(Xc.astype(np.float64), yc.astype(np.float64), rcond=None)[0]
    for _ in range(2):
        g = (Xc.T @ (yc - Xc @ ref.astype(np.longdouble))).astype(np.float64)
        ref = ref + np.linalg.solve(Xc.astype(np.float64).T @ Xc.astype(np.float64), g)
    res = _fit(be, X, y, "normal", fit_intercept=True, sample_weight=w)
    assert full_fits == []
    err = np.linalg.norm(be.to_numpy(res.coef) - ref) / np.linalg.norm(ref)
    assert err <= C * EPS * cond, err


def _outside(name, X, y):
    """Problems outside the common case, each failing one bound of the gate."""
    X, y = X.copy(), y.copy()
    kwargs = {}
    if name == "rank-deficient":
        X[:, 3] = X[:, 2]
    elif name == "near-dependent":
        X[:, 3] = X[:, 2] + 1e-10 * X[:, 4]
    elif name == "zero column":
        X[:, 5] = 0.0
    elif name == "negligible column":  # NumPy's rule: a column below the cutoff against the largest
        X[:, 5] *= 1e-12
    elif name == "ill-conditioned":  # beyond the refinement's convergence (cond 1e5 > 1e4)
        X, y = _problem(2000, 20, 1e5)
    elif name == "huge X":
        X *= 1e200
    elif name == "tiny X":
        X *= 1e-200
    elif name == "one column below the safe range":  # its squared norm 1e-158 < m 2**-512, the others' 1e-148 inside
        X, y = X * 1e-74, y * 1e-74  # the range, its pivot 1e-5 of theirs (the pivot test passes)
        X[:, 5] *= 1e-5
    elif name == "huge y":
        y *= 1e200
    elif name == "tiny y":
        y *= 1e-200
    elif name == "zero y":
        y[:] = 0.0
    return X, y, kwargs


OUTSIDE = [
    "rank-deficient", "near-dependent", "zero column", "negligible column", "ill-conditioned",
    "huge X", "tiny X", "one column below the safe range", "huge y", "tiny y",
]  # fmt: skip


@pytest.mark.parametrize("method", ["normal", "auto"])
@pytest.mark.parametrize("name", OUTSIDE)
def test_problems_outside_the_common_case_take_the_full_route(be, full_fits, method, name):
    X, y, kwargs = _outside(name, *_problem(2000, 20, 10.0))
    lean = _fit(be, X, y, method, **kwargs)
    assert full_fits == [method], f"{name}: the lean route kept it"
    # and the answer is the full route's own
    assert np.all(np.isfinite(be.to_numpy(lean.coef)))


@pytest.mark.parametrize("shape", ["stack", "past OUTER_MAX"])
def test_a_negligible_column_takes_the_full_route_in_both_forms_of_the_pivot_test(be, full_fits, shape):
    """The pivot test asks every pivot against every column for one problem of up to ``lean.OUTER_MAX`` columns, and
    the smallest pivot against every column for a stack or more columns: both send NumPy's negligible column (its
    rank deficiency) to the full route."""
    n = 20 if shape == "stack" else lean.OUTER_MAX + 6
    X, y, _ = _outside("negligible column", *_problem(1000, n, 10.0))
    if shape == "stack":
        X, y = np.stack([_problem(1000, n, 10.0, seed=1)[0], X]), np.stack([y, y])
    _fit(be, X, y, "normal")
    assert full_fits == ["normal"], "the lean route kept it"


@pytest.mark.parametrize("method", ["normal", "auto"])
@pytest.mark.parametrize("column", ["constant 0.1", "1e8 varying by 1e-7", "0.1 varying by an ulp"])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_column_at_its_offsets_rounding_is_rank_deficient(be, full_fits, method, column, weighted):
    """With an intercept, a column that centering leaves at the rounding of its offset holds no digit of its own:
    the full route fits (rank 0, coefficient 0, the intercept y's mean), as ``qr`` and NumPy on ``[1, X]`` decide.
    The lean route once took it, full rank, and fitted the rounding (coefficients of 6e15)."""
    rng = np.random.default_rng(3)
    x = {"constant 0.1": np.full(50, 0.1), "1e8 varying by 1e-7": 1e8 + 1e-7 * rng.standard_normal(50),
         "0.1 varying by an ulp": 0.1 + rng.choice([0.0, 2.0**-56], 50)}[column]  # fmt: skip
    y = np.arange(50.0)
    w = rng.uniform(0.5, 2.0, 50) if weighted else None
    res = _fit(be, x[:, None], y, method, fit_intercept=True, sample_weight=w)
    assert full_fits == [method], "the lean route kept it"
    assert int(be.to_numpy(res.rank)) == 0
    assert float(be.to_numpy(res.coef)[0]) == 0.0
    np.testing.assert_allclose(float(be.to_numpy(res.intercept)), np.average(y, weights=w), rtol=1e-12)


def test_auto_leaves_large_residuals_to_the_full_route(be, full_fits):
    """``auto``'s residual-angle test (cond**2 tan <= 1e4), asked of the upper bound: a residual as large as the
    signal at cond 1e3 goes to the full route, whose QR it needs; ``normal`` keeps it (its own bound)."""
    X, y = _problem(2000, 20, 1e3, noise=1.0)
    _fit(be, X, y, "auto")
    assert full_fits == ["auto"]
    _fit(be, X, y, "normal")
    assert full_fits == ["auto"]


@pytest.mark.parametrize("method", ["normal", "auto"])
@pytest.mark.parametrize("where", ["X", "y", "sample_weight"])
def test_non_finite_input_raises_through_the_full_route(be, full_fits, method, where):
    X, y = _problem(500, 5, 10.0)
    w = np.ones(500)
    {"X": X, "y": y, "sample_weight": w}[where][7] = np.nan
    with pytest.raises(ValueError, match=where):
        _fit(be, X, y, method, sample_weight=w)
    assert full_fits == [method]


def test_negative_weight_and_penalty_raise(be, full_fits):
    X, y = _problem(500, 5, 10.0)
    w = np.ones(500)
    w[3] = -1.0
    with pytest.raises(ValueError, match="sample_weight"):
        _fit(be, X, y, sample_weight=w)
    with pytest.raises(ValueError, match="alpha"):
        _fit(be, X, np.stack([y, y], axis=1), alpha=be.asarray(np.array([1.0, -1.0]), np.float64), per_target=True)


def test_a_stack_with_one_singular_problem_falls_back_whole(be, full_fits):
    """A stack takes one route: the gate is one boolean (one read), and the full route decides each problem."""
    X, y = _problem(200, 6, 10.0)
    Xs = np.stack([X, X.copy(), X])
    Xs[1, :, 2] = Xs[1, :, 1]
    res = _fit(be, Xs, np.stack([y, y, y]))
    assert full_fits == ["normal"]
    assert be.to_numpy(res.rank).tolist() == [6, 5, 6]


def test_the_fallback_is_logged(be, full_fits, caplog):
    X, y = _problem(500, 5, 10.0)
    X[:, 1] = X[:, 0]
    with caplog.at_level("DEBUG", logger="lsq_backends"):
        _fit(be, X, y)
    assert "lean route" in caplog.text


@pytest.mark.parametrize("singular", [False, True])
def test_each_route_answers_the_same_problem_on_every_backend(be, singular):
    """Under ``jax.jit`` both routes are compiled into one ``lax.cond``; on Dask only the full route runs; on
    the eager libraries one of them. Whichever ran, the answer is NumPy's minimum-norm one (rank 5 of 6 where
    two columns coincide) within the normal equations' bound."""
    X, y = _problem(300, 6, 10.0, noise=1e-3)
    if singular:
        X[:, 4] = X[:, 3]
    ref, _, rank, _ = np.linalg.lstsq(np.c_[np.ones(300), X], y, rcond=None)
    res = _fit(be, X, y, "normal", fit_intercept=True)
    assert int(be.to_numpy(res.rank)) == rank - 1
    np.testing.assert_allclose(be.to_numpy(res.coef), ref[1:], rtol=0, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_allclose(float(be.to_numpy(res.intercept)), ref[0], rtol=0, atol=1e-10 * np.abs(ref).max())


EPS32 = float(np.finfo(np.float32).eps)


@pytest.mark.parametrize("cond", [1.0, 10.0, 100.0])
def test_float32_normal_refines_where_the_bound_proves_it_contracts(be, full_fits, cond):
    """float32 ``normal`` takes the lean route and keeps the refined solution where eps cond(As) <= 1/16 is
    proved (the plain one elsewhere): error ~ eps cond (1 + cond tan) + (eps cond**2)**2 with C = 20, where the
    plain normal equations' eps cond**2 (1.2e-3 at cond 100) fails it. ``auto`` in float32 keeps the full route."""
    X, y = _problem(2000, 20, cond, noise=1e-4)
    ref, *_ = np.linalg.lstsq(X, y, rcond=None)
    res = lsq.lstsq(be.asarray(X, np.float32), be.asarray(y, np.float32), method="normal")
    assert full_fits == []
    tan = np.linalg.norm(y - X @ ref) / np.linalg.norm(X @ ref)
    err = np.linalg.norm(be.to_numpy(res.coef).astype(np.float64) - ref) / np.linalg.norm(ref)
    bound = C * EPS32 * cond * (1 + cond * tan) + (C * EPS32 * cond**2) ** 2 + C * EPS32
    assert err <= bound, (err, bound)
    lsq.lstsq(be.asarray(X, np.float32), be.asarray(y, np.float32), method="auto")
    assert full_fits == ["auto"]


def test_float32_rank_deficiency_takes_the_full_route(be, full_fits):
    X, y = _problem(2000, 20, 10.0)
    X[:, 3] = X[:, 2]
    res = lsq.lstsq(be.asarray(X, np.float32), be.asarray(y, np.float32), method="normal")
    assert full_fits == ["normal"]
    assert int(be.to_numpy(res.rank)) == 19


@pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`")
def test_the_device_part_traces_as_one_graph(be):
    """The lean route's device part is a plain function of arrays (no read, no context variable, no closure
    state): ``torch.compile(fullgraph=True)`` can take it whole, and a CUDA graph could capture it."""
    if be.library != "torch":
        pytest.skip("traced by PyTorch's compiler: runs in the torch backend's session")
    import torch

    from lsq_backends._solvers.linalg import lean

    X, y = _problem(500, 8, 10.0)
    X, Y = be.asarray(X, np.float64), be.asarray(y[:, None], np.float64)
    xp = be.xp
    for centered, auto in [(False, True), (True, False)]:
        explained = torch._dynamo.explain(lambda X, Y: lean.fit(xp, X, Y, None, None, lean.Form(centered, auto)))(X, Y)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


def _jax(be):
    if be.library != "jax":
        pytest.skip("the traced lean route is JAX's: runs in the jax backend's session")
    import jax

    return jax, jax.numpy


@pytest.mark.parametrize("method", ["normal", "auto"])
@pytest.mark.parametrize("kind", ["plain", "intercept", "weights", "ridge"])
def test_traced_jax_takes_the_lean_branch_with_the_rules_derivative(be, monkeypatch, method, kind):
    """Under ``jax.jit`` the lean route is one branch of a ``lax.cond`` with the derivative of its own
    (``lean.tangent``): the values and gradients match ``svd``'s, differentiated by the solution's rule, to the
    refined error bound (cond 100: C eps cond**2 for the derivatives, which the normal equations' K carries)."""
    jax, jnp = _jax(be)
    from lsq_backends._autodiff import _derivatives

    taken = []
    lean_fit = _derivatives.lean_fit
    monkeypatch.setattr(_derivatives, "lean_fit", lambda *a: taken.append(1) or lean_fit(*a))
    X, y = _problem(400, 8, 100.0, noise=1e-3)
    w = np.random.default_rng(2).uniform(0.5, 2.0, 400)
    kwargs = {"fit_intercept": kind == "intercept" or kind == "weights"}

    def loss(X, y, w, a, method):
        sw = w if kind == "weights" else None
        if kind == "ridge":
            r = lsq.ridge(X, y, a, method=method, **kwargs)
        else:
            r = lsq.lstsq(X, y, method=method, sample_weight=sw, **kwargs)
        return jnp.sum(r.coef * jnp.arange(1.0, 9.0)) + r.intercept + 0.1 * r.rss

    args = (jnp.asarray(X), jnp.asarray(y), jnp.asarray(w), jnp.asarray(1.5))
    value, grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)), static_argnums=4)(*args, method)
    assert taken, "the traced fit did not try the lean route"
    ref_value, ref_grads = jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(*args, "svd")
    assert abs(float(value - ref_value)) <= C * EPS * 100.0 * max(1.0, abs(float(ref_value)))
    for g, ref in zip(grads, ref_grads, strict=True):
        scale = max(float(jnp.max(jnp.abs(ref))), 1.0)
        assert float(jnp.max(jnp.abs(g - ref))) <= C * EPS * 1e4 * scale


def test_traced_jax_falls_back_inside_the_program_with_finite_derivatives(be):
    """A singular X under ``jax.jit``: the gate fails on the device, the full route's branch gives the minimum-norm
    fit of rank n - 1, and the gradient (which passes a zero cotangent through the lean branch not taken) is
    finite; ``vmap`` over a stack of one regular and one singular problem gives each its own answer."""
    jax, jnp = _jax(be)
    X, y = _problem(300, 6, 10.0)
    Xs = X.copy()
    Xs[:, 1] = Xs[:, 0]
    fit = jax.jit(lambda X, y: lsq.lstsq(X, y, method="normal"))
    r = fit(jnp.asarray(Xs), jnp.asarray(y))
    ref, *_ = np.linalg.lstsq(Xs, y, rcond=None)
    assert int(r.rank) == 5
    assert np.allclose(np.asarray(r.coef), ref, rtol=1e-8, atol=1e-10)
    g = jax.jit(jax.grad(lambda X: jnp.sum(lsq.lstsq(X, jnp.asarray(y), method="normal").coef ** 2)))(jnp.asarray(Xs))
    assert bool(jnp.all(jnp.isfinite(g)))
    both = jax.vmap(lambda X: lsq.lstsq(X, jnp.asarray(y), method="normal").coef)(
        jnp.stack([jnp.asarray(X), jnp.asarray(Xs)])
    )
    assert np.allclose(np.asarray(both[0]), np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-10)
    assert np.allclose(np.asarray(both[1]), ref, rtol=1e-8, atol=1e-10)


def test_traced_jax_weight_derivative_is_finite_and_exact_at_zero_weights(be):
    """d coef / d weights at a zero weight: the lean rule needs no square root of the weights (whose derivative is
    infinite at zero); checked against central differences of the NumPy fit."""
    jax, jnp = _jax(be)
    X, y = _problem(200, 4, 10.0, noise=1e-2)
    w = np.random.default_rng(3).uniform(0.5, 2.0, 200)
    w[:3] = 0.0

    def loss(w, X, y):
        r = lsq.lstsq(X, y, method="normal", sample_weight=w, fit_intercept=True)
        return r.coef @ np.arange(1.0, 5.0) + r.intercept

    g = jax.jit(jax.grad(loss))(jnp.asarray(w), jnp.asarray(X), jnp.asarray(y))
    h = 1e-5
    for i in (0, 10):  # at a zero weight, differences on the right: (f(w + 2h) - f(w + h)) / h is f' at w + 3h/2
        e = np.zeros(200)
        e[i] = h
        fd = (float(loss(w + 2 * e, X, y)) - float(loss(w + e, X, y))) / h if w[i] == 0 else None
        fd = (float(loss(w + e, X, y)) - float(loss(w - e, X, y))) / (2 * h) if fd is None else fd
        assert abs(float(g[i]) - fd) <= 1e-4 * max(abs(fd), 1.0), (i, float(g[i]), fd)


def test_an_eager_jax_fallback_compiles_the_full_route_alone(be, monkeypatch):
    """An eager JAX call reads the lean gate first; where it fails, the full route runs compiled without the lean
    route inside it (its gate was read already)."""
    jax, jnp = _jax(be)
    from lsq_backends._autodiff import _derivatives

    taken = []
    lean_fit = _derivatives.lean_fit
    monkeypatch.setattr(_derivatives, "lean_fit", lambda *a: taken.append(1) or lean_fit(*a))
    X, y = _problem(317, 5, 10.0)
    X[:, 1] = X[:, 0]
    r = lsq.lstsq(jnp.asarray(X), jnp.asarray(y), method="normal")
    assert int(r.rank) == 4
    assert taken == []
