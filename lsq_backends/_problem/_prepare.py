"""Step 2 of every fit: the validated inputs (``_input.validate``) scaled, weighted and centered for a
solver, as a :class:`Problem`.

``prepare``: ``eliminate=False`` keeps the centered, weighted rows (m of them, one per sample)
instead of reflecting the intercept direction away: leave-one-out needs per-sample rows.
``keep_original`` keeps the validated inputs (for ``refine`` and leave-one-out). The value
checks are read before ``prepare`` returns. With ``defer_checks`` they are left in
``Problem.checks`` instead. The fit reads them with its first route decision (see
``_compat.deferred``): one host read for the whole fit. (NumPy, where reading is free, reads
them in ``prepare`` all the same.) ``scale`` ("per_target" or "shared", see ``_scaling``) solves
at unit scale. X, Y, the square roots of the weights and alpha are divided by powers of two,
recorded in ``Problem.scale`` for ``_scaling.unscale``. With ``gram_center`` a tall problem with
an intercept (m - 1 >= n >= 1) is not centered here (``Problem.gram_center``): the Gram route's
``TallGram`` centers it on the n x n side and finds its means. Without weights, where the fit reads
its checks while it solves (``_compat.traits(xp).reads_while_solving``), X's scale is then certified by the
Gram matrix (``_scaling.gram_certificate``). That raises ``Rescale`` where it fails: prepare
again with ``scale_x_by_gram=False``. X's finiteness test goes with the Gram matrix where ``v``
left it there (``Problem.check``, see ``gram_check``). On NumPy the certificate, read at once,
is that test: NaN or infinity on the diagonal fails it, and the fit prepared again tests X first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .._backend import _compat
from .._backend._compat import Array, Checks, Namespace
from ._center import eliminate_intercept
from ._input import gram_check
from ._scaling import Scale, gram_certificate, scale_problem


class Problem(NamedTuple):
    """A validated problem, centered and weighted, ready for a solver."""

    xp: Namespace
    X: Array  # (..., m', n) scaled by sqrt(sample_weight), intercept eliminated (m' = m - 1 for wide X;
    #   tall X keeps m rows, the first one zero: see _center.eliminate_intercept; m with eliminate=False)
    Y: Array  # (..., m', k), same treatment
    alpha: Array | None  # None (least squares) or (kα,) with kα in {1, k}
    x_offset: Array | None  # (..., 1, n) (None with ``gram_center``: the Gram route's TallGram finds them)
    y_offset: Array | None  # (..., 1, k)
    y_was_vector: bool
    offset_sq: Array | None  # (..., n) what centering removed from the squared column norms
    original: tuple[Array, Array, Array | None] | None  # (X, Y, root): validated, uncentered,
    #   unweighted (root = sqrt(weights) or None), kept for ``refine`` only (a cast input: a copy of X)
    check: Callable[[Array], None] | None = None  # X's finiteness test deferred to the Gram matrix
    #   (``gram_check``), or the scale certificate (``_scaling.gram_certificate``): records, reads nothing
    checks: Checks | None = None  # the value checks not yet read, with ``defer_checks``
    scale: Scale | None = None  # X, Y, sqrt(w) (and alpha) were divided by powers of two
    gram_center: bool = False  # X and Y left uncentered and unweighted (``root`` the weights): the Gram
    #   route centers on the n x n side
    root: Array | None = None  # with ``gram_center``: sqrt(sample_weight) (..., m, 1), or None
    traits: _compat.Traits | None = None  # ``_compat.traits(xp)``, asked once by :func:`validate`


def intercept_of(xp, problem, coef, fit_intercept):
    """The intercept of a fit of the prepared ``problem``: ``y_offset - x_offset @ coef`` with
    an intercept, else zeros; coef (..., n, k) gives (..., k). One place for every entry point
    (fits, paths, ``ridge_cv``, ``nnls``, ``diagnostics``)."""
    if fit_intercept:
        shift = _compat.matmul(xp, problem.x_offset, coef)  # a path's coef has a leading alpha axis
        return (_compat.as_rank(xp, problem.y_offset, shift.ndim) - shift)[..., 0, :]
    shape = (*coef.shape[:-2], coef.shape[-1])
    return _compat.full(xp, shape, 0, coef.dtype, coef)


def _both(first, second):
    """Two Gram-matrix checks as one (either may be None)."""
    if first is None:
        return second

    def check(A, offset_sq=None):
        second(A, offset_sq)
        first(A, offset_sq)

    return check


def prepare(
    v, *, scale=None, eliminate=True, keep_original=False, defer_checks=False, gram_center=False, scale_x_by_gram=True
) -> Problem:
    """Step 2 of every fit: the validated inputs ``v`` (:func:`validate`) scaled, weighted and centered for a
    solver, as a :class:`Problem`. Raises before any heavy work. The options (``eliminate``, ``keep_original``,
    ``defer_checks``, ``scale``, ``gram_center``, ``scale_x_by_gram``): module docstring, ``prepare``."""
    xp, X, Y, sample_weight, alpha, y_was_vector, checks, fit_intercept, check_finite, defer_x_check, traits = v
    free = traits.free_to_read
    if not defer_checks or free:
        # NumPy reads for free: a bad value raises here, before centering or scaling meets
        # it (NaN and infinity there print NumPy's RuntimeWarnings ahead of the error).
        checks.read(xp)

    m, n = X.shape[-2:]
    gram_route = gram_center and m - int(fit_intercept) >= n >= 1
    # The Gram route certifies X's scale on the Gram matrix (``_scaling.gram_certificate``)
    # where the fit can read it while it solves (not JAX, compiled, nor Dask, lazy: there the
    # ``max |X|`` passes choose the scale): no passes over X for its scale
    skip_x = (
        gram_route
        and scale_x_by_gram
        and sample_weight is None
        and traits.reads_while_solving
        and (defer_checks or free)
    )
    root = None  # sqrt(w) (..., m, 1), of X's rank (JAX with strict rank promotion)
    if sample_weight is not None:
        root = _compat.as_rank(xp, _compat.align_rows(xp, xp.sqrt(sample_weight[..., None]), X), X.ndim)
    scaling = None
    if scale is not None:
        X, Y, root, alpha, scaling = scale_problem(
            xp, X, Y, root, alpha, shared_y=scale == "shared", skip_x=skip_x, free=free
        )
    certify = skip_x and scale is not None
    # NumPy reads the scale certificate at once, and NaN or infinity on the Gram matrix's
    # diagonal fails it (the fit is prepared again, X tested first): it is the finiteness test too
    check = gram_check(xp, X, check_finite, checks) if defer_x_check and not (certify and free) else None
    original = (X, Y, root) if keep_original else None
    x_offset = y_offset = offset_sq = None
    gram_center = fit_intercept and gram_route and eliminate
    if gram_center:
        pass  # centered and weighted on the n x n side, by the Gram route's ``TallGram``
    elif fit_intercept:
        X, Y, x_offset, y_offset, offset_sq = eliminate_intercept(xp, X, Y, root, eliminate)
    elif root is not None:
        X, Y = root * X, root * Y
    if certify:
        check = _both(check, gram_certificate(xp, X, alpha, checks, free))
    return Problem(
        xp, X, Y, alpha, x_offset, y_offset, y_was_vector, offset_sq, original, check,
        checks if defer_checks else None, scaling, gram_center, root if gram_center else None, traits,
    )  # fmt: skip
