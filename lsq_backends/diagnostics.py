"""Statistical diagnostics of an ordinary or weighted least-squares fit: standard errors,
t statistics, R², residual standard deviation, condition number and the
heteroskedasticity-robust (sandwich) covariances HC0-HC3, as statsmodels' OLS/WLS report them.

Everything comes from one Householder QR of the centered, weighted X (the intercept
direction eliminated, as in :func:`lsq_backends.lstsq`), never from the Gram matrix:
``(X^T W X)^{-1} = R^{-1} R^{-T}``, so a standard error is a scaled row norm of ``R^{-1}``
(error ~ eps * cond, not eps * cond**2).

The intercept. With centering, the weighted design ``A = sqrt(W) [1, X]`` has the R factor
``R_a = [[sqrt(S), sqrt(S) xbar], [0, R]]`` (S = sum of weights, xbar the weighted means), whose
inverse is ``[[1/sqrt(S), -xbar R^{-1}], [0, R^{-1}]]`` in closed form. Every covariance is
computed against ``R_a^{-1}``, i.e. consistently on ``[1, X]``: the intercept's nonrobust
variance comes out as ``sigma**2 (1/S + ||xbar R^{-1}||**2)``, and the sandwich estimators use
the orthonormal basis ``Q_a = A R_a^{-1} = [sqrt(w)/sqrt(S), Xc R^{-1}]`` built from the
centered data (``Xc = sqrt(W)(X - xbar)``), which avoids the cancellation an explicit column of
ones next to large, offset columns (Longley, Wampler) would cause, and needs no second QR.

The rank: whether R has full rank is decided scale-free. The test takes the singular
values of R with its columns scaled to the norms they had before centering (as the lstsq rank
tests do). So units do not matter, and a column that centering reduced to rounding noise (a
constant column next to an intercept) counts as dependent. At full rank it takes the triangular
inverse, accurate on graded R such as Filip's powers. Otherwise it takes the pseudo-inverse of
R as :func:`lsq_backends.lstsq` does (its SVD with lstsq's cutoff). That gives the minimum-norm
coefficients of lstsq, scikit-learn and ``numpy.linalg.pinv``, and the rank lstsq reports.

``robust`` (cluster, HAC, Driscoll-Kraay): their meat is built from the scores of the centered
design, ``Z = [sqrt(w) e, Xc diag(e)]`` (e the weighted residuals), which are the scores of
``Q_a`` times ``blockdiag(sqrt(S), R)``. So ``cov = F M(Z) F^T`` with
``F = R_a^{-1} blockdiag(1/sqrt(S), R^{-T})``: the m x n basis ``Xc R^{-1}`` of the HC types is
never formed, and the sums over clusters run on Z (:mod:`._solvers.linalg.sandwich`).
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, NamedTuple

from ._api import check_refine, refined_solution
from ._backend import _compat
from ._backend._compat import all_true, eps, full_int, matmul, mT
from ._problem._absorb import absorbed, absorbed_rank, kept_rows, nested_rank
from ._problem._cov_options import ROBUST_COV_TYPES, cov_options
from ._problem._input import check_bool, validate
from ._problem._prepare import intercept_of, prepare
from ._problem._scaling import powers, times
from ._result import plain_signature
from ._solvers import default_cutoff, filtered_solve, robust_cov, uncentered_scale
from ._types import Array, CovType

COV_TYPES = ("nonrobust", "HC0", "HC1", "HC2", "HC3", *ROBUST_COV_TYPES)


@plain_signature
class _Fields(NamedTuple):
    coef: Any
    intercept: Any
    stderr: Any
    intercept_stderr: Any
    tvalues: Any
    intercept_tvalue: Any
    cov: Any
    rss: Any
    sigma: Any
    r2: Any
    r2_adj: Any
    df_resid: Any
    rank: Any
    cond: Any


class Diagnostics(_Fields):
    """Result of :func:`diagnostics` (a NamedTuple, hence a JAX pytree).

    Every field is an array of the caller's namespace, on the caller's device, in the fit's float
    dtype (``df_resid`` and ``rank`` in the default integer dtype); ``...`` is the batch shape.

    Attributes
    ----------
    coef : array (..., n)
        Coefficients.
    intercept : array (...)
        Intercept, zeros when ``fit_intercept=False``.
    stderr : array (..., n)
        Standard errors of ``coef`` (square roots of the diagonal of ``cov``).
    intercept_stderr : array (...)
        Standard error of the intercept; zeros when ``fit_intercept=False``.
    tvalues : array (..., n)
        ``coef / stderr`` (infinite when the fit is exact: ``sigma == 0``).
    intercept_tvalue : array (...)
        ``intercept / intercept_stderr``; zeros when ``fit_intercept=False``.
    cov : array (..., p, p)
        Covariance of the estimates, p = n + fit_intercept, ordered as statsmodels with
        ``add_constant``: ``[intercept, coef_1, ..., coef_n]``.
    rss : array (...)
        Weighted residual sum of squares.
    sigma : array (...)
        Residual standard deviation ``sqrt(rss / df_resid)``.
    r2, r2_adj : array (...)
        R² and adjusted R²: centered on the weighted mean with an intercept, uncentered
        (``1 - rss / sum(w y**2)``) without one, as statsmodels.
    df_resid : int array (...)
        Residual degrees of freedom ``m - rank`` (zero-weight rows count, as in statsmodels).
    rank : int array (...)
        Numerical rank of the design, intercept included (``p`` when full rank).
    cond : array (...)
        2-norm condition number of the weighted design as statsmodels' ``condition_number``
        reports it (``[1, X]`` with an intercept, columns unscaled), from the singular values
        of its small R factor rather than the eigenvalues of the Gram matrix.

    Besides the fields, a result made by :func:`diagnostics` records, for :meth:`summary`,
    ``cov_type``, ``feature_names`` (the columns of a pandas DataFrame X, else None),
    ``target_name`` (the name of a pandas Series y, else None), ``absorbed_rank`` (of ``absorb``'s
    fixed effects, counted in ``rank``; the F test leaves it out) and ``n_singletons`` (the observations
    ``drop_singletons`` dropped). They are plain attributes, not
    fields: a result rebuilt from its fields (after ``jax.jit``, ``dask.compute`` or
    ``_replace``) has them as None, and ``summary`` then takes them as arguments.
    """

    cov_type = None
    feature_names = None
    target_name = None
    absorbed_rank = 0
    n_singletons = 0

    def summary(self, names=None, *, alpha=0.05, title=None, cov_type=None, use_t=None):
        """A table like statsmodels' ``summary()``: a str that renders as HTML in notebooks (eager, unbatched results only).

        P-values and confidence intervals use Student's t distribution (``use_t``; default for
        ``"nonrobust"``) or the normal distribution (default for the HC covariances, as
        statsmodels), from SciPy (an optional dependency; without it those columns read
        ``n/a``): the array API standard has no distribution functions, so they exist only here,
        not as fields.

        Parameters
        ----------
        names : sequence of str, optional
            One name per column of X; default the columns of a pandas DataFrame X (recorded by
            :func:`diagnostics`), else ``x1, x2, ...``. The intercept is ``const``.
        alpha : float in (0, 1)
            Confidence intervals at level ``1 - alpha``.
        title : str, optional
            First line of the table.
        cov_type : str, optional
            The covariance type named in the header; default the one :func:`diagnostics` used
            (a result rebuilt from its fields has none recorded: the header then says so).
        use_t : bool, optional
            P-values and intervals from Student's t with ``df_resid`` degrees of freedom
            (columns ``t``, ``P>|t|``) or from the normal distribution (``z``, ``P>|z|``).
            Default as statsmodels: t for ``"nonrobust"``, normal for the robust (HC)
            covariances, whose justification is asymptotic. The F test uses the F distribution
            either way.

        Returns
        -------
        Summary
            A ``str`` (the text table, one coefficient per line after the header) that renders
            as HTML in notebooks; the p-values, intervals and F statistic behind it as
            attributes (see :class:`Summary`). P-values print with four decimals (0.0000 below
            5e-5) everywhere.

        Examples
        --------
        >>> import numpy as np
        >>> import lsq_backends as lsq
        >>> t = np.array([1.0, 2.0, 3.0, 4.0]); y = np.array([1.0, 2.0, 2.0, 4.0])
        >>> table = lsq.diagnostics(t[:, None], y).summary(names=["t"])
        >>> print(table.splitlines()[-3])  # name, coef, std err, t, P>|t|, 95% interval
        const            0.0000     0.7246     0.0000     1.0000    -3.1176     3.1176
        >>> print(table.splitlines()[-2])
        t                0.9000     0.2646     3.4017     0.0766    -0.2384     2.0384
        >>> round(table.fvalue, 4), round(table.f_pvalue, 4)  # t**2 and its p-value: one slope
        (11.5714, 0.0766)
        """
        from ._summary import summary

        return summary(self, names, alpha=alpha, title=title, cov_type=cov_type, use_t=use_t)


def _labelled(result, cov_type, X, y):
    """``result`` with the labels :meth:`Diagnostics.summary` reads: the covariance type and
    pandas' column and series names, when X and y are pandas objects."""
    result.cov_type = cov_type
    if type(X).__module__.startswith("pandas") and hasattr(X, "columns"):
        result.feature_names = [str(c) for c in X.columns]
    if type(y).__module__.startswith("pandas") and getattr(y, "name", None) is not None:
        result.target_name = str(y.name)
    return result


