"""Digits (LRE) of lsq_backends.diagnostics on the NIST StRD certified statistics.

``python -m benchmarks.nist_diagnostics [--refine K]``: a Markdown table of the correct digits of
the worst standard error, the residual SD, R² and the worst coefficient per dataset (NumPy,
float64), next to the floor ``nist.expected_digits`` that tests/test_diagnostics.py asserts
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refine", type=int, default=0, help="refinement steps (diagnostics(refine=K))")
    args = parser.parse_args(argv)
    print("| dataset | std. errors | residual SD | R² | coefficients | expected |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, *digits in rows(args.refine):
        print(f"| {name} | " + " | ".join(f"{v:.1f}" for v in digits) + " |")


if __name__ == "__main__":
    main()
