"""A statsmodels-like table for :class:`lsq_backends.diagnostics.Diagnostics`: text, and HTML
for notebooks.

Eager only: the table needs the values on the host. They are read element by element with
``float()`` (part of the standard for 0-d arrays), which works on any device, including CuPy,
CUDA tensors and array-api-strict's non-default devices, where ``numpy.asarray`` refuses.
P-values and confidence intervals need Student's t (or the normal) distribution, which the
standard lacks: SciPy supplies it when installed (an optional dependency); without it those
columns read n/a.
"""

from __future__ import annotations

import html
import math

from ._backend import _compat
from ._problem._input import as_real

_WIDTH = 78


def _t_dist():
    try:
        from scipy import stats
    except ImportError:  # SciPy is optional
        return None
    return stats.t


def _reference(use_t, df_resid):
    """(survival function, quantile function) of the reference distribution, or None without
    SciPy: Student's t with ``df_resid`` degrees of freedom, or the standard normal."""
    t = _t_dist()
    if t is None:
        return None
    if use_t:
        return (lambda x: t.sf(x, df_resid)), (lambda q: t.ppf(q, df_resid))
    from scipy import stats

    return stats.norm.sf, stats.norm.ppf


def _check(res):
    fields = {name: getattr(res, name) for name in res._fields}
    lazy = [name for name, a in fields.items() if not _compat.is_readable(a)]
    if lazy:
        msg = (
            "summary() needs computed (eager) arrays; got lazy ones (Dask, or JAX under jit) in "
            f"{', '.join(lazy)}. On Dask: type(d)(*dask.compute(*d)).summary(); with JAX: call "
            "summary() outside the jitted function"
        )
        raise TypeError(msg)
    if res.coef.ndim != 1:
        msg = (
            f"summary() describes one fit; these results hold a batch of shape {tuple(res.coef.shape[:-1])}. "
            "Select one first, e.g. type(d)(*(f[0, ...] for f in d)).summary()"
        )
        raise ValueError(msg)


def _fmt(v, width=10):
    if not math.isfinite(v):
        return f"{v!s:>{width}}"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:>{width}.3e}"
    return f"{v:>{width}.4f}"


def _p(p, width=10):
    """A p-value, always with four decimals (0.0000 below 5e-5), in the table and the header."""
    return f"{'nan' if math.isnan(p) else f'{p:.4f}':>{width}}"


class Summary(str):
    """The table of :meth:`Diagnostics.summary`: a ``str`` holding the text table (``print``
    shows it, and so does the interactive prompt), that renders as an HTML table in Jupyter
    (``_repr_html_``), as statsmodels' ``Summary``; ``as_text()`` and ``as_html()`` give both.

    The numbers behind the table, as Python floats (NaN where undefined or without SciPy):
    ``names`` (``const`` first with an intercept), ``pvalues`` and ``conf_int`` (pairs), in
    table order; ``fvalue`` and ``f_pvalue`` (the F test that every coefficient but the
    intercept is zero: ``(ESS / df_model) / sigma**2``, or statsmodels' Wald form with the
    robust covariance for the HC types, on ``df_model`` and ``df_resid`` degrees of freedom).
    """

    def __new__(cls, text, html_text="", **values):  # html_text optional: copy and pickle rebuild from text
        self = super().__new__(cls, text)
        self._html = html_text
        for name, value in values.items():
            setattr(self, name, value)
        return self

    def __repr__(self):
        return str(self)

    def as_text(self):
        return str(self)

    def as_html(self):
        return self._html

    def _repr_html_(self):
        return self._html


def _f_test(res, intercept, robust, rank, df_resid):
    """(F, p): the joint test of every coefficient but the intercept. Nonrobust: the ESS form
    ``(R² / df_model) / ((1 - R²) / df_resid)`` (uncentered R² without an intercept, as
    statsmodels); HC types: statsmodels' Wald form ``b^T pinv(V) b / rank(V)`` with the robust
    covariance V of the slopes (read to the host: n² numbers)."""
    import numpy as np

    df_model = rank - int(intercept)
    nan = float("nan")
    if df_model <= 0 or df_resid <= 0:
        return nan, nan, df_model
    if robust:
        p = res.cov.shape[-1]
        V = np.array([[float(res.cov[i, j]) for j in range(int(intercept), p)] for i in range(int(intercept), p)])
        b = np.array([float(res.coef[j]) for j in range(res.coef.shape[-1])])
        if not np.all(np.isfinite(V)):
            return nan, nan, df_model
        df_model = int(np.linalg.matrix_rank(V))
        F = float(b @ np.linalg.pinv(V) @ b) / df_model if df_model else nan
    else:
        r2 = float(res.r2)
        F = (r2 / df_model) / ((1 - r2) / df_resid) if r2 != 1 else float("inf")
    t = _t_dist()
    if t is None or math.isnan(F):
        return F, nan, df_model
    from scipy import stats

    return F, float(stats.f.sf(F, df_model, df_resid)), df_model


