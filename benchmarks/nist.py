"""Loader for the NIST StRD linear least-squares datasets and the LRE accuracy measure.

The eleven ``.dat`` files (NIST/ITL Statistical Reference Datasets, linear regression) hold
data and certified results rounded to 15 significant digits. Accuracy against them is the
LRE (log relative error): the number of correct significant digits.

The numbers ship with the project in ``benchmarks/data/nist_strd.json`` (data and certified
values, converted from the ``.dat`` files by ``python -m benchmarks.nist_convert``; source:
NIST/ITL StRD, https://www.itl.nist.gov/div898/strd/lls/lls.shtml). Set ``LSQ_NIST_DIR`` to a
folder of the original ``.dat`` files to read those instead.

Examples
--------
>>> from benchmarks import nist
>>> ds = nist.load("Norris")                                # doctest: +SKIP
>>> ds.X.shape, ds.fit_intercept                            # doctest: +SKIP
((36, 1), True)
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DAT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "nist"  # the converter's source
BUNDLED = Path(__file__).resolve().parent / "data" / "nist_strd.json"
NIST_DIR = Path(os.environ["LSQ_NIST_DIR"]) if os.environ.get("LSQ_NIST_DIR") else None  # None: bundled

DATASETS = (
    "Norris",
    "Pontius",
    "NoInt1",
    "NoInt2",
    "Filip",
    "Longley",
    "Wampler1",
    "Wampler2",
    "Wampler3",
    "Wampler4",
    "Wampler5",
)

MAX_LRE = 15.0  # certified values carry 15 significant digits

# Fallbacks when the header does not state the line ranges (1-based, as in the files).
_CERTIFIED_START, _DATA_START = 31, 61
_RANGE = r"\(lines\s+(\d+)\s+to\s+(\d+)\)"
_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[EeDd][-+]?\d+)?)"
_PARAM = re.compile(rf"^\s*B(\d+)\s+{_NUMBER}\s+{_NUMBER}\s*$")
_RESID_SD = re.compile(rf"Standard\s+Deviation\s+{_NUMBER}")
_R2 = re.compile(rf"R-Squared\s+{_NUMBER}")


@dataclass(frozen=True)
class Dataset:
    """One NIST StRD linear-regression problem with its certified results.

    Attributes
    ----------
    name : str
        Dataset name, e.g. ``"Filip"``.
    X : ndarray, shape (m, n)
        Design matrix without the intercept column (powers ``x, x**2, ...`` for the
        polynomial models Pontius, Filip and Wampler1-5).
    y : ndarray, shape (m,)
        Response.
    fit_intercept : bool
        Whether the certified model has an intercept ``B0``.
    coef, coef_sd : ndarray, shape (n,)
        Certified ``B1..Bn`` and their standard deviations.
    intercept, intercept_sd : float
        Certified ``B0`` and its standard deviation (0.0 without an intercept).
    resid_sd : float
        Certified residual standard deviation ``sqrt(RSS / (m - n - fit_intercept))``.
    r2 : float
        Certified R-squared (uncentered for the no-intercept models).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    fit_intercept: bool
    coef: np.ndarray
    intercept: float
    coef_sd: np.ndarray
    intercept_sd: float
    resid_sd: float
    r2: float

    @property
    def design(self):
        """The full design a user passes to a solver without intercept handling:
        ``[1, X]`` for intercept models, ``X`` otherwise."""
        if not self.fit_intercept:
            return self.X
        return np.hstack([np.ones((self.X.shape[0], 1)), self.X])

    @property
    def certified(self):
        """All certified parameters in design order: ``[B0, B1, ...]`` or ``[B1, ...]``."""
        return np.concatenate([[self.intercept], self.coef]) if self.fit_intercept else self.coef

    @property
    def dof(self):
        """Residual degrees of freedom ``m - (number of parameters)``."""
        return self.X.shape[0] - self.certified.shape[0]


def _float(text):
    return float(text.replace("D", "E").replace("d", "e"))


def _line_range(header, label, default_start):
    match = re.search(label + r"\s*" + _RANGE, header)
    if match is None:
        return default_start, None
    return int(match.group(1)), int(match.group(2))


