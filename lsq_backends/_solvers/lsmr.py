"""LSMR (Fong & Saunders, 2011): matrix-free iterative least squares and ridge.

Solves ``min ||Y - X W||^2 + alpha ||W||^2`` touching X only through ``X @ V`` and
``X^T @ U`` (``_krylov.forward``/``adjoint``: a dense array, a sparse matrix or an operator):
two products per iteration, memory O((m + n) k) beyond X. It is MINRES on the normal
equations where LSQR is CG on them: the same Golub-Kahan bidiagonalization, but the iterates
minimize ``||X^T r||`` over the Krylov space, so ``||X^T r||`` decreases monotonically (and
``||r||`` too, as in LSQR). Stopped early at a loose ``atol``, LSMR's answer is the safer of
the two: LSQR's ``||X^T r||`` oscillates, and its test may fire late or at a worse iterate.
Ridge is the damping ``damp = sqrt(alpha)``; from W = 0 the iterates stay in the row space of
X (the minimum-norm solution, like ``svd``).

The recurrence is SciPy's ``scipy.sparse.linalg.lsmr``, operation for operation (its iterates
and its stopping iteration are the reference the tests hold it to), run for every target
column at once: each column has its own scalars (its own damping for a per-target alpha) and
its own stopping test, all in one pair of block products per iteration; a stack (..., m, n) is
solved the same way. A column that has stopped stops changing (its update is masked with
``where``), and so does its count. The loop is ``_compat.loop``: a ``lax.while_loop`` under
JAX, a Python loop elsewhere.

Stopping (per column), SciPy's ``istop``, with r the residual of the damped system, ``||X||``
LSMR's Frobenius-norm estimate (of X alone, without the damping, as SciPy) and
``cond`` its estimate of X's condition number:

- 1: ``||r|| <= btol ||y|| + atol ||X|| ||w||`` (a consistent system);
- 2: ``||X^T r|| <= atol ||X|| ||r||`` (least squares);
- 3: ``cond >= conlim`` (only with ``conlim``: SciPy's default is 1e8, off here as for LSQR);
- 4, 5, 6: tests 1, 2 and 3 at machine precision;
- 7: ``max_iter`` reached; 0: ``X^T y = 0`` (or y = 0, or ``X^T (y - X x0) = 0``), W = x0.

Warm starts (``x0``): as SciPy, the iteration continues from ``x0`` on the residual
``y - X x0``. With a penalty SciPy's recurrence would then damp the correction, not W; here the
damped system ``[X; sqrt(alpha) I] W = [y; 0]`` is iterated explicitly instead (its products
cost n more entries), so a warm-started ridge fit converges to the ridge solution.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .._backend import _compat
from ._record import NOTHING, Record, Solution
from .linalg._krylov import (
    CAPABILITIES,
    OPTIONS,
    adjoint,
    column_norm,
    forward,
    fresh_products,
    rank_of,
    safe,
    sym_ortho,
    tolerances,
)


class _State(NamedTuple):
    """LSMR's recurrence; vectors are (..., p, k), scalars (..., 1, k), one per column."""

    x: Any
    u: Any
    v: Any
    h: Any
    hbar: Any
    alpha: Any
    alphabar: Any
    zeta: Any
    zetabar: Any
    rho: Any
    rhobar: Any
    cbar: Any
    sbar: Any
    betadd: Any
    betad: Any
    rhodold: Any
    tautildeold: Any
    thetatilde: Any
    d: Any
    norm_a2: Any
    maxrbar: Any
    minrbar: Any
    n_iter: Any
    istop: Any
    done: Any


