"""Matrix products run at full float32 precision whatever the user set globally.

JAX: every public entry point is traced (``jax.make_jaxpr``) on float32 input and every
``dot_general`` in the jaxpr, nested ones included, must carry ``Precision.HIGHEST`` for both
operands (on GPUs and TPUs the default is TF32/bfloat16 passes). Traced here on the CPU: the
jaxpr is the same on every platform, only its lowering differs.

PyTorch and CuPy: ``test_precision_guards.py``. These tests run in the jax backend's session
(``LSQ_BACKENDS=jax pytest tests/backend/test_precision.py``).
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import lsq_backends as lsq


def _session(request, name):
    if name not in request.config._lsq_backends:
        pytest.skip(f"runs in the {name} backend's session")
    return pytest.importorskip(name)


# --- JAX: the jaxpr checker -----------------------------------------------------------------


def _sub_jaxprs(value):
    """The jaxprs inside one equation parameter: a Jaxpr, a ClosedJaxpr, or tuples of them
    (``cond`` branches, ``custom_linear_solve``'s named tuple of jaxprs)."""
    from jax.extend.core import ClosedJaxpr, Jaxpr

    if isinstance(value, ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _sub_jaxprs(v)


def dot_generals(jaxpr, where=()):
    """Every ``dot_general`` equation in ``jaxpr`` and the jaxprs nested in its equations'
    parameters (jit/pjit, cond branches, while body and cond, scan, custom_jvp/vjp calls,
    closed_call, remat, custom_linear_solve): a list of (nesting path, equation)."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            found.append((where, eqn))
        for key, value in eqn.params.items():
            for sub in _sub_jaxprs(value):
                found += dot_generals(sub, (*where, f"{eqn.primitive.name}.{key}"))
    return found


def not_highest(jaxpr):
    """Descriptions of the ``dot_general`` equations whose precision is not HIGHEST for both
    operands (None, DEFAULT, HIGH, a one-sided pair or a dot algorithm all count)."""
    import jax
    from jax.extend import source_info_util

    highest = jax.lax.Precision.HIGHEST
    bad = []
    for where, eqn in dot_generals(jaxpr):
        p = eqn.params.get("precision")
        if not (isinstance(p, tuple) and len(p) == 2 and all(q == highest for q in p)):
            bad.append(f"precision={p} at {'/'.join(where) or 'top'}: {source_info_util.summarize(eqn.source_info)}")
    return bad


@pytest.fixture
def jax(request):
    return _session(request, "jax")


def _trace(jax, fn, *args):
    return jax.make_jaxpr(fn)(*args).jaxpr


def test_checker_catches_default_precision_at_every_nesting(jax):
    import jax.numpy as jnp

    lax, H = jax.lax, jax.lax.Precision.HIGHEST
    a = jnp.ones((3, 3), dtype=jnp.float32)

    def nests(prec):
        mm = lambda x: jnp.matmul(x, x, precision=prec)  # noqa: E731
        jvp = jax.custom_jvp(mm)
        jvp.defjvp(lambda p, t: (mm(p[0]), t[0]))
        vjp = jax.custom_vjp(mm)
        vjp.defvjp(lambda x: (mm(x), x), lambda r, g: (g,))
        return {
            "top": mm,
            "jit": jax.jit(mm),
            "cond": lambda x: lax.cond(x[0, 0] > 0, mm, lambda y: y, x),
            "while body": lambda x: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, mm(c[1])), (0, x))[1],
            "while cond": lambda x: lax.while_loop(lambda c: mm(c)[0, 0] < 0, lambda c: c + 1, x),
            "scan": lambda x: lax.scan(lambda c, _: (mm(c), None), x, None, length=2)[0],
            "custom_jvp": jvp,
            "custom_vjp": vjp,
            "remat (a bare Jaxpr)": jax.checkpoint(mm),
            "custom_linear_solve (a tuple)": lambda x: jnp.linalg.solve(x + 3 * jnp.eye(3, dtype=x.dtype), mm(x)),
        }

    for name, fn in nests(None).items():
        assert len(not_highest(_trace(jax, fn, a))) >= 1, name
    for name, fn in nests(H).items():
        assert not_highest(_trace(jax, fn, a)) == [], name
    # One-sided HIGHEST and HIGH are caught too.
    for prec in [(H, lax.Precision.DEFAULT), lax.Precision.HIGH]:
        assert len(not_highest(_trace(jax, lambda x: jnp.dot(x, x, precision=prec), a))) == 1


def _data():
    rng = np.random.default_rng(0)
    f = np.float32
    return types.SimpleNamespace(
        X=rng.standard_normal((12, 3)).astype(f),
        y=rng.standard_normal(12).astype(f),
        Y=rng.standard_normal((12, 2)).astype(f),
        w=rng.uniform(0.5, 2.0, 12).astype(f),
        Xw=rng.standard_normal((3, 7)).astype(f),
        yw=rng.standard_normal(3).astype(f),
        Yw=rng.standard_normal((3, 2)).astype(f),
        Xs=rng.standard_normal((2, 10, 3)).astype(f),
        ys=rng.standard_normal((2, 10)).astype(f),
        a=np.float32(0.5),
        ak=np.array([0.5, 2.0], dtype=f),
        path=np.array([0.1, 1.0, 10.0], dtype=f),
    )


METHODS = ("auto", "normal", "qr", "svd", "lsqr")
DIRECT = METHODS[:4]


def _cases():
    """{id: (function of arrays, names of its arguments in ``_data()``)}."""
    c = {}

    def add(name, fn, *args):
        c[name] = (fn, args)

    lstsq, ridge, ridge_cv = lsq.lstsq, lsq.ridge, lsq.ridge_cv
    for m in METHODS:
        for fi in (False, True):
            add(f"lstsq-{m}-fi{fi}", lambda X, y, m=m, fi=fi: lstsq(X, y, method=m, fit_intercept=fi), "X", "y")
            add(
                f"lstsq-{m}-fi{fi}-weighted",
                lambda X, y, w, m=m, fi=fi: lstsq(X, y, method=m, fit_intercept=fi, sample_weight=w),
                "X",
                "Y",
                "w",
            )
            add(f"lstsq-{m}-fi{fi}-wide", lambda X, y, m=m, fi=fi: lstsq(X, y, method=m, fit_intercept=fi), "Xw", "yw")
            if m != "lsqr":  # refinement is for the direct methods
                add(
                    f"lstsq-{m}-fi{fi}-refine1",
                    lambda X, y, w, m=m, fi=fi: lstsq(X, y, method=m, fit_intercept=fi, sample_weight=w, refine=1),
                    "X",
                    "y",
                    "w",
                )
        add(f"lstsq-{m}-stack", lambda X, y, m=m: lstsq(X, y, method=m, fit_intercept=True), "Xs", "ys")
        add(f"ridge-{m}-scalar", lambda X, y, a, w, m=m: ridge(X, y, a, method=m, sample_weight=w), "X", "y", "a", "w")
        add(f"ridge-{m}-scalar-nofi", lambda X, y, a, m=m: ridge(X, y, a, method=m, fit_intercept=False), "X", "y", "a")
        add(f"ridge-{m}-wide", lambda X, y, a, m=m: ridge(X, y, a, method=m), "Xw", "yw", "a")
        add(f"ridge-{m}-per-target", lambda X, y, a, m=m: ridge(X, y, a, method=m, per_target=True), "X", "Y", "ak")
        if m != "lsqr":  # paths need a direct method
            add(f"ridge-{m}-path", lambda X, y, a, m=m: ridge(X, y, a, method=m), "X", "Y", "path")
            add(f"ridge-{m}-path-wide", lambda X, y, a, m=m: ridge(X, y, a, method=m), "Xw", "yw", "path")
    for mode in ("auto", "eigen", "svd"):
        for fi in (False, True):
            add(
                f"ridge_cv-{mode}-fi{fi}",
                lambda X, y, a, w, mode=mode, fi=fi: ridge_cv(X, y, a, mode=mode, fit_intercept=fi, sample_weight=w),
                "X",
                "Y",
                "path",
                "w",
            )
        add(
            f"ridge_cv-{mode}-per-target-wide",
            lambda X, y, a, mode=mode: ridge_cv(X, y, a, mode=mode, alpha_per_target=True),
            "Xw",
            "Yw",
            "path",
        )
    for ct in ("nonrobust", "HC0", "HC1", "HC2", "HC3"):
        for fi in (False, True):
            add(
                f"diagnostics-{ct}-fi{fi}",
                lambda X, y, w, ct=ct, fi=fi: lsq.diagnostics(X, y, cov_type=ct, fit_intercept=fi, sample_weight=w),
                "X",
                "y",
                "w",
            )
    add("diagnostics-refine1", lambda X, y: lsq.diagnostics(X, y, refine=1), "X", "y")
    for cls in (lsq.NormalAccumulator, lsq.QRAccumulator):
        name = cls.__name__
        add(f"{name}-update", lambda X, y, w, cls=cls: cls().update(X, y, w).state, "X", "y", "w")
        add(f"{name}-step", lambda X, y, cls=cls: cls().step(None, X, y), "X", "Y")
        add(
            f"{name}-merge",
            lambda X, y, cls=cls: cls().update(X[:6], y[:6]).merge(cls().update(X[6:], y[6:])).state,
            "X",
            "y",
        )
        add(f"{name}-solve", lambda X, y, cls=cls: cls().update(X, y).solve(), "X", "y")
        add(f"{name}-solve-nofi", lambda X, y, cls=cls: cls().update(X, y).solve(fit_intercept=False), "X", "Y")
        add(f"{name}-solve-ridge", lambda X, y, a, cls=cls: cls().update(X, y).solve(a), "X", "y", "a")
        add(
            f"{name}-solve-per-target",
            lambda X, y, a, cls=cls: cls().update(X, y).solve(a, fit_intercept=False),
            "X",
            "Y",
            "ak",
        )
    # Estimators: fit stores attributes, so it is traced inside a function that returns them.
    estimators = {
        "LinearRegression": lambda: lsq.LinearRegression(),
        "LinearRegression-svd": lambda: lsq.LinearRegression(method="svd"),
        "Ridge": lambda: lsq.Ridge(alpha=0.5),
        "Ridge-per-target": lambda: lsq.Ridge(alpha=[0.5, 2.0]),
        "RidgeCV": lambda: lsq.RidgeCV(alphas=(0.1, 1.0, 10.0), store_cv_results=True),
    }
    for name, make in estimators.items():
        add(f"{name}-fit", lambda X, y, w, make=make: _fitted(make().fit(X, y, w)), "X", "Y", "w")
    return c


def _fitted(e):
    # the fitted arrays (not n_features_in_, an int, nor method_, a str: static facts of the fit)
    return {k: v for k, v in vars(e).items() if k.endswith("_") and not isinstance(v, (int, str)) and v is not None}


CASES = _cases()
# The QR accumulator's update and merge are QR factorizations only: no product to check today,
# traced so that one added later is checked.
NO_PRODUCT = {"QRAccumulator-update", "QRAccumulator-step", "QRAccumulator-merge"}


@pytest.mark.parametrize("case", list(CASES))
def test_every_product_is_highest(jax, case):
    import jax.numpy as jnp

    fn, names = CASES[case]
    d = _data()
    args = tuple(jnp.asarray(getattr(d, n)) for n in names)
    assert all(a.dtype == jnp.float32 for a in args)
    jaxpr = _trace(jax, fn, *args)
    assert not_highest(jaxpr) == []
    if case not in NO_PRODUCT:
        assert dot_generals(jaxpr), "nothing was checked: the entry point traced without a product"


@pytest.mark.parametrize("name", ["LinearRegression", "Ridge", "RidgeCV"])
def test_predict_is_highest(jax, name):
    import jax.numpy as jnp

    d = _data()
    e = getattr(lsq, name)().fit(jnp.asarray(d.X), jnp.asarray(d.Y))
    jaxpr = _trace(jax, e.predict, jnp.asarray(d.X))
    assert dot_generals(jaxpr) and not_highest(jaxpr) == []


def test_user_default_matmul_precision_does_not_lower_ours(jax):
    """``jax.default_matmul_precision`` applies to products without a precision: ours have one."""
    import jax.numpy as jnp

    d = _data()
    X, y = jnp.asarray(d.X), jnp.asarray(d.y)
    with jax.default_matmul_precision("bfloat16"):
        assert not_highest(_trace(jax, lambda X, y: jnp.matmul(X.T, y), X, y))  # lowered
        for m in METHODS:
            assert not_highest(_trace(jax, lambda X, y: lsq.lstsq(X, y, method=m, fit_intercept=True), X, y)) == []