def _check_options(cov_type, refine):
    refine = check_refine(refine)
    if cov_type not in COV_TYPES:
        msg = f"cov_type must be one of {', '.join(map(repr, COV_TYPES))}; got {cov_type!r}"
        raise ValueError(msg)
    return refine


def _check_shapes(problem, fit_intercept):
    X = problem.original[0]
    m, n = X.shape[-2:]
    if not problem.y_was_vector:
        msg = (
            f"diagnostics fits one target: y must have shape {tuple(X.shape[:-1])} to match X of "
            f"shape {tuple(X.shape)}; call it once per column of y"
        )
        raise ValueError(msg)
    if n == 0 and not fit_intercept:
        msg = "X must have at least one column, or fit_intercept=True (X with no columns: the intercept-only model)"
        raise ValueError(msg)
    if m == 0:
        msg = "diagnostics needs at least one observation (X has 0 rows)"
        raise ValueError(msg)


def _no_dof_warning(xp, df_resid, m, p, X):
    """Warn (eager arrays) where df_resid is 0: possible only when m <= p (no read otherwise). A context in which
    the covariances are found: where it warned, NumPy's own warnings of the masked NaN (``1 - h`` = 0) are silenced."""
    if m <= p and not _compat.is_lazy(df_resid) and bool(xp.any(df_resid == 0)):
        msg = "diagnostics: no residual degrees of freedom (df_resid = 0): sigma, standard errors, t, cov and adjusted R-squared are NaN"
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return _compat.float_errors_ignored(X)
    return contextlib.nullcontext()


