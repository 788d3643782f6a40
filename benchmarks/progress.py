"""Progress of a benchmark run on stderr, with or without tqdm."""

from __future__ import annotations

import sys


class Progress:
    """Progress of a run on stderr: tqdm's bar on a terminal where tqdm is installed, else (a log
    file, or no tqdm) one line per finished row with its time and error, written as it finishes
    (a run cut short keeps them).

    Parameters
    ----------
    total : int
        Rows in the run.
    enabled : bool
        Show anything at all.
    """

    def __init__(self, total, enabled=True):
        self.total, self.count, self.enabled, self.bar = total, 0, enabled, None
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=total, file=sys.stderr, unit="row", dynamic_ncols=True)

    def start(self, label):
        if self.bar is not None:
            self.bar.set_postfix_str(label)

    def done(self, label, row):
        self.count += 1
        if self.bar is not None:
            self.bar.update()
        elif self.enabled:
            print(f"[{self.count}/{self.total}] {label}: {_outcome(row)}", file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _outcome(row):
    if row["error"]:
        return f"failed: {row['error']}"
    err = "" if row["rel_err"] is None else f", error {row['rel_err']:.1e}"
    return f"{row['time_s'] * 1e3:.4g} ms{err}"
