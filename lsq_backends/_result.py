"""The one result type every fit returns."""

from __future__ import annotations

import typing
from typing import Any, NamedTuple

__all__ = ["LstsqResult", "plain_signature"]


def plain_signature(cls):
    """The NamedTuple ``cls`` as ``help()`` should show it: its constructor's signature reduced
    to the field names, and its annotations resolved. With postponed annotations (``from
    __future__ import annotations``) every field would read ``ForwardRef('Any')`` in both."""
    cls.__new__.__annotations__ = {}
    cls.__annotations__ = typing.get_type_hints(cls)
    return cls


@plain_signature
class LstsqResult(NamedTuple):
    """Result of :func:`lstsq` and :func:`ridge`.

    A NamedTuple, hence a JAX pytree: ``jax.jit`` can return it, ``jax.vmap`` batches it. The
    shapes of its fields depend only on the shapes of the inputs, never on their values. Every
    field is an array of the caller's namespace, on the caller's device, in the fit's float dtype
    (``rank`` in the default integer dtype). For a ridge path (a 1-D ``alpha`` of length a) every
    field below gains a leading axis of length a: ``coef[i]`` is the fit for ``alpha[i]``.

    Attributes
    ----------
    coef : array, shape (..., n) or (..., n, k)
        Coefficients; ``(..., n)`` when ``y`` was a vector.
    intercept : array, shape (...) or (..., k)
        Fitted intercept, zeros when ``fit_intercept=False``.
    rank : array of int, shape (...)
        Numerical rank of the system the method factorized: of ``X`` (centered and weighted)
        for least squares, of ``[X; sqrt(alpha) I]`` for ridge (``n`` for any ``alpha > 0``).
    rss : array, shape (...) or (..., k)
        Residual sum of squares ``sum(w_i (y_i - x_i @ coef - intercept)**2)`` per target,
        computed from the residual itself (not from the normal equations), so it is accurate
        even when the fit is nearly exact. For ridge it excludes the penalty.
    singular_values : array, shape (..., min(m', n)), or None
        Singular values of the centered, weighted ``X`` in decreasing order, for
        ``method="svd"``; ``None`` for the other methods (they do not compute them).
        ``m' = m - 1`` with ``fit_intercept=True``: the intercept direction is projected out
        exactly (a Householder reflection, see the API page's "Intercept"), so no rounding-noise
        singular value is reported for it; ``m' = m`` otherwise.
    n_iter : array of int, shape (...) or (..., k), or None
        Iterations each target took, for ``method="lsqr"`` and ``"lsmr"`` (equal to
        ``max_iter`` when it did not converge); ``None`` for the direct methods.
    istop : array of int, shape (...) or (..., k), or None
        Why each target stopped, for ``method="lsmr"`` (SciPy's ``istop`` codes): 0 ``X^T y = 0``
        (the start is the solution), 1 ``||r|| <= btol ||y|| + atol ||X|| ||w||``, 2
        ``||X^T r|| <= atol ||X|| ||r||``, 3 the condition estimate reached ``conlim``, 4-6 the
        same at machine precision, 7 ``max_iter`` reached; ``None`` for the other methods.
    """

    coef: Any
    intercept: Any
    rank: Any
    rss: Any
    singular_values: Any = None
    n_iter: Any = None
    istop: Any = None
