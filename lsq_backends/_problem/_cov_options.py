"""The options of the cluster- and autocorrelation-robust covariances of :func:`lsq_backends.diagnostics`,
checked: statsmodels' ``cov_kwds`` as keywords (``groups``, ``time``, ``n_groups``, ``maxlags``,
``kernel``, ``use_correction``). Shapes, dtypes and options are checked at once, before any work; the
range of the codes is a value check read with the fit's others (skipped on traced or lazy codes).
The covariances themselves: :mod:`lsq_backends._solvers.linalg.sandwich`.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

from .._backend import _compat
from ._input import failure

ROBUST_COV_TYPES = ("cluster", "HAC", "hac-groupsum", "hac-panel")
KERNELS = ("bartlett", "uniform")


class CovOptions(NamedTuple):
    """A robust covariance's validated options: codes (m,) or (m, 2) (``hac-panel``: panel numbers) or None,
    one static segment count per column of codes, the lags, the kernel, the correction (``True``/``False``,
    ``"hac"``, ``"cluster"``) and the absorbed rank that the corrections count among the parameters."""

    cov_type: str
    codes: Any
    n_groups: tuple
    maxlags: int
    kernel: str
    correction: Any
    absorbed: int = 0  # the rank of absorbed fixed effects: counted in p, the parameters of the corrections


def runs(xp, new, dtype):
    """Run numbers 0, 1, ... (m,) of ``dtype``, a new run at each row after the first where ``new`` (m - 1,)."""
    first = xp.zeros((1,), dtype=new.dtype, device=_compat.device(new))
    return xp.cumulative_sum(xp.astype(xp.concat([first, new]), dtype))


def panel_runs(xp, codes, by_time):
    """Each row's panel number (m,) from ``codes`` (m,): a new panel where the code changes (groups) or
    decreases (``by_time``); statsmodels' ``hac-panel`` panels."""
    return runs(xp, codes[1:] < codes[:-1] if by_time else codes[1:] != codes[:-1], codes.dtype)


COV_KEYWORDS = ("groups", "time", "n_groups", "maxlags", "kernel", "use_correction")
# The keywords each covariance type takes (the others must be left at None).
_TAKES = {
    "cluster": ("groups", "n_groups", "use_correction"),
    "HAC": ("maxlags", "kernel", "use_correction"),
    "hac-groupsum": ("time", "n_groups", "maxlags", "kernel", "use_correction"),
    "hac-panel": ("groups", "time", "maxlags", "kernel", "use_correction"),
}


def _as_codes(xp, X, a, name, cols):
    """``a`` as integer codes of X's namespace and device, of shape (m,) (or (m, 2) with ``cols == 2``)."""
    if hasattr(a, "to_numpy") and not _compat.is_array(a):  # pandas
        a = a.to_numpy()
    a = xp.asarray(a, device=_compat.device(X))
    m = X.shape[-2]
    if not _compat.isdtype(xp, a.dtype, "integral"):
        msg = f"{name} must hold integer codes (e.g. from pandas.factorize); got dtype {a.dtype}"
        raise TypeError(msg)
    shapes = [(m,)] + ([(m, 2)] if cols == 2 else [])
    if tuple(a.shape) not in shapes:
        want = " or ".join(map(str, shapes))
        msg = f"{name} must have shape {want} to match X of shape {tuple(X.shape)}; got shape {tuple(a.shape)}"
        raise ValueError(msg)
    return a


