"""The solver layer: one module per method, each ending with the :class:`Record` that describes
it (``RECORD``), collected here in one registry.

``Method`` names the methods (the module of each is its name): ``METHODS``, the record of
each (:func:`record`), the type of the public ``method=`` arguments (``_types.Method``), the
capability rows (``lsq_backends.capabilities``), the self-check's and the tests' method lists
all come from it. Adding a method is one file here (its ``solve`` returning a
:class:`Solution` from every branch, its ``RECORD`` last) plus its name in ``Method``; nothing
outside this package compares method names, it asks the record (``record(m).iterative``).
An iterative method's ``precondition`` option (``"columns"``) runs its solve through
``_krylov.preconditioned``.

Direct methods: ``solve(xp, X, Y, alpha, given=NOTHING, *, operators=False)``, one signature for
all: ``given`` (:class:`Given`) holds the user's ``rcond``, what centering removed from the
squared column norms (``offset_sq``, for the rank tests), X's deferred finiteness test
(``check``, run on a Gram product of X, one formed for it where the method forms none) and the
Gram route's view of tall X (``data``, ``_gram_data.TallGram``); ``operators`` asks for the
``_operators.Operators`` solved with (``Solution.operators``). A caller holding a direct method's record
calls ``record(m).solve`` (``_api``). Iterative methods (``record.iterative``): ``solve(xp, X,
Y, alpha, given=NOTHING)``, X an array or a ``_problem._operator.LinearMap``, their options (the
record's ``options``: atol, btol, max_iter, ...) in ``given.options``.
:func:`solve` calls either kind by name.

This module is also the layer's one door: every name the layers above use is exported here
(``__all__``: the registry and its checks, and the blocks the entry points, the derivative rules,
the accumulators, the penalty grids and the diagnostics build on); ``tests/house/test_structure.py``
holds the few imports of inner modules that remain."""

from __future__ import annotations

from importlib import import_module
from typing import Literal, get_args

from .._problem._input import check_count, check_fraction
from . import spectral
from ._record import DIRECT_FEATURES, NOTHING, SVD_SYNC, Given, Record, Solution
from .linalg import lean
from .linalg._gram_data import TallGram
from .linalg._krylov import PRECONDITIONERS, preconditioned
from .linalg._operator_gram import MapGram
from .linalg._operators import OperatorFunctions
from .linalg._shared import add_penalty, default_cutoff, merge_targets, split_targets
from .linalg.householder import solve as householder_solve
from .linalg.pinv import filtered_solve, uncentered_scale
from .linalg.rank import certified
from .linalg.refine import refine as refine_augmented
from .linalg.sandwich import robust_cov
from .lsqr import drop_centering_noise
from .nnls import solve as solve_nnls
from .spectral import over_alphas, solve_path

# The one door into the solver layer: the registry and its checks (below), and the blocks the layers above
# build on. ``spectral`` (penalty paths, leave-one-out, folds) is a solver module the ridge layer uses whole.
__all__ = [
    "DEFAULT", "DIRECT_FEATURES", "METHODS", "NOTHING", "RECORDS", "SVD_SYNC", "Given", "MapGram", "Method",
    "OperatorFunctions", "Record", "Solution", "TallGram", "add_penalty", "certified", "check_method", "check_options",
    "default_cutoff", "drop_centering_noise", "filtered_solve", "householder_solve", "lean", "merge_targets",
    "over_alphas", "record", "refine_augmented", "robust_cov", "solve", "solve_nnls", "solve_path", "solver_options",
    "spectral", "split_targets", "uncentered_scale",
]  # fmt: skip

Method = Literal["auto", "normal", "qr", "svd", "lsqr", "lsmr"]  # one name per solver module
DEFAULT: Method = "auto"  # every entry point's default ``method=``

RECORDS: tuple[Record, ...] = tuple(import_module(f"{__name__}.{name}").RECORD for name in get_args(Method))
METHODS: tuple[str, ...] = tuple(r.name for r in RECORDS)
_BY_NAME = {r.name: r for r in RECORDS}


