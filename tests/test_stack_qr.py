"""Stacks of small problems on the GPU libraries, tested on the CPU.

The H100 self-check (CuPy 14.2, torch 2.11) on 10000 problems of 64 x 8: CuPy made 113 host
reads in every direct fit (226 in float32 ``auto`` and ``qr``) where torch-cuda made 1-2. The
rank certificate of a stack of small factors substituted entry by entry, with 28 calls of
array-api-compat's ``clip``, which writes through boolean masks whose counts CuPy reads on the
host (4 reads a call). Off NumPy the certificate now takes the batched triangular inverse, as
``condition_estimate`` does: a few dozen operations, no clip."""

from __future__ import annotations

import collections

import cupy_standin
import numpy as np
import pytest

from lsq_backends._backend import _compat
from lsq_backends._solvers.linalg import rank


def _ops():
    pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.count = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.count[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    return Ops()


@pytest.mark.parametrize("p", [4, 8, 16])
def test_small_stack_certificate_is_a_few_operations_off_numpy(monkeypatch, p, numpy_reference):
    """The certificate's substitution over a stack (~p**3 / 6 operations and p (p - 1) / 2 clips) is
    NumPy's; off NumPy one batched inverse: a few dozen operations whatever p, no ``clip``
    (array-api-compat's CuPy ``clip`` cost 4 host reads a call), the same answers."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 40, p)) * np.logspace(0, 3, p)
    X[3, :, 1] = X[3, :, 0]  # rank deficient: not certified
    X[7, :, -1] = 1e-9 * X[7, :, 0] + X[7, :, 1]  # nearly: not certified at the default cutoff
    R = np.linalg.qr(X, mode="r")
    R[9, 0, 0] = np.nan  # a failed factor: not certified
    cutoff = _compat.eps(_compat.array_namespace(R), R) * 40
    ref = rank.certified(_compat.array_namespace(R), R, None, None, cutoff)
    assert ref.sum() == 47 and not ref[[3, 7, 9]].any()
    with _ops() as ops:
        got = rank.certified(_compat.array_namespace(torch.empty(0)), torch.asarray(R), None, None, cutoff)
    assert sum(ops.count.values()) <= 80, sum(ops.count.values())
    np.testing.assert_array_equal(got.numpy(), ref)
    cupy = cupy_standin.install(monkeypatch)
    clips = []
    real = cupy.xp.clip
    monkeypatch.setattr(cupy.xp, "clip", lambda *a, **k: clips.append(1) or real(*a, **k))
    got = rank.certified(cupy.xp, cupy_standin.ndarray(R), None, None, cutoff)
    assert not clips, f"{len(clips)} clips: {4 * len(clips)} host reads on CuPy"
    np.testing.assert_array_equal(np.asarray(got), ref)
