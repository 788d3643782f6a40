"""``lstsq`` and ``ridge`` with a sparse or matrix-free X (``_operator``): the Krylov methods only.

The fit runs in X's home library (NumPy for SciPy's sparse matrices and operators, PyTorch,
JAX or CuPy for theirs, y's library for ``lsq_backends.operator``); y, the weights, the
penalty and the start go there and the results come back to y's library and device. X is
never densified: centering is a rank-one correction inside the products and weights a row
scaling of them (``_operator.centered``), so memory stays O(nnz + (m + n) k).

Where the method asks for the normal equations (``Record.sparse_gram``: ``normal``, and ``auto`` up
to ``GRAM_COLUMNS`` columns) a sparse X (SciPy, PyTorch, JAX, CuPy) is fitted from its Gram matrix instead: ``X^T W X``
by a sparse product into a dense n x n array, centered by a rank-one correction
(``_operator.centered``), factorized and refined by ``normal``'s solve
(``_operator_gram.MapGram``): memory O(nnz + n**2 + m k).

``_scaled``: chosen on the device and mapped back exactly. ``kx`` comes from X's largest entry times
the largest weight's root (0 for an operator: its entries are unknown). Scaled: the map
``A 2**-kx``, ``Y 2**-ky`` (per target), ``alpha 2**-2kx``, a start ``x0 2**(kx - ky)``.
"""

from __future__ import annotations

from ._backend import _compat
from ._backend._compat import full_int
from ._problem._input import (
    as_array,
    check_bool,
    check_dtype,
    check_finite_values,
    failure,
    namespace_of,
    validate_alpha,
)
from ._problem._kinds import check_kind
from ._problem._operator import (
    LinearMap,
    centered,
    describe,
    entry_dtype,
    entry_magnitude,
    finite_entries,
    has_entries,
    has_gram,
    home_of,
    is_operator_input,
    linear_map,
    on_host,
)
from ._problem._scaling import exponent, log2_abs, penalty_times, powers, times
from ._problem._start import check_start
from ._result import LstsqResult
from ._solvers import Given, MapGram, Solution, check_method, check_options, record, solver_options
from ._solvers import solve as solve_by_method
from ._solvers import solve_nnls as nnls_solve

__all__ = ["caller_of", "fit", "fit_lstsq", "fit_nnls", "fit_ridge", "method_for"]


def fit_nnls(X, y, alpha, *, fit_intercept, sample_weight, check_finite, per_target):
    """Non-negative (ridge) least squares of a sparse X from its Gram matrix (``_solvers.nnls``, default
    iterations and tolerance): ``(coef, intercept, rss, n_iter, converged)``, the fields of ``nnls``'s result."""
    r = fit(
        X, y, alpha, method="normal", fit_intercept=fit_intercept, sample_weight=sample_weight, check_finite=check_finite,
        atol=None, btol=None, max_iter=None, conlim=None, x0=None, per_target=per_target, ridge=True, positive=True,
    )  # fmt: skip
    return r.coef, r.intercept, r.rss, r.n_iter, r.istop


def _no_absorb(X, kwargs):
    given = [kwargs.pop(k, None) for k in ("absorb", "absorb_n_groups", "drop_singletons")]
    if given[0] is not None or given[1] is not None or given[2]:
        msg = (
            f"absorb takes a dense X; X is a {describe(X)}: add the fixed effects' dummies to X, or pass a dense array"
        )
        raise ValueError(msg)
    return kwargs


def fit_lstsq(X, y, **kwargs):
    """``lstsq`` with a sparse or operator X."""
    return fit(X, y, **_no_absorb(X, kwargs))


def fit_ridge(X, y, alpha, **kwargs):
    """``ridge`` with a sparse or operator X."""
    return fit(X, y, alpha, ridge=True, **_no_absorb(X, kwargs))


