"""Count the device-to-host reads a call makes: :func:`count_host_reads`.

A read (``bool(x)``, ``float(x)``, ``x.item()``, ``x.cpu()``, ...) stalls an accelerator until
its queue drains, so a fit that reads often is slow on a GPU however fast its kernels are. The
counter patches the array class's reading methods with counting wrappers for the duration of a
``with`` block and restores them afterwards (also on an exception). Only the outermost read is
counted when one reading method calls another (``bool(t)`` on a Dask array computes it: one read).

What is counted, per backend name (``"torch"`` means ``"torch-cpu"`` or ``"torch-cuda"``, etc.):

- ``torch-*``: ``torch.Tensor.__bool__``, ``__float__``, ``__int__``, ``__index__``,
  ``__complex__``, ``item``, ``tolist``, ``numpy``, ``cpu``; on CPU tensors these cost nothing
  but are counted all the same, so a CPU run shows what a CUDA run would pay. On ``torch-cuda``
  the block also runs under ``torch.cuda.set_sync_debug_mode("warn")`` and synchronizations
  that none of these methods made (inside a torch operator) are counted in ``hidden``.
- ``cupy``: ``cupy.ndarray.get``, ``item``, ``tolist``, ``__bool__``, ``__float__``,
  ``__int__``, ``__index__``, ``__complex__`` (``cupy.asnumpy`` goes through ``get``).
- ``jax-*``: the same conversions on JAX's concrete array class (``__array__``, ``item``,
  ``tolist`` too). On a platform other than the CPU the block also runs under
  ``jax.transfer_guard_device_to_host("disallow")`` while the counted methods are allowed
  through, so a transfer the counter cannot see raises (set ``guard=False`` to turn that off).
  On the CPU, ``numpy.asarray`` of a JAX array takes the buffer protocol (no copy, no method
  call) and is not counted.
  Under ``jax.jit`` a traced call makes no reads (the count is that of the outer call).
- ``array_api_strict``: ``Array.__bool__``, ``__float__``, ``__int__``, ``__index__``,
  ``__complex__``, ``__array__``, ``__buffer__`` (where present), ``to_device`` (to the CPU
  device only).
- ``dask``: ``dask.array.Array.compute``, ``persist``, ``__bool__``, ``__float__``, ``__int__``,
  ``__index__``, ``__complex__``, ``__array__``, and ``dask.compute``/``dask.persist``: every
  computation started while the graph is being built.
- ``numpy``: nothing to count (host memory): ``count`` is ``None``, shown as ``n/a``.

Use it to hold a fit to a budget of reads::

    from lsq_backends.check import count_host_reads

    with count_host_reads("torch-cuda") as reads:
        lsq.lstsq(X, y)
    assert reads.count <= 1, reads.events
"""

from __future__ import annotations

import contextlib
import threading
import warnings

__all__ = ["HostReadCounter", "count_host_reads"]

_TORCH = ("__bool__", "__float__", "__int__", "__index__", "__complex__", "item", "tolist", "numpy", "cpu")
_CUPY = ("get", "item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__complex__")
_JAX = ("__bool__", "__float__", "__int__", "__index__", "__complex__", "item", "tolist", "__array__")
_STRICT = ("__bool__", "__float__", "__int__", "__index__", "__complex__", "__array__", "__buffer__", "to_device")
_DASK = ("compute", "persist", "__bool__", "__float__", "__int__", "__index__", "__complex__", "__array__")


class HostReadCounter:
    """The reads seen in one ``with count_host_reads(...)`` block.

    Attributes
    ----------
    backend : str
        The backend name given.
    count : int or None
        Reads counted (outermost calls of the patched methods); ``None`` where reads cannot be
        counted (NumPy: the data is in host memory).
    events : list of str
        The method behind each counted read, in order (``"Tensor.item"``, ...).
    hidden : int
        Synchronizations seen by the backend's own detector that no counted method made
        (``torch-cuda`` only; 0 elsewhere).
    note : str
        What was counted, or why nothing was.
    """

    def __init__(self, backend, note=""):
        self.backend = backend
        self.count = None
        self.events = []
        self.hidden = 0
        self.note = note
        self._local = threading.local()

    def __str__(self):
        if self.count is None:
            return "n/a"
        return f"{self.count} (+{self.hidden} hidden)" if self.hidden else str(self.count)

    def __repr__(self):
        return f"HostReadCounter({self.backend!r}, count={self.count}, hidden={self.hidden}, events={self.events})"

    def _enter_read(self, label):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self.count += 1
            self.events.append(label)
        self._local.depth = depth + 1

    def _leave_read(self):
        self._local.depth -= 1

    @property
    def reading(self):
        """True inside a counted read (a patched method is running)."""
        return getattr(self._local, "depth", 0) > 0


def _wrap(counter, owner, name, original, allow=None, when=None):
    label = f"{owner}.{name}"

    def counted(*args, **kwargs):
        if when is not None and not when(*args, **kwargs):
            return original(*args, **kwargs)
        counter._enter_read(label)
        try:
            if allow is None:
                return original(*args, **kwargs)
            with allow():
                return original(*args, **kwargs)
        finally:
            counter._leave_read()

    counted.__name__ = getattr(original, "__name__", name)
    counted.__doc__ = getattr(original, "__doc__", None)
    return counted


@contextlib.contextmanager
def _patched(cls, names, counter, allow=None, when=None):
    """Replace ``cls.<name>`` by counting wrappers; put the originals (or their absence from
    ``cls.__dict__``, for inherited methods) back on exit."""
    saved = []
    try:
        for name in names:
            if not hasattr(cls, name):
                continue
            own = name in cls.__dict__
            original = cls.__dict__[name] if own else getattr(cls, name)
            bound = getattr(cls, name)
            check = when.get(name) if when else None
            setattr(cls, name, _wrap(counter, cls.__name__, name, bound, allow, check))
            saved.append((name, own, original))
        yield
    finally:
        for name, own, original in reversed(saved):
            if own:
                setattr(cls, name, original)
            else:
                delattr(cls, name)