def record(method) -> Record:
    """The :class:`Record` of ``method`` (a name of ``METHODS``; ``_input.check_method``
    validates user input first)."""
    return _BY_NAME[method]


def solve(xp, X, Y, alpha, method, given=NOTHING, operators=False) -> Solution:
    """Any method's solve, by name, as a :class:`Solution`, given ``given`` (:class:`Given`; an iterative
    method's options in ``given.options``, a ``precondition`` among them run here). ``operators`` asks a direct method for the
    ``_operators.Operators`` it solved with (iterative methods have none: None)."""
    rec = record(method)
    if not rec.iterative:
        return rec.solve(xp, X, Y, alpha, given, operators=operators)
    if given.options and given.options.get("precondition") is not None:
        return preconditioned(xp, rec.solve, X, Y, alpha, given)
    return rec.solve(xp, X, Y, alpha, given)


def check_options(method, atol, btol, max_iter, conlim=None, x0=None, precondition=None):
    """Validate the iterative options (before any work): each given one must be among the
    method's (``Record.options``: ``atol``, ``btol``, ``max_iter`` and ``precondition`` of both
    Krylov methods, ``conlim`` and ``x0`` of ``lsmr``). Returns ``atol``, ``btol`` and
    ``max_iter`` as Python numbers (NumPy scalars accepted), None where not given."""
    if atol is None and btol is None and max_iter is None and conlim is None and x0 is None and precondition is None:
        return None, None, None  # none given (a direct method's call), at once
    if precondition is not None and (not isinstance(precondition, str) or precondition not in PRECONDITIONERS):
        msg = f"precondition must be None or one of {PRECONDITIONERS}; got {precondition!r}"
        raise ValueError(msg)
    given = {"atol": atol, "btol": btol, "max_iter": max_iter, "precondition": precondition, "conlim": conlim, "x0": x0}
    foreign = {}  # the methods that take them -> the options
    for name, value in given.items():
        if value is not None and name not in record(method).options:
            foreign.setdefault(tuple(r.name for r in RECORDS if name in r.options), []).append(name)
    for takers, names in foreign.items():
        methods = " or ".join(f"'{m}'" for m in takers)
        msg = f"{', '.join(names)} apply to method={methods} only; got method={method!r}"
        raise ValueError(msg)
    if conlim is not None and (isinstance(conlim, bool) or not isinstance(conlim, (int, float)) or not conlim > 0):
        msg = f"conlim must be None or a positive number (a bound on the condition estimate); got {conlim!r}"
        raise ValueError(msg)
    return check_fraction(atol, "atol"), check_fraction(btol, "btol"), check_count(max_iter, "max_iter")


def check_method(method, rcond):
    """Validate ``method`` and ``rcond``; returns ``rcond`` as a Python float (or None). ``rcond`` is a
    cutoff on singular values, which only the direct methods resolve. With ``method="lsmr"`` or
    ``"lsqr"`` (no singular values, no rank estimate) an explicit one is refused rather than ignored."""
    if method not in METHODS:
        msg = f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}"
        raise ValueError(msg)
    if rcond is None:
        return None
    rcond = check_fraction(rcond, "rcond")
    if record(method).iterative:
        msg = (
            f"rcond applies to the direct methods (a singular-value cutoff); method={method!r} estimates no "
            f"singular values: leave rcond=None and set its accuracy with atol/btol; got rcond={rcond!r}"
        )
        raise ValueError(msg)
    return rcond


def solver_options(method, atol, btol, max_iter, conlim=None, x0=None, precondition=None):
    """The keyword arguments of the iterative ``method``'s solver: atol, btol, max_iter,
    precondition (``_solvers.solve`` takes it off), and its record's ``options`` (``lsmr``:
    ``conlim`` and ``x0`` too). A direct method takes none (``check_options`` refused any)."""
    rec = record(method)
    options = {"atol": atol, "btol": btol, "max_iter": max_iter, "precondition": precondition}
    options.update((k, v) for k, v in (("conlim", conlim), ("x0", x0)) if k in rec.options)
    return options