# The most columns for which "auto" fits a sparse X from its Gram matrix: a dense n x n array of
# 32 MiB in float64, formed by a sparse product and factorized in O(n**3) (~3 GFlop, a fraction of a
# second); past it the p x p array and its factorization outgrow what LSMR's products cost, and
# "auto" is LSMR (``normal`` still forms it, as asked).
GRAM_COLUMNS = 2048
_ITERATIVE_OPTIONS = ("atol", "btol", "max_iter", "conlim", "x0", "precondition")


def method_for(method, X, **options):
    """The method a fit of X with ``method`` runs (a checked name): ``method`` itself for dense X; for a sparse or
    operator X the one that fits it in ``method``'s stead (:func:`_method`; ``options``: the iterative options
    given, which send "auto" to LSMR). What the estimators ask to know whether their ``tol`` reaches the fit."""
    return _method(method, X, **options) if is_operator_input(X) else method


def _method(method, X, **options):
    """The method that fits a sparse or operator X in ``method``'s stead: the Gram route (``Record.sparse_gram``)
    for a sparse X, for "auto" only up to :data:`GRAM_COLUMNS` columns and without iterative options; else
    ``Record.matrix_free`` (``auto`` is ``lsmr``). The others are refused."""
    check_method(method, None)
    rec = record(method)
    m, n = (int(s) for s in X.shape)
    if rec.sparse_gram is not None and has_gram(X) and n >= 1:
        lsmr_asked = any(options.get(name) is not None for name in _ITERATIVE_OPTIONS)
        if rec.matrix_free is None or not (lsmr_asked or n > GRAM_COLUMNS):
            return rec.sparse_gram
    if rec.matrix_free is None:
        if rec.sparse_gram is None:
            why = f"method={method!r} factorizes X itself"
        else:
            why = f"method={method!r} forms X's Gram matrix from a sparse matrix's entries"
        msg = (
            f"{why}; X is a {describe(X)} of shape {(m, n)}: use method='lsmr' (the default for operator X and "
            "many columns) or 'lsqr', or pass a dense array"
        )
        raise ValueError(msg)
    return rec.matrix_free


def caller_of(y, sample_weight):
    """(xp, device) of y (and the weights): where the results go (NumPy for lists)."""
    xp = namespace_of(None, y, sample_weight)
    arrays = [a for a in (y, sample_weight) if a is not None and _compat.is_array(a)]
    return xp, (_compat.device(arrays[0]) if arrays else None)


def _to_home(a, name, home_xp, home_dev, same, like=None):
    """``a`` (an argument of y's library) as an array of X's home library."""
    if a is None:
        return None
    if getattr(a, "requires_grad", False):
        msg = f"{name} requires grad: a fit with a sparse or operator X is not differentiable"
        raise TypeError(msg)
    if same or not hasattr(a, "shape"):
        return as_array(home_xp, a, name, home_dev, like)
    if _compat.is_lazy(a) and not hasattr(a, "compute"):
        msg = (
            f"{name} is traced (jax.jit, vmap, grad): a SciPy sparse X cannot be multiplied there; "
            "convert it with jax.experimental.sparse.BCOO.from_scipy_sparse(X)"
        )
        raise TypeError(msg)
    return as_array(home_xp, _compat.to_numpy(a), name, home_dev, like)


def _to_caller(xp, dev, a, same):
    if a is None or same:
        return a
    return xp.asarray(a, device=dev)