def _inverse_factor(xp, R, Z, offset_sq, m, n):
    """``R^{-1}`` (or a pseudo-inverse when R is numerically singular), the coefficients ``R^{-1} Z`` and the
    rank of R. The rank is decided scale-free; full rank takes the triangular inverse, else lstsq's SVD with
    its cutoff (module docstring: ``_inverse_factor``)."""
    if n == 0:  # the intercept-only model: nothing to factor
        return R, Z[..., :0, :], full_int(xp, tuple(R.shape[:-2]), 0, R)
    colsq = xp.sum(R * R, axis=-2)
    ref = xp.sqrt(colsq if offset_sq is None else colsq + offset_sq)
    d = xp.where(ref > 0, ref, xp.ones_like(ref))
    s = _compat.svd(xp, R / d[..., None, :])[1]
    full = all_true(xp, s[..., -1:] > eps(xp, R) * max(m, n) * s[..., :1])

    def triangular(R, Z):
        # The coefficients by a triangular solve, as lstsq's QR (not R^{-1} Z).
        Rinv = _compat.triangular_inverse(xp, R, lower=False)
        return Rinv, _compat.solve_triangular(xp, R, Z, lower=False), full_int(xp, tuple(R.shape[:-2]), n, R)

    def pseudo(R, Z):
        u, s, vh = _compat.svd(xp, R)
        cutoff = default_cutoff(xp, R, m, n, None)
        scale = uncentered_scale(xp, colsq, offset_sq)
        eye = xp.broadcast_to(_compat.eye_like(xp, R, n), R.shape)
        Rinv, rank, _ = filtered_solve(xp, (u, s, vh), eye, None, cutoff, n, scale)  # V diag(1/s) U^T, kept s
        if not _compat.is_lazy(R):  # eager: this branch alone runs (under jit or Dask both are built)
            msg = (
                "diagnostics: the design is rank-deficient (see rank): the coefficients are the minimum-norm "
                "solution, as lstsq's; those of dependent columns are not identified"
            )
            warnings.warn(msg, RuntimeWarning, stacklevel=5)
        return Rinv, matmul(xp, Rinv, Z), rank

    return _compat.branch(xp, full, triangular, pseudo, (R, Z))


