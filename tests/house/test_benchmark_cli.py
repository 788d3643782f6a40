"""The main job's command line, as a new user meets it: a missing optional library is one line
naming the extra that installs it, and ``--backends numpy`` imports no other array library
(JAX, PyTorch and Dask take seconds each to import). NumPy session only."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from benchmarks.needs import require

pytestmark = pytest.mark.usefixtures("numpy_reference")


def test_a_missing_library_is_one_line_naming_the_extra(capsys):
    with pytest.raises(SystemExit) as exc:
        require("python -m benchmarks", ["numpy", "no_such_module_for_this_test"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "no_such_module_for_this_test" in err and 'pip install -e ".[bench]"' in err


def test_present_libraries_pass_silently(capsys):
    require("python -m benchmarks", ["numpy", "scipy"])
    assert capsys.readouterr().err == ""


def test_numpy_run_imports_no_other_backend():
    missing = [m for m in ("scipy", "threadpoolctl", "tqdm", "sklearn") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the main job needs {missing} (the bench extra)")
    code = (
        "import sys\n"
        "from benchmarks.__main__ import main\n"
        "main(['--quick', '--backends', 'numpy', '--cases', 'eager_2000x20', '--dtype', 'float64',\n"
        "      '--methods', 'normal', '--no-memory'])\n"
        "print('IMPORTED', sorted(m for m in ('jax', 'torch', 'dask', 'cupy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True).stdout
    assert "IMPORTED []" in out, out[-2000:]


def test_the_econometrics_benchmark_runs_at_a_tiny_size(capsys):
    """``python -m benchmarks.econometrics``' rows, lsq_backends' only (the peers take seconds to import),
    each part at 2000 rows, one round, the libraries' own thread settings left as they are."""
    from benchmarks import econometrics

    econometrics.main(["--m", "2000", "--panel-m", "2000", "--repeat", "1", "--threads", "0", "--no-peers"])
    out = capsys.readouterr().out
    assert out.count("x lsq nonrobust") == 3 and out.count("x lsq diagnostics") == 2, out  # the rows timed
    assert "coef rel. diff. 0.0e+00, stderr 0.0e+00" in out, out  # diagnostics against itself


def test_sklearn_suite_cases_once_refused_now_pass(tmp_path):
    """scikit-learn's own tests of the cases this library once refused or answered in other words (``gcv_mode="svd"``
    on a sparse X, ``solver_``, the refusals' wording): with the estimators swapped in, no sparse refusal, no gap and
    no unsorted failure; what fails is scikit-learn's solvers without a counterpart (the harness's mapping)."""
    from benchmarks import sklearn_suite as suite

    if suite.tests_folder() is None or importlib.util.find_spec("scipy") is None:
        pytest.skip("scikit-learn's linear_model tests (they ship in its wheel) and SciPy are needed")
    k = "regularization_limits_ridge_gcv or individual_penalties or positive_error_test or test_ridge_regression"
    assert suite.main(["--files", "test_ridge.py", "-n", "0", "-k", k, "--keep", str(tmp_path)]) == 0
    counts, failures = suite.read_junit(tmp_path / "junit.xml")
    assert counts["passed"] >= 100, counts
    groups = suite.classify(failures)
    assert groups["sparse"] == []
    other = suite.sort_other(groups["other"])
    assert set(other) <= {"harness", "documented"}, {
        k: v for k, v in other.items() if k not in ("harness", "documented")
    }
    assert all("maps to method='auto'" in why for _, why in other["harness"]), other["harness"]
