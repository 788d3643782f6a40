"""Benchmark output: ratios, Markdown tables, JSON and PNG scaling plots."""

from __future__ import annotations

import json
import math
from itertools import groupby
from pathlib import Path

from .bench import TOL, TOL_LSQR, TOL_NORMAL

NUMPY_PEER = "numpy.linalg.lstsq"
MARKERS = {"auto": "o", "normal": "s", "qr": "^", "svd": "D", "lsqr": "v"}


def _key(row):
    return row["case"], row["dtype"]


def add_ratios(rows):
    """Add ``x_limit`` (time over the LIMIT row of the same backend, case and dtype) and
    ``x_numpy`` (time over ``numpy.linalg.lstsq`` on the same case and dtype) to every row."""
    limit = {(*_key(r), r["backend"]): r["time_s"] for r in rows if r["role"] == "limit"}
    numpy = {_key(r): r["time_s"] for r in rows if r["solver"] == NUMPY_PEER}

    def ratio(t, base):
        return t / base if t is not None and base else None

    for r in rows:
        r["x_limit"] = ratio(r["time_s"], limit.get((*_key(r), r["backend"])))
        r["x_numpy"] = ratio(r["time_s"], numpy.get(_key(r)))
    return rows


def fmt_time(s):
    """Seconds as a short human-readable string (µs, ms or s, three significant digits)."""
    if s is None:
        return ""
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def _fmt(x, spec):
    return "" if x is None else format(x, spec)


def fmt_err(row):
    """Relative coefficient error, flagged with ⚠ above the dtype's tolerance (or NaN); ``normal``
    and ``lsqr`` rows against their own error bounds."""
    e = row["rel_err"]
    if e is None:
        return ""
    tol = {"lsqr": TOL_LSQR, "normal": TOL_NORMAL}.get(row["method"], TOL)[row["dtype"]]
    bad = not math.isfinite(e) or e > tol
    return f"{e:.1e}" + (" ⚠" if bad else "")


def _cells(row):
    if row["error"]:
        return ["**failed**", "", "", "", row["error"].replace("|", "\\|"), ""]
    first = fmt_time(row["first_s"]) if row["jitted"] else ""
    return [fmt_time(row["time_s"]), _fmt(row["x_limit"], ".3g"), _fmt(row["x_numpy"], ".3g"),
            first, fmt_err(row), _fmt(row["mem_x"], ".2f")]  # fmt: skip


def _table(header, lines):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(map(str, cells)) + " |" for cells in lines]


def markdown(rows, title="lsq_backends benchmarks"):
    """Markdown: one table per (case, dtype) of the grid, then one pivot table per scaling sweep.

    Columns: median time, ratio to the LIMIT row and to ``numpy.linalg.lstsq``, first call
    (compilation, jitted rows only), relative coefficient error against the float64 ``gelsd``
    reference (⚠ above tolerance), peak extra memory as a multiple of X's bytes (NumPy only).
    """
    out = [f"## {title}", "", "Peak mem: tracemalloc, NumPy rows only; it sees NumPy arrays, not the LAPACK "
           "workspaces numpy.linalg allocates internally (so numpy.linalg.lstsq reads ~0).", ""]  # fmt: skip
    header = ["backend", "solver", "method", "time", "× LIMIT", "× np.lstsq", "first call (compile)",
              "rel. error", "peak mem (× X)"]  # fmt: skip
    grid = [r for r in rows if not r["sweep"]]
    for (case, dtype), group in groupby(grid, key=_key):
        group = list(group)
        out += [f"### {case} — {group[0]['shape']}, {dtype}", ""]
        out += _table(header, ([r["backend"], r["solver"], r["method"], *_cells(r)] for r in group))
        out.append("")
    for sweep in ("m", "n"):
        out += _sweep_table(sweep, [r for r in rows if r["sweep"] == sweep])
    return "\n".join(out)


def _lines(rows):
    """Rows grouped by (backend, solver, method), in first-appearance order."""
    lines = {}
    for r in rows:
        lines.setdefault((r["backend"], r["solver"], r["method"]), []).append(r)
    return lines


def _sweep_table(sweep, rows):
    out = []
    fixed = "n" if sweep == "m" else "m"
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        sub = [r for r in rows if r["dtype"] == dtype]
        sizes = sorted({r[sweep] for r in sub})
        out += [f"### Scaling in {sweep} ({fixed} = {sub[0][fixed]}), {dtype}: median time", ""]
        lines = []
        for (backend, solver, method), pts in _lines(sub).items():
            at = {r[sweep]: ("failed" if r["error"] else fmt_time(r["time_s"])) for r in pts}
            lines.append([backend, solver, method, *(at.get(s, "") for s in sizes)])
        out += _table(["backend", "solver", "method", *(f"{sweep}={s}" for s in sizes)], lines) + [""]
    return out


def write_json(path, rows, meta):
    """Write ``{"meta": meta, "rows": rows}`` to ``path``."""
    Path(path).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str) + "\n")


def plots(rows, outdir):
    """Log-log scaling plots from the sweep rows: time vs m at fixed n and time vs n at fixed m,
    one line per backend × solver × method, one PNG per sweep and dtype.

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for sweep in ("m", "n"):
        fixed = "n" if sweep == "m" else "m"
        rows_s = [r for r in rows if r["sweep"] == sweep and r["time_s"] is not None]
        for dtype in dict.fromkeys(r["dtype"] for r in rows_s):
            sub = [r for r in rows_s if r["dtype"] == dtype]
            fig, ax = plt.subplots(figsize=(10, 5.5))
            colors = {}  # one color per backend; line style by role, marker by method
            for (backend, solver, method), pts in _lines(sub).items():
                pts = sorted(pts, key=lambda r: r[sweep])
                color = colors.setdefault(backend, f"C{len(colors)}")
                style = {"limit": ":", "peer": "-."}.get(pts[0]["role"], "-")
                marker = MARKERS.get(method, "x") if pts[0]["role"] == "lsq" else "x"
                ax.plot([r[sweep] for r in pts], [r["time_s"] for r in pts], style, color=color, marker=marker,
                        ms=4, label=f"{backend} {solver} {method}".strip())  # fmt: skip
            ax.set(xscale="log", yscale="log", xlabel=sweep, ylabel="median time (s)",
                   title=f"time vs {sweep} at {fixed} = {sub[0][fixed]}, {dtype}")  # fmt: skip
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
            fig.tight_layout()
            path = outdir / f"scaling_{sweep}_{dtype}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written
