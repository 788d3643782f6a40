"""Input validation shared by every fit: step 1 (:func:`validate`); step 2 is ``_prepare.prepare``.

Validation looks at shapes, dtypes and devices first, then (when ``check_finite``) at values.
Value checks are recorded as small device arrays (``_compat.Checks``) and read together, in one
host read. That read comes at the end of ``_prepare.prepare``. For a fit (``defer_checks``) it comes
with the solver's first route decision instead: a well-conditioned fit on a GPU waits for the
device once. Value checks are skipped for lazy arrays (JAX tracers under ``jax.jit``, Dask
graphs), where reading a value would force a computation or fail. Concrete JAX arrays are
checked.

``gram_check``: the diagonal of the Gram matrix of the prepared X (centered, weighted, intercept
eliminated: NaN and infinity propagate through all of it) holds each column's sum of squares
(for wide X, each row's). It is non-finite exactly when that column holds NaN or infinity, or
when huge finite values overflow. (A non-finite entry is never zero, so no BLAS can skip it.)
Only then is X itself tested. That saves the separate pass over X, and the error is still
raised, with the other value checks, before the solution is.

``validate_alpha``: ridge penalties (``alpha`` of :func:`ridge` and the accumulators, ``alphas``
of :func:`ridge_cv` and the estimators): type, dtype and shape are checked at once; values are
read where that is free (a number, a NumPy array) or recorded in ``checks``.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import operator
import sys
from typing import NamedTuple

import numpy as np

from .._backend import _compat
from .._backend._compat import Array, Checks, Namespace
from ._frames import from_pandas
from ._kinds import check_kind, check_known_shape
from ._operator import is_operator_input
from ._scaling import flushed


def as_array(xp, a, name, dev, like=None):
    """``a`` as an array of ``xp`` on ``dev``. A list or scalar takes the float dtype ``like`` of the
    array arguments where there is one: torch would make float32 of a list of floats next to
    float64 X. A pandas DataFrame or Series is read column by column (``_frames``)."""
    if _compat.is_array(a):
        return a
    a = from_pandas(a, name)
    try:
        arr = xp.asarray(a, device=dev)
        if like is not None and _compat.isdtype(xp, arr.dtype, "real floating") and arr.dtype != like:
            arr = xp.asarray(a, dtype=like, device=dev)
        return arr
    except Exception as exc:
        msg = f"{name} must be an array or convertible to one; got {type(a).__name__}"
        raise TypeError(msg) from exc


def namespace_of(X, y, sample_weight):
    named = {"X": X, "y": y, "sample_weight": sample_weight}
    arrays = {k: v for k, v in named.items() if _compat.is_array(v)}
    if not arrays:
        return _compat.array_namespace(np.empty(0))
    try:
        return _compat.array_namespace(*arrays.values())
    except TypeError as exc:
        kinds = ", ".join(f"{k}: {type(v).__module__}.{type(v).__name__}" for k, v in arrays.items())
        msg = f"X, y and sample_weight must come from one array library; got {kinds}"
        raise TypeError(msg) from exc


SUPPORTED = "float32 or float64 (integers are cast to the default float dtype)"


def check_dtype(xp, a, name):
    """Raise ``TypeError`` naming ``name`` unless ``a`` has a supported dtype: float32, float64, or
    an integer dtype. float16, bfloat16 and NumPy's longdouble are refused. No library factors in
    half precision, and longdouble would silently come back as float64."""
    dt = a.dtype
    if dt == xp.float64 or dt == xp.float32:  # the common case, decided at once
        return
    if dt == xp.bool:
        msg = f"{name} has a boolean dtype; least squares needs real numbers (cast it first)"
        raise TypeError(msg)
    if _compat.isdtype(xp, dt, "complex floating"):
        msg = f"{name} is complex ({dt}); complex least squares is not supported"
        raise TypeError(msg)
    floating = _compat.isdtype(xp, dt, "real floating")
    if floating and dt != xp.float32 and dt != xp.float64:
        msg = (
            f"{name} has dtype {dt}; the supported dtypes are {SUPPORTED}: cast it first, e.g. "
            f"xp.astype({name}, xp.float32) ({name}.astype(np.float32), {name}.float() in PyTorch)"
        )
        raise TypeError(msg)
    if not floating and not _compat.isdtype(xp, dt, "integral"):
        msg = f"{name} must have a real numeric dtype, {SUPPORTED}; got {dt}"
        raise TypeError(msg)


def _check_finite(xp, a, name, checks):
    if a is None or _compat.is_lazy(a) or math.prod(a.shape) == 0:
        return
    # Fast path: NaN and infinity propagate through a product with a vector of ones (one
    # matrix-vector pass, no boolean temporary of the size of ``a``); only a non-finite sum,
    # which overflow of huge finite values could also give, needs the exact test.
    checks.add(_compat.finite_test(xp, a), lambda: _exact_finite(xp, a, name))


def check_finite_values(xp, a, name):
    """Raise ``ValueError`` naming ``name`` if the eager array ``a`` holds NaN or infinity (one
    host read; nothing is read from a lazy array)."""
    checks = _compat.Checks()
    _check_finite(xp, a, name, checks)
    checks.read(xp)


def gram_check(xp, X, check_finite, checks):
    """The finiteness test of X deferred to its Gram matrix (``normal`` and ``auto``), or None.

    The returned ``check(A)`` records in ``checks`` that diag(A) is finite (nothing is read); only
    where it is not is X itself tested (module docstring: ``gram_check``)."""
    if not check_finite or _compat.is_lazy(X) or math.prod(X.shape) == 0:
        return None

    def check(A, offset_sq=None):
        checks.add(_compat.reduce_all(xp, xp.isfinite(_compat.diagonal(xp, A))), lambda: _exact_finite(xp, X, "X"))

    return check


def _exact_finite(xp, a, name):
    if not bool(xp.all(xp.isfinite(a))):
        msg = (
            f"{name} contains NaN or infinity; remove those rows or pass check_finite=False "
            "to skip this check (the result is then undefined)"
        )
        raise ValueError(msg)


def check_devices(arrays):
    devs = {name: _compat.device(a) for name, a in arrays.items() if a is not None}
    # JAX tracers (under grad/vmap) report no device: nothing to compare.
    devs = {name: d for name, d in devs.items() if d is not None}
    first = next(iter(devs.values()), None)
    if all(d is first or (type(d) is type(first) and d == first) for d in devs.values()):
        return  # one device (the common case, without the reprs)
    if len({repr(d) for d in devs.values()}) > 1:
        where = ", ".join(f"{k} on {d!r}" for k, d in devs.items())
        msg = f"X, y and sample_weight must be on one device; got {where}"
        raise ValueError(msg)


def check_bool(value, name):
    """A flag as a Python bool (static under ``jax.jit``, hashable): Python and NumPy bools are
    accepted, anything else (``1``, ``"False"``, an array) is refused with a ``TypeError``."""
    if isinstance(value, bool):
        return value
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.bool_):
        return bool(value)
    msg = f"{name} must be a bool (True or False); got {value!r} ({type(value).__name__})"
    raise TypeError(msg)


def _converted(X, y, sample_weight):
    """The namespace, the device and the inputs as arrays of that namespace, after the checks
    of kind, known shape and device."""
    for name, a in (("X", X), ("y", y), ("sample_weight", sample_weight)):
        check_kind(a, name)
    xp = namespace_of(X, y, sample_weight)
    dev = None
    like = None  # a float dtype given by an array argument: lists are converted to it
    for a in (X, y, sample_weight):
        if _compat.is_array(a):
            dev = _compat.device(a) if dev is None else dev
            if like is None and _compat.isdtype(xp, a.dtype, "real floating"):
                like = a.dtype
    X = as_array(xp, X, "X", dev, like)
    y = as_array(xp, y, "y", dev, like)
    if sample_weight is not None:
        sample_weight = as_array(xp, sample_weight, "sample_weight", dev, like)
    for name, a in (("X", X), ("y", y), ("sample_weight", sample_weight)):
        check_known_shape(a, name)
    check_devices({"X": X, "y": y, "sample_weight": sample_weight})
    return xp, dev, X, y, sample_weight


class Validated(NamedTuple):
    """Inputs that passed the shape, dtype and device checks, cast to one float dtype; their
    value checks recorded in ``checks``, not yet read."""

    xp: Namespace
    X: Array  # (..., m, n)
    Y: Array  # (..., m, k)
    sample_weight: Array | None  # (m,) or (..., m)
    alpha: Array | None  # validated alpha array
    y_was_vector: bool
    checks: Checks
    fit_intercept: bool = False
    check_finite: bool = True
    x_check_deferred: bool = False  # X's finiteness left to its Gram matrix (:func:`gram_check`)
    traits: _compat.Traits | None = None  # ``_compat.traits(xp)``, asked once for the fit


class Penalty(NamedTuple):
    """The penalty of a penalized fit, as the entry point took it: ``alpha`` (a number or an
    array, checked by :func:`validate_alpha`), one per target or not, and the name errors
    call it by (``alphas`` for ``ridge_cv``)."""

    alpha: object  # a number, a list or an array: as the caller gave it
    per_target: bool = False
    name: str = "alpha"


def validate(X, y, sample_weight, *, fit_intercept, check_finite, penalty=None, defer_x_check=False, values=True):
    """Step 1 of every fit: convert and check the inputs (kinds, shapes, dtypes, devices, and
    ``penalty``, a :class:`Penalty` or None). Value checks are recorded in the returned ``checks``
    (read them with ``checks.read(xp)``). With ``defer_x_check`` X's finiteness is left to its
    Gram matrix (:func:`gram_check`); with ``values=False`` no value check but a penalty's (the lean route)."""
    ridge = penalty is not None
    alpha, per_target, alpha_name = penalty if ridge else (None, False, "alpha")
    plain = _compat.plain_numpy(X, y, sample_weight)
    if plain:
        # Plain NumPy arrays (not subclasses: no masked array) pass the checks of kind, known
        # shape and device by construction, and need no conversion.
        xp = _compat.memo("numpy namespace", lambda: _compat.array_namespace(X))
        dev = _compat.device(X)
    elif (tensors := _compat.plain_tensors(X, y, sample_weight)) is not None:  # likewise: dense, one device
        xp, dev = tensors
    else:
        xp, dev, X, y, sample_weight = _converted(X, y, sample_weight)

    if X.ndim < 2:
        msg = f"X must have shape (m, n) or (..., m, n); got shape {tuple(X.shape)}"
        raise ValueError(msg)
    batch, m = tuple(X.shape[:-2]), X.shape[-2]
    if y.ndim == X.ndim - 1:
        y_was_vector = True
    elif y.ndim == X.ndim:
        y_was_vector = False
    else:
        msg = f"y must have shape {batch + (m,)} or {batch + (m, 'k')} to match X of shape {tuple(X.shape)}; got shape {tuple(y.shape)}"
        raise ValueError(msg)
    if tuple(y.shape[: len(batch)]) != batch or y.shape[len(batch)] != m:
        msg = f"y must have {m} rows (and batch shape {batch}) to match X of shape {tuple(X.shape)}; got shape {tuple(y.shape)}"
        raise ValueError(msg)
    if sample_weight is not None and tuple(sample_weight.shape) not in ((m,), batch + (m,)):
        msg = f"sample_weight must have shape ({m},) or {batch + (m,)}; got shape {tuple(sample_weight.shape)}"
        raise ValueError(msg)
    for name, a in (("X", X), ("y", y), ("sample_weight", sample_weight)):
        if a is not None:
            check_dtype(xp, a, name)

    if X.dtype == y.dtype and (X.dtype == xp.float64 or X.dtype == xp.float32):
        dtype = X.dtype  # the common case, decided at once
    else:
        floats = [a.dtype for a in (X, y) if _compat.isdtype(xp, a.dtype, "real floating")]
        dtype = xp.result_type(*floats) if floats else _compat.default_dtypes(xp, dev)[0]
    X = xp.astype(X, dtype, copy=False) if X.dtype != dtype else X
    y = xp.astype(y, dtype, copy=False) if y.dtype != dtype else y
    if sample_weight is not None and sample_weight.dtype != dtype:
        sample_weight = xp.astype(sample_weight, dtype, copy=False)
    Y = y[..., None] if y_was_vector else y
    Y = Y if plain else _compat.align_rows(xp, Y, X)  # plain NumPy: one block, laid out as it is

    checks = _compat.Checks()
    traits = _compat.traits(xp)
    if ridge:
        alpha = validate_alpha(xp, alpha, Y.shape[-1], dtype, dev, per_target, checks, alpha_name)
    if fit_intercept and m == 0:
        msg = "fit_intercept=True needs at least one sample (X has 0 rows)"
        raise ValueError(msg)
    if check_finite and values:
        if not defer_x_check:
            _check_finite(xp, X, "X", checks)
        _check_finite(xp, y, "y", checks)
        _check_finite(xp, sample_weight, "sample_weight", checks)
        if traits.flushes_subnormals:  # subnormals read as zero (JAX): refused
            arrays = (("X", X), ("y", y), ("sample_weight", sample_weight), (alpha_name, alpha if ridge else None))
            for name, a in arrays:
                ok, msg = flushed(xp, a, name, each=name == alpha_name)
                if ok is not None:
                    checks.add(ok, failure(ValueError, msg))
    if values and sample_weight is not None and not _compat.is_lazy(sample_weight) and m > 0:
        checks.add(xp.logical_not(xp.any(sample_weight < 0)), failure(ValueError, "sample_weight must be non-negative"))
        if fit_intercept:
            msg = "sample_weight must have a positive sum to fit an intercept"
            checks.add(xp.all(xp.sum(sample_weight, axis=-1) > 0), failure(ValueError, msg))
    return Validated(
        xp, X, Y, sample_weight, alpha if ridge else None, y_was_vector, checks, fit_intercept, check_finite,
        defer_x_check and check_finite, traits,
    )  # fmt: skip


