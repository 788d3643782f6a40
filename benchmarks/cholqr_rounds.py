"""Shifted CholeskyQR's third round: the error of ``qr`` with two rounds and with three.

``python -m benchmarks.cholqr_rounds [--conds 1e9,1e10,...] [--shapes 200000x50,...]`` (NumPy,
float64). For each shape, condition number, noise level and seed: ``qr``'s error with the third
round always taken and never taken (``cholqr.THIRD_ROUND`` set to 0 and to infinity), as a
multiple of ``numpy.linalg.lstsq``'s error on the same problem, next to ``eps * cond(Q1)**2``,
the loss of orthogonality the third round repairs (``cholqr.THIRD_ROUND`` is the threshold on
it). Errors are relative to a reference refined with double-double residuals.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import lsq_backends as lsq
from lsq_backends._solvers.linalg import cholqr

from .gram_speed import make_problem

EPS = np.finfo(np.float64).eps


def _q1_cond(X, y):
    """cond(Q1) of the first round on [X y] (columns equilibrated, shifted as ``qr`` does)."""
    Z = np.column_stack([X, y])
    m, p = Z.shape
    Z = Z / np.linalg.norm(Z, axis=0)
    shift = cholqr.SHIFT * EPS * (m**0.5 + p) * p
    R1 = np.linalg.cholesky(Z.T @ Z + shift * np.eye(p)).T
    return np.linalg.cond(np.linalg.solve(R1.T, Z.T).T)


def _qr_error(X, y, ref, threshold):
    saved = cholqr.THIRD_ROUND
    cholqr.THIRD_ROUND = threshold
    try:
        coef = lsq.lstsq(X, y, method="qr", rcond=1e-15).coef
    finally:
        cholqr.THIRD_ROUND = saved
    return float(np.linalg.norm(coef - ref) / np.linalg.norm(ref))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--conds", default="1e9,1e10,1e11,3e11,1e12,3e12,1e13")
    p.add_argument("--shapes", default="20000x50,200000x50,50000x200,3000x10")
    p.add_argument("--seeds", default="2,5")
    args = p.parse_args(argv)
    print("shape, cond, noise, seed: eps cond(Q1)^2, error / numpy's with two rounds, with three")
    for shape in args.shapes.split(","):
        m, n = (int(v) for v in shape.split("x"))
        for cond in (float(c) for c in args.conds.split(",")):
            for noise in (1e-2, 1e2):
                for seed in (int(s) for s in args.seeds.split(",")):
                    _, _, X, y = make_problem(m, n, cond, seed=seed)
                    y = y + noise * np.random.default_rng(seed).standard_normal(m)
                    ref = lsq.lstsq(X, y, method="svd", rcond=1e-17, refine=4).coef
                    e_np = float(np.linalg.norm(np.linalg.lstsq(X, y, rcond=1e-17)[0] - ref) / np.linalg.norm(ref))
                    two, three = _qr_error(X, y, ref, math.inf), _qr_error(X, y, ref, 0.0)
                    orth = EPS * _q1_cond(X, y) ** 2
                    print(
                        f"{shape} {cond:.0e} {noise:g} {seed}: {orth:.1e}  {two / e_np:6.2f}  {three / e_np:6.2f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
