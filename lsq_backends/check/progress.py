"""One progress line per case of the self-check, with an estimate of the time left."""

from __future__ import annotations

import os
import sys
import threading
import time

__all__ = ["STALL_S", "Progress", "clock", "stall_watch"]

#: A case with no answer after this long has stalled: the longest case measured took 65 s (LSQR
#: at 200000 x 50 on a 2-core machine under a load of 10).
STALL_S = 300.0


def clock(seconds):
    """``"0:42"``, ``"12:05"``, ``"1:02:05"``: whole seconds as a clock reads them."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    text = f"{rest // 60}:{rest % 60:02d}"
    return f"{hours}:{text.zfill(5)}" if hours else text


class Progress:
    """Writes ``[12/340] numpy eager tall float64 qr: pass, 0.9 s; 0:41 so far, about 3:10
    left`` to ``stream`` (standard error: the report on standard output stays a clean
    Markdown document) after each case.

    The estimate left is the mean time of the cases done on each backend, times its cases
    still to run; a backend not started yet is estimated at the mean of every case done so far
    (a JAX case, which compiles, costs more than a NumPy one: the estimate settles once a
    backend has run a few cases).
    """

    def __init__(self, plan, stream=None):
        self.plan = [case[0] for case in plan]  # the backend name of each case, in order
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()
        self.spent = {}  # backend -> (cases done, seconds)

    def left(self, done):
        """Seconds the cases after the first ``done`` are expected to take."""
        cases = sum(n for n, _ in self.spent.values())
        overall = sum(s for _, s in self.spent.values()) / cases if cases else 0.0
        estimate = 0.0
        for name in self.plan[done:]:
            n, seconds = self.spent.get(name, (0, 0.0))
            estimate += seconds / n if n else overall
        return estimate

    def case(self, done, row):
        """Report the ``done``-th case (1-based), whose :class:`Row` is ``row``."""
        n, seconds = self.spent.get(row.backend, (0, 0.0))
        self.spent[row.backend] = (n + 1, seconds + row.wall_s)
        total, width = len(self.plan), len(str(len(self.plan)))
        elapsed = time.perf_counter() - self.start
        tail = f"about {clock(self.left(done))} left" if done < total else "done"
        what = f"{row.backend} {row.mode} {row.problem} {row.dtype} {row.method}"
        line = f"[{done:>{width}}/{total}] {what}: {row.status}, {row.wall_s:.1f} s; {clock(elapsed)} so far, {tail}"
        print(line, file=self.stream, flush=True)


def stall_watch(what, report, stream=None, seconds=STALL_S):
    """A started timer that, unless cancelled within ``seconds``, says on ``stream`` that the
    case ``what`` stalled, calls ``report()`` (the report so far) and ends the process with
    status 1: a call stuck inside a library (XLA's CPU runtime can stop for good, see the JAX
    page's known limits) cannot be interrupted from Python."""

    def stalled():
        out = sys.stderr if stream is None else stream
        print(f"{what}: no answer after {seconds:g} s; stopped (the report so far follows)", file=out, flush=True)
        report()
        sys.stdout.flush()
        os._exit(1)

    timer = threading.Timer(seconds, stalled)
    timer.daemon = True
    timer.start()
    return timer
