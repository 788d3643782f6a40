"""Public entry points: validate, center/weight, dispatch to a solver, assemble the result.

``_fit``: one dense fit of ``lstsq`` or ``ridge``, step by step:

1. prepare (``_prepare.prepare``): validate, with the value checks left pending; the scale
   (powers of two); the weights and the intercept (or, on the Gram route, only the means);
2. solve (``_solve``, or a ridge path's ``_path.fit_path``), which reads the pending checks
   with its first route decision;
3. finish: the intercept, rss and refinement (in ``_solve``), the scale undone, the shapes of
   the caller's input.

With ``by_gram``, X's scale is left to the Gram matrix's certificate where the method forms one
(``_scaling.gram_certificate``). Where the certificate fails it raises ``Rescale``, and the fit
starts again, with the ``max |X|`` passes.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, NamedTuple

from ._autodiff import _derivatives, rule_of
from ._backend import _compat
from ._backend._compat import full_int, matmul
from ._operator_fit import fit_lstsq, fit_ridge
from ._problem._absorb import absorbed
from ._problem._empty import pad_empty_batch
from ._problem._input import (
    Penalty,
    check_bool,
    check_count,
    compiled_fit,
    operator_route,
    validate,
)  # fmt: skip
from ._problem._prepare import intercept_of, prepare
from ._problem._scaling import Rescale, unscale
from ._problem._start import start_of
from ._result import LstsqResult
from ._ridge._path import fit_path
from ._solvers import (
    Given,
    TallGram,
    check_method,
    check_options,
    drop_centering_noise,
    lean,
    record,
    refine_augmented,
    solver_options,
)
from ._solvers import solve as solve_by_method
from ._types import Array, Method

# Says at DEBUG level where a fit's lean route fell back to the full route (the docs' lean-route page).
LOG = logging.getLogger("lsq_backends")

# Arguments that are static under ``jax.jit`` (eager JAX calls run compiled, see ``_compat.compiled``).
LSTSQ_STATIC = (
    "method", "rcond", "fit_intercept", "check_finite", "refine", "atol", "btol", "max_iter", "conlim", "precondition",
)  # fmt: skip
RIDGE_STATIC = (
    "method", "fit_intercept", "check_finite", "per_target", "atol", "btol", "max_iter", "conlim", "precondition",
)  # fmt: skip


class Spec(NamedTuple):
    """What a dense fit was asked for, every option checked: what each step of :func:`_fit` reads."""

    method: Method
    rcond: float | None
    fit_intercept: bool
    check_finite: bool
    refine: int = 0
    options: Any = None  # the iterative methods' (``_solvers.solver_options``), else None
    ridge: bool = False
    per_target: bool = False
    path: bool = False


def _fit(X, y, sample_weight, alpha, spec, kind, full=None):
    """The lean route where the method has one (:func:`_lean`), else, or where its gate fails, the full route:
    ``full()`` (eager JAX: the fit compiled), by default :func:`_full_fit`. ``kind``: the arguments'
    ``_compat.call_kind``, asked once by the entry point."""
    if kind == "jax-traced" and _compat.outside_jit():  # differentiated or vmapped outside any jax.jit
        run = _one_program(X, y, sample_weight, alpha, spec)
        if run is not None:
            return run(X, y, sample_weight, alpha if _compat.is_array(alpha) else None)
    if record(spec.method).lean is not None and spec.rcond is None and not spec.refine and not spec.path:
        result = _lean(X, y, sample_weight, alpha, spec, kind)
        if result is not None:
            return result
    return _full_fit(X, y, sample_weight, alpha, spec) if full is None else full()


def _one_program(X, y, sample_weight, alpha, spec):
    """:func:`_fit` as one compiled program (``jax.jit``, remembered per spec): JAX's ``grad`` or ``vmap`` outside any
    ``jax.jit`` would dispatch each operation on its own and compile each ``lax.cond`` anew on every call. None where
    the options or ``alpha`` cannot key it (an array ``x0``, a NumPy ``alpha``), or an argument is not a JAX array
    (validation refuses a mix of libraries, which ``jax.jit`` would convert): the fit is traced as it is."""
    if not all(a is None or _compat.call_kind(a).startswith("jax") for a in (X, y, sample_weight)):
        return None
    static = None if alpha is None or _compat.is_array(alpha) else alpha  # a number: part of the program
    key = ("one program", spec._replace(options=tuple(sorted((spec.options or {}).items()))), static)
    try:
        hash(key)
    except TypeError:
        return None
    if static is not None and not isinstance(static, (int, float)):
        return None

    def make():
        def fit(X, y, sample_weight, a):
            return _fit(X, y, sample_weight, static if a is None else a, spec, "jax-traced")

        return _compat.jit(_compat.array_namespace(X), fit)

    return _compat.memo(key, make)


def _lean(X, y, sample_weight, alpha, spec, kind):
    """The lean route (``_solvers.lean``): the refined normal equations and their certificate. Eagerly, the gate is
    read once with the penalty's pending checks: the ``LstsqResult``, or None where the gate fails (the full route
    then fits, validated again). Traced JAX: the full route is the other branch of a ``lax.cond``. None where the
    route does not apply."""
    given = (X, y, sample_weight, alpha)
    if kind == "other" and (_compat.is_lazy(X) or _derivatives.differentiable(*given)):
        return None  # before validating: such fits take the full route, which validates them
    traced = kind == "jax-traced" and not _compat.own_trace()
    if kind == "jax-traced" and not traced:
        return None  # an eager JAX call's compiled fallback: its gate was read
    v = validate(
        X, y, sample_weight, fit_intercept=spec.fit_intercept, check_finite=spec.check_finite,
        penalty=Penalty(alpha, spec.per_target) if spec.ridge else None, values=False,
    )  # fmt: skip
    xp, X, Y = v.xp, v.X, v.Y
    m, n = X.shape[-2:]
    batch, k = tuple(X.shape[:-2]), Y.shape[-1]
    # Not tried: PyTorch tensors that require grad (the full route's derivative rule serves them), Dask (lazy: its
    # fits are bound by passes, and a lazy branch would build both routes), an eager JAX call's own compiled
    # fallback (its gate was read), and ``auto`` in float32, whose refinement limit (cond 12.6) the bound cannot
    # prove past a handful of columns.
    angle = record(spec.method).lean == "angle"
    choose = X.dtype == xp.float32 and not angle  # ``normal``: the refined or the plain solution, on the device
    if (
        not (X.dtype == xp.float64 or choose) or not m - int(spec.fit_intercept) >= n >= 1 or k == 0 or 0 in batch
    ):  # fmt: skip
        return None
    args = (xp, X, Y, v.sample_weight, v.alpha, lean.Form(spec.fit_intercept, angle, choose))
    if traced:  # the derivative is the lean fit's own (``lean.tangent``), finite where its branch is not taken
        W, intercept, rss, ok = _derivatives.lean_fit(*args)
    else:
        # NumPy: a negative weight's root, an overflowing square only fail the gate
        with _compat.float_errors_ignored(X):
            W, intercept, rss, ok = lean.fit(*args, traits=v.traits)[:4]
    if intercept is None:
        intercept = _compat.full(xp, (*batch, k), 0, X.dtype, X)
    rank = full_int(xp, batch, n, X)
    if v.y_was_vector:
        W, intercept, rss = W[..., 0], intercept[..., 0], rss[..., 0]
    if traced:
        fits = (lambda: (W, intercept, rank, rss), lambda: tuple(_full_fit(*given, spec))[:4])
        return LstsqResult(*_compat.branch(xp, ok, *fits, ()), None, None, None)
    if not v.checks.read(xp, ok):
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("method=%r: the lean route's certificate failed; the full route fits", spec.method)
        return None
    return LstsqResult(W, intercept, rank, rss, None, None, None)


def _full_fit(X, y, sample_weight, alpha, spec, by_gram=True):
    """One dense fit of ``lstsq`` or ``ridge``: prepare, solve (:func:`_solve` or ``_path.fit_path``), finish
    (module docstring: ``_fit``). ``by_gram``: X's scale is left to the Gram matrix's certificate; where that
    fails (``Rescale``) the fit starts again here, with the ``max |X|`` passes."""
    rec = record(spec.method)
    defer = rec.forms_gram and not spec.path  # a path factors its own way (``_path``)
    try:
        with _compat.float_errors_ignored(X) if by_gram else contextlib.nullcontext():
            v = validate(
                X, y, sample_weight, fit_intercept=spec.fit_intercept, check_finite=spec.check_finite,
                penalty=Penalty(alpha, spec.per_target) if spec.ridge else None, defer_x_check=defer and by_gram,
            )  # fmt: skip
            problem = prepare(
                v, scale="per_target", keep_original=spec.refine > 0, defer_checks=not spec.path,
                # A path on the Gram route keeps the centered rows: its noise cutoff drops the
                # intercept direction, so the reflection that removes it is needed only where
                # singular values are reported.
                eliminate=not spec.path or rec.path_singular_values,
                # The derivative rules need X centered before the solver (no Gram-route centering).
                gram_center=defer
                and not (v.traits.carries_derivatives and _derivatives.differentiable(X, y, sample_weight, alpha)),
                scale_x_by_gram=by_gram,
            )  # fmt: skip
            options = start_of(problem, spec.options, spec.check_finite) if rec.iterative else None
            cut = None
            if 0 in problem.X.shape[:-2]:  # a batch with no problems, padded (Dask fails on it)
                problem, cut = pad_empty_batch(problem)
            no_targets = problem.Y.shape[-1] == 0
            if no_targets:
                problem = _one_target(problem, spec.per_target)
            if spec.path:
                result = fit_path(problem, spec.method, spec.fit_intercept)
            else:
                with _compat.deferred(problem.checks):
                    result = _solve(problem, spec, options)
                    problem.checks.read(problem.xp)
                result = unscale(problem.xp, result, problem.scale, problem.y_was_vector)
    except Rescale:  # X's scale is not certified by its Gram matrix: prepared again with the
        # max |X| passes, X's finiteness tested first (NaN or infinity is one cause, and must
        # raise before any arithmetic meets it, which would print NumPy's RuntimeWarnings)
        if not by_gram:
            raise
        return _full_fit(X, y, sample_weight, alpha, spec, by_gram=False)
    result = _no_targets(result) if no_targets else result
    return result if cut is None else LstsqResult(*(cut(field, int(spec.path)) for field in result))


def _solve(problem, spec, options):
    """The method's solve of the prepared problem, then the intercept, the refinement and rss."""
    xp, X, Y, alpha = problem.xp, problem.X, problem.Y, problem.alpha
    method, rcond, fit_intercept, refine = spec.method, spec.rcond, spec.fit_intercept, spec.refine
    m, n = X.shape[-2:]
    n_iter = istop = rss = rule = None
    rec = record(method)
    derivatives = problem.traits.carries_derivatives
    if rec.iterative:
        n_iter = full_int(xp, tuple(Y.shape[:-2]) + (Y.shape[-1],), 0, X)  # 0 when m or n is 0
        own = rule_of(xp, X, Y, alpha) if derivatives else None
        X = drop_centering_noise(xp, X, alpha, problem.offset_sq, own) if min(m, n) > 0 else X
        istop = n_iter if rec.stops else None  # 0: W = 0 is the solution
    if min(m, n) == 0:
        # As numpy.linalg.lstsq: zero coefficients, rank 0, the whole of y is residual.
        coef = xp.zeros(tuple(X.shape[:-2]) + (n, Y.shape[-1]), dtype=X.dtype, device=_compat.device(X))
        rank = full_int(xp, X.shape[:-2], 0, X)
        s = xp.zeros(tuple(X.shape[:-2]) + (0,), dtype=X.dtype, device=_compat.device(X))
        s = s if rec.singular_values else None
    elif not problem.gram_center and derivatives and (rule := rule_of(xp, X, Y, alpha)):
        # JAX, or PyTorch tensors that require grad: differentiated by the solution's rule.
        given = Given(rcond, problem.offset_sq, problem.check, None, options)
        coef, rank, s, counts = rule.solve(xp, X, Y, alpha, method, given)
        n_iter, istop = _derivatives.split_counts(method, counts) if rec.iterative else (None, None)
    else:
        # the Gram route's view of a problem that ``prepare`` left uncentered
        # the methods with a lean route refine their normal equations: the plain means' rounding is left to that step
        refined = rec.lean is not None
        data = TallGram(xp, X, Y, problem.root, centered=True, refined=refined) if problem.gram_center else None
        given = Given(rcond, problem.offset_sq, problem.check, data, options)
        # a direct method from its record (one signature for all), an iterative one by name (its options)
        sol = solve_by_method(xp, X, Y, alpha, method, given) if rec.iterative else rec.solve(xp, X, Y, alpha, given)
        coef, rank, s, n_iter, rss, istop = sol.coef, sol.rank, sol.s, sol.n_iter, sol.rss, sol.istop
        if data is not None:  # the exact means the Gram route found
            problem = problem._replace(x_offset=data.x_mean, y_offset=data.y_mean)
    intercept = intercept_of(xp, problem, coef, fit_intercept)
    if refine and min(m, n) > 0 and rule:
        # The refined solution is the same solution: the rule's derivative at the unrefined
        # fit (with its factor), the refinement's own steps not differentiated.
        _compat.flush_checks(xp)
        original = tuple(rule.detach(xp, a) for a in problem.original)
        fixed = refined_solution(
            problem._replace(original=original), rule.detach(xp, coef), rule.detach(xp, intercept), rank, refine
        )
        base = (coef, intercept, Y - matmul(xp, X, coef))
        coef, intercept, resid = (rule.pass_through(xp, b, v) for b, v in zip(base, fixed, strict=True))
        rss = xp.sum(resid * resid, axis=-2)  # (..., k)
    elif refine and min(m, n) > 0:
        _compat.flush_checks(xp)  # refinement's QR of X must not meet NaN
        coef, intercept, resid = refined_solution(problem, coef, intercept, rank, refine)
        rss = xp.sum(resid * resid, axis=-2)  # (..., k)
    elif rss is None:
        rss = _compat.sum_of_squares(xp, _compat.minus_fresh(xp, Y, matmul(xp, X, coef)), axis=-2)
    if problem.y_was_vector:
        coef, intercept, rss = coef[..., 0], intercept[..., 0], rss[..., 0]
        n_iter = None if n_iter is None else n_iter[..., 0]
        istop = None if istop is None else istop[..., 0]
    return LstsqResult(coef, intercept, rank, rss, s, n_iter, istop)