def fit(X, y, alpha=None, *, method, fit_intercept, sample_weight, check_finite, atol, btol, max_iter, conlim, x0,
        precondition=None, rcond=None, refine=0, per_target=False, ridge=False, positive=False):  # fmt: skip
    """The fit of ``lstsq`` or (``ridge``) ``ridge`` with a sparse or operator X; ``positive``: non-negative
    coefficients (:func:`fit_nnls`), its ``converged`` in the result's ``istop``."""
    given = {"atol": atol, "btol": btol, "max_iter": max_iter, "conlim": conlim, "x0": x0, "precondition": precondition}
    if positive and not has_gram(X):
        msg = f"positive=True forms X's Gram matrix from a sparse matrix's entries; X is a {describe(X)}"
        raise TypeError(msg)
    method = "normal" if positive else _method(method, X, **given)
    check_options(method, atol, btol, max_iter, conlim, x0, precondition)
    if precondition is not None and not has_entries(X):
        msg = (
            f"precondition={precondition!r} scales X's columns by their norms, read from its entries; X is a "
            f"{describe(X)}, which has none: scale the columns inside its products instead"
        )
        raise TypeError(msg)
    fit_intercept = check_bool(fit_intercept, "fit_intercept")
    check_finite = check_bool(check_finite, "check_finite")
    per_target = check_bool(per_target, "per_target")
    direct = not record(method).iterative
    if (rcond is not None and not direct) or refine:
        msg = (
            f"refine applies to a dense X (its QR); X is a {describe(X)}" if direct and refine
            else f"rcond and refine apply to the direct methods; method={method!r} takes atol/btol instead"
        )  # fmt: skip
        raise ValueError(msg)
    if ridge and not per_target and getattr(alpha, "ndim", 0) == 1:
        msg = (
            f"a 1-D alpha path factors a dense X; X is a {describe(X)}: fit each alpha, or pass a dense array"
            if direct else f"method={method!r} fits one alpha (or one per target); a 1-D alpha path needs a direct method"
        )  # fmt: skip
        raise ValueError(msg)
    for name, a in (("y", y), ("sample_weight", sample_weight)):
        check_kind(a, name)
    if getattr(X, "requires_grad", False):
        raise TypeError("X requires grad: a fit with a sparse or operator X is not differentiable")
    caller_xp, caller_dev = caller_of(y, sample_weight)
    home = home_of(X)
    xp, dev = home if home is not None else (caller_xp, caller_dev)
    same = xp is caller_xp
    moved = None not in (caller_dev, dev) and repr(caller_dev) != repr(dev)
    if home is not None and not on_host(X) and (not same or moved):
        msg = f"X is a {describe(X)} on {dev!r}: y and sample_weight must be arrays of its library, on its device"
        raise TypeError(msg)
    y = _to_home(y, "y", xp, dev, same)
    sample_weight = _to_home(sample_weight, "sample_weight", xp, dev, same, y.dtype)
    m, n = (int(s) for s in X.shape)
    if y.ndim not in (1, 2) or y.shape[0] != m:
        msg = f"y must have shape ({m},) or ({m}, k) to match X of shape {(m, n)}; got shape {tuple(y.shape)}"
        raise ValueError(msg)
    if sample_weight is not None and tuple(sample_weight.shape) != (m,):
        msg = f"sample_weight must have shape ({m},); got shape {tuple(sample_weight.shape)}"
        raise ValueError(msg)
    for name, a in (("y", y), ("sample_weight", sample_weight)):
        if a is not None:
            check_dtype(xp, a, name)
    x_dtype = entry_dtype(X, xp)
    if x_dtype is not None and _compat.isdtype(xp, x_dtype, "complex floating"):
        msg = f"X is complex ({x_dtype}); complex least squares is not supported"
        raise TypeError(msg)
    floats = [d for d in (x_dtype, y.dtype) if d is not None and _compat.isdtype(xp, d, "real floating")]
    dtype = xp.result_type(*floats) if floats else _compat.default_dtypes(xp, dev)[0]
    if fit_intercept and m == 0:
        raise ValueError("fit_intercept=True needs at least one sample (X has 0 rows)")
    y_was_vector = y.ndim == 1
    Y = xp.astype(y[:, None] if y_was_vector else y, dtype, copy=False)  # never written to
    k = Y.shape[-1]
    w = None if sample_weight is None else xp.astype(sample_weight, dtype, copy=False)
    checks = _compat.Checks()
    if ridge:
        alpha = validate_alpha(xp, _to_home(alpha, "alpha", xp, dev, same, dtype), k, dtype, dev, per_target, checks)
    big = entry_magnitude(X)  # X's scale, and for SciPy's its finiteness: one read of its entries
    if check_finite:
        for name, a in (("y", Y), ("sample_weight", w)):
            if a is not None and not _compat.is_lazy(a):
                check_finite_values(xp, a, name)
        ok = finite_entries(X, big)
        if ok is not None:
            checks.add(ok, failure(ValueError, "X contains NaN or infinity in its stored entries"))
    if w is not None and not _compat.is_lazy(w):
        checks.add(xp.logical_not(xp.any(w < 0)), failure(ValueError, "sample_weight must be non-negative"))
        if fit_intercept and m > 0:
            msg = "sample_weight must have a positive sum to fit an intercept"
            checks.add(xp.sum(w) > 0, failure(ValueError, msg))
    if x0 is not None:
        x0 = check_start(xp, _to_home(x0, "x0", xp, dev, same, dtype), (n, k), y_was_vector, Y, check_finite)
    checks.read(xp)
    A = linear_map(X, xp, dtype, dev)
    options = solver_options(method, atol, btol, max_iter, conlim, x0, precondition)
    if big is not None:  # in the products' library: NumPy for SciPy's, the backend's own else
        big = xp.astype(xp.asarray(big), dtype)
    result = _solve(xp, A, Y, w, alpha, fit_intercept, (method, options, rcond, positive), big)
    if y_was_vector:
        result = LstsqResult(*(a if a is None or a.ndim == 0 else a[..., 0] for a in result))
    fields = [_to_caller(caller_xp, caller_dev, a, same) for a in result]
    return LstsqResult(*fields)


