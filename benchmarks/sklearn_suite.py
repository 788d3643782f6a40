"""scikit-learn's own linear_model tests with lsq_backends' estimators swapped in.

``python -m benchmarks.sklearn_suite`` copies scikit-learn's ``test_base.py`` and
``test_ridge.py`` (``--files`` picks others, e.g. ``test_common.py``) from the installed
scikit-learn into a temporary folder, next to a ``conftest.py`` that replaces
``sklearn.linear_model.LinearRegression``, ``Ridge`` and ``RidgeCV`` by the adapters below
before any test module is imported (so ``from sklearn.linear_model import Ridge`` and
parametrize lists built at import see them), runs pytest there (``-n 2`` by default, with
scikit-learn's own ``sklearn.conftest`` as a plugin for its fixtures), and sorts every failure:

- ``sparse``: lsq_backends refused a sparse X (its error mentions sparse), counted by test and
  by the refusing estimator as the error names it (its non-default parameters);
- everything else by ``KNOWN``, sorted by hand: ``documented`` (a convention or refusal named in
  docs/limits.md or docs/estimators.md), ``gap`` (an interface difference not named there),
  ``harness`` (an artefact of the adapters below); a failure not listed is ``unsorted``, a
  possible bug, printed with its message.

The adapters keep scikit-learn's constructor signatures (``clone``, ``get_params`` and the
parametrize lists work unchanged) and fit lsq_backends' estimator of the same name, mapped so:
``solver="cholesky"`` is ``method="normal"``, ``"svd"`` and ``"lsqr"`` are themselves, every
other solver (``"auto"``, ``"sparse_cg"``, ``"sag"``, ``"saga"``, ``"lbfgs"``) is
``method="auto"``; ``tol`` is passed on (used by iterative fits only); ``copy_X``, ``max_iter``,
``random_state`` and ``n_jobs`` are accepted and ignored; ``RidgeCV(gcv_mode=None)`` is
``"auto"``. Fitted attributes are copied from the inner estimator; ``predict`` and ``score``
are lsq_backends'. scikit-learn's other classes (``_RidgeGCV``, ``RidgeClassifier``,
``ridge_regression``) are not touched, so the tests of those run scikit-learn's own code.

Examples
--------
::

    python -m benchmarks.sklearn_suite                       # test_base.py, test_ridge.py
    python -m benchmarks.sklearn_suite --files test_common.py,test_ransac.py --list-other
    python -m benchmarks.sklearn_suite --seeds 0-19          # scikit-learn's seed fixture over 20 seeds
    python -m benchmarks.sklearn_suite --keep /tmp/sksuite   # keep the folder and junit.xml

Skips (status 0, a message) when scikit-learn or its tests (they ship in its wheel) are missing.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import lsq_backends as lsq

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = ("test_base.py", "test_ridge.py")

# scikit-learn's Ridge solver -> lsq_backends' method.
SOLVER_METHOD = {"cholesky": "normal", "svd": "svd", "lsqr": "lsqr"}

CONFTEST = """\
import benchmarks.sklearn_suite as suite

suite.install()
pytest_plugins = ["sklearn.conftest"]
"""


# lsq_backends' method_ -> scikit-learn's solver_ (the methods scikit-learn has by another name).
METHOD_SOLVER = {"normal": "cholesky", "nnls": "lbfgs"}


def _copy_fitted(est, inner):
    """``inner``'s fitted attributes onto ``est`` (stale ones of an earlier fit removed); ``method_`` also as
    scikit-learn's ``solver_``."""
    for name in [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]:
        delattr(est, name)
    for name, value in vars(inner).items():
        if name.endswith("_") and not name.startswith("_"):
            setattr(est, name, value)
    if hasattr(inner, "method_"):
        est.solver_ = METHOD_SOLVER.get(inner.method_, inner.method_)
    return est


class _Adapter:
    """Fit the lsq_backends estimator ``_base`` built from ``_inner_params()``."""

    check_finite = True  # read by lsq_backends' predict (a class attribute: not a parameter)

    def _inner(self):
        return self._base(**self._inner_params())

    def _accepts_sparse(self):
        return self._inner()._accepts_sparse()

    def fit(self, X, y, sample_weight=None, **params):
        inner = self._inner().fit(X, y, sample_weight, **params)
        return _copy_fitted(self, inner)


class LinearRegression(_Adapter, lsq.LinearRegression):
    """lsq_backends' ``LinearRegression`` with scikit-learn's signature."""

    _base = lsq.LinearRegression

    def __init__(self, *, fit_intercept=True, copy_X=True, tol=1e-6, n_jobs=None, positive=False):
        self.fit_intercept = fit_intercept
        self.copy_X = copy_X
        self.tol = tol
        self.n_jobs = n_jobs
        self.positive = positive

    def _inner_params(self):
        return {"fit_intercept": self.fit_intercept, "tol": self.tol, "positive": self.positive}


