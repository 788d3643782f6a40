"""Validation of ridge penalties (``alpha`` of :func:`ridge` and the accumulators, ``alphas``
of :func:`ridge_cv` and the estimators): type, dtype and shape are checked at once; values
are read where that is free (a number, a NumPy array) or recorded in ``checks``."""

from __future__ import annotations

import math
import numbers

from .._backend import _compat
from ._kinds import check_kind, check_known_shape

__all__ = ["check_alpha_type", "failure", "validate_alpha"]

# The value errors of a penalty (both routes of :func:`validate_alpha`).
NOT_FINITE = "{name} must be finite (in X's dtype {dtype})"
NEGATIVE = "{name} must be non-negative"


def failure(exc, msg):
    """A callable raising ``exc(msg)``: the ``on_fail`` of a recorded check."""

    def raise_():
        raise exc(msg)

    return raise_


def _real(v):
    # numbers.Real covers int, float and NumPy's integer and float scalars, not bool or np.bool_.
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _flat(seq):
    for v in seq:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def check_alpha_type(alpha, name="alpha"):
    """Raise ``TypeError`` naming ``name`` unless ``alpha`` is a real number, a (nested) list or
    tuple of real numbers, or an array of an integer or real float dtype. Booleans, complex
    numbers and strings are refused: cast they would pass as penalties."""
    if _compat.is_array(alpha):
        check_kind(alpha, name)
        xp = _compat.array_namespace(alpha)
        dt = alpha.dtype
        if dt == xp.bool or not xp.isdtype(dt, ("real floating", "integral")):
            msg = f"{name} must have a real (integer or float) dtype; got {dt}"
            raise TypeError(msg)
    elif isinstance(alpha, (list, tuple)):
        bad = next((v for v in _flat(alpha) if not _real(v)), None)
        if bad is not None:
            msg = f"{name} must hold real numbers; got {bad!r} ({type(bad).__name__})"
            raise TypeError(msg)
    elif not _real(alpha):
        msg = f"{name} must be a non-negative number or a 1-D array of them; got {type(alpha).__name__}"
        raise TypeError(msg)


def _as_floats(alpha, name):
    """A number or (nested) sequence of them as Python floats; an integer beyond the float range
    is refused as not finite (``float()`` would raise OverflowError)."""
    try:
        if isinstance(alpha, (list, tuple)):
            return [_as_floats(v, name) for v in alpha]
        return float(alpha)
    except OverflowError as exc:
        msg = f"{name} must be finite; got an integer too large for a float"
        raise ValueError(msg) from exc


def validate_alpha(xp, alpha, k, dtype, dev, per_target, checks=None, name="alpha"):
    """alpha as an array: (1,) for one penalty, (k,) for one per target (``per_target``), or
    (a,) for a path (a 1-D alpha otherwise). The meaning follows the shape and the flag only,
    never the values, so a path of k penalties is not mistaken for per-target penalties."""
    if (type(alpha) is float or type(alpha) is int) and not per_target:  # one plain number: checked at once
        value = alpha if type(alpha) is float else _as_floats(alpha, name)
        if not math.isfinite(value) or abs(value) > float(_compat.finfo(xp, dtype).max):
            failure(ValueError, NOT_FINITE.format(name=name, dtype=dtype))()
        if value < 0:
            failure(ValueError, NEGATIVE.format(name=name))()
        return xp.reshape(_compat.constants(xp, value, dtype, dev, shared=True), (1,))  # read only: one array
    check_alpha_type(alpha, name)
    if _compat.is_array(alpha):
        if _compat.array_namespace(alpha) is not xp and not _compat.is_host_array(alpha):
            msg = f"{name} must come from the same array library as X"
            raise TypeError(msg)
        check_known_shape(alpha, name)
        a = given = alpha
    else:
        a = given = _as_floats(alpha, name)
    same = _compat.is_array(a) and _compat.array_namespace(a) is xp and a.dtype == dtype
    same = same and (dev is None or _compat.device(a) is None or repr(_compat.device(a)) == repr(dev))
    # A NumPy alpha next to Dask X becomes a Dask array too (mixed, it was left NumPy and its
    # checks below went through Dask, a compute inside the fit). An alpha on another device
    # (a CPU tensor next to CUDA X) is moved to X's: it is small.
    if not same:
        try:
            if _compat.is_array(a) and not _compat.is_host_array(a):
                a = xp.asarray(a, dtype=dtype, device=dev)
            else:  # host values: filled in on X's device (a copy from host memory blocks a GPU)
                a = _compat.constants(xp, a, dtype, dev)
        except Exception as exc:
            import numpy as np

            host = np.asarray(a, dtype=np.float64) if not _compat.is_array(a) or _compat.is_host_array(a) else None
            if host is not None and np.any(np.abs(host) > float(xp.finfo(dtype).max)):
                msg = f"{name} must be finite in X's dtype {dtype}; got a value beyond its largest"
                raise ValueError(msg) from exc
            msg = f"{name} could not be moved to X's device {dev!r} (it is on {getattr(a, 'device', None)!r}); move it first"
            raise ValueError(msg) from exc
    if per_target:
        if a.ndim != 1 or a.shape[0] != k:
            count = f": {a.shape[0]} != {k}" if a.ndim == 1 else ""  # scikit-learn's words (penalties != targets)
            msg = (
                f"Number of targets and number of penalties do not correspond{count}; {name} must have shape ({k},) "
                f"with per_target=True, one penalty per column of y; got shape {tuple(a.shape)}"
            )
            raise ValueError(msg)
    elif a.ndim == 0:
        a = xp.reshape(a, (1,))
    elif a.ndim != 1 or a.shape[0] == 0:
        msg = f"{name} must be a scalar or a non-empty 1-D array (a path of penalties); got shape {tuple(a.shape)}"
        raise ValueError(msg)
    # Values are read as given where that is free (a number, a NumPy array), recorded in
    # ``checks`` for an eager array on a device, never read from a lazy array. Finite means
    # finite in X's dtype: 1e300 is infinite in float32.
    not_finite = failure(ValueError, NOT_FINITE.format(name=name, dtype=dtype))
    negative = failure(ValueError, NEGATIVE.format(name=name))
    if not _compat.is_array(given) or _compat.is_host_array(given):
        import numpy as np

        g = np.asarray(given)
        # The limit as a float64 scalar: a Python float next to a float32 alpha (a NumPy scalar
        # or array) would be cast to float32 and overflow, with a RuntimeWarning.
        if not np.all(np.isfinite(g)) or np.any(np.abs(g) > np.float64(xp.finfo(dtype).max)):
            not_finite()
        if np.any(g < 0):
            negative()
    elif not _compat.is_lazy(a):
        own = checks is None
        checks = _compat.Checks() if own else checks
        checks.add(xp.all(xp.isfinite(a)), not_finite)
        checks.add(xp.logical_not(xp.any(a < 0)), negative)
        if own:
            checks.read(xp)
    return a
