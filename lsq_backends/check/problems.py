"""Test problems with a known condition number, their float64 NumPy reference answers and the
error each method may make on them (the pass threshold).

A design is ``X = U diag(s) V^T`` with orthonormal U, V and ``s`` log-spaced from 1 to 1/kappa
(zeros past the rank). The reference is computed in float64 from the data *as rounded to the
dtype under test*, so the rounding of the input is not charged to the solver.

Thresholds are the first-order perturbation bounds for the relative error of ``coef`` (each
method's ``error_bound`` in its record, ``lsq_backends._solvers``), with
``eps`` the dtype's unit roundoff, ``kappa`` the condition number of the system solved and
``eta = ||r|| / (||X|| ||w||)`` (the residual term):

- ``qr``, ``svd``: ``c eps (kappa + kappa**2 eta)``;
- ``normal``: ``c eps kappa**2``; ``auto`` (either one): the larger of the two;
- ``lsqr``, ``lsmr``: ``c tol (kappa + kappa**2 eta)`` with ``tol = max(1e-6, 100 eps)``, its default
  ``atol``/``btol`` (it stops at that accuracy, not at roundoff);

with ``c = 10 sqrt(max(m, n))`` for the dimension dependence. For ridge, kappa and eta are those
of the damped system ``[X; sqrt(alpha) I]``: ``kappa**2 = (s_max**2 + alpha) / (s_min**2 + alpha)``.
Stacked problems and paths are judged per problem (per alpha); the worst ratio is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._backend import _compat
from .._solvers import RECORDS, default_cutoff, record

__all__ = ["SIZES", "Problem", "design", "make_problems", "score", "threshold"]

LSTSQ_METHODS = tuple(r.name for r in RECORDS)
PATH_METHODS = tuple(r.name for r in RECORDS if r.path_route is not None)  # lsqr fits one alpha at a time

#: name -> (shape of X, rank or None, quick?) for the two modes.
SIZES = {
    True: {  # --quick: few distinct shapes (JAX compiles once per shape, dtype and method)
        "tall": (200, 10),
        "wide": (10, 60),
        "rank-deficient": (200, 10),
        "batched": (8, 40, 5),
        "ridge": (200, 10),
        "ridge-path": (200, 10),
    },
    False: {
        "tall": (200_000, 50),
        "wide": (200, 5000),
        "rank-deficient": (20_000, 50),
        "batched": (10_000, 64, 8),
        "ridge": (200_000, 50),
        "ridge-path": (20_000, 200),
    },
}
KAPPA = {"float64": 1e3, "float32": 50.0}
NOISE = 1e-3  # residual noise, relative to the size of X w
RIDGE_ALPHA = 1e-3  # relative to s_max**2 = 1
PATH_ALPHAS = {True: 6, False: 50}  # log-spaced from 1e-6 to 10


@dataclass
class Problem:
    """One test problem in one dtype: data (NumPy, that dtype), call options and reference.

    ``ref`` is the float64 reference ``coef``; ``kappa`` and ``eta`` have one entry per
    problem of a stack, or per alpha of a path (one entry otherwise).
    """

    name: str
    dtype: str
    kind: str  # "lstsq", "ridge" or "path"
    X: np.ndarray
    y: np.ndarray
    ref: np.ndarray
    kappa: np.ndarray
    eta: np.ndarray
    methods: tuple
    alpha: object = None
    options: dict = field(default_factory=dict)

    @property
    def shape(self):
        """``"200x10"``, ``"8x40x5"``, and the number of alphas for a path."""
        text = "x".join(str(d) for d in self.X.shape)
        return f"{text}, {len(self.alpha)} alphas" if self.kind == "path" else text


def design(rng, shape, kappa, rank=None):
    """``X = U diag(s) V^T`` of ``shape`` (``(..., m, n)``) with orthonormal ``U``, ``V`` drawn
    from ``rng`` and singular values ``s`` log-spaced from 1 to ``1/kappa``, then zero past
    ``rank``: the condition number of the rank kept is ``kappa``."""
    *batch, m, n = shape
    p = min(m, n)
    rank = p if rank is None else rank
    u, _ = np.linalg.qr(rng.standard_normal((*batch, m, p)))
    v, _ = np.linalg.qr(rng.standard_normal((*batch, n, p)))
    s = np.zeros(p)
    s[:rank] = np.geomspace(1.0, 1.0 / kappa, rank)
    return (u * s) @ np.swapaxes(v, -1, -2)


def _targets(rng, X, intercept=0.0):
    w = rng.standard_normal(X.shape[-1])
    clean = X @ w
    m = X.shape[-2]
    scale = NOISE * np.linalg.norm(clean, axis=-1, keepdims=True) / np.sqrt(m)
    noise = scale * rng.standard_normal(clean.shape) if X.shape[-2] > X.shape[-1] else 0.0
    return clean + noise + intercept


def _lstsq_reference(X, y, rcond):
    """numpy.linalg.lstsq on each problem of the stack; kappa and eta of the rank kept."""
    Xs, ys = X.reshape((-1, *X.shape[-2:])), y.reshape((-1, y.shape[-1]))
    coefs, kappas, etas = [], [], []
    for a, b in zip(Xs, ys, strict=False):
        coef, _, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
        coefs.append(coef)
        kappas.append(s[0] / s[rank - 1])
        etas.append(np.linalg.norm(b - a @ coef) / (s[0] * np.linalg.norm(coef)))
    return np.stack(coefs).reshape((*X.shape[:-2], X.shape[-1])), np.array(kappas), np.array(etas)


def _ridge_reference(X, y, alphas):
    """Closed-form ridge with an unpenalized intercept, from the SVD of the centered X."""
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    u, s, vt = np.linalg.svd(Xc, full_matrices=False)
    uty = u.T @ yc
    coefs, kappas, etas = [], [], []
    for alpha in alphas:
        coef = vt.T @ (s / (s**2 + alpha) * uty)
        resid = np.linalg.norm(yc - Xc @ coef) ** 2 + alpha * np.linalg.norm(coef) ** 2
        coefs.append(coef)
        kappas.append(np.sqrt((s[0] ** 2 + alpha) / (s[-1] ** 2 + alpha)))
        etas.append(np.sqrt(resid) / (np.sqrt(s[0] ** 2 + alpha) * np.linalg.norm(coef)))
    return np.stack(coefs), np.array(kappas), np.array(etas)


def _rounded(a, dtype):
    """``a`` in ``dtype``, and that rounded array back in float64 (what the reference solves)."""
    a = np.asarray(a, dtype=dtype)
    return a, a.astype(np.float64)


def make_problems(*, quick, dtypes=("float64", "float32"), seed=0):
    """Every test problem, in every dtype: a list of :class:`Problem`."""
    sizes = SIZES[quick]
    problems = []
    for dtype in dtypes:
        rng = np.random.default_rng(seed)
        kappa = KAPPA[dtype]
        eps = float(np.finfo(dtype).eps)

        for name, shape in sizes.items():
            rank = None
            if name == "rank-deficient":
                rank = shape[-1] - max(1, shape[-1] // 4)
            X, X64 = _rounded(design(rng, shape, kappa, rank), dtype)
            if name in ("ridge", "ridge-path"):
                y, y64 = _rounded(_targets(rng, X64, intercept=1.5), dtype)
                if name == "ridge":
                    alpha = RIDGE_ALPHA
                    ref, kap, eta = _ridge_reference(X64, y64, [alpha])
                    ref = ref[0]
                    kind = "ridge"
                else:
                    alpha = np.geomspace(1e-6, 10.0, PATH_ALPHAS[quick]).astype(dtype)
                    ref, kap, eta = _ridge_reference(X64, y64, alpha.astype(np.float64))
                    kind = "path"
                methods = LSTSQ_METHODS if kind == "ridge" else PATH_METHODS
                problems.append(Problem(name, dtype, kind, X, y, ref, kap, eta, methods, alpha))
                continue
            y, y64 = _rounded(_targets(rng, X64), dtype)
            # Rank-deficient: the same cutoff for the reference and the solver, between the
            # smallest kept singular value (1/kappa) and the rounding noise of the zeros.
            rcond = float(np.sqrt(eps)) if rank is not None else None
            # lstsq's own cutoff (float32: not NumPy's eps * max(m, n), 0.024 of s_max at m = 200000,
            # which would drop real directions of the tall problem)
            cutoff = default_cutoff(_compat.array_namespace(X), X, *shape[-2:], rcond)
            ref, kap, eta = _lstsq_reference(X64, y64, cutoff)
            options = {"rcond": rcond} if rcond is not None else {}
            problems.append(Problem(name, dtype, "lstsq", X, y, ref, kap, eta, LSTSQ_METHODS, None, options))
    return problems


def threshold(method, dtype, kappa, m, n, eta=0.0):
    """The pass threshold on the relative error of ``coef`` of ``method`` on an ``m x n``
    problem in ``dtype`` with condition number ``kappa`` and residual term ``eta`` (see the
    module docstring)."""
    eps = float(np.finfo(dtype).eps)
    c = 10.0 * np.sqrt(max(m, n, 1))
    backward = kappa + kappa**2 * eta
    bound = record(method).error_bound
    if bound == "tol":
        return c * max(1e-6, 100 * eps) * backward
    if bound == "cond**2":
        return c * eps * kappa**2
    if bound == "either":
        return c * eps * np.maximum(kappa**2, backward)
    return c * eps * backward


def score(problem, method, coef):
    """``(error, threshold)`` of a float64 ``coef`` on ``problem``: the relative error of the
    worst problem of a stack (or alpha of a path), measured against its own threshold."""
    ref = problem.ref
    coef = np.asarray(coef, dtype=np.float64)
    if coef.shape != ref.shape:
        msg = f"coef has shape {coef.shape}, expected {ref.shape}"
        raise ValueError(msg)
    ref2, coef2 = ref.reshape((-1, ref.shape[-1])), coef.reshape((-1, ref.shape[-1]))
    errors = np.linalg.norm(coef2 - ref2, axis=-1) / np.maximum(np.linalg.norm(ref2, axis=-1), np.finfo(float).tiny)
    errors = np.where(np.isfinite(errors), errors, np.inf)
    m, n = problem.X.shape[-2:]
    bounds = threshold(method, problem.dtype, problem.kappa, m, n, problem.eta)
    worst = int(np.argmax(errors / bounds))
    return float(errors[worst]), float(np.broadcast_to(bounds, errors.shape)[worst])