@contextlib.contextmanager
def _patched_module(module, names, counter):
    saved = [(name, getattr(module, name)) for name in names if hasattr(module, name)]
    try:
        for name, original in saved:
            setattr(module, name, _wrap(counter, module.__name__, name, original))
        yield
    finally:
        for name, original in saved:
            setattr(module, name, original)


def _family(backend):
    name = str(backend).lower()
    for family in ("torch", "jax", "cupy", "dask", "array_api_strict", "numpy"):
        if name == family or name.startswith(family + "-"):
            return family
    msg = f"count_host_reads: unknown backend {backend!r}; expected numpy, array_api_strict, dask, cupy, torch-<device> or jax-<platform>"
    raise ValueError(msg)


@contextlib.contextmanager
def count_host_reads(backend, *, guard=True):
    """Count device-to-host reads made inside the ``with`` block.

    Parameters
    ----------
    backend : str
        ``"numpy"``, ``"array_api_strict"``, ``"dask"``, ``"cupy"``, ``"torch"``,
        ``"torch-cpu"``, ``"torch-cuda"``, ``"jax"``, ``"jax-cpu"``, ``"jax-gpu"`` (any
        ``jax-<platform>``). The library must be importable (it is imported here, not before).
    guard : bool
        Also run the backend's own detector of synchronizations, where it has one on this
        device: ``torch-cuda`` (sync debug mode: unseen synchronizations go to ``hidden``) and
        JAX off the CPU (a transfer guard: an unseen transfer raises inside the block).

    Yields
    ------
    HostReadCounter
        ``count`` grows with each read; read it after the block.
    """
    family = _family(backend)
    counter = HostReadCounter(str(backend))
    if family == "numpy":
        counter.note = "host memory: nothing to read back"
        yield counter
        return
    counter.count = 0
    with contextlib.ExitStack() as stack:
        if family == "torch":
            _torch_reads(stack, counter, guard and str(backend).lower().endswith("cuda"))
        elif family == "cupy":
            import cupy

            stack.enter_context(_patched(cupy.ndarray, _CUPY, counter))
            counter.note = "cupy.ndarray reading methods"
        elif family == "jax":
            _jax_reads(stack, counter, guard and not str(backend).lower().endswith("cpu"))
        elif family == "array_api_strict":
            import array_api_strict

            array = type(array_api_strict.asarray(0.0))
            cpu = array_api_strict.asarray(0.0).device  # arrays are made on the CPU device by default
            only_to_cpu = {"to_device": lambda self, device, *args, **kwargs: device == cpu}
            stack.enter_context(_patched(array, _STRICT, counter, when=only_to_cpu))
            counter.note = "array_api_strict.Array conversions"
        else:
            import dask
            import dask.array

            stack.enter_context(_patched(dask.array.Array, _DASK, counter))
            stack.enter_context(_patched_module(dask, ("compute", "persist"), counter))
            counter.note = "Dask computations started while the graph is built"
        yield counter


# torch's notice on the first ``set_sync_debug_mode`` of a process ("Synchronization debug mode
# is a prototype feature ...", a ``TORCH_WARN_ONCE`` in ``torch/csrc/cuda/Module.cpp``), given
# inside the first torch-cuda block: no synchronization. It goes back to the caller with the
# other warnings; taken for one, it added a hidden sync to the first block of every process.
_TORCH_SYNC_NOTICE = "debug mode is a prototype feature"


def _torch_sync_warning(message):
    """Whether a warning is CUDA's sync debug mode reporting a synchronization ("called a
    synchronizing CUDA operation"), not its one-time notice about itself."""
    text = str(message).lower()
    return "synchroniz" in text and _TORCH_SYNC_NOTICE not in text


def _torch_reads(stack, counter, sync_debug):
    import torch

    stack.enter_context(_patched(torch.Tensor, _TORCH, counter))
    counter.note = "torch.Tensor reading methods"
    if not sync_debug or not torch.cuda.is_available():
        return
    # Synchronizations inside torch operators (a nonzero, a linalg error check) call no Python
    # method: CUDA's sync debug mode warns for each, and those outside a counted read are hidden.
    previous = torch.cuda.get_sync_debug_mode()
    seen = []

    def show(message, category, filename, lineno, file=None, line=None):
        if _torch_sync_warning(message):
            if not counter.reading:
                counter.hidden += 1
        else:
            seen.append((message, category, filename, lineno))

    def restore():
        torch.cuda.set_sync_debug_mode(previous)
        for message, category, filename, lineno in seen:
            warnings.warn_explicit(message, category, filename, lineno)

    stack.callback(restore)
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("always")
    warnings.showwarning = show
    torch.cuda.set_sync_debug_mode("warn")
    counter.note += " (+ CUDA sync debug mode)"


def _jax_reads(stack, counter, guarded):
    import jax
    import jax.numpy as jnp

    # jax.Array is abstract; the concrete class of every eager array is public only by its type.
    array = type(jnp.zeros(()))
    allow = None
    if guarded and any(d.platform != "cpu" for d in jax.devices()):
        stack.enter_context(jax.transfer_guard_device_to_host("disallow"))

        def allow():
            return jax.transfer_guard_device_to_host("allow")

        counter.note = "jax array conversions (+ transfer guard: unseen transfers raise)"
    else:
        counter.note = "jax array conversions"
    stack.enter_context(_patched(array, _JAX, counter, allow=allow))
