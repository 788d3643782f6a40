"""Run one backend x mode x problem x method case: accuracy, where the result lives, host
reads and timings. One :class:`Row` per case."""

from __future__ import annotations

import collections
import statistics
import time
from dataclasses import asdict, dataclass

import lsq_backends

from .._solvers import DEFAULT, record
from .hostreads import count_host_reads
from .problems import score

__all__ = ["SLOW", "TIME_BUDGET", "Row", "Timer", "cases", "check_placement", "full_case", "quick_case", "run_case"]

FLOAT_FIELDS = ("coef", "intercept", "rss", "singular_values")
INT_FIELDS = ("rank", "n_iter")


@dataclass
class Row:
    """The outcome of one case; ``status`` is ``"pass"`` or ``"fail"``."""

    backend: str
    mode: str
    problem: str
    shape: str
    method: str
    dtype: str
    status: str = "fail"
    error: float | None = None
    threshold: float | None = None
    placement: str = "not checked"
    host_reads: str = "?"
    host_read_count: int | None = None
    host_read_events: dict | None = None  # method -> reads through it ("Tensor.__bool__": 3)
    time_ms: float | None = None
    x_native: float | None = None
    x_gram: float | None = None
    message: str = ""
    wall_s: float = 0.0  # the whole case: calls, checks, timings (JAX compiles included)

    def as_dict(self):
        return asdict(self)


SLOW = ("jax", "dask")  # families --quick runs only a few cases of
TIME_BUDGET = 1.0  # seconds of timed calls per case and per peer, past the first call


def full_case(backend, mode, problem, method):
    """Whether the full check runs this case: all but four kinds, so that it takes minutes
    (``--quick`` runs the first three at small sizes, the test suite every one):

    - LSQR and LSMR in float32: their accuracy is their tolerance, not the dtype's, and at
      200000 x 50 a call takes seconds;
    - JAX in float32, but for the default method: each JAX case compiles (seconds on a CPU);
    - JAX's eager mode, but for the default method in float64: an eager call runs the fit
      that the jit rows compile, after the checks that read the input;
    - LSQR and LSMR on Dask: each iteration builds its graph anew, about 150 small operations, at
      about 5 ms each (LSQR on 200 x 5000 took 133 s a call on a 2-core CPU, LSMR over the
      check's 300 s limit for a case).
    """
    if record(method).iterative and (problem.dtype == "float32" or backend.library == "dask"):
        return False
    if backend.library != "jax" or method == DEFAULT:
        return mode != "eager" or backend.library != "jax" or problem.dtype == "float64"
    return mode != "eager" and problem.dtype == "float64"


def quick_case(backend, mode, problem, method):
    """Whether ``--quick`` runs this case. All of them on most backends; a few on JAX, where
    each jitted case compiles (1-3 s on a CPU) and an eager call costs seconds, and on Dask,
    where a fit is ~0.3 s of graph work (lsqr: seconds). Those few are not timed."""
    if backend.library not in SLOW:
        return True
    if backend.library == "jax" and mode == "eager":
        return problem.dtype == "float64" and problem.name == "tall" and method == DEFAULT
    if problem.dtype == "float32":
        return problem.name == "tall" and method == DEFAULT
    if problem.name == "tall":
        return not record(method).iterative
    if problem.name == "rank-deficient":
        return record(method).singular_values  # the rank decided from singular values
    return method == DEFAULT


class Timer:
    """Median wall time of up to ``repeat`` synchronized calls after one warm-up, stopping once
    the timed calls have taken ``budget`` seconds (at least one call: a slow case, such as
    LSQR on 200000 x 50, is timed once rather than five times); caches the peers (the
    backend's own solver, the bare Gram product) per backend, problem and dtype."""

    def __init__(self, repeat, budget=None):
        self.repeat = repeat
        self.budget = TIME_BUDGET if budget is None else budget
        self._peers = {}

    def time(self, backend, call, *, warm=False):
        if not warm:
            backend.finish(call())  # warm-up (JAX compiles, caches fill)
        times = []
        while len(times) < self.repeat and not (times and sum(times) >= self.budget):
            start = time.perf_counter()
            backend.finish(call())
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def peers(self, backend, problem, X, y):
        key = (backend.name, problem.name, problem.dtype)
        if key not in self._peers:
            native = backend.native_lstsq(X, y)
            t_native = self._safe(backend, native)
            t_gram = self._safe(backend, backend.gram(X))
            self._peers[key] = (t_native, t_gram)
        return self._peers[key]

    def _safe(self, backend, call):
        if call is None:
            return None
        try:
            return self.time(backend, call)
        except Exception:  # noqa: BLE001 -- a peer that fails (e.g. gels on a wide X) has no time
            return None


