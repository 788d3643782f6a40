"""Accumulators shared between threads, pickled, and deep-copied: every row counts, and a
copy continues exactly where the original stood."""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

import lsq_backends as lsq

ACCUMULATORS = {"normal": lsq.NormalAccumulator, "qr": lsq.QRAccumulator}


def _data(m=80, n=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    return X, X @ np.arange(1.0, n + 1.0) + 0.5 + 0.1 * rng.standard_normal(m)


@pytest.mark.parametrize("kind", list(ACCUMULATORS))
@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_copy_then_continue_gives_the_same_solve(be, kind, copier):
    """The copy holds the same rows and namespace; both then take the same chunks and solve to
    the same numbers (bitwise: the same operations on the same arrays)."""
    X, y = _data()
    acc = ACCUMULATORS[kind]().update(be.asarray(X[:30]), be.asarray(y[:30]))
    twin = pickle.loads(pickle.dumps(acc)) if copier == "pickle" else copy.deepcopy(acc)
    assert twin.n_features == 3 and repr(twin) == repr(acc)
    for a in (acc, twin):
        a.update(be.asarray(X[30:55]), be.asarray(y[30:55])).update(be.asarray(X[55:]), be.asarray(y[55:]))
    want, got = acc.solve(), twin.solve()
    for field in ("coef", "intercept", "rss", "rank"):
        np.testing.assert_array_equal(be.to_numpy(getattr(got, field)), be.to_numpy(getattr(want, field)))
    # and merged into one another: the copy is a full accumulator of the same kind
    both = twin.copy().merge(acc).solve()
    np.testing.assert_allclose(be.to_numpy(both.coef), be.to_numpy(want.coef), rtol=1e-10)


@pytest.mark.parametrize("kind", list(ACCUMULATORS))
def test_empty_accumulator_pickles(kind, numpy_reference):
    acc = pickle.loads(pickle.dumps(ACCUMULATORS[kind]()))
    X, y = _data()
    np.testing.assert_allclose(acc.update(X, y).solve().coef, ACCUMULATORS[kind]().update(X, y).solve().coef)


THREADS, ROWS, CHUNK = 4, 4000, 10


@pytest.mark.parametrize("kind", list(ACCUMULATORS))
@pytest.mark.parametrize("how", ["update", "merge"])
def test_threads_lose_no_rows(kind, how, numpy_reference):
    """4 threads add 4000 rows each, 10 at a time, to one accumulator (directly, or by merging
    small accumulators into it): all 16000 count, and the fit is the one-thread fit. Without
    the lock, interleaved read-modify-writes dropped 15% to 80% of them."""
    cls = ACCUMULATORS[kind]
    X, y = _data(THREADS * ROWS, seed=1)
    shared = cls()
    start = threading.Barrier(THREADS)

    def work(t):
        start.wait()
        for i in range(t * ROWS, (t + 1) * ROWS, CHUNK):
            if how == "update":
                shared.update(X[i : i + CHUNK], y[i : i + CHUNK])
            else:
                shared.merge(cls().update(X[i : i + CHUNK], y[i : i + CHUNK]))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert float(shared.state.count) == THREADS * ROWS
    want = cls().update(X, y).solve()
    np.testing.assert_allclose(shared.solve().coef, want.coef, rtol=1e-9)
