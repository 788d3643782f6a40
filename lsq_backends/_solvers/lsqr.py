"""LSQR (Paige & Saunders, 1982): matrix-free iterative least squares and ridge.

Solves ``min ||Y - X W||^2 + alpha ||W||^2`` touching X only through the products ``X @ v`` and
``X^T @ u``: two passes over X per iteration, memory O((m + n) k) beyond X, no factorization.
Meant for wide or large problems where the direct methods' O(min(m, n)^2 max(m, n)) work and
O(min(m, n)^2) memory dominate. Ridge is LSQR's damping, ``damp = sqrt(alpha)``. Started from
W = 0 the iterates stay in the row space of X, so a rank-deficient or wide problem converges
to the minimum-norm solution, like ``svd``.

Why LSQR rather than LSMR: both cost the same two products per iteration; LSQR's iterates match
``scipy.sparse.linalg.lsqr`` (the reference users know, and what we test against, iteration for
iteration), and its stopping rules (``atol``/``btol``) are SciPy's. LSMR's monotone
``||X^T r||`` mostly matters for stopping early at loose tolerances.

Every target column runs its own recurrence (its own scalars, its own penalty for a per-target
alpha, its own stopping test), all in one pair of matrix products per iteration; a stack
(..., m, n) is solved the same way. A column that has converged stops changing (its update is
masked with ``where``), and its iteration count stops. The loop is ``_compat.loop``: a
``lax.while_loop`` under JAX, a Python loop elsewhere.

Stopping (per column, as SciPy's ``istop`` 1, 2, 4, 5, with r the residual of the damped
system and ``||X||`` LSQR's Frobenius-norm estimate): ``||r|| <= btol ||y|| + atol ||X|| ||w||``
(a consistent system, e.g. any wide full-row-rank X), or ``||X^T r|| <= atol ||X|| ||r||`` (least
squares), or the same tests with atol = btol = eps/2 (machine precision). SciPy's ``conlim``
test is left out: it stops ill-conditioned problems early, before ``atol`` holds.

``drop_centering_noise``: LSQR normalizes whatever it is given. A constant column next to an
intercept, centered to ~1e-17 of its size, became a direction of its own and took a coefficient
of ~1e33. Zeroed, it gets 0, as from the direct methods (LSQR's iterates stay in the row space),
and the derivative rules see the same zero column. The test compares each centered column's norm
with its norm before centering. It is not applied to ridge with every penalty positive: the
damped system has full rank, and the direct methods keep such a column too. Differentiated
(``rule``), the value is X without the noise columns and the derivative is X's own. The rule's
derivative is then the one it has at a zero column: the direct methods' at a dropped one.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._backend import _compat
from ._record import NOTHING, Record, Solution
from .linalg._krylov import (
    CAPABILITIES,
    OPTIONS,
    adjoint,
    forward,
    fresh_products,
    rank_of,
    tolerances,
)
from .linalg._krylov import column_norm as _norm
from .linalg._krylov import safe as _safe
from .linalg._shared import default_cutoff, pivot_ratios


def drop_centering_noise(xp, X, alpha, offset_sq, rule=None):
    """X (..., m, n) with the columns that centering reduced to rounding noise set to zero: LSQR's rank test, the
    direct methods' scale-free ``pivot_ratios`` at the default cutoff (``offset_sq``: what centering removed, or
    None). Not for ridge with every penalty positive. ``X``, the centered copy ``prepare`` made, is zeroed in place
    on NumPy (``_compat.update_fresh``). ``rule``: the fit's derivative module, or None (see the module docstring)."""
    if offset_sq is None:
        return X
    m, n = X.shape[-2:]
    Xv = X if rule is None else rule.detach(xp, X)
    colsq = _compat.column_squares(xp, Xv)  # (..., n), no X-sized temporary; X is at unit scale (``_scaling``)
    keep = pivot_ratios(xp, xp.sqrt(colsq), colsq, offset_sq) > default_cutoff(xp, X, m, n, None)
    if alpha is not None:
        keep = keep | xp.all(alpha > 0)
    mask = xp.astype(keep, X.dtype)[..., None, :]
    if rule is None:
        return _compat.update_fresh(xp, X, "multiply", mask)
    return rule.pass_through(xp, X, Xv * mask)


class _State(NamedTuple):
    """LSQR's recurrence; vectors are (..., p, k), scalars (..., 1, k), one per column."""

    x: Any
    u: Any
    v: Any
    w: Any
    alfa: Any
    rhobar: Any
    phibar: Any
    anorm: Any
    res2: Any
    xxnorm: Any
    z: Any
    cs2: Any
    sn2: Any
    n_iter: Any
    done: Any