def _solve(xp, A, Y, w, alpha, fit_intercept, solver, big=None):
    """The fit of the prepared problem by ``solver``, ``(method, options, rcond, positive)`` (``rcond``: the Gram
    route's; ``positive``: ``_solvers.nnls``, its ``converged`` as istop): (coef (n, k), intercept (k,), rank, rss (k,),
    None, n_iter (k,), istop (k,) or None). ``big``: X's largest stored magnitude (None: an operator), :func:`_scaled`."""
    method, options, rcond, positive = solver
    m, n = A.shape
    k = Y.shape[-1]
    dev = _compat.device(Y)
    root = x_mean = y_mean = fw = None
    if w is not None:
        # The weights at unit scale (one power of two: the solution is unchanged, rss scales
        # back by it), so that weighted means and products neither overflow nor underflow
        kw = exponent(xp, log2_abs(xp, xp.reshape(xp.max(w), (1,))))
        fw, unit = powers(xp, [(kw, 2), (-kw, 2)])
        w = times(xp, w, unit)
        if alpha is not None:  # sum w r**2 + alpha |b|**2: the penalty scales with the weights
            alpha = penalty_times(xp, alpha, unit)
        root = xp.sqrt(w)[:, None]
    if fit_intercept:
        ws = xp.ones((m, 1), dtype=Y.dtype, device=dev) if w is None else w[:, None]
        total = xp.sum(ws)
        x_mean = xp.linalg.matrix_transpose(A.rmatvec(ws)) / total  # (1, n): one product
        y_mean = xp.sum(ws * Y, axis=0, keepdims=True) / total
        Y = Y - y_mean
    if root is not None:
        Y = root * Y
    Ac = centered(xp, A, root, x_mean)
    if min(m, n) == 0 or k == 0:
        coef = xp.zeros((n, k), dtype=Y.dtype, device=dev)
        n_iter = full_int(xp, (k,), 0, Y)
        istop = n_iter == 0 if positive else (n_iter if record(method).stops else None)
        rank = full_int(xp, (), 0, Y)
        rss = xp.sum(Y * Y, axis=0)
    else:
        As, Ys, alpha_s, options, (back, square, fa) = _scaled(xp, Ac, Y, alpha, options, big, root)
        if positive:  # the active-set method on the map's Gram matrix, refined with its products
            coef_s, n_iter, converged = nnls_solve(xp, As, Ys, alpha_s)
            sol = Solution(coef_s, None, n_iter=n_iter, istop=converged)
            rss = _compat.sum_of_squares(xp, Ys - As.matvec(coef_s), axis=0)
        elif record(method).iterative:
            if alpha_s is not None:  # (1, k) or (1, 1) against Y (m, k), as the dense route's penalty
                alpha_s = _compat.as_rank(xp, alpha_s, 2)
            sol = solve_by_method(xp, As, Ys, alpha_s, method, Given(options=options))
            rss = _compat.sum_of_squares(xp, Ys - As.matvec(sol.coef), axis=0)
        else:  # the Gram route (``Record.sparse_gram``): X^T X by a sparse product, centered on the n x n side
            # what centering removed from the columns' squared norms, for the rank tests (as the dense route's)
            offset_sq = None if x_mean is None else times(xp, (total * x_mean * x_mean)[0, :], fa)
            sol = record(method).solve(xp, As, Ys, alpha_s, Given(rcond, offset_sq, None, MapGram(xp, As)))
            rss = sol.rss
        rank, n_iter, istop = sol.rank, sol.n_iter, sol.istop
        rss = times(xp, rss, square)
        coef = times(xp, sol.coef, back)
    if fw is not None:
        rss = times(xp, rss, fw)
    if fit_intercept:
        intercept = (y_mean - _compat.matmul(xp, x_mean, coef))[0, :]
    else:
        intercept = xp.zeros((k,), dtype=Y.dtype, device=dev)
    return LstsqResult(coef, intercept, rank, rss, None, n_iter, istop)