def refined_solution(problem, coef, intercept, rank, steps):
    """Refine against the original data: the intercept column [1, X] rather than the centered
    X, whose centering rounded away digits that refinement could not then recover."""
    xp = problem.xp
    X, Y, root = problem.original
    if problem.x_offset is not None:
        ones = xp.ones((*X.shape[:-1], 1), dtype=X.dtype, device=_compat.device(X))
        X = xp.concat([ones, X], axis=-1)
        coef = xp.concat([intercept[..., None, :], coef], axis=-2)
    if root is not None:
        X, Y = root * X, root * Y
    coef, resid = refine_augmented(xp, X, Y, coef, rank + int(problem.x_offset is not None), steps)
    if problem.x_offset is not None:
        return coef[..., 1:, :], coef[..., 0, :], resid
    return coef, intercept, resid


def _one_target(problem, per_target):
    """A problem with no targets (y of shape (..., m, 0)) as one with a single zero target; its
    result is cut back to zero columns by :func:`_no_targets`. As ``numpy.linalg.lstsq``:
    coef (..., n, 0), and rank and singular values still those of X (the solvers' rank-deficient
    routes need a column of y to work on)."""
    xp = problem.xp

    def zero(a):
        return xp.zeros((*a.shape[:-1], 1), dtype=a.dtype, device=_compat.device(a))

    original = problem.original
    if original is not None:
        original = (original[0], zero(original[1]), original[2])
    alpha = problem.alpha
    if per_target:  # one penalty per target, of which there are none: any one penalty will do
        alpha = xp.ones((1,), dtype=problem.X.dtype, device=_compat.device(problem.X))
    y_offset = None if problem.y_offset is None else zero(problem.y_offset)
    return problem._replace(Y=zero(problem.Y), y_offset=y_offset, original=original, alpha=alpha)


