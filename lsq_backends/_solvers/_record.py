"""The solver contract: what every method's ``solve`` returns (:class:`Solution`) and the record
that describes the method (:class:`Record`), which every solver file ends with (``RECORD``).

The registry (``lsq_backends._solvers``) collects the records; everything outside the solver
layer asks a record what a method can do (``record.iterative``, ``record.forms_gram``, ...)
and never compares method names. Records are static Python data: read while a fit is traced
(``jax.jit``), never branched on array values."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .._backend._compat import Array

if TYPE_CHECKING:
    from .linalg._operators import Operators


class Solution(NamedTuple):
    """What every method's ``solve`` returns, from every branch."""

    coef: Array  # (..., n, k)
    rank: Array  # (...,) integer; -1 where an iterative method estimates none (least squares)
    s: Array | None = None  # (..., min(m, n)) singular values: svd only
    n_iter: Array | None = None  # (..., k) iterations: the iterative methods only
    rss: Array | None = None  # (..., k) residual sum of squares: the refined normal equations
    operators: Operators | None = None  # the derivative's operators, when asked (``operators=True``)
    istop: Array | None = None  # (..., k) why each target stopped: lsmr only


class Given(NamedTuple):
    """What a solve is given besides X, Y and alpha, as one argument through every layer: the user's ``rcond`` (None:
    the default cutoff), ``offset_sq`` (what centering removed from X's squared column norms: the rank tests),
    ``check`` (X's deferred test, run on a Gram product), ``data`` (the Gram route's ``TallGram``), ``options`` (an
    iterative method's keywords). ``Record``'s docstring: which methods read which."""

    rcond: float | None = None
    offset_sq: Array | None = None
    check: Callable[..., None] | None = None
    data: Any = None
    options: Mapping[str, Any] | None = None


NOTHING = Given()  # a solve with the defaults: no intercept, nothing deferred


# A direct method's row of the capability table (``lsq_backends.capabilities``): every
# feature but the counts, which each record gives.
DIRECT_FEATURES = {
    "jit": True,
    "vmap": True,
    "jax_grad": True,
    "torch_autograd": True,
    "dask_lazy": True,
    "sharded": False,
}
SVD_SYNC = "+1 on a rank fallback (its SVD)"  # torch-CUDA: cuSOLVER's error flag, read on the host


class Record(NamedTuple):
    """What a method is and can do.

    - ``name``: the ``method=`` string; the solver file's name.
    - ``solve``: the module's ``solve``. Direct methods:
      ``solve(xp, X, Y, alpha, given=NOTHING, *, operators=False)`` (:class:`Given`);
      iterative ones: ``solve(xp, X, Y, alpha, given=NOTHING)``, their options in ``given.options``. Both return a :class:`Solution`.
    - ``forms_gram``: forms X's Gram matrix on its common route (``qr`` and ``svd``:
      CholeskyQR2's first product; a route without one forms it for the test): reads
      ``given.check`` (X's finiteness test and scale certificate run on the Gram matrix,
      deferred) and ``given.data`` (``_gram_data.TallGram``: centering on the n x n side, the
      solver then returning the centered problem's rss), so the entry points defer the X check
      and center on the Gram route.
    - ``iterative``: touches X only through products (sparse and operator X, warm starts): no
      ``rcond`` (no rank estimate), no ``refine``, no penalty path; its factor for the
      derivative rules is LSQR's operators.
    - ``singular_values``: reports X's singular values (``Solution.s``, ``singular_values``).
    - ``stops``: reports why each target stopped (``Solution.istop``).
    - ``path_route``: how a 1-D ``alpha`` path factors (``spectral.solve_path``): ``"gram"``,
      ``"svd"``, ``"auto"`` (``gram`` where accurate enough, else ``svd``); None: no path.
    - ``options``: the keyword options it takes beyond ``rcond`` (``atol``, ...).
    - ``matrix_free``: the method that fits a sparse or operator X in its stead (itself for the
      iterative ones), None where such an X is refused.
    - ``sparse_gram``: the direct method that fits a sparse X from its Gram matrix, formed by a sparse product into
      a dense n x n array (``normal`` for ``normal`` and ``auto``), None where the method factorizes X itself.
    - ``error_bound``: the first-order bound on coef's relative error it is held to (the
      self-check, ``lsq_backends.check``): ``"cond"`` eps (kappa + kappa**2 eta) (backward
      stable), ``"cond**2"`` eps kappa**2 (the normal equations), ``"either"`` the larger of
      the two, ``"tol"`` the first with the stopping tolerance for eps.
    - ``lean``: the lean route (``linalg.lean``) every fit of the method tries first, and its
      gate: None (none), ``"plain"`` (the refined normal equations, certified), ``"angle"``
      (the same and ``auto``'s residual-angle test).
    - ``capabilities``, ``notes``: its row of the capability table (``lsq_backends.
      capabilities.FEATURES`` -> yes/no or text) and the notes on its cells.
    """

    name: str
    solve: Callable[..., Solution]
    forms_gram: bool = False
    iterative: bool = False
    singular_values: bool = False
    stops: bool = False
    path_route: str | None = None
    options: tuple[str, ...] = ()
    matrix_free: str | None = None
    sparse_gram: str | None = None
    error_bound: str = "cond"
    lean: str | None = None
    capabilities: Mapping[str, Any] = {}
    notes: Mapping[str, str] = {}

    @property
    def path_singular_values(self):
        """Whether a penalty path's factorization gives X's singular values (the SVD route)."""
        return self.path_route == "svd"