def validated_now(X, y, sample_weight, **kwargs):
    """:func:`validate` with its value checks read at once (one host read), and ``y`` in the
    caller's layout (a vector stays a vector). These are the checked arguments of an eager JAX
    call, which then runs compiled with ``check_finite=False``. Returns ``(Validated, y)``."""
    v = validate(X, y, sample_weight, **kwargs)
    v.checks.read(v.xp)
    return v, v.Y[..., 0] if v.y_was_vector else v.Y


def compiled_fit(fn, static, X, y, sample_weight, kwargs, check_finite, penalty=None):
    """The eager-JAX route of ``fn`` (``lstsq``, ``ridge``, ``nnls``). The inputs are validated, their checks read
    now (one host read). Then ``fn`` runs compiled (``_compat.compiled``, ``static``: its static arguments), with
    ``check_finite=False``. ``kwargs``: ``fn``'s other keywords (``fit_intercept`` among them). ``penalty``: ``(alpha,
    per_target, whole)``; ``whole`` passes the validated (kα,) as it is (per target, a path), else its one value."""
    v, y = validated_now(
        X, y, sample_weight, fit_intercept=kwargs["fit_intercept"], check_finite=check_finite,
        penalty=None if penalty is None else Penalty(penalty[0], penalty[1]),
    )  # fmt: skip
    if penalty is not None:
        kwargs = {**kwargs, "alpha": v.alpha if penalty[2] else v.alpha[0]}
    return _compat.compiled(fn, static)(v.X, y, sample_weight=v.sample_weight, check_finite=False, **kwargs)


