"""A statsmodels-like text table for :class:`lsq_backends.diagnostics.Diagnostics`.

Eager only: the table needs the values on the host. They are read element by element with
``float()`` (part of the standard for 0-d arrays), which works on any device, including CuPy,
CUDA tensors and array-api-strict's non-default devices, where ``numpy.asarray`` refuses.
P-values and confidence intervals need Student's t (or the normal) distribution, which the
standard lacks: SciPy supplies it when installed (an optional dependency); without it those
columns read n/a.
"""

from __future__ import annotations

import math

from . import _compat

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


def summary(res, names=None, *, alpha=0.05, title=None, cov_type=None, use_t=None):
    """Text table of a single (unbatched, eager) :class:`Diagnostics` result ``res``: the body
    of :meth:`Diagnostics.summary`, whose docstring documents the parameters.

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
    """
    _check(res)
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        msg = f"alpha must be a float in (0, 1); got {alpha!r}"
        raise ValueError(msg)
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

    name_w = max(11, *(len(r[0]) for r in rows)) + 1
    lo, hi = f"[{alpha / 2:.3g}", f"{1 - alpha / 2:.3g}]"
    stat = "t" if use_t else "z"
    head = f"{'':<{name_w}}" + "".join(f"{h:>11}" for h in ("coef", "std err", stat, f"P>|{stat}|", lo, hi))
    width = max(_WIDTH, len(head))
    target = getattr(res, "target_name", None)
    stats = [
        ("Dep. Variable:", target or "y", "Covariance Type:", cov_type or "not recorded"),
        ("No. Observations:", str(nobs), "R-squared:", _fmt(float(res.r2)).strip()),
        ("Df Residuals:", str(df_resid), "Adj. R-squared:", _fmt(float(res.r2_adj)).strip()),
        ("Df Model:", str(rank - int(intercept)), "Residual std (sigma):", _fmt(float(res.sigma)).strip()),
        ("Rank:", str(rank), "Cond. No.:", f"{float(res.cond):.3g}"),
    ]
    half = width // 2
    lines = [(title or "Least-squares diagnostics").center(width), "=" * width]
    lines += [f"{a:<22}{b:>{half - 22}}  {c:<22}{d:>{width - half - 24}}" for a, b, c, d in stats]
    lines += ["=" * width, head, "-" * width]
    for nm, c, se, t in rows:
        if dist is None:
            p = lower = upper = float("nan")
            cells = [_fmt(c), _fmt(se), _fmt(t), f"{'n/a':>10}", f"{'n/a':>10}", f"{'n/a':>10}"]
        else:
            sf, ppf = dist
            p = float(2 * sf(abs(t)))
            q = float(ppf(1 - alpha / 2))
            lower, upper = c - q * se, c + q * se
            cells = [_fmt(c), _fmt(se), _fmt(t), _fmt(p), _fmt(lower), _fmt(upper)]
        lines.append(f"{nm:<{name_w}}" + "".join(f" {x}" for x in cells))
    lines.append("=" * width)
    notes = []
    if rank < n + int(intercept):
        notes.append(f"The design has rank {rank} < {n + int(intercept)} parameters: estimates are not unique.")
    if dist is None:
        notes.append("P-values and confidence intervals need SciPy (not installed).")
    elif not use_t:
        notes.append("P-values and confidence intervals from the normal distribution (z), as for robust covariances.")
    if cov_type is None:
        notes.append("Covariance type not recorded (a result rebuilt from its fields): pass cov_type= to name it.")
    return "\n".join(lines + notes)
