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
    out = [f"## {title}", "", "LIMIT X.T@X (X@X.T for wide X): a bare Gram product on the same backend, one pass "
           "over X, the floor for any solver that reads X; × LIMIT is a row's time over it, × np.lstsq its time "
           "over numpy.linalg.lstsq's. Peak mem: tracemalloc, NumPy rows only; it sees NumPy arrays, not the LAPACK "
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
        if sweep == "n" and dtype == "float32":
            out += [FLOAT32_NORMAL, ""]
    return out


# Why float32 ``normal`` steps up with the columns (the tables' data: cond(X) = 100 at every size).
FLOAT32_NORMAL = (
    "float32 `normal`: cond(X) = 100 makes a Gram matrix of cond 1e4, at float32's resolution. The lean "
    "route's certificate cannot prove it clear of its rounding (at n = 200 and 400 measured), and from some width on (n = 400 "
    "here) neither can the full route's: the fit then falls back to a Householder QR of X, after forming the Gram matrix "
    "more than once, and takes longer than `qr`. `auto` and `qr` take such float32 data in stride; `normal` "
    "is the method for well-conditioned float32 data (see [the lean route](lean-route.md))."
)


def write_json(path, rows, meta):
    """Write ``{"meta": meta, "rows": rows}`` to ``path``."""
    Path(path).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str) + "\n")


def _label(solver, method, role):
    """A legend entry a reader understands without the tables' shorthand."""
    if role == "limit":
        return f"{solver.removeprefix('LIMIT ').replace('@', ' @ ')} alone: one pass over X (the floor)"
    if solver.startswith("lsq."):
        return f"lsq_backends {solver.removeprefix('lsq.')}, method={method}"
    return f"{solver} ({method})" if method else solver


def _style(backend, solver, method, role, colors):
    """Colour per solver and method (the same on every backend), line style per backend; the
    floor is black and dotted, the peers grey shades."""
    dash = {"numpy": "-", "jax": "--", "torch": "-.", "dask": ":", "cupy": (0, (5, 1, 1, 1))}.get(backend, "-")
    if role == "limit":
        return {"color": "black", "linestyle": ":", "marker": "", "linewidth": 2}
    if role == "peer":
        return {"color": colors.setdefault((solver, method), str(0.35 + 0.15 * (len(colors) % 3))), "linestyle": dash,
                "marker": "x"}  # fmt: skip
    color = colors.setdefault((solver, method), f"C{len([k for k in colors if k[0].startswith('lsq.')])}")
    return {"color": color, "linestyle": dash, "marker": MARKERS.get(method, "o")}


def plots(rows, outdir):
    """Log-log scaling plots from the sweep rows: time of one fit against m at fixed n and
    against n at fixed m, one line per backend × solver × method, one PNG per sweep and dtype.
    Each method has its own colour, each backend its own line style; the floor (a bare Gram
    product ``X.T @ X``, one pass over X) is the black dotted line.

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    axis = {"m": "m, rows of X", "n": "n, columns of X"}
    for sweep in ("m", "n"):
        fixed = "n" if sweep == "m" else "m"
        rows_s = [r for r in rows if r["sweep"] == sweep and r["time_s"] is not None]
        for dtype in dict.fromkeys(r["dtype"] for r in rows_s):
            sub = [r for r in rows_s if r["dtype"] == dtype]
            backends = list(dict.fromkeys(r["backend"] for r in sub))
            fig, ax = plt.subplots(figsize=(8, 6.4))
            colors = {}
            for (backend, solver, method), pts in _lines(sub).items():
                pts = sorted(pts, key=lambda r: r[sweep])
                label = _label(solver, method, pts[0]["role"]) + (f" [{backend}]" if len(backends) > 1 else "")
                ax.plot([r[sweep] for r in pts], [r["time_s"] for r in pts], ms=5, label=label,
                        **_style(backend, solver, method, pts[0]["role"], colors))  # fmt: skip
            sizes = sorted({r[sweep] for r in sub})
            ax.set(xscale="log", yscale="log", xlabel=f"{axis[sweep]} ({fixed} = {sub[0][fixed]:,})",
                   ylabel="median time of one fit", title=f"Time against {sweep}, {fixed} = {sub[0][fixed]:,}, "
                   f"{dtype}, backend {', '.join(backends)}" + (" (line style)" if len(backends) > 1 else ""))  # fmt: skip
            ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_time(v).replace(".0 ", " ")))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.grid(True, which="major", alpha=0.4)
            ax.grid(True, which="minor", alpha=0.12)
            ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
            fig.tight_layout()
            path = outdir / f"scaling_{sweep}_{dtype}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written