class Ridge(_Adapter, lsq.Ridge):
    """lsq_backends' ``Ridge`` with scikit-learn's signature (``solver`` mapped to ``method``)."""

    _base = lsq.Ridge

    def __init__(
        self,
        alpha=1.0,
        *,
        fit_intercept=True,
        copy_X=True,
        max_iter=None,
        tol=1e-4,
        solver="auto",
        positive=False,
        random_state=None,
    ):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.copy_X = copy_X
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.positive = positive
        self.random_state = random_state

    def _inner_params(self):
        method = SOLVER_METHOD.get(self.solver, "auto")
        return {"alpha": self.alpha, "fit_intercept": self.fit_intercept, "method": method, "tol": self.tol,
                "positive": self.positive}  # fmt: skip


class RidgeCV(_Adapter, lsq.RidgeCV):
    """lsq_backends' ``RidgeCV`` with scikit-learn's signature."""

    _base = lsq.RidgeCV

    def __init__(
        self,
        alphas=(0.1, 1.0, 10.0),
        *,
        fit_intercept=True,
        scoring=None,
        cv=None,
        gcv_mode=None,
        store_cv_results=False,
        alpha_per_target=False,
    ):
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.scoring = scoring
        self.cv = cv
        self.gcv_mode = gcv_mode
        self.store_cv_results = store_cv_results
        self.alpha_per_target = alpha_per_target

    def _inner_params(self):
        return {"alphas": self.alphas, "fit_intercept": self.fit_intercept, "scoring": self.scoring, "cv": self.cv,
                "gcv_mode": "auto" if self.gcv_mode is None else self.gcv_mode,
                "store_cv_results": self.store_cv_results, "alpha_per_target": self.alpha_per_target}  # fmt: skip


def install():
    """Put the adapters in ``sklearn.linear_model``'s namespace (before the tests import it)."""
    import sklearn.linear_model as lm

    for cls in (LinearRegression, Ridge, RidgeCV):
        setattr(lm, cls.__name__, cls)


def tests_folder():
    """scikit-learn's linear_model tests folder, or None where scikit-learn or its tests are missing."""
    try:
        import sklearn.linear_model
    except ImportError:
        return None
    folder = Path(sklearn.linear_model.__file__).parent / "tests"
    return folder if (folder / "test_ridge.py").is_file() else None


# lsq_backends' refusals of a sparse X, as pytest prints them ("E   TypeError: X is a SciPy sparse ...").
_REFUSAL = re.compile(r"^E\s+(?:\w+\.)*\w*Error: (.*sparse.*)$", re.IGNORECASE | re.MULTILINE)
# The estimator a refusal names (its repr): the parameters that reach it.
_NAMED = re.compile(r"(\w+\(.*?\)) (?:factorizes|fits|needs)")


# Failures other than sparse refusals, sorted by hand (scikit-learn 1.9.1): test function -> (kind, why).
# "documented": a convention or refusal named in docs/limits.md or docs/estimators.md; "gap": an interface
# difference not named there (no wrong numbers); "harness": the adapters' mapping of scikit-learn's own solvers
# and options, or scikit-learn special-casing its own class. A failure not listed here is "unsorted".
KNOWN = {
    "test_raises_value_error_if_positive_and_sparse": ("documented", "positive=True fits a sparse X (limits.md)"),
    "test_ridge_fit_intercept_sparse_error": ("documented", "normal/auto fit a sparse X with an intercept (limits.md)"),
    "test_ridge_fit_intercept_sparse_sag": ("harness", "sag's own warning on sparse X: sag maps to auto (coefs match)"),
    "test_dense_sparse": ("documented", "intercept_ is a 0-d array, not np.float64 (estimators.md)"),
    "test_ridge_shapes_type": ("documented", "intercept_ is a 0-d array, not a float (estimators.md)"),
    "test_ridge_cv_individual_penalties": ("documented", "alpha_ is a 0-d array, not a scalar (estimators.md)"),
    "test_ridgecv_sample_weight": ("documented", "held-out folds scored with sample_weight (estimators.md)"),
    "test_inplace_data_preprocessing": ("documented", "no copy_X: inputs are never modified (estimators.md)"),
    "test_lbfgs_solver_error": ("harness", "max_iter is not a parameter (no ConvergenceWarning at max_iter=1)"),
    "test_n_iter": ("harness", "sag/saga map to auto (no n_iter_), max_iter is not a parameter"),
    "test_step_size_alpha_error": ("harness", "sag's own ZeroDivisionError: sag maps to auto"),
}
_RANSAC = ("RANSACRegressor special-cases scikit-learn's own LinearRegression (min_samples)",)
for _name in ("min_n_samples", "no_valid_data", "no_valid_model", "exceed_max_skips", "warn_exceed_max_skips"):
    KNOWN[f"test_ransac_{_name}"] = ("harness", *_RANSAC)
KNOWN["test_perfect_horizontal_line"] = ("harness", *_RANSAC)
# Parametrized cases that differ from the test's other cases: "name[solver]" matches the test ids of name with that
# parameter (between "[" or "-" and "-" or "]").
_AUTO = "scikit-learn's solver {} maps to method='auto' here (solver_ 'auto'; no positive refusal)"
for _solver in ("sparse_cg", "sag", "saga"):
    for _name in ("test_ridge_regression", "test_ridge_positive_error_test"):
        KNOWN[f"{_name}[{_solver}]"] = ("harness", _AUTO.format(_solver))


