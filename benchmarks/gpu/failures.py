"""A pytest plugin for the GPU run (``-p benchmarks.gpu.failures``): each failure's traceback is
printed the moment it is known. pytest prints them only at the end of a session, so a job cut
short by its time limit used to name its failures without saying why they failed."""

from __future__ import annotations

import sys

LIMIT = 4000  # characters of each traceback kept (its end: the assertion and its values)


def pytest_runtest_logreport(report):
    if report.failed:
        text = report.longreprtext
        text = text if len(text) <= LIMIT else "...\n" + text[-LIMIT:]
        sys.stdout.write(f"\n--- FAILED {report.nodeid} ({report.when})\n{text}\n--- end\n")
        sys.stdout.flush()


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prints its reports
        config.pluginmanager.unregister(sys.modules[__name__])
