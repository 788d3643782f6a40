"""The README's Python blocks run as written, in order, each continuing the one before, and
print what their ``# ...`` comment lines say. A block whose library is missing (or, for CuPy,
has no usable device) is left out; the blocks after it still run. Each nox session thus runs
the NumPy blocks and its own backend's."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    return BLOCK.findall(README.read_text())


def _expected_output(code):
    """The comment lines that directly follow a ``print(...)`` line are its expected output."""
    lines, out = code.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("# ") and i > 0 and (lines[i - 1].startswith("print(") or lines[i - 1].startswith("# ")):
            out.append(line[2:])
    return out


def _usable(code):
    """None when the block's library can run here, else why not."""
    for name in ("cupy", "jax", "torch"):
        if re.search(rf"^import {name}\b", code, re.M):
            try:
                mod = importlib.import_module(name)
            except ImportError:
                return f"{name} is not installed"
            if name == "cupy" and not mod.cuda.is_available():
                return "cupy is installed but no CUDA device is usable here"
    return None


def test_readme_has_a_runnable_quickstart():
    blocks = _blocks()
    assert len(blocks) >= 4, "the quickstart and the cupy, jax and torch blocks"
    assert _expected_output(blocks[0]), "the first block shows its output"


def test_readme_blocks_run_and_print_what_they_say():
    namespace = {}
    for code in _blocks():
        if _usable(code) is not None:
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - the README's own code
        assert out.getvalue().splitlines() == _expected_output(code), code