def _no_targets(result):
    def cut(a):
        return None if a is None else a[..., :0]

    return result._replace(
        coef=cut(result.coef), intercept=cut(result.intercept), rss=cut(result.rss), n_iter=cut(result.n_iter),
        istop=cut(result.istop),
    )  # fmt: skip


def check_refine(refine):
    """``refine`` as a Python int (NumPy's integer scalars accepted, bools refused)."""
    if type(refine) is int and refine >= 0:  # the common case, at once
        return refine
    what = "a non-negative integer (number of steps)"
    if refine is None:  # not a number of steps (check_count lets None through)
        msg = f"refine must be {what}; got None"
        raise ValueError(msg)
    return check_count(refine, "refine", 0, what)


@operator_route(fit_lstsq)
def lstsq(
    X: Array,
    y: Array,
    /,
    *,
    method: Method = "auto",
    rcond: float | None = None,
    fit_intercept: bool = False,
    sample_weight: Array | None = None,
    check_finite: bool = True,
    refine: int = 0,
    atol: float | None = None,
    btol: float | None = None,
    max_iter: int | None = None,
    conlim: float | None = None,
    x0: Array | None = None,
    precondition: str | None = None,
    absorb: Array | None = None,
    absorb_n_groups: int | tuple[int, ...] | None = None,
    drop_singletons: bool = False,
) -> LstsqResult:
    """Least-squares solution of ``min_w sum_i sample_weight_i (y_i - x_i @ w - b)**2``.

    Parameters
    ----------
    X : array, shape (m, n) or (..., m, n)
        Design matrix, or a stack of them (solved independently, in one batched call).
    y : array, shape (m,), (m, k), (..., m) or (..., m, k)
        Targets.
    method : {"auto", "normal", "qr", "svd", "lsmr", "lsqr"}
        ``"normal"``: Cholesky on X^T X, fastest, refined once on tall X (error ~ eps*cond(X)
        up to cond 1e4 in float64, eps*cond(X)**2 beyond). ``"qr"``: CholeskyQR2, shifted
        CholeskyQR3 or Householder QR, error ~ eps*cond(X). ``"svd"``: minimum-norm solution
        via the pseudo-inverse, handles any rank. ``"auto"``: the refined normal equations
        where a cheap condition estimate and the residual say their error is QR's,
        Householder QR otherwise. Rank-deficient problems get the minimum-norm solution from every
        method (normal, qr and auto certify full rank from the inverse of their triangular
        factor, and otherwise let the SVD of that factor decide). ``"lsmr"``,
        ``"lsqr"``: Fong and Saunders' LSMR, Paige and Saunders' LSQR, iterative, X used only
        through products (X may be sparse or an operator, where ``"auto"`` means ``"lsmr"``; a
        sparse X with at most 2048 columns ``"auto"`` and ``"normal"`` fit from its Gram
        matrix instead, see the sparse page), to
        the accuracy ``atol``/``btol`` ask for (minimum-norm too; ``rank`` -1: not estimated;
        a column that centering leaves at rounding level, against its norm before, gets 0).
    rcond : float in [0, 1), optional
        Relative cutoff for small singular values (of every method), honoured exactly when
        given, as ``numpy.linalg.lstsq``; refused with ``"lsqr"``, which has none. Default: float64 ``eps * max(m, n)`` as
        ``numpy.linalg.lstsq``; float32 ``eps * (sqrt(max(m, n)) + min(m, n))``, the probable
        rounding noise of the factorization (the worst case dropped real directions of tall
        data: 0.024 of s_max at m = 200000). With the default, normal/qr/auto also keep every
        direction where X with unit-norm columns clears it 100-fold (graded columns such as
        x .. x**10, which their factors resolve; see the methods page).
    fit_intercept : bool
        Fit an unpenalized intercept by centering X and y with their (weighted) means.
    sample_weight : array, shape (m,) or (..., m), optional
        Non-negative weights: weighted least squares.
    check_finite : bool
        Raise ``ValueError`` on NaN or infinity in the inputs (eager arrays only; under
        ``jax.jit`` or on Dask nothing is read and NaN propagates to the result).
    refine : int
        Steps of iterative refinement (Björck's, on the augmented system, with residuals in
        double-double arithmetic): recovers digits on hard large-residual problems at the cost
        of one extra QR of X and O(m n k) per step. Tall full-rank problems only; others are
        returned unrefined. Static under ``jax.jit``. Not with ``"lsmr"``/``"lsqr"``.
    atol, btol : float in [0, 1), optional
        ``"lsmr"``/``"lsqr"`` only (an error with the other methods). A target stops once
        ``||X^T r|| <= atol ||X|| ||r||`` or ``||r|| <= btol ||y|| + atol ||X|| ||w||`` (SciPy's
        rules); default ``max(1e-6, 100 eps)`` (1e-6 in float64, 1.2e-5 in float32).
        The error in ``coef`` is about ``cond(X)`` times atol, more on large residuals.
    max_iter : int, optional
        ``"lsmr"``/``"lsqr"`` only: iteration limit, default ``4 min(m, n)``. Static under ``jax.jit``.
    conlim : float, optional
        ``"lsmr"`` only: stop once LSMR's estimate of cond(X) reaches it (SciPy's default
        1e8; None: no such stop). Static under ``jax.jit``.
    x0 : array, shape (n,) or (n, k) (or with X's batch axes), optional
        ``"lsmr"`` only: a warm start (e.g. a previous fit's ``coef``); the part of it in
        X's null space stays in the solution.
    precondition : {None, "columns"}
        ``"lsmr"``/``"lsqr"`` only: ``"columns"`` iterates on X with its columns scaled to
        unit norm (the centered, weighted X's; a zero column unscaled) and maps the solution
        back: far fewer iterations on badly scaled columns. ``n_iter``, ``istop`` and the
        stopping rules are the scaled problem's; on rank-deficient X the answer is the
        solution of least ``||D w||`` (D the norms). Static under ``jax.jit``. See the sparse page.
    absorb : integer array, shape (m,) or (m, K), optional
        Fixed effects to absorb: K factors' codes in ``[0, n_groups)`` (e.g. ``pandas.factorize``),
        shared by a stack. Every column of X and y is partialled out of the factors' dummies (weighted by
        ``sample_weight``) by alternating projections accelerated by conjugate gradient, then fitted without
        an intercept: ``coef`` and ``rss`` are those of the regression with one dummy column per group;
        ``intercept`` is zero (it is absorbed: ``fit_intercept`` is ignored) and ``rank`` is the rank of
        the partialled-out X.
        See the econometrics page. Dense X only.
    absorb_n_groups : int or tuple of ints, optional
        The number of groups of each factor of ``absorb``, static under ``jax.jit`` (required there and on
        Dask); default ``max(codes) + 1``, one host read.
    drop_singletons : bool
        With ``absorb``: drop the observations alone in their group of some factor, repeatedly until none
        remain (pyfixest's ``fixef_rm="singleton"``, reghdfe's default). Found on the host from the codes:
        concrete codes only (a ``ValueError`` for traced or lazy ones); the number dropped is not a field of
        the result (:func:`diagnostics` records it as ``n_singletons``).

    Returns
    -------
    LstsqResult
        ``coef``, ``intercept``, ``rank``, ``rss``, ``singular_values`` (``"svd"`` only) and
        ``n_iter`` (``"lsmr"``/``"lsqr"`` only), ``istop`` (``"lsmr"`` only), in the namespace, on
        the device and in the float dtype of the inputs.

    Notes
    -----
    Differentiable with JAX (``jvp``, ``grad``, ``jacfwd``, ``jacrev``, ``vmap``, ``jit``) and
    PyTorch autograd with respect to X, y and sample_weight, by the derivative of the solution,
    computed from the fit's own factorization (every method, tall or wide X; with ``refine``,
    the derivative of the same solution, the refinement's steps not differentiated): for
    rank-deficient X, the derivative of the minimum-norm solution where the numerical rank is
    locally constant. Along a direction dX that would change the rank (with X = U S V^T of rank
    r and U0, V0 the complements, the block ``U0^T dX V0``) the solution jumps and has no
    derivative; that block is ignored, which gives the derivative on the rank-r matrices
    (``dw = 0`` at X = 0). Never NaN. ``ridge`` with a positive penalty is smooth: its derivative
    (alpha included) is exact.

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> t = np.array([1.0, 2.0, 3.0]); y = np.array([1.0, 2.0, 2.0])
    >>> r = lsq.lstsq(t[:, None], y, fit_intercept=True)
    >>> np.round([float(r.intercept), float(r.coef[0])], 6).tolist()
    [0.666667, 0.5]
    >>> r = lsq.lstsq(t[:, None], y, fit_intercept=True, method="lsqr")
    >>> np.round([float(r.intercept), float(r.coef[0])], 6).tolist(), int(r.n_iter)
    ([0.666667, 0.5], 1)
    """
    rcond = check_method(method, rcond)
    refine = check_refine(refine)
    atol, btol, max_iter = check_options(method, atol, btol, max_iter, conlim, x0, precondition)
    fit_intercept = check_bool(fit_intercept, "fit_intercept")
    check_finite = check_bool(check_finite, "check_finite")
    if refine and record(method).iterative:
        msg = f"refine applies to the direct methods; method={method!r} takes atol/btol instead"
        raise ValueError(msg)
    options = solver_options(method, atol, btol, max_iter, conlim, x0, precondition) if record(method).iterative else {}
    singles = drop_singletons is not False and check_bool(drop_singletons, "drop_singletons")
    if absorb is not None or absorb_n_groups is not None or singles:  # partialled out first
        X, y, sample_weight = absorbed(X, y, sample_weight, absorb, absorb_n_groups, check_finite, singles)[:3]
        fit_intercept = False  # absorbed by the fixed effects
    spec = Spec(method, rcond, fit_intercept, check_finite, refine, options)
    kind = _compat.call_kind(X, y, sample_weight)
    if kind == "jax-eager":  # the lean route, then the full route compiled where it fails
        kwargs = {"method": method, "rcond": rcond, "fit_intercept": fit_intercept, "refine": refine, **options}
        return _fit(
            X,
            y,
            sample_weight,
            None,
            spec,
            kind,
            lambda: compiled_fit(lstsq, LSTSQ_STATIC, X, y, sample_weight, kwargs, check_finite),
        )
    return _fit(X, y, sample_weight, None, spec, kind)