def as_integer(value):
    """``value`` as a Python int where it is an integer (an ``int``, a NumPy integer scalar:
    anything ``operator.index`` takes), else None; booleans are not integers here (NumPy's
    bool has no ``__index__``)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def as_real(value):
    """``value`` as a Python float where it is a real number (``numbers.Real``: int, float,
    NumPy's integer and float scalars), else None; booleans are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def check_count(value, name, minimum=1, what="None or a positive integer"):
    """An iteration budget or block size: None or an integer >= ``minimum`` (NumPy's integer
    scalars too), returned as a Python int; ``ValueError`` otherwise, bools refused."""
    if value is None:
        return None
    count = as_integer(value)
    if count is None or count < minimum:
        msg = f"{name} must be {what}; got {value!r}"
        raise ValueError(msg)
    return count


def check_fraction(value, name):
    """A relative tolerance: None or a number in [0, 1) (NumPy's scalars too), returned as a
    Python float; ``ValueError`` otherwise, bools refused."""
    if value is None:
        return None
    x = as_real(value)
    if x is None or not 0 <= x < 1:
        msg = f"{name} must be None or a number in [0, 1); got {value!r}"
        raise ValueError(msg)
    return x


def operator_route(target):
    """The decorator of an entry point (``lstsq``, ``ridge``, ``ridge_cv``): a sparse or operator X goes to
    ``target`` with the arguments as bound (defaults included); dense X goes on with its CuPy arguments' device
    current (``_compat.device_scope``), a NumPy X or a dense torch tensor at once (another library beside it: refused)."""

    def decorate(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def entry(X, y, /, *args, **kwargs):
            if type(X) is np.ndarray or _compat.is_dense_tensor(X):  # neither an operator nor on a CuPy device
                return fn(X, y, *args, **kwargs)
            if is_operator_input(X):
                bound = signature.bind(X, y, *args, **kwargs)
                bound.apply_defaults()
                return target(**bound.arguments)
            with _compat.device_scope(X, y, *args, *kwargs.values()):
                return fn(X, y, *args, **kwargs)

        return entry

    return decorate


# Penalties

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
        # finite as a Python float: finite in float64, and in a narrower dtype where within its largest
        if not math.isfinite(value) or (dtype != xp.float64 and abs(value) > float(_compat.finfo(xp, dtype).max)):
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
