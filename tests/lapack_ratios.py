"""LAPACK's test ratios for least-squares drivers (xQRT12, xQRT16, xQRT17 of LAPACK's test
suite), in NumPy: the measures ``test_lapack_style.py`` holds every method to."""

from __future__ import annotations

import numpy as np


def _one_norm(A):
    return float(np.abs(A).sum(axis=0).max()) if A.size else 0.0


def qrt16(X, B, W, u):
    """DQRT16: max_j ||b_j - X w_j||_1 / (||X||_1 ||w_j||_1 max(m, n) u)."""
    m, n = X.shape
    if m == 0 or n == 0:
        return 0.0
    bnorm = np.abs(B - X @ W).sum(axis=0)
    xnorm = np.abs(W).sum(axis=0)
    anorm = _one_norm(X)
    if anorm == 0:
        return 0.0 if not bnorm.any() else 1 / u
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(xnorm > 0, bnorm / anorm / xnorm / (max(m, n) * u), np.where(bnorm > 0, 1 / u, 0.0))
    return float(ratio.max())


def qrt17(X, B, W, u):
    """DQRT17 with IRESID = 1: ||R^T X||_1 / (||X||_1 ||B||_1 max(m, n, k) u)."""
    m, n = X.shape
    if m == 0 or n == 0:
        return 0.0
    err = _one_norm((B - X @ W).T @ X)
    anorm, bnorm = _one_norm(X), _one_norm(B)
    err = err / anorm if anorm else err
    err = err / bnorm if bnorm else err
    return err / (max(m, n, B.shape[1]) * u)


def row_space(Vr, W, u, m, n):
    """Component of W outside the span of Vr (the row space), relative to max|W|."""
    wmax = np.abs(W).max() if W.size else 0.0
    if wmax == 0:
        return 0.0
    out = W - Vr @ (Vr.T @ W)
    return float(np.abs(out).max() / wmax / (max(m, n, W.shape[1]) * u))


def qrt12(s, s0, u, m, n):
    """DQRT12 on singular values: ||s - s0||_1 / (||s0||_2 max(m, n) u)."""
    d = float(np.abs(s - s0).sum()) / (max(m, n, 1) * u)
    nrm = float(np.linalg.norm(s0))
    return d / nrm if nrm else d