def _factor(xp, X, Y):
    """R (..., n, n) and Z = Q^T Y of the Householder QR of the prepared X; X with fewer rows
    than columns (m <= p) is padded with zero rows first, so that R is square (and singular)."""
    m, n = X.shape[-2:]
    if n == 0:
        return X[..., :0, :], Y[..., :0, :]
    if m < n:

        def pad(a):
            zeros = xp.zeros((*a.shape[:-2], n - m, a.shape[-1]), dtype=a.dtype, device=_compat.device(a))
            return xp.concat([a, zeros], axis=-2)

        X, Y = pad(X), pad(Y)
    return _compat.qr_apply(xp, X, Y)


def _factors(xp, scale, n, fit_intercept):
    """The factors that map the scaled problem's results back: covariance (entry (i, j) by
    f_i f_j, f the factor of each estimate), sigma, the two that give the R factor of [1, X]
    its true proportions (see :func:`diagnostics`), coefficients, intercept, rss."""
    kx, ky, kr = scale.kx, xp.reshape(scale.ky, ()), scale.kr
    e = xp.concat(([xp.reshape(ky, (1,))] if fit_intercept else []) + [xp.broadcast_to(ky - kx, (n,))])
    h = xp.trunc(kx / 2)
    requests = [
        (e[:, None] + e[None, :], 4),
        (ky + kr, 2),
        (h - kx, 1),
        (h, 1),
        (ky - kx, 2),
        (ky, 1),
        (2 * (ky + kr), 4),
    ]
    return powers(xp, requests)


def _block_triangle(xp, corner, row, block):
    """``[[corner, row], [0, block]]`` for stacks: corner (..., 1, 1), row (..., 1, n)."""
    zeros = xp.zeros((*block.shape[:-1], 1), dtype=block.dtype, device=_compat.device(block))
    top = xp.concat([corner, row], axis=-1)
    return xp.concat([top, xp.concat([zeros, block], axis=-1)], axis=-2)


def _ratio(xp, a, b):
    """``a / b`` for ``b >= 0``, with ``0 / 0 = 0`` instead of NaN: a coefficient the
    pseudo-inverse pins to zero (rank-deficient X) has a zero standard error, and t = 0 there;
    ``a / 0 = +-inf`` otherwise (an exact fit, a singular design's condition number); NaN where
    ``b`` is NaN (no residual degrees of freedom)."""
    pos = b > 0
    q = a / xp.where(pos, b, xp.ones_like(b))
    inf = xp.full_like(q, float("inf"))
    q = xp.where(pos, q, xp.where(a == 0, xp.zeros_like(q), xp.where(a > 0, inf, -inf)))
    return xp.where(xp.isnan(b), b, q)


