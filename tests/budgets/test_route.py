"""The route of one small call (``benchmarks.route.measure``: distinct modules and functions,
calls, depth of the library's own frames) stays within its ceiling: the route may shrink, and
a change that lengthens it must raise the ceiling here, on purpose and in review.

The ceilings are today's figures, of the whole route and of the pipeline without the backend
layer (``benchmarks.route.BACKEND_LAYER``, the adapter to each array library, its frames not
counted, as NumPy's are not), for ``lstsq`` and ``ridge`` (the lean route) and ``lstsq(...,
method="qr")`` (the full route). ``lstsq`` and ``ridge`` also meet the target of a straight
pipeline (at most 10 modules, 45 functions, 10 frames deep on small NumPy input), backend layer
included."""

from __future__ import annotations

import pytest

import lsq_backends as lsq
from benchmarks.route import BACKEND_LAYER, Route, routes

# (modules, functions, calls, depth) measured by ``python -m benchmarks.route``; how they came down: CHANGELOG.md.
CEILING = {"lstsq": Route(9, 41, 57, 8), "ridge": Route(10, 45, 67, 8), "qr": Route(17, 80, 126, 11)}
# The same calls without the backend layer's frames (first measured with the figures above).
PIPELINE_CEILING = {"lstsq": Route(5, 15, 19, 6), "ridge": Route(5, 15, 20, 6), "qr": Route(12, 46, 58, 10)}
TARGET = Route(10, 45, 10**9, 10)  # calls: no target


def _over(route, limit):
    return [f"{field} {got} > {cap}" for field, got, cap in zip(Route._fields, route, limit, strict=True) if got > cap]


@pytest.fixture(scope="module")
def measured(request):
    if "numpy" not in request.config._lsq_backends:
        pytest.skip("NumPy's route: runs in the numpy backend's session")
    return {"route": routes(lsq), "pipeline": routes(lsq, BACKEND_LAYER)}


@pytest.mark.parametrize("call", sorted(CEILING))
@pytest.mark.parametrize(("part", "ceiling"), [("route", CEILING), ("pipeline", PIPELINE_CEILING)])
def test_route_within_ceiling(measured, part, ceiling, call):
    over = _over(measured[part][call], ceiling[call])
    assert not over, f"{call}: the {part} grew ({', '.join(over)}); measured {measured[part][call]}"


@pytest.mark.parametrize("part", ["route", "pipeline"])
@pytest.mark.parametrize("call", ["lstsq", "ridge"])
def test_route_target(measured, part, call):
    over = _over(measured[part][call], TARGET)
    assert not over, f"{call}'s {part}: {', '.join(over)}"
