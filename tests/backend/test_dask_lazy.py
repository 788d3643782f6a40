"""Dask: a fit only builds a graph (nothing is computed until ``compute()``), the fallback
passes over X run only when taken, and fits on a real multi-process ``LocalCluster`` match
NumPy.

Laziness is tested as array-api-extra does: the fit runs under a scheduler that raises on any
compute; the result is then computed with a real scheduler and compared with the NumPy fit.
Every fit of ``test_lstsq`` runs so on Dask (``lazy_fits``); this module tests the helper and
what it cannot: the fallback's passes, value checks, a real cluster.
"""

from __future__ import annotations

import numpy as np
import pytest
from problems import cond

import lsq_backends as lsq
from lsq_backends._backend import _dask_blocks
from lsq_backends.check.problems import design, threshold

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
M, N, CHUNK = 600, 6, 100


@pytest.fixture(scope="module", autouse=True)
def dask_session(request):
    if "dask" not in request.config._lsq_backends:
        pytest.skip("runs in the dask backend's session")


def _no_compute(*args, **kwargs):
    raise AssertionError("a fit computed something before compute() was called")


def _data(rank=None, k=None, seed=0, offset=2.0):
    rng = np.random.default_rng(seed)
    X = design(rng, (M, N), 30.0, rank=rank) + offset
    y = rng.standard_normal(M if k is None else (M, k))
    return X, y, rng.uniform(0.5, 2.0, M)


def _dask(a):
    return da.from_array(a, chunks=(CHUNK,) + a.shape[1:])


def _fit_lazily(fn, X, y, **kwargs):
    kwargs = {k: (_dask(v) if isinstance(v, np.ndarray) and v.shape[:1] == (M,) else v) for k, v in kwargs.items()}
    with dask.config.set(scheduler=_no_compute):
        res = fn(_dask(X), _dask(y), **kwargs)
    return dask.compute(*(f for f in res if f is not None), scheduler="sync")


def test_lazy_fits_refuse_a_compute(monkeypatch):
    """The helper the fits of ``test_lstsq`` run under on Dask (``lazy_fits``): a call the
    capability table declares lazy must not compute. ``lsqr`` computes (its convergence
    tests); declared lazy for this test, it raises."""
    import types

    import lazy_fits

    from lsq_backends import capabilities

    original = lsq.lstsq
    lazy_lsqr = {**capabilities.CAPABILITIES["lstsq:lsqr"], "dask_lazy": True}
    monkeypatch.setitem(capabilities.CAPABILITIES, "lstsq:lsqr", lazy_lsqr)
    X, y, _ = _data()
    with lazy_fits.patched(types.SimpleNamespace(lazy_fits=("lstsq",)), "dask"):
        with pytest.raises(AssertionError, match="computed"):
            lsq.lstsq(_dask(X), _dask(y), method="lsqr")
        got = lsq.lstsq(_dask(X), _dask(y), method="qr").coef  # lazy, then computed
    assert lsq.lstsq is original
    np.testing.assert_allclose(
        np.asarray(got), np.linalg.lstsq(X, y, rcond=None)[0], rtol=threshold("qr", np.float64, cond(X), M, N)
    )


def test_value_checks_are_skipped_for_lazy_input():
    """check_finite reads no values of a Dask array: the fit stays lazy, and compute() then
    behaves as NumPy with check_finite=False (NaN reaches LAPACK, whose SVD gives up)."""
    X, y, _ = _data()
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        lsq.lstsq(X, y, method="normal")
    with pytest.raises(np.linalg.LinAlgError):
        lsq.lstsq(X, y, method="normal", check_finite=False)
    with pytest.raises(np.linalg.LinAlgError):
        _fit_lazily(lsq.lstsq, X, y, method="normal")


@pytest.mark.parametrize(
    ("method", "rank", "on_data"), [("normal", None, 0), ("auto", None, 0), ("normal", 4, 6), ("qr", None, 6)]
)
def test_fallback_pass_runs_only_when_taken(monkeypatch, method, rank, on_data):
    """The QR pass over X inside a fallback branch is gated by the branch's predicate: on a
    well-conditioned full-rank X, ``normal`` and ``auto`` run no QR of a data chunk."""
    seen = []
    real = _dask_blocks._block_r

    def spy(a, b=None):
        seen.append(a.shape[0] == CHUNK and a.strides[0] != 0)
        return real(a, b)

    monkeypatch.setattr(_dask_blocks, "_block_r", spy)
    X, y, _ = _data(rank=rank, offset=0.0)
    # cond(X) = 30 and a small residual (cond**2 tan(theta) far below 1e4): auto keeps the normal
    # equations. Pure-noise y (tan ~ sqrt(m / n) = 10) would sit at auto's residual limit.
    y = X @ np.ones(N) + 1e-2 * y
    got = _fit_lazily(lsq.lstsq, X, y, method=method)
    assert sum(seen) == on_data  # chunks of X factorized (6 chunks, none when gated off)
    ref = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(got[0], ref, rtol=threshold(method, np.float64, 30.0, M, N))
    assert got[2] == (N if rank is None else rank)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_workers_import_this_checkout(client):
    import lsq_backends

    files = client.run(lambda: __import__("lsq_backends").__file__)
    assert len(files) == 2 and set(files.values()) == {lsq_backends.__file__}


@pytest.mark.parametrize(("fit", "method"), [("lstsq", "normal"), ("ridge", "qr")])
def test_local_cluster_matches_numpy(client, fit, method):
    X, y, w = _data(k=2)
    kwargs = {"fit_intercept": True, "sample_weight": w}
    fn = lsq.lstsq if fit == "lstsq" else lsq.ridge
    if fit == "ridge":
        kwargs["alpha"] = 1.0
    Xd, yd, wd = _dask(X), _dask(y), _dask(w)
    with dask.config.set(scheduler=_no_compute):
        res = fn(Xd, yd, method=method, **{**kwargs, "sample_weight": wd})
    coef, intercept = client.compute([res.coef, res.intercept], sync=True)
    ref = fn(X, y, method=method, **kwargs)
    tol = threshold(method, np.float64, cond(X - X.mean(0)), M, N)
    np.testing.assert_allclose(coef, ref.coef, rtol=tol, atol=tol * np.abs(ref.coef).max())
    np.testing.assert_allclose(intercept, ref.intercept, rtol=tol, atol=tol * np.abs(ref.intercept).max())


# Graph layers of one 40 x 5 fit in four row blocks (``python -m benchmarks.dask_graph``):
# Dask pays milliseconds per layer whatever the data's size. The ceilings are today's counts,
# so that the graph may shrink but not grow unnoticed; a bare X.T @ X builds 5.
GRAPH_LAYERS = {
    ("svd", False): 107, ("svd", True): 168, ("qr", False): 114, ("qr", True): 175,
    ("normal", False): 174, ("normal", True): 269, ("auto", False): 253, ("auto", True): 391,
}  # fmt: skip


@pytest.mark.parametrize(("method", "intercept"), sorted(GRAPH_LAYERS))
def test_graph_layers_within_ceiling(method, intercept):
    from benchmarks.dask_graph import layers, problem

    X, y = problem()
    with dask.config.set(scheduler=_no_compute):
        r = lsq.lstsq(X, y, method=method, fit_intercept=intercept)
    got = layers(r.coef, r.intercept, r.rss)
    assert got <= GRAPH_LAYERS[method, intercept], f"{method}: {got} graph layers"