def _html(title, stats, head, rows, notes):
    e = html.escape
    out = ['<table class="simpletable">', f"<caption>{e(title)}</caption>"]
    out += [f"<tr><th>{e(a)}</th><td>{e(b)}</td><th>{e(c)}</th><td>{e(d)}</td></tr>" for a, b, c, d in stats]
    out += [
        "</table>",
        '<table class="simpletable">',
        "<tr><th></th>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>",
    ]
    for name, cells in rows:
        out.append(f"<tr><th>{e(name)}</th>" + "".join(f"<td>{e(c.strip())}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    if notes:
        out.append("<p>Notes:<br/>" + "<br/>".join(e(n) for n in notes) + "</p>")
    return "\n".join(out)


def summary(res, names=None, *, alpha=0.05, title=None, cov_type=None, use_t=None):
    """The :class:`Summary` of a single (unbatched, eager) ``Diagnostics`` result ``res``: what
    :meth:`Diagnostics.summary` returns (its docstring gives the arguments)."""
    _check(res)
    level = as_real(alpha)
    if level is None or not 0 < level < 1:
        msg = f"alpha must be a float in (0, 1); got {alpha!r}"
        raise ValueError(msg)
    alpha = level
    n = res.coef.shape[-1]
    intercept = res.cov.shape[-1] == n + 1  # p = n + fit_intercept (shape only)
    cov_type = getattr(res, "cov_type", None) if cov_type is None else str(cov_type)
    if use_t is None:
        use_t = cov_type in (None, "nonrobust")
    elif not isinstance(use_t, bool):
        msg = f"use_t must be None or a bool; got {use_t!r}"
        raise TypeError(msg)
    if names is None:
        names = getattr(res, "feature_names", None)
    if names is None:
        names = [f"x{j + 1}" for j in range(n)]
    names = [str(s) for s in names]
    if len(names) != n:
        msg = f"names must give one name per column of X ({n}); got {len(names)}"
        raise ValueError(msg)

    rows = [(nm, float(res.coef[j]), float(res.stderr[j]), float(res.tvalues[j])) for j, nm in enumerate(names)]
    if intercept:
        rows.insert(0, ("const", float(res.intercept), float(res.intercept_stderr), float(res.intercept_tvalue)))
    df_resid, rank = int(res.df_resid), int(res.rank)
    nobs = df_resid + rank
    dist = _reference(use_t, df_resid)
    robust = cov_type not in (None, "nonrobust")
    absorbed = int(getattr(res, "absorbed_rank", 0) or 0)  # fixed effects: not in the F test's df_model
    fvalue, f_pvalue, df_model = _f_test(res, intercept, robust, rank - absorbed, df_resid)

    name_w = max(11, *(len(r[0]) for r in rows)) + 1
    lo, hi = f"[{alpha / 2:.3g}", f"{1 - alpha / 2:.3g}]"
    stat = "t" if use_t else "z"
    heads = ("coef", "std err", stat, f"P>|{stat}|", lo, hi)
    head = f"{'':<{name_w}}" + "".join(f"{h:>11}" for h in heads)
    width = max(_WIDTH, len(head))
    target = getattr(res, "target_name", None)
    stats = [
        ("Dep. Variable:", target or "y", "Covariance Type:", cov_type or "not recorded"),
        ("No. Observations:", str(nobs), "R-squared:", _fmt(float(res.r2)).strip()),
        ("Df Residuals:", str(df_resid), "Adj. R-squared:", _fmt(float(res.r2_adj)).strip()),
        ("Df Model:", str(rank - absorbed - int(intercept)), "F-statistic:", _fmt(fvalue).strip()),
        ("Rank:", str(rank), "Prob (F-statistic):", _p(f_pvalue).strip()),
        ("Cond. No.:", f"{float(res.cond):.3g}", "Residual std (sigma):", _fmt(float(res.sigma)).strip()),
    ]
    half = width // 2
    title = title or "Least-squares diagnostics"
    lines = [title.center(width), "=" * width]
    lines += [f"{a:<22}{b:>{half - 22}}  {c:<22}{d:>{width - half - 24}}" for a, b, c, d in stats]
    lines += ["=" * width, head, "-" * width]
    pvalues, intervals, cells_of = [], [], []
    for nm, c, se, t in rows:
        if dist is None:
            p = lower = upper = float("nan")
            cells = [_fmt(c), _fmt(se), _fmt(t), f"{'n/a':>10}", f"{'n/a':>10}", f"{'n/a':>10}"]
        else:
            sf, ppf = dist
            p = float(2 * sf(abs(t)))
            q = float(ppf(1 - alpha / 2))
            lower, upper = c - q * se, c + q * se
            cells = [_fmt(c), _fmt(se), _fmt(t), _p(p), _fmt(lower), _fmt(upper)]
        pvalues.append(p)
        intervals.append((lower, upper))
        cells_of.append((nm, cells))
        lines.append(f"{nm:<{name_w}}" + "".join(f" {x}" for x in cells))
    lines.append("=" * width)
    notes = []
    if rank < n + int(intercept):
        notes.append(
            f"The design has rank {rank} < {n + int(intercept)} parameters: estimates are not unique; the "
            "coefficients are the minimum-norm solution, as lstsq's, scikit-learn's and numpy.linalg.pinv's."
        )
    if df_resid == 0:
        notes.append("No residual degrees of freedom: standard errors, tests and intervals are undefined (nan).")
    if dist is None:
        notes.append("P-values and confidence intervals need SciPy (not installed).")
    elif not use_t:
        notes.append("P-values and confidence intervals from the normal distribution (z), as for robust covariances.")
    if robust and df_model > 0 and not math.isnan(fvalue):
        notes.append(f"F-statistic: Wald test with the {cov_type} covariance.")
    if cov_type is None:
        notes.append("Covariance type not recorded (a result rebuilt from its fields): pass cov_type= to name it.")
    text = "\n".join(lines + notes)
    return Summary(
        text, _html(title, stats, heads, cells_of, notes), names=[r[0] for r in rows], pvalues=pvalues,
        conf_int=intervals, fvalue=fvalue, f_pvalue=f_pvalue,
    )  # fmt: skip
