"""The installed package is the one Python imports, wherever it runs from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("numpy_reference")


def test_import_from_the_folder_that_holds_a_clone(tmp_path):
    """From the folder that holds a clone named ``lsq_backends``, ``import lsq_backends`` is the
    package, not the clone taken for an empty namespace package (pyproject.toml's
    ``package-dir``: an editable install puts the clone's root on ``sys.path``)."""
    (tmp_path / "lsq_backends").symlink_to(ROOT, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import lsq_backends; print(lsq_backends.lstsq.__name__)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    hint = "an editable install made before pyproject.toml's package-dir? reinstall: pip install -e ."
    assert proc.returncode == 0 and proc.stdout.strip() == "lstsq", f"{proc.stderr[-800:]}\n{hint}"
