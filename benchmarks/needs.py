"""The optional libraries a benchmark program needs: a missing one is a one-line message that
names the extra of pyproject.toml installing it, never a traceback from deep inside a run."""

from __future__ import annotations

import importlib.util
import sys


def require(program, modules, extra="bench"):
    """Exit with one line on stderr (status 2) when any of ``modules`` is not installed.

    Checked with ``importlib.util.find_spec``: nothing is imported.
    """
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f'{program} needs {", ".join(missing)}, not installed here: pip install -e ".[{extra}]"',
            file=sys.stderr,
        )
        sys.exit(2)