def _parse_certified(lines, name):
    params, resid_sd, r2 = {}, None, None
    for line in lines:
        if (m := _PARAM.match(line)) is not None:
            params[int(m.group(1))] = (_float(m.group(2)), _float(m.group(3)))
        elif resid_sd is None and (m := _RESID_SD.search(line)) is not None:
            resid_sd = _float(m.group(1))
        elif r2 is None and (m := _R2.search(line)) is not None:
            r2 = _float(m.group(1))
    if not params or resid_sd is None or r2 is None:
        msg = f"{name}: certified block incomplete (parameters {sorted(params)}, resid_sd {resid_sd}, r2 {r2})"
        raise ValueError(msg)
    first = min(params)
    if first not in (0, 1) or sorted(params) != list(range(first, first + len(params))):
        msg = f"{name}: parameters must be B0..Bp or B1..Bp without gaps; got B{sorted(params)}"
        raise ValueError(msg)
    return params, resid_sd, r2


def _design(x, n_coef, name):
    """Predictor columns as given, or powers of a single ``x`` for a polynomial model."""
    if x.shape[1] == n_coef:
        return x
    if x.shape[1] == 1:
        return x ** np.arange(1, n_coef + 1)
    msg = f"{name}: {x.shape[1]} predictor columns cannot give {n_coef} coefficients"
    raise ValueError(msg)


def _bundled():
    return json.loads(BUNDLED.read_text(encoding="ascii"))["datasets"]


def _from_bundle(name):
    d = _bundled()[name]
    x = np.array(d["x"], dtype=np.float64)
    coef = np.array(d["coef"], dtype=np.float64)
    return Dataset(
        name=name, X=_design(x, coef.shape[0], name), y=np.array(d["y"], dtype=np.float64),
        fit_intercept=d["fit_intercept"], coef=coef, intercept=d["intercept"],
        coef_sd=np.array(d["coef_sd"], dtype=np.float64), intercept_sd=d["intercept_sd"],
        resid_sd=d["resid_sd"], r2=d["r2"],
    )  # fmt: skip


def _read_dat(name, directory):
    path = Path(directory) / f"{name}.dat"
    lines = path.read_text(encoding="ascii").splitlines()  # CRLF or LF
    header = "\n".join(lines[: _CERTIFIED_START - 1])
    c0, c1 = _line_range(header, "Certified Values", _CERTIFIED_START)
    d0, d1 = _line_range(header, "Data", _DATA_START)
    params, resid_sd, r2 = _parse_certified(lines[c0 - 1 : c1 or d0 - 1], name)
    rows = [line.split() for line in lines[d0 - 1 : d1] if line.strip()]  # Norris: trailing blank line
    data = np.array(rows, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] < 2 or not np.all(np.isfinite(data)):
        msg = f"{name}: data lines {d0}-{d1} do not parse to a finite (m, >= 2) table"
        raise ValueError(msg)
    return params, resid_sd, r2, data


def raw_columns(name, directory):
    """The predictor columns of ``<name>.dat`` as given (before a polynomial model's powers)."""
    return _read_dat(name, directory)[3][:, 1:]


def load(name, directory=None):
    """One dataset with its certified values: from the bundled JSON, or from ``<name>.dat`` in
    ``directory`` (default :data:`NIST_DIR`, set by ``LSQ_NIST_DIR``) when one is given.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    directory : path-like, optional
        Folder holding the ``.dat`` files; default :data:`NIST_DIR` (None: the bundled data).

    Returns
    -------
    Dataset
        Data (float64) and certified values.

    Raises
    ------
    FileNotFoundError
        If the file is missing.
    ValueError
        If the certified block or the data cannot be parsed.
    """
    directory = directory or NIST_DIR
    if directory is None:
        return _from_bundle(name)
    params, resid_sd, r2, data = _read_dat(name, directory)
    fit_intercept = 0 in params
    slopes = [params[j] for j in sorted(params) if j > 0]
    return Dataset(
        name=name,
        X=_design(data[:, 1:], len(slopes), name),
        y=data[:, 0],
        fit_intercept=fit_intercept,
        coef=np.array([v for v, _ in slopes]),
        intercept=params[0][0] if fit_intercept else 0.0,
        coef_sd=np.array([s for _, s in slopes]),
        intercept_sd=params[0][1] if fit_intercept else 0.0,
        resid_sd=resid_sd,
        r2=r2,
    )