def solve(xp, X, Y, alpha, given=NOTHING):
    """LSQR solution of X @ W = Y (damped by ``sqrt(alpha)`` for ridge), at ``given.options``'
    ``atol``, ``btol`` and ``max_iter`` (None or absent: the defaults).

    Returns a ``Solution``: coef (..., n, k), rank (...), n_iter (..., k). LSQR estimates no
    rank: it is ``n`` for ridge with every ``alpha > 0`` (the damped system has full column
    rank), else -1.
    """
    xp = _compat.plain_namespace(xp)  # NumPy's own functions on NumPy: ~70 tiny operations a step
    m, n = X.shape[-2:]
    atol, btol, max_iter = tolerances(xp, X, given.options)
    # alpha is (1,) or (k,): one damping per column, broadcast against (..., 1, k) scalars.
    dampsq = xp.zeros_like(Y[..., :1, :])
    dampsq = dampsq if alpha is None else dampsq + _compat.as_rank(xp, alpha, Y.ndim)
    damp = xp.sqrt(dampsq)

    beta = bnorm = _norm(xp, Y)
    u = Y / _safe(xp, beta)
    v = adjoint(xp, X, u)
    alfa = _norm(xp, v)
    v = v / _safe(xp, alfa)
    zero = xp.zeros_like(beta)
    _, int_dtype = _compat.default_dtypes(xp, _compat.device(X))
    state = _State(
        x=xp.zeros_like(v), u=u, v=v, w=v, alfa=alfa, rhobar=alfa, phibar=beta, anorm=zero, res2=zero,
        xxnorm=zero, z=zero, cs2=zero - 1, sn2=zero,
        n_iter=xp.zeros(tuple(beta.shape), dtype=int_dtype, device=_compat.device(X)),
        done=(alfa == 0) | (beta == 0),  # y = 0 or X^T y = 0: W = 0 is the answer (SciPy's istop 0;
        # its test alfa * beta == 0 also stops where that product underflows)
    )  # fmt: skip
    tiny = float(xp.finfo(X.dtype).smallest_normal)
    fresh = fresh_products(X)  # the products' results may be written into

    def step(s, X):
        # Golub-Kahan bidiagonalization: beta u = X v - alfa u, alfa v = X^T u - beta v.
        # (On NumPy the updates formed block by block, into the products' new arrays, and their
        # norms with them, as in LSMR: _compat.multiply_add_norms.)
        u = _compat.multiply_add(xp, s.u, -s.alfa, forward(xp, X, s.v), fresh)
        beta = _norm(xp, u)
        more = beta > 0  # beta = 0: the Krylov space is exhausted, u and v stay
        u = _compat.update_fresh(xp, u, "divide", _safe(xp, beta))
        anorm = xp.where(more, xp.sqrt(s.anorm**2 + s.alfa**2 + beta**2 + dampsq), s.anorm)
        v = _compat.multiply_add(xp, s.v, -beta, adjoint(xp, X, u), fresh)
        alfa = _norm(xp, v)
        v = _compat.select(xp, more, _compat.update_fresh(xp, v, "divide", _safe(xp, alfa)), s.v)
        alfa = xp.where(more, alfa, s.alfa)
        # Rotate the damping away (undamped columns: cs1 = 1, as SciPy; the rotation would
        # give cs1 = sign(rhobar), the same x but other signs in the ||x|| estimate).
        damped = dampsq > 0
        rhobar1 = xp.where(damped, xp.sqrt(s.rhobar**2 + dampsq), s.rhobar)
        cs1 = xp.where(damped, s.rhobar / _safe(xp, rhobar1), xp.ones_like(rhobar1))
        sn1 = damp / _safe(xp, rhobar1)
        psi, phibar = sn1 * s.phibar, cs1 * s.phibar
        # Rotate the subdiagonal beta away (SciPy's _sym_ortho: rho >= 0).
        rho = xp.sqrt(rhobar1**2 + beta**2)
        cs, sn = rhobar1 / _safe(xp, rho), beta / _safe(xp, rho)
        theta, rhobar = sn * alfa, -cs * alfa
        phi, phibar = cs * phibar, sn * phibar
        tau = sn * phi
        x = _compat.multiply_add(xp, s.w, phi / _safe(xp, rho), s.x)
        w = _compat.multiply_add(xp, s.w, -(theta / _safe(xp, rho)), v)
        # Estimate ||x|| (a rotation on the right of the upper bidiagonal).
        rhs = phi - s.sn2 * rho * s.z
        gambar = -s.cs2 * rho
        zbar = rhs / _safe(xp, gambar)
        xnorm = xp.sqrt(s.xxnorm + zbar**2)
        gamma = xp.sqrt(gambar**2 + theta**2)
        cs2, sn2, z = gambar / _safe(xp, gamma), theta / _safe(xp, gamma), rhs / _safe(xp, gamma)
        xxnorm = s.xxnorm + z**2
        res2 = s.res2 + psi**2
        rnorm = xp.sqrt(phibar**2 + res2)
        arnorm = alfa * xp.abs(tau)
        # SciPy's tests 1, 2, 4 and 5; bnorm > 0 in every column still running.
        ax = anorm * xnorm / _safe(xp, bnorm)
        test1 = rnorm / _safe(xp, bnorm)
        test2 = arnorm / (anorm * rnorm + tiny)
        stop = (test1 <= btol + atol * ax) | (test2 <= atol) | (1 + test2 <= 1) | (1 + test1 / (1 + ax) <= 1)
        new = _State(x, u, v, w, alfa, rhobar, phibar, anorm, res2, xxnorm, z, cs2, sn2, s.n_iter + 1, stop)
        run = ~s.done  # finished columns keep their state (no copy on NumPy while all run)
        return _compat.select(xp, run, new, s)

    state = _compat.loop(xp, step, state, max_iter, lambda s: xp.all(s.done), (X,))
    return Solution(state.x, rank_of(xp, tuple(X.shape[:-2]), n, alpha, X), n_iter=state.n_iter[..., 0, :])


RECORD = Record(
    "lsqr",
    solve,
    iterative=True,
    options=OPTIONS,
    matrix_free="lsqr",
    error_bound="tol",
    capabilities=CAPABILITIES,
    notes={
        "jax_grad": (
            "by implicit differentiation: K is applied by two more LSQR solves inside `lax.custom_linear_solve`"
            " (one penalty per target: one or two, by LSQR's per-column damping), not by unrolling the loop."
        ),
        "dask_lazy": "the iteration computes every 10 iterations (its convergence test is read).",
        "xla_gpu_syncs": (
            "a traced loop runs 10 iterations a trip on accelerators (an inner loop of known trip count, whose"
            " predicate is not read), then `max_iter % 10` more."
        ),
    },
)