def _counts(xp, codes, name, n_groups, checks):
    """The static segment count of each column of ``codes`` (given, else ``max + 1``, one read of concrete
    codes); the check that every code lies in ``[0, count)`` recorded in ``checks``."""
    ncol = 1 if codes.ndim == 1 else codes.shape[1]
    columns = [codes] if codes.ndim == 1 else [codes[:, j] for j in range(ncol)]
    if n_groups is None:
        if _compat.is_lazy(codes):
            msg = "n_groups must be given when the codes are traced (jax.jit) or lazy (Dask): it is static"
            raise ValueError(msg)
        n_groups = tuple(int(xp.max(c)) + 1 if c.shape[0] else 1 for c in columns)
    else:
        given = n_groups if isinstance(n_groups, tuple | list) else (n_groups,)
        try:
            bad = isinstance(n_groups, bool) or len(given) != ncol or any(isinstance(g, bool) for g in given)
            n_groups = tuple(operator.index(g) for g in given)
        except TypeError:
            bad = True
        if bad or min(n_groups) < 1:
            want = "a positive int" if ncol == 1 else "a pair of positive ints (one per column of groups)"
            msg = f"n_groups must be {want}; got {given!r}"
            raise ValueError(msg)
    for c, g in zip(columns, n_groups, strict=True):
        ok = xp.all((c >= 0) & (c < g))
        msg = f"{name} must hold codes in [0, n_groups) = [0, {g}) (e.g. from pandas.factorize); some lie outside"
        checks.add(ok, failure(ValueError, msg))
    return n_groups


def cov_options(xp, X, cov_type, kwds, checks):
    """The validated :class:`CovOptions` of ``cov_type`` (one of ``ROBUST_COV_TYPES``) from the user's
    keywords ``kwds`` (a dict over ``COV_KEYWORDS``), or None for the other types (which take none of them).
    Shape, dtype and option errors raise now; the codes' range is recorded in ``checks``."""
    takes = _TAKES.get(cov_type, ())
    for name in COV_KEYWORDS:
        if kwds[name] is not None and name not in takes:
            users = [t for t, names in _TAKES.items() if name in names]
            msg = f"{name} is used only with cov_type {' or '.join(map(repr, users))}; got cov_type={cov_type!r}"
            raise ValueError(msg)
    if not takes:
        return None
    codes, n_groups = None, ()
    if cov_type == "hac-panel":  # the panels: runs of equal groups, or of increasing time
        if (kwds["groups"] is None) == (kwds["time"] is None):
            msg = "cov_type='hac-panel' needs one of groups= or time= (integer codes (m,), rows sorted by panel)"
            raise ValueError(msg)
        key = "time" if kwds["groups"] is None else "groups"
        codes = panel_runs(xp, _as_codes(xp, X, kwds[key], key, 1), key == "time")
    elif cov_type != "HAC":
        key = "groups" if cov_type == "cluster" else "time"
        if kwds[key] is None:
            msg = f"cov_type={cov_type!r} needs {key}= (integer codes of shape (m,){' or (m, 2)' * (key == 'groups')})"
            raise ValueError(msg)
        codes = _as_codes(xp, X, kwds[key], key, 2 if key == "groups" else 1)
        n_groups = _counts(xp, codes, key, kwds["n_groups"], checks)
    maxlags, kernel = 0, "bartlett"
    if "maxlags" in takes:
        given = kwds["maxlags"]
        try:
            maxlags = -1 if given is None or isinstance(given, bool) else operator.index(given)
        except TypeError:
            maxlags = -1
        if maxlags < 0:
            msg = f"cov_type={cov_type!r} needs maxlags=, a non-negative int; got {given!r}"
            raise ValueError(msg)
        kernel = "bartlett" if kwds["kernel"] is None else kwds["kernel"]
        if not isinstance(kernel, str) or kernel.lower() not in KERNELS:
            msg = f"kernel must be one of {', '.join(map(repr, KERNELS))}; got {kernel!r}"
            raise ValueError(msg)
        kernel = kernel.lower()
    correction = kwds["use_correction"]
    if cov_type in ("hac-groupsum", "hac-panel"):
        correction = ("cluster" if cov_type == "hac-groupsum" else "hac") if correction is None else correction
        if correction not in (False, "hac", "cluster") or correction is True:  # True == 1 is not False
            msg = f"use_correction must be False, 'hac' or 'cluster' with cov_type={cov_type!r}; got {correction!r}"
            raise ValueError(msg)
    else:
        correction = (cov_type == "cluster") if correction is None else correction
        if not isinstance(correction, bool):
            msg = f"use_correction must be a bool with cov_type={cov_type!r}; got {correction!r}"
            raise ValueError(msg)
    return CovOptions(cov_type, codes, n_groups, maxlags, kernel, correction)