def available(directory=None):
    """True when every dataset is there: in ``directory`` (or ``LSQ_NIST_DIR``) as ``.dat``
    files, else in the bundled JSON."""
    d = directory or NIST_DIR
    if d is None:
        return BUNDLED.is_file()
    return all((Path(d) / f"{name}.dat").is_file() for name in DATASETS)


def lre(estimate, certified):
    """Log relative error: the number of correct significant digits, in [0, 15].

    ``-log10(|est - cert| / |cert|)``, or ``-log10(|est|)`` where ``cert == 0``; an exact
    match, and any non-finite estimate, are clipped (to 15 and 0).

    Parameters
    ----------
    estimate, certified : array_like
        Broadcastable values.

    Returns
    -------
    ndarray or float
        Elementwise LRE (a float for scalar inputs).
    """
    est = np.asarray(estimate, dtype=np.float64)
    cert = np.asarray(certified, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.where(cert == 0, np.abs(est), np.abs(est - cert) / np.abs(np.where(cert == 0, 1.0, cert)))
        out = np.clip(-np.log10(err), 0.0, MAX_LRE)
    out = np.where(np.isfinite(err), out, 0.0)
    return float(out) if out.ndim == 0 else out


def coef_lre(ds, coef, intercept=0.0):
    """The dataset's LRE: the minimum over all parameters, intercept included.

    Parameters
    ----------
    ds : Dataset
    coef : array_like, shape (n,)
        Estimated ``B1..Bn``.
    intercept : float
        Estimated ``B0`` (ignored when the model has none).
    """
    est = np.concatenate([[float(intercept)], np.ravel(coef)]) if ds.fit_intercept else np.ravel(coef)
    return float(np.min(lre(est, ds.certified)))


def full_coef_lre(ds, params):
    """:func:`coef_lre` for a parameter vector in design order (``[B0, B1, ...]``)."""
    params = np.ravel(params)
    return coef_lre(ds, params[1:], params[0]) if ds.fit_intercept else coef_lre(ds, params)


def resid_sd(ds, rss):
    """Residual standard deviation ``sqrt(rss / dof)`` from a residual sum of squares."""
    return float(np.sqrt(float(rss) / ds.dof))


def expected_digits(ds):
    """Digits a backward-stable solver is guaranteed on every parameter: ``15.65 - log10(kappa)``.

    The solver is assumed to return the exact solution for columnwise perturbations
    ``||dA[:, k]|| <= eps ||A[:, k]||`` of the design ``A`` (:attr:`Dataset.design`) and
    ``||db|| <= eps ||b||`` of the response (Householder QR and SVD solvers are such; so is
    centering, up to a small factor). With unit-norm columns ``A_s = A D^-1``, ``w_s = D w``,
    residual ``r``, first-order perturbation theory bounds the relative error of ``w_j`` by
    ``eps * kappa_j`` with::

        kappa_j = (||e_j' A_s^+|| (||b|| + ||w_s||_1) + ||e_j' (A_s' A_s)^-1|| sqrt(n) ||r||) / |w_s,j|

    (absolute error, ``D_j`` in the denominator, where the certified ``w_j`` is 0), and
    ``kappa = max_j kappa_j``. It is a worst-case bound, so at least ``cond(A_s)``: it adds
    what the normwise ``15.65 - log10(cond(A_s))`` leaves out, the spread of ``|w_s,j|``
    (Wampler1-4 lose 3-4 more digits on ``B0``) and the ``cond**2 * ||r||`` term of
    large-residual problems (Wampler4-5).
    """
    A, w, b = ds.design, ds.certified, ds.y
    d = np.linalg.norm(A, axis=0)
    As, ws, r = A / d, w * d, b - A @ w
    rows_pinv = np.linalg.norm(np.linalg.pinv(As), axis=1)
    rows_ginv = np.linalg.norm(np.linalg.inv(As.T @ As), axis=1)
    num = rows_pinv * (np.linalg.norm(b) + np.sum(np.abs(ws))) + rows_ginv * np.sqrt(A.shape[1]) * np.linalg.norm(r)
    kappa = np.max(num / np.where(w != 0, np.abs(ws), d))
    return float(max(0.0, -np.log10(np.finfo(np.float64).eps) - np.log10(kappa)))
