"""One module per solver; each exposes ``solve(xp, X, Y, alpha, rcond, norms)
-> (coef, rank, s)``; ``norms`` are the column norms of X before centering (rank tests)."""

from . import auto, normal, qr, svd

SOLVERS = {"auto": auto.solve, "normal": normal.solve, "qr": qr.solve, "svd": svd.solve}
