"""Self-check of lsq_backends on the array backends of this machine: ``python -m lsq_backends.check``.

Runs every backend it can use (NumPy, array-api-strict, Dask, JAX on each platform, eager and
jitted, PyTorch on the CPU and CUDA, CuPy), or those named with ``--backends``, on tall, wide,
rank-deficient, batched and ridge problems with a known condition number, in float32 and
float64, with every method. For each case it reports the error of ``coef`` against a float64
NumPy reference next to the method's error bound, whether every field of the result is in the
input's namespace, on its device and in its dtype, the device-to-host reads of the call, and
its time against the backend's own ``lstsq`` and a bare ``X.T @ X``. The exit status is 0 when
every check passed, 1 otherwise (2 for a usage error). ``--quick`` uses small shapes.

Nothing here imports an optional library until a backend is run, and ``import lsq_backends``
does not import this package. :func:`count_host_reads` is reusable in tests::

    from lsq_backends.check import count_host_reads
"""

from .cli import main
from .hostreads import HostReadCounter, count_host_reads

__all__ = ["HostReadCounter", "count_host_reads", "main"]