def solve(xp, X, Y, alpha, given=NOTHING):
    """LSMR solution of X @ W = Y (damped by ``sqrt(alpha)`` for ridge), from ``x0`` (..., n, k)
    or zero, at ``given.options``' ``atol``, ``btol``, ``max_iter``, ``conlim`` and ``x0`` (None or
    absent: the defaults).

    Returns a ``Solution``: coef (..., n, k), rank (...), n_iter (..., k), istop (..., k).
    LSMR estimates no rank: it is ``n`` for ridge with every ``alpha > 0``, else -1.
    """
    xp = _compat.plain_namespace(xp)  # NumPy's own functions on NumPy: ~100 tiny operations a step
    m, n = X.shape[-2:]
    options = given.options or {}
    atol, btol, max_iter = tolerances(xp, X, options)
    conlim, x0 = options.get("conlim"), options.get("x0")
    ctol = 0.0 if conlim is None else 1.0 / conlim
    zero = xp.zeros_like(Y[..., :1, :])
    damp = zero if alpha is None else xp.sqrt(zero + _compat.as_rank(xp, alpha, zero.ndim))  # (..., 1, k)
    augmented = x0 is not None and alpha is not None
    root = damp  # the penalty's rows of the augmented system

    def products(X):
        """X's products, or with a penalty and a warm start those of [X; damp I]."""
        if not augmented:
            return (lambda V: forward(xp, X, V)), (lambda U: adjoint(xp, X, U))
        return (
            lambda V: xp.concat([forward(xp, X, V), root * V], axis=-2),
            lambda U: adjoint(xp, X, U[..., :m, :]) + root * U[..., m:, :],
        )

    fwd, adj = products(X)
    fresh = augmented or fresh_products(X)  # the products' results may be written into
    if augmented:
        Y = xp.concat([Y, xp.zeros((*Y.shape[:-2], n, Y.shape[-1]), dtype=Y.dtype, device=_compat.device(Y))], axis=-2)
        damp = zero
    normb = column_norm(xp, Y)
    x = xp.zeros((*Y.shape[:-2], n, Y.shape[-1]), dtype=Y.dtype, device=_compat.device(Y)) if x0 is None else x0
    u = Y if x0 is None else Y - fwd(x)
    beta = normb if x0 is None else column_norm(xp, u)
    u = u * (1 / safe(xp, beta))
    v = adj(u)
    alpha0 = column_norm(xp, v)
    v = v * (1 / safe(xp, alpha0))
    one = zero + 1
    _, int_dtype = _compat.default_dtypes(xp, _compat.device(Y))
    counts = xp.zeros(tuple(beta.shape), dtype=int_dtype, device=_compat.device(Y))
    state = _State(
        x=xp.where(normb == 0, xp.zeros_like(x), x), u=u, v=v, h=v, hbar=xp.zeros_like(v), alpha=alpha0,
        alphabar=alpha0, zeta=zero, zetabar=alpha0 * beta, rho=one, rhobar=one, cbar=one, sbar=zero, betadd=beta,
        betad=zero, rhodold=one, tautildeold=zero, thetatilde=zero, d=zero, norm_a2=alpha0 * alpha0, maxrbar=zero,
        minrbar=zero + float(xp.finfo(Y.dtype).max), n_iter=counts, istop=counts,  # SciPy: 1e100
        # X^T r = 0 or y = 0: W = x0 (or 0) is the answer (SciPy's istop 0; its test
        # alpha * beta == 0 also stops where that product underflows)
        done=(alpha0 == 0) | (beta == 0) | (normb == 0),
    )  # fmt: skip

    def step(s, X):
        fwd, adj = products(X)
        n_iter = s.n_iter + 1
        # Golub-Kahan bidiagonalization: beta u = X v - alpha u, alpha v = X^T u - beta v.
        # (On NumPy the updates a * c + b are formed block by block, into the products' new
        # arrays, and their norms taken as they are made: _compat.multiply_add_norms, the same
        # roundings but for the order of the sums of squares; passes over u and v fewer.)
        u = _compat.multiply_add(xp, s.u, -s.alpha, fwd(s.v), fresh)
        beta = column_norm(xp, u)
        more = beta > 0  # beta = 0: the Krylov space is exhausted, v and alpha stay
        u = _compat.update_fresh(xp, u, "multiply", 1 / safe(xp, beta))
        v = _compat.multiply_add(xp, s.v, -beta, adj(u), fresh)
        alpha = column_norm(xp, v)
        v = _compat.select(xp, more, _compat.update_fresh(xp, v, "multiply", 1 / safe(xp, alpha)), s.v)
        alpha = _compat.select(xp, more, alpha, s.alpha)
        # Rotations: the damping away, then the subdiagonal, then rbar's superdiagonal.
        chat, shat, alphahat = sym_ortho(xp, s.alphabar, damp)
        c, sn, rho = sym_ortho(xp, alphahat, beta)
        thetanew = sn * alpha
        alphabar = c * alpha
        thetabar = s.sbar * rho
        rhotemp = s.cbar * rho
        cbar, sbar, rhobar = sym_ortho(xp, s.cbar * rho, thetanew)
        zeta = cbar * s.zetabar
        zetabar = -sbar * s.zetabar
        # Update h, hbar and x.
        hbar = _compat.multiply_add(xp, s.hbar, -(thetabar * rho / safe(xp, s.rho * s.rhobar)), s.h)
        x = _compat.multiply_add(xp, hbar, zeta / safe(xp, rho * rhobar), s.x)
        h = _compat.multiply_add(xp, s.h, -(thetanew / safe(xp, rho)), v)
        # Estimate ||r|| (rotations on the right of the lower bidiagonal, as SciPy).
        betaacute = chat * s.betadd
        betacheck = -shat * s.betadd
        betahat = c * betaacute
        betadd = -sn * betaacute
        ctildeold, stildeold, rhotildeold = sym_ortho(xp, s.rhodold, thetabar)
        thetatilde = stildeold * rhobar
        rhodold = ctildeold * rhobar
        betad = -stildeold * s.betad + ctildeold * betahat
        tautildeold = (s.zeta - s.thetatilde * s.tautildeold) / safe(xp, rhotildeold)
        taud = (zeta - thetatilde * tautildeold) / safe(xp, rhodold)
        d = s.d + betacheck * betacheck
        normr = xp.sqrt(d + (betad - taud) ** 2 + betadd * betadd)
        # Estimate ||X|| and cond(X).
        norm_a = xp.sqrt(s.norm_a2 + beta * beta)
        norm_a2 = s.norm_a2 + beta * beta + alpha * alpha
        # From the second iteration on, as minrbar: at the first, rhobar is the start's 1, not a
        # quantity of X's scale (SciPy and the MATLAB original take it, so that an X of norm 1e-20
        # "exceeds" any conlim at once and stops with the first iterate).
        maxrbar = xp.where(n_iter > 1, xp.maximum(s.maxrbar, s.rhobar), s.maxrbar)
        minrbar = xp.where(n_iter > 1, xp.minimum(s.minrbar, s.rhobar), s.minrbar)
        cond_a = xp.maximum(maxrbar, rhotemp) / safe(xp, xp.minimum(minrbar, rhotemp))
        normar = xp.abs(zetabar)
        normx = column_norm(xp, x)
        # SciPy's tests; normb > 0 in every column still running.
        test1 = normr / safe(xp, normb)
        prod = norm_a * normr
        test2 = xp.where(prod != 0, normar / safe(xp, prod), xp.full_like(prod, float("inf")))
        test3 = 1 / safe(xp, cond_a)
        ax = norm_a * normx / safe(xp, normb)
        t1 = test1 / (1 + ax)
        rtol = btol + atol * ax
        istop = s.istop
        for code, hit in (
            (6, 1 + test3 <= 1), (5, 1 + test2 <= 1), (4, 1 + t1 <= 1), (3, test3 <= ctol), (2, test2 <= atol),
            (1, test1 <= rtol),
        ):  # fmt: skip
            istop = xp.where(hit, xp.full_like(istop, code), istop)
        new = _State(
            x, u, v, h, hbar, alpha, alphabar, zeta, zetabar, rho, rhobar, cbar, sbar, betadd, betad, rhodold,
            tautildeold, thetatilde, d, norm_a2, maxrbar, minrbar, n_iter, istop, istop > 0,
        )  # fmt: skip
        run = ~s.done  # finished columns keep their state (no copy on NumPy while all run)
        return _compat.select(xp, run, new, s)

    state = _compat.loop(xp, step, state, max_iter, lambda s: xp.all(s.done), (X,))
    istop = xp.where(state.done, state.istop, xp.full_like(state.istop, 7))  # the iteration limit
    rank = rank_of(xp, tuple(X.shape[:-2]), n, alpha, Y)
    return Solution(state.x, rank, n_iter=state.n_iter[..., 0, :], istop=istop[..., 0, :])


RECORD = Record(
    "lsmr",
    solve,
    iterative=True,
    stops=True,
    options=(*OPTIONS, "conlim", "x0"),
    matrix_free="lsmr",
    error_bound="tol",
    capabilities=CAPABILITIES,
    notes={
        "jax_grad": "as `lstsq:lsqr`: K is applied by LSQR solves at the fit's tolerances inside `lax.custom_linear_solve`.",
        "dask_lazy": "as `lstsq:lsqr`: the iteration computes every 10 iterations.",
    },
)
