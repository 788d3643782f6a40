"""Digits (LRE) of lsq_backends.diagnostics on the NIST StRD certified statistics.

``python -m benchmarks.nist_diagnostics [--refine K] [--also K2]``: a Markdown table of the correct digits of
the worst standard error, the residual SD, R² and the worst coefficient per dataset (NumPy,
float64), next to the floor ``nist.expected_digits`` that tests/diagnostics/test_diagnostics.py asserts
(less 1.5).
"""

from __future__ import annotations

import argparse

import numpy as np

import lsq_backends as lsq
from benchmarks import nist


def rows(refine=0):
    for name in nist.DATASETS:
        ds = nist.load(name)
        d = lsq.diagnostics(ds.X, ds.y, fit_intercept=ds.fit_intercept, refine=refine)
        fi = ds.fit_intercept
        se = np.r_[d.intercept_stderr, d.stderr] if fi else np.asarray(d.stderr)
        cert = np.r_[ds.intercept_sd, ds.coef_sd] if fi else ds.coef_sd
        params = np.r_[d.intercept, d.coef] if fi else np.asarray(d.coef)
        yield (
            name,
            float(np.min(nist.lre(se, cert))),
            nist.lre(float(d.sigma), ds.resid_sd),
            nist.lre(float(d.r2), ds.r2),
            nist.full_coef_lre(ds, params),
            nist.expected_digits(ds),
        )


def markdown(refine=0, also=None):
    """The table as Markdown; with ``also``, each cell shows that refinement's digits in
    parentheses where they differ (to one decimal)."""
    lines = ["| dataset | std. errors | residual SD | R² | coefficients | expected |", "|---|---:|---:|---:|---:|---:|"]
    other = {r[0]: r[1:] for r in rows(also)} if also is not None else {}
    for name, *digits in rows(refine):
        cells = []
        for i, v in enumerate(digits):
            w = other[name][i] if name in other and i < len(digits) - 1 else None
            cells.append(f"{v:.1f}" + (f" ({w:.1f})" if w is not None and f"{w:.1f}" != f"{v:.1f}" else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refine", type=int, default=0, help="refinement steps (diagnostics(refine=K))")
    parser.add_argument("--also", type=int, help="show these refinement steps' digits in parentheses too")
    args = parser.parse_args(argv)
    print(markdown(args.refine, args.also))


if __name__ == "__main__":
    main()