def check_placement(result, X):
    """``"ok"``, or what is wrong: every array field of ``result`` must be of ``X``'s
    namespace, on ``X``'s device, in ``X``'s float dtype (integer for rank and n_iter)."""
    import array_api_compat

    if not isinstance(result, lsq_backends.LstsqResult):
        return f"returned {type(result).__name__}, not LstsqResult"
    xp = array_api_compat.array_namespace(X)
    device = array_api_compat.device(X)
    problems = []
    for name in result._fields:
        value = getattr(result, name)
        if value is None:
            continue
        try:
            space = array_api_compat.array_namespace(value)
        except TypeError:
            problems.append(f"{name} is a {type(value).__name__}")
            continue
        if space is not xp:
            problems.append(f"{name} in {space.__name__}")
            continue
        where = array_api_compat.device(value)
        if where != device:
            problems.append(f"{name} on {where}")
        if name in FLOAT_FIELDS and value.dtype != X.dtype:
            problems.append(f"{name} is {value.dtype}")
        if name in INT_FIELDS and not xp.isdtype(value.dtype, "integral"):
            problems.append(f"{name} is {value.dtype}, not an integer")
    return "ok" if not problems else "; ".join(problems)


def _is_transfer_guard_error(exc):
    text = str(exc).lower()
    return "disallowed" in text and "transfer" in text


def _counted_call(backend, call):
    """The first call, with its host reads counted. A JAX transfer the counter could not see
    raises under the transfer guard: then the reads are reported as a lower bound, and the
    call repeated without the guard."""
    try:
        with count_host_reads(backend.name) as reads:
            result = call()
        return result, str(reads), reads
    except Exception as exc:
        if backend.library != "jax" or not _is_transfer_guard_error(exc):
            raise
        with count_host_reads(backend.name, guard=False) as reads:
            result = call()
        return result, f">{reads.count} (an uncounted transfer)", reads


def run_case(backend, mode, problem, method, *, timer=None):
    """Run one case; never raises (an exception becomes a failed :class:`Row`)."""
    row = Row(backend.name, mode, problem.name, problem.shape, method, problem.dtype)
    start = time.perf_counter()
    try:
        X, y = backend.asarray(problem.X), backend.asarray(problem.y)
        # rcond cuts singular values, which the iterative methods have none of (they refuse
        # one): their rank deficient problems converge to the minimum-norm solution without it.
        options = {k: v for k, v in problem.options.items() if not record(method).iterative or k != "rcond"}
        if problem.kind == "lstsq":
            fit = backend.fitter(lsq_backends.lstsq, mode)

            def call():
                return fit(X, y, method=method, **options)

        else:
            fit = backend.fitter(lsq_backends.ridge, mode, ridge=True)
            alpha = backend.asarray(problem.alpha) if problem.kind == "path" else float(problem.alpha)

            def call():
                return fit(X, y, alpha, method=method, **options)

        result, row.host_reads, reads = _counted_call(backend, call)
        row.host_read_count = reads.count
        row.host_read_events = dict(collections.Counter(reads.events)) if reads.count is not None else None
        row.placement = check_placement(result, X)
        coef = backend.to_numpy(result.coef)
        row.error, row.threshold = score(problem, method, coef)
        passed = row.error <= row.threshold and row.placement == "ok"
        if row.error > row.threshold:
            row.message = f"error {row.error:.2e} above the threshold {row.threshold:.2e}"
        if row.placement != "ok":
            row.message = "; ".join(filter(None, [row.message, f"placement: {row.placement}"]))
        if timer is not None:
            seconds = timer.time(backend, call, warm=True)  # the counted call was the warm-up
            row.time_ms = 1e3 * seconds
            t_native, t_gram = timer.peers(backend, problem, X, y)
            row.x_native = seconds / t_native if t_native else None
            row.x_gram = seconds / t_gram if t_gram else None
        row.status = "pass" if passed else "fail"
    except Exception as exc:  # noqa: BLE001 -- reported in the table, never raised
        row.status = "fail"
        text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
        row.message = text if len(text) <= 300 else text[:297] + "..."
    row.wall_s = time.perf_counter() - start
    return row


def cases(backend, problems, *, quick):
    """``(mode, problem, method)`` for every case this backend runs, and how many cases of
    every mode, problem and method it leaves out (:func:`quick_case`, :func:`full_case`)."""
    chosen, left_out = [], 0
    runs = quick_case if quick else full_case
    for mode in backend.modes:
        for problem in problems:
            for method in problem.methods:
                if not runs(backend, mode, problem, method):
                    left_out += 1
                    continue
                chosen.append((mode, problem, method))
    return chosen, left_out
