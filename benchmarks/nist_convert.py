"""Convert the NIST StRD linear-regression ``.dat`` files into the bundled compact JSON.

    python -m benchmarks.nist_convert [--src DIR] [--out PATH]

Source: NIST/ITL Statistical Reference Datasets, linear least-squares regression
(https://www.itl.nist.gov/div898/strd/lls/lls.shtml), public domain data of the U.S.
National Institute of Standards and Technology. The JSON keeps the data columns as given
(before the polynomial models' powers) and the certified values, each number as the float64
nearest to the file's decimal text (written with Python's shortest round-trip repr, so
reading it back gives the same float64 as parsing the ``.dat`` file).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import nist

SOURCE = (
    "NIST/ITL Statistical Reference Datasets (StRD), linear least-squares regression: "
    "https://www.itl.nist.gov/div898/strd/lls/lls.shtml (U.S. National Institute of Standards "
    "and Technology; public domain). Converted by benchmarks/nist_convert.py."
)


def convert(src):
    out = {"source": SOURCE, "datasets": {}}
    for name in nist.DATASETS:
        ds = nist.load(name, src)
        raw = nist.raw_columns(name, src)
        out["datasets"][name] = {
            "x": raw.tolist(),  # (m, columns as in the file, y excluded)
            "y": ds.y.tolist(),
            "fit_intercept": ds.fit_intercept,
            "coef": ds.coef.tolist(),
            "coef_sd": ds.coef_sd.tolist(),
            "intercept": ds.intercept,
            "intercept_sd": ds.intercept_sd,
            "resid_sd": ds.resid_sd,
            "r2": ds.r2,
        }
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.nist_convert", description=__doc__.split("\n")[0])
    p.add_argument("--src", default=str(nist.DAT_DIR), help="folder of the eleven .dat files")
    p.add_argument("--out", default=str(nist.BUNDLED), help="JSON file to write")
    args = p.parse_args(argv)
    data = convert(args.src)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n", encoding="ascii")
    print(f"wrote {args.out}: {len(data['datasets'])} datasets")


if __name__ == "__main__":
    main()