def _scaled(xp, A, Y, alpha, options, big, root):
    """The problem at unit scale by powers of two, as ``_scaling`` puts dense X (module docstring, ``_scaled``).
    Returns ``(map, Y, alpha, options, (coef factor, rss factor, X's square factor))``: coef = coef' 2**(ky - kx),
    rss = rss' 2**(2 ky); the map's Gram matrix (``LinearMap.gram``) is X's times ``2**-2kx``."""
    ly = log2_abs(xp, xp.maximum(xp.max(Y, axis=0), -xp.min(Y, axis=0)))  # (k,): max |Y|, no |Y| temporary
    lx = xp.zeros_like(ly[:1]) if big is None else xp.reshape(log2_abs(xp, big), (1,))
    if big is not None and root is not None:
        lx = lx + xp.reshape(log2_abs(xp, xp.max(root)), (1,))
    kx, ky = exponent(xp, lx), exponent(xp, ly)
    fx, fy, back, square, fa, f0 = powers(
        xp, [(-kx, 1), (-ky, 1), (ky - kx, 2), (2 * ky, 4), (-2 * kx, 4), (kx - ky, 2)]
    )
    # Data within the safe range (the common case) has kx = ky = 0: on NumPy, where that is
    # read for free, the products and Y are left as they are (a pass over an m- or n-vector
    # per product saved); elsewhere the factors of 1 are applied.
    As = A if _compat.known_ones(xp, fx) else LinearMap(
        xp, A.shape, A.dtype, A.device,
        (
            lambda V: times(xp, A.matvec(V), fx), lambda U: times(xp, A.rmatvec(U), fx),
            None if A.gram is None else (lambda w=None: times(xp, A.gram(w), fa)),
        ),
        norms=lambda: times(xp, A.norms(), fx), fresh=True,
    )  # fmt: skip
    if alpha is not None:
        alpha = penalty_times(xp, alpha, fa)
    if options.get("x0") is not None:
        options = {**options, "x0": times(xp, options["x0"], f0)}
    return As, Y if _compat.known_ones(xp, fy) else times(xp, Y, fy), alpha, options, (back, square, fa)
