"""One module per solver; each exposes ``solve(xp, X, Y, alpha, rcond) -> (coef, rank, s)``."""

from . import auto, normal, qr, svd

SOLVERS = {"auto": auto.solve, "normal": normal.solve, "qr": qr.solve, "svd": svd.solve}
