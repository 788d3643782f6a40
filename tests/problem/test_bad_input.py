"""Bad input, as data: every case is refused with the right exception, a message naming the
argument, and the inputs left exactly as they were, on every eager backend (Dask too where the
check needs no value: value checks are skipped on Dask by design).

A case is (name, build, exception type, regex): ``build(d)`` gets a :class:`Data` of the
backend under test and returns the call to make; ``value=True`` marks a check of values (NaN,
signs), skipped on Dask. Every array ``d`` hands out is compared bitwise, before and after.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from bad_input_cases import ARGUMENT_CASES, X0, w0, y0
from bad_input_kinds import KIND_CASES

CASES = ARGUMENT_CASES + KIND_CASES


class Data:
    """The inputs of one case on the backend under test; remembers every array it made."""

    def __init__(self, be):
        self.be, self.xp, self.made = be, be.xp, []
        self.X, self.y, self.w = self.put(X0), self.put(y0), self.put(w0)

    def put(self, a, dtype=None):
        # A fresh copy per case: NumPy (and torch.asarray) would otherwise share the module's data.
        return self.keep(self.be.asarray(np.array(a, copy=True), dtype))

    def keep(self, a):
        """Record ``a`` with a copy of its values taken now, before the call (arrays made
        outside ``put`` too: another library's, a masked array)."""
        self.made.append((a, _snapshot(self.be, a)))
        return a

    def unchanged(self):
        return all(_same(_snapshot(self.be, a), before) for a, before in self.made)

    def only(self, *names):
        if self.be.library not in names:
            pytest.skip(f"a {'/'.join(names)} case")

    def dtype(self, name):
        dt = getattr(self.xp, name, None)
        if dt is None:
            pytest.skip(f"{self.be.library} has no {name}")
        return dt

    def cast(self, a, name):
        return self.keep(self.xp.astype(self.put(a), self.dtype(name)))

    def other_library(self, a):
        """``a`` from a library other than the backend's: array-api-strict (in every test
        environment), or torch next to array-api-strict."""
        if self.be.library != "array_api_strict":
            import array_api_strict

            return self.keep(array_api_strict.asarray(a))
        torch = pytest.importorskip("torch")
        return self.keep(torch.asarray(a))

    def with_nan(self, a, index, value=np.nan):
        b = np.array(a, copy=True)
        b[index] = value
        return self.put(b)


def _snapshot(be, a):
    """(dtype, shape, bytes) of ``a``, whatever it is; None where it holds no values."""
    if getattr(a, "is_meta", False):
        return None
    if hasattr(a, "toarray"):  # SciPy sparse
        a = a.toarray()
    elif isinstance(a, np.ma.MaskedArray):
        a = np.stack([np.ma.getdata(a), np.ma.getmaskarray(a)])
    elif type(a).__module__.startswith("array_api_strict"):
        strict = sys.modules["array_api_strict"]
        a = np.asarray(a.to_device(strict.Device("CPU_DEVICE")))
    elif type(a).__module__.startswith("dask"):
        a = a.compute()
    elif type(a).__module__.startswith("cupy"):
        a = a.get()  # CuPy refuses the implicit copy that np.asarray would make
    elif type(a).__module__.startswith("torch"):
        torch = sys.modules["torch"]
        t = a.detach().cpu()
        a = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()  # NumPy has no bfloat16
        return str(t.dtype), a.shape, a.tobytes()
    a = np.asarray(a)
    return str(a.dtype), a.shape, a.tobytes()


def _same(a, b):
    return a == b


def test_enough_cases():
    assert len(CASES) >= 60
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(be, case):
    if case.value and be.library == "dask":
        pytest.skip("values are not read on Dask (documented)")
    d = Data(be)
    call = case.build(d)
    with pytest.raises(case.exc, match=case.match):
        call()
    assert d.made and d.unchanged(), "an input was modified"