@operator_route(fit_ridge)
def ridge(
    X: Array,
    y: Array,
    /,
    alpha: float | Array,
    *,
    method: Method = "auto",
    fit_intercept: bool = True,
    sample_weight: Array | None = None,
    check_finite: bool = True,
    per_target: bool = False,
    atol: float | None = None,
    btol: float | None = None,
    max_iter: int | None = None,
    conlim: float | None = None,
    x0: Array | None = None,
    precondition: str | None = None,
    absorb: Array | None = None,
    absorb_n_groups: int | tuple[int, ...] | None = None,
    drop_singletons: bool = False,
) -> LstsqResult:
    """Ridge regression: ``min_w ||y - X w - b||^2 + alpha ||w||^2``, intercept b not penalized.

    The penalty multiplies the plain sum of squares (scikit-learn's ``Ridge`` convention). For
    the scaled objective ``(1/m) ||y - X w||^2 + lam ||w||^2`` pass ``alpha = m * lam``. With
    ``sample_weight`` the data term is ``sum_i sample_weight_i (...)**2``.

    Parameters
    ----------
    X, y, method, fit_intercept, sample_weight, check_finite, atol, btol, max_iter, conlim, x0, precondition
        As in :func:`lstsq` (``"normal"`` solves ``(X^T X + alpha I) w = X^T y``, ``"qr"``
        factors ``[X; sqrt(alpha) I]``, ``"svd"`` uses filter factors ``s / (s**2 + alpha)``,
        ``"lsmr"``/``"lsqr"`` damp by ``sqrt(alpha)``, with r then the residual of the damped
        system; not for paths). With ``precondition="columns"`` the penalty stays on the
        original coefficients: the scaled system ``[X D^-1; sqrt(alpha) D^-1]`` is iterated.
    alpha : float, 0-d array, or 1-D array of shape (a,)
        Non-negative penalty. A 1-D ``alpha`` is a **path**: the fits for all ``a`` penalties
        from one factorization, every result field with a leading axis of length ``a`` (see
        Returns). With ``per_target=True`` it must instead have shape (k,): one penalty per
        column of ``y`` (scikit-learn's ``Ridge(alpha=array)``).
    per_target : bool
        Read a 1-D ``alpha`` as one penalty per target rather than as a path.
    absorb, absorb_n_groups, drop_singletons
        As in :func:`lstsq`: the fixed effects are not penalized (ridge on the partialled-out data).

    Returns
    -------
    LstsqResult
        As :func:`lstsq`; ``rss`` excludes the penalty, ``rank`` is ``n`` for ``alpha > 0``.
        For a path every field gains a leading alpha axis: ``coef`` (a, ..., n) or
        (a, ..., n, k), ``intercept`` and ``rss`` (a, ...) or (a, ..., k), ``rank`` (a, ...),
        ``singular_values`` (a, ..., p) (the same for every penalty); ``r.coef[i]`` is the fit
        for ``alpha[i]``. A path factors once, by the eigendecomposition of the Gram matrix
        (``X^T X``, or ``X X^T`` for wide X; ``"normal"``, and ``"auto"`` where the regularized
        Gram matrix's condition number ``(lam_max + min(alpha)) / (lam_min + min(alpha))`` is at
        most ``eps**-0.5 / 64``) or by the SVD of X through the SVD of its QR factor R
        (``"svd"``, ``"qr"``, and ``"auto"`` beyond that limit): O(n p k) per extra penalty.
        Directions at the factorization's noise level are dropped (the minimum-norm solution
        at ``alpha = 0``); ``rank`` is ``n`` for a positive penalty, else the directions kept.

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); y = np.array([1.0, 2.0, 3.0])
    >>> r = lsq.ridge(X, y, 1.0, fit_intercept=False)
    >>> np.allclose((X.T @ X + np.eye(2)) @ r.coef, X.T @ y)
    True
    >>> path = lsq.ridge(X, y, np.array([0.1, 1.0, 10.0]), fit_intercept=False)
    >>> path.coef.shape, bool(np.allclose(path.coef[1], r.coef))
    ((3, 2), True)
    """
    check_method(method, None)
    per_target = check_bool(per_target, "per_target")
    fit_intercept = check_bool(fit_intercept, "fit_intercept")
    check_finite = check_bool(check_finite, "check_finite")
    atol, btol, max_iter = check_options(method, atol, btol, max_iter, conlim, x0, precondition)
    path = not per_target and getattr(alpha, "ndim", 0) == 1
    if path and record(method).iterative:
        msg = f"method={method!r} fits one alpha (or one per target); a 1-D alpha path needs a direct method"
        raise ValueError(msg)
    options = solver_options(method, atol, btol, max_iter, conlim, x0, precondition) if record(method).iterative else {}
    singles = drop_singletons is not False and check_bool(drop_singletons, "drop_singletons")
    if absorb is not None or absorb_n_groups is not None or singles:  # partialled out first
        X, y, sample_weight = absorbed(X, y, sample_weight, absorb, absorb_n_groups, check_finite, singles)[:3]
        fit_intercept = False  # absorbed by the fixed effects
    spec = Spec(method, None, fit_intercept, check_finite, 0, options, True, per_target, path)
    kind = _compat.call_kind(X, y, sample_weight, alpha)
    if kind == "jax-eager":  # the lean route, then the full route compiled where it fails
        kwargs = {"method": method, "fit_intercept": fit_intercept, "per_target": per_target, **options}
        penalty = (alpha, per_target, per_target or path)
        return _fit(
            X,
            y,
            sample_weight,
            alpha,
            spec,
            kind,
            lambda: compiled_fit(ridge, RIDGE_STATIC, X, y, sample_weight, kwargs, check_finite, penalty),
        )
    return _fit(X, y, sample_weight, alpha, spec, kind)