def known(test):
    """``KNOWN``'s entry for a test id (its parametrized entry first, then its function's), or None."""
    name, _, params = test.split("::")[-1].partition("[")
    for value in params.rstrip("]").split("-"):
        if f"{name}[{value}]" in KNOWN:
            return KNOWN[f"{name}[{value}]"]
    return KNOWN.get(name)


def classify(cases):
    """``cases``: (test id, message, text) of the failures -> {"sparse": [(test id, refusal)], "other": [(test id,
    message)]}. A sparse refusal is an error that mentions sparse, raised in lsq_backends (also where the test then
    failed for another reason, e.g. a ``pytest.warns`` around it): an ``E   ...Error: ...sparse...`` line of a
    traceback that passes through lsq_backends."""
    out = {"sparse": [], "other": []}
    for test, message, text in cases:
        refusals = _REFUSAL.findall(text) if "lsq_backends" in text else []
        if refusals:
            out["sparse"].append((test, refusals[0]))
        else:
            out["other"].append((test, message))
    return out


def sort_other(other):
    """The failures that are not sparse refusals, (test id, message), by kind: {kind: [(test id, why)]}."""
    out = collections.defaultdict(list)
    for test, message in other:
        kind, why = known(test) or ("unsorted", message.splitlines()[0][:160] if message else "")
        out[kind].append((test, why))
    return out


def _sparse_key(test, refusal):
    """The test's name and the parameters of the refusing estimator (penalty values left out)."""
    name = test.split("::")[-1].partition("[")[0]
    named = _NAMED.search(refusal)
    est = re.sub(r"alphas?=[^=]*?(?=, \w+=|\)$)(, )?", "", named.group(1)) if named else refusal[:80]
    return f"{est:40s} {name}"


def read_junit(path):
    """(counts by outcome, failures as (test id, message, text)) of a junit XML report."""
    counts, failures = collections.Counter(), []
    for case in ET.parse(path).iter("testcase"):
        test = f"{case.get('classname', '').rsplit('.', 1)[-1]}.py::{case.get('name')}"
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is not None:
            counts["failed" if bad.tag == "failure" else "error"] += 1
            failures.append((test, (bad.get("message") or "").strip(), bad.text or ""))
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, failures


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--files", default=",".join(DEFAULT_FILES), help="comma-separated test files of sklearn/linear_model/tests"
    )
    p.add_argument("-n", default="2", help="pytest-xdist workers (0: none)")
    p.add_argument("-k", default=None, help="pytest -k expression")
    p.add_argument("--seeds", default=None, help="SKLEARN_TESTS_GLOBAL_RANDOM_SEED (e.g. 0-9, all); default 42")
    p.add_argument("--keep", default=None, help="run in this folder and keep it (junit.xml there)")
    p.add_argument("--list-other", action="store_true", help="print every unsorted failure by its test id")
    args = p.parse_args(argv)
    folder = tests_folder()
    if folder is None:
        print("skipped: scikit-learn's linear_model tests are not installed")
        return 0
    work = Path(args.keep or tempfile.mkdtemp(prefix="sklearn_suite_"))
    work.mkdir(parents=True, exist_ok=True)
    files = [f.strip() for f in args.files.split(",") if f.strip()]
    for name in files:
        shutil.copy(folder / name, work / name)
    (work / "conftest.py").write_text(CONFTEST)
    junit = work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", f"--junitxml={junit}",
           "--rootdir", str(work), "-o", "addopts=", *files]  # fmt: skip
    if args.n != "0" and importlib.util.find_spec("xdist") is not None:
        cmd[3:3] = ["-n", args.n]
    if args.k:
        cmd += ["-k", args.k]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if args.seeds:
        env["SKLEARN_TESTS_GLOBAL_RANDOM_SEED"] = args.seeds
    subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, check=False)
    if not junit.is_file():
        print(f"pytest wrote no report ({' '.join(cmd)})")
        return 1
    counts, failures = read_junit(junit)
    groups = classify(failures)
    total = sum(counts.values())
    print(f"scikit-learn {files}: {total} tests, " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    print(f"sparse refusals: {len(groups['sparse'])}")
    for key, n in sorted(collections.Counter(_sparse_key(t, r) for t, r in groups["sparse"]).items()):
        print(f"  {n:4d}  {key}")
    sorted_other = sort_other(groups["other"])
    for kind in ("documented", "gap", "harness", "unsorted"):
        print(f"{kind}: {len(sorted_other[kind])}")
        for (name, why), n in collections.Counter((t.partition("[")[0], w) for t, w in sorted_other[kind]).items():
            print(f"  {n:4d}  {name}: {why}")
        if args.list_other and kind == "unsorted":
            for test, why in sorted_other[kind]:
                print(f"- {test}: {why}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