@_compat.on_input_device
def diagnostics(
    X: Array,
    y: Array,
    /,
    *,
    fit_intercept: bool = True,
    sample_weight: Array | None = None,
    cov_type: CovType = "nonrobust",
    check_finite: bool = True,
    refine: int = 0,
    groups: Array | None = None,
    time: Array | None = None,
    n_groups: int | tuple[int, int] | None = None,
    maxlags: int | None = None,
    kernel: str | None = None,
    use_correction: bool | str | None = None,
    absorb: Array | None = None,
    absorb_n_groups: int | tuple[int, ...] | None = None,
    drop_singletons: bool = False,
    fixef_k: str = "nested",
) -> Diagnostics:
    """Standard errors, t statistics, R² and robust covariances of a least-squares fit.

    Ordinary (or, with ``sample_weight``, weighted) least squares of ``y`` on ``X``, with the
    quantities statsmodels' ``OLS``/``WLS`` report (on ``add_constant(X)`` when
    ``fit_intercept``). It takes the designs statsmodels fits: rank-deficient X, the
    intercept-only model (X with no columns) and m <= p (see Notes).

    Parameters
    ----------
    X : array, shape (m, n) or (..., m, n)
        Design matrix without an intercept column, or a stack of them.
    y : array, shape (m,) or (..., m)
        One target per problem.
    fit_intercept : bool
        Include an intercept (statsmodels' ``add_constant``); R² is centered with it and
        uncentered without it.
    sample_weight : array, shape (m,) or (..., m), optional
        Weights of weighted least squares (statsmodels' ``WLS(weights=...)``).
    cov_type : {"nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster", "HAC", "hac-groupsum", "hac-panel"}
        Covariance estimator: ``sigma**2 (A^T A)^{-1}``, or White's sandwich
        ``(A^T A)^{-1} A^T diag(u) A (A^T A)^{-1}`` with ``u = e**2`` (HC0), times
        ``m / df_resid`` (HC1), over ``1 - h`` (HC2) or ``(1 - h)**2`` (HC3), ``e`` the weighted
        residuals and ``h`` the leverages. Or statsmodels' ``get_robustcov_results`` types, whose
        ``cov_kwds`` are the keywords below: ``"cluster"`` (one-way, or two-way by
        Cameron-Gelbach-Miller), ``"HAC"`` (Newey-West), ``"hac-groupsum"`` (Driscoll-Kraay:
        HAC over the per-period sums of the scores) and ``"hac-panel"`` (HAC within panels).
        Static under ``jax.jit``.
    groups : integer array, shape (m,) or (m, 2), optional
        Cluster codes in ``[0, n_groups)`` for ``"cluster"`` (e.g. ``pandas.factorize``), shared
        by a stack; two columns: two-way clustering. ``"hac-panel"``: panel codes, rows sorted
        by panel (a panel is a run of equal codes).
    time : integer array, shape (m,), optional
        Period codes in ``[0, n_groups)`` for ``"hac-groupsum"``; lags count codes.
        ``"hac-panel"`` (instead of ``groups``): a new panel where the period decreases.
    n_groups : int or (int, int), optional
        The number of codes (one per column of ``groups``), static under ``jax.jit``; required
        there and on Dask. Default ``max(codes) + 1``, one host read of the codes.
    maxlags : int, optional
        Lags of ``"HAC"`` and ``"hac-groupsum"`` (required there).
    kernel : {"bartlett", "uniform"}, optional
        Their lag weights ``1 - l / (maxlags + 1)`` (default) or 1.
    use_correction : bool or {"hac", "cluster"}, optional
        Small-sample correction; default statsmodels' for the type. ``"cluster"``: True (CR1,
        ``G / (G - 1) (m - 1) / (m - p)``, G the clusters present, p the columns of the design;
        two-way: each term its own) or False (CR0). ``"HAC"``: False, or True for ``m / (m - p)``.
        ``"hac-groupsum"``: ``"cluster"`` (CR1 over the periods), ``"hac"`` or False.
        ``"hac-panel"``: ``"hac"``, ``"cluster"`` (CR1 over the panels) or False.
    check_finite : bool
        As in :func:`lsq_backends.lstsq`.
    absorb, absorb_n_groups
        Fixed effects absorbed, as in :func:`lsq_backends.lstsq` (concrete codes: their rank is counted on
        the host). The fit is the regression with one dummy column per group, reported for X's columns:
        ``df_resid`` and ``rank`` count the dummies' rank (exact for one and two factors, an upper bound
        beyond), so do the small-sample corrections; ``intercept`` is zero, R² is the within R² (of the
        partialled-out y). Not with ``"HC2"``/``"HC3"``. See the econometrics page.
    drop_singletons : bool
        As in :func:`lsq_backends.lstsq`: the singletons' rows leave X, y, the weights, ``groups`` and
        ``time`` before the fit (``m`` and ``df_resid`` count the rows kept); ``n_singletons`` records how many.
    fixef_k : {"nested", "full"}
        With ``absorb`` and ``cov_type="cluster"``: ``"nested"`` leaves the factors nested in the clusters (each
        group within one cluster) out of the correction's p, as pyfixest's and fixest's default; ``"full"``
        counts every factor, as statsmodels on explicit dummies. Nesting is read from concrete ``groups``.
    refine : int
        Steps of :func:`lsq_backends.lstsq`'s iterative refinement (full-rank X only): more
        accurate coefficients and residuals, hence ``sigma``, R² and t statistics, on hard
        problems (NIST Wampler1: sigma from 9.7 to 15 digits). The standard errors keep the
        accuracy of ``R^{-1}``, ~eps * cond of the column-scaled design. Static under ``jax.jit``.

    Returns
    -------
    Diagnostics
        See :class:`Diagnostics`; ``.summary()`` prints a statsmodels-like table.

    Notes
    -----
    Cost: one Householder QR of the centered (m - 1) x n data and O(n**3) on its factor (an
    SVD for the rank, a triangular inverse), plus O(m n) for the residual. The HC types also
    form ``Xc R^{-1}`` (m x n; the leverages h_ii are its squared row norms) and the m x p
    sandwich factor: temporaries of about 4 m p elements. The cluster and HAC types sum the
    m x p scores per cluster (O(m p + G p) memory, never m x G) or form ``maxlags`` lagged
    products (O(maxlags m p**2)). ``refine`` adds lstsq's ~13 m n.

    Conventions (as statsmodels): ``df_resid = m - rank`` counts zero-weight rows; an exact fit
    (``sigma == 0``) has infinite t statistics; a constant ``y`` with an intercept has
    ``tss = 0`` and R² NaN. Where statsmodels would be NaN for a 0/0 t statistic (a coefficient
    the pseudo-inverse pins to 0), t is 0. HC2/HC3 divide by ``1 - h_ii``: an observation with
    leverage 1 (a dummy column with one nonzero row) makes them inf or NaN, as in statsmodels.

    Rank-deficient X (a ``RuntimeWarning`` on eager arrays, as statsmodels warns): the
    minimum-norm coefficients of :func:`lsq_backends.lstsq`, scikit-learn and
    ``numpy.linalg.pinv``, in the variables as given; their covariance from the pseudo-inverse
    is statsmodels' too, unless the intercept lies in X's column space (a full set of dummies:
    statsmodels' pinv of ``[1, X]`` spreads the intercept over them; the fit is the same). No
    residual degrees of freedom (``df_resid == 0``, as when m <= p): sigma, standard errors, t,
    cov and adjusted R² are NaN, with a ``RuntimeWarning`` on eager arrays (statsmodels: inf/NaN).

    No p-values here (the standard has no t distribution): see :meth:`Diagnostics.summary`.

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> t = np.array([1.0, 2.0, 3.0, 4.0]); y = np.array([1.0, 2.0, 2.0, 4.0])
    >>> d = lsq.diagnostics(t[:, None], y)
    >>> np.round([float(d.coef[0]), float(d.stderr[0]), float(d.r2)], 4).tolist()
    [0.9, 0.2646, 0.8526]
    """
    refine = _check_options(cov_type, refine)
    fit_intercept = check_bool(fit_intercept, "fit_intercept")
    check_finite = check_bool(check_finite, "check_finite")
    drop_singletons = check_bool(drop_singletons, "drop_singletons")
    if not isinstance(fixef_k, str) or fixef_k not in ("nested", "full"):
        msg = f"fixef_k must be 'nested' or 'full'; got {fixef_k!r}"
        raise ValueError(msg)
    given, n_absorbed, fe = (X, y), 0, None
    if absorb is not None or absorb_n_groups is not None or drop_singletons:  # partialled out first (``absorb``)
        if cov_type in ("HC2", "HC3"):
            msg = f"cov_type={cov_type!r} takes the leverages of the whole design: not with absorb (use 'HC1' or 'cluster')"
            raise ValueError(msg)
        X, y, sample_weight, fe, _ = absorbed(
            X, y, sample_weight, absorb, absorb_n_groups, check_finite, drop_singletons
        )
        n_absorbed, fit_intercept = absorbed_rank(fe), False
        groups, time = kept_rows(groups, fe, X), kept_rows(time, fe, X)
    v = validate(X, y, sample_weight, fit_intercept=fit_intercept, check_finite=check_finite)
    kwds = {"groups": groups, "time": time, "n_groups": n_groups, "maxlags": maxlags, "kernel": kernel}
    options = cov_options(v.xp, v.X, cov_type, {**kwds, "use_correction": use_correction}, v.checks)
    if options is not None:  # nested factors left out of a cluster correction's p (``_absorb``: ``nested``)
        nested = fe is not None and cov_type == "cluster" and options.correction and fixef_k == "nested"
        options = options._replace(absorbed=nested_rank(fe, groups) if nested else n_absorbed)
    problem = prepare(v, keep_original=True, scale="per_target")
    _check_shapes(problem, fit_intercept)
    xp = problem.xp
    assert problem.original is not None  # prepared with keep_original
    X0, Y0, root = problem.original
    m, n = X0.shape[-2:]
    dev, dtype = _compat.device(X0), X0.dtype

    R, Z = _factor(xp, problem.X, problem.Y)  # on the centered data, intercept eliminated
    Rinv, coef, rank = _inverse_factor(xp, R, Z, problem.offset_sq, m, n)

    # Residuals on the centered, weighted data (rather than on problem.X, m - 1 rows): the
    # sandwich needs one residual per observation.
    Xc, Yc = X0, Y0
    if fit_intercept:
        Xc, Yc = Xc - problem.x_offset, Yc - problem.y_offset
    if root is not None:
        Xc, Yc = root * Xc, root * Yc
    intercept = intercept_of(xp, problem, coef, fit_intercept)  # (..., 1)
    if refine and n > 0:
        # lstsq's refinement (against [1, X], residual summed in double-double): coefficients,
        # intercept and residuals, hence sigma, R² and t; the standard errors keep the R^{-1}
        # of the working-precision QR (their accuracy is eps * cond of the scaled design).
        coef, intercept, resid = refined_solution(problem, coef, intercept, rank, refine)
        resid = resid[..., 0]
    else:
        resid = (Yc - matmul(xp, Xc, coef))[..., 0]  # (..., m)
    intercept = intercept[..., 0]
    rss = xp.sum(resid * resid, axis=-1)
    tss = xp.sum(Yc[..., 0] * Yc[..., 0], axis=-1)  # centered with an intercept, else sum(w y**2)

    if fit_intercept:
        w = _compat.as_rank(xp, xp.ones((m, 1), dtype=dtype, device=dev), X0.ndim) if root is None else root * root
        batch = tuple(X0.shape[:-2])
        sqrt_s = xp.broadcast_to(xp.sqrt(xp.sum(w, axis=-2, keepdims=True)), (*batch, 1, 1))
        xbar = problem.x_offset  # (..., 1, n)
        Rinv_a = _block_triangle(xp, 1 / sqrt_s, -matmul(xp, xbar, Rinv), Rinv)
        R_a = _block_triangle(xp, sqrt_s, sqrt_s * xbar, R)
        rank = rank + 1
    else:
        Rinv_a, R_a = Rinv, R

    rank = rank + n_absorbed
    df_resid = m - rank
    quiet = _no_dof_warning(xp, df_resid, m, n + int(fit_intercept) + n_absorbed, X0)
    df = xp.astype(df_resid, dtype)
    # No residual degrees of freedom (m <= p): the residual variance, and all that rests on it,
    # is undefined: NaN (statsmodels: inf or NaN, and rounding noise for the HC types).
    has_df = df > 0
    nan = xp.full_like(rss, float("nan"))
    df = xp.where(has_df, df, xp.ones_like(df))
    sigma2 = xp.where(has_df, rss / df, nan)
    with quiet:
        if cov_type == "nonrobust":
            cov = sigma2[..., None, None] * matmul(xp, Rinv_a, mT(xp, Rinv_a))
            se = xp.sqrt(sigma2)[..., None] * xp.linalg.vector_norm(Rinv_a, axis=-1)  # row norms
        elif options is not None:  # cluster, HAC, Driscoll-Kraay (module docstring: ``robust``)
            Z = Xc * resid[..., None]  # the scores of the centered design
            F = matmul(xp, Rinv_a[..., int(fit_intercept) :], mT(xp, Rinv))
            if fit_intercept:
                z0 = resid[..., None] if root is None else resid[..., None] * root
                Z = xp.concat([xp.broadcast_to(z0, (*Z.shape[:-1], 1)), Z], axis=-1)
                F = xp.concat([Rinv_a[..., :1] / sqrt_s, F], axis=-1)
            cov = xp.where(has_df[..., None, None], robust_cov(xp, Z, F, options), nan[..., None, None])
            se = xp.sqrt(_compat.diagonal(xp, cov))
        else:
            Q = matmul(xp, Xc, Rinv)  # (..., m, n): orthonormal basis of the centered design
            if fit_intercept:
                q0 = xp.broadcast_to((w if root is None else root) / sqrt_s, (*Q.shape[:-1], 1))
                Q = xp.concat([q0, Q], axis=-1)
            scale = xp.abs(resid)
            if cov_type in ("HC2", "HC3"):
                h = xp.sum(Q * Q, axis=-1)  # leverages, diag of the hat matrix
                scale = scale / (xp.sqrt(1 - h) if cov_type == "HC2" else 1 - h)
            elif cov_type == "HC1":
                scale = scale * xp.sqrt(m / df)[..., None]
            # cov = C^T C with C = diag(scale) A (A^T A)^{-1} = diag(scale) Q R_a^{-T}: a sum of
            # squares, so its diagonal cannot come out negative.
            C = matmul(xp, scale[..., None] * Q, mT(xp, Rinv_a))
            cov = xp.where(has_df[..., None, None], matmul(xp, mT(xp, C), C), nan[..., None, None])
            se = xp.where(has_df[..., None], xp.linalg.vector_norm(C, axis=-2), nan[..., None])

    factors = None if problem.scale is None else _factors(xp, problem.scale, n, fit_intercept)
    if factors is not None and fit_intercept:
        # [1, X] is not homogeneous in X: its R factor is 2**(kr + kx) R_a diag(2**-kx, I) in
        # the units of the scaled problem (2**h times less, h = kx / 2: no block leaves the range).
        f_corner, f_rest = factors[2:4]
        R_a = _block_triangle(xp, sqrt_s * f_corner, sqrt_s * xbar * f_rest, R * f_rest)
    s = _compat.svd(xp, R_a)[1]
    cond = _ratio(xp, s[..., 0], s[..., -1])
    stderr = se[..., se.shape[-1] - n :]
    tvalues = _ratio(xp, coef[..., 0], stderr)
    if fit_intercept:
        intercept_stderr = se[..., 0]
        intercept_tvalue = _ratio(xp, intercept, intercept_stderr)
    else:
        intercept_stderr = intercept_tvalue = intercept
    r2 = 1 - rss / tss
    r2_adj = xp.where(has_df, 1 - (m - int(fit_intercept)) / df * (1 - r2), nan)
    sigma = xp.sqrt(sigma2)
    if factors is not None:  # back to the units of the problem given (exact: powers of two)
        f_cov, f_sigma, _, _, f_coef, f_target, f_rss = factors
        coef, stderr, rss = times(xp, coef, f_coef), times(xp, stderr, f_coef), times(xp, rss, f_rss)
        sigma, intercept, cov = times(xp, sigma, f_sigma), intercept * f_target, times(xp, cov, f_cov)
        if fit_intercept:
            intercept_stderr = intercept_stderr * f_target
        else:
            intercept_stderr = intercept_tvalue = intercept
    result = Diagnostics(
        coef=coef[..., 0],
        intercept=intercept,
        stderr=stderr,
        intercept_stderr=intercept_stderr,
        tvalues=tvalues,
        intercept_tvalue=intercept_tvalue,
        cov=cov,
        rss=rss,
        sigma=sigma,
        r2=r2,
        r2_adj=r2_adj,
        df_resid=df_resid,
        rank=rank,
        cond=cond,
    )
    result = _labelled(result, cov_type, *given)
    result.absorbed_rank = n_absorbed
    result.n_singletons = 0 if fe is None else fe.dropped
    return result


__all__ = ["COV_TYPES", "Diagnostics", "diagnostics"]
