"""Out-of-core fit: rows streamed from a memory-mapped ``.npy`` file far larger than the state.

``python -m benchmarks.stream`` (defaults: 10**7 rows x 20 features, float64, 1.6 GB in /tmp)
writes ``[X, y]`` to one ``.npy`` file, then in a fresh process per accumulator reads it back
through ``numpy.load(mmap_mode="r")`` one chunk at a time and fits it; the same script fits a
subset of rows in memory with :func:`lsq_backends.lstsq` (the time peer and the accuracy
check). The file is deleted at the end unless ``--keep``.

What "peak memory" means here, per fresh worker process:

- ``tracemalloc``: the peak of Python and NumPy allocations during the fit (NumPy reports its
  buffers to tracemalloc): the chunk buffer, the update's temporaries and the state.
- peak RSS: the process's resident-set high-water mark (``VmHWM``, what ``ru_maxrss``
  reports), reset to the current RSS just before the fit through ``/proc/self/clear_refs``
  (``ru_maxrss`` itself carries the parent's peak across fork/exec), minus that RSS. Pages of
  the memory map that were touched count toward RSS while they are mapped; each chunk is copied
  from the map into one reusable buffer and its pages are then released with
  ``madvise(MADV_DONTNEED)``, so RSS stays near the buffer and the update's temporaries
  (``--no-madvise`` shows the other case: RSS grows toward the file size, though those pages
  are the kernel's page cache and reclaimable, not heap).

Examples
--------
Default run (2.5 min wall here on a machine at load 12, 46 s of CPU)::

    python -m benchmarks.stream

Smaller, keeping the file::

    python -m benchmarks.stream --rows 2000000 --cols 10 --keep
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np

KINDS = ("normal", "qr")


def write_file(path, rows, cols, block=1_000_000, seed=0):
    """[X, y] with X = offset + noise (columns around 1e3: the intercept matters) and
    y = X @ w + 5 + noise, written block by block (never all in memory)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(cols)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(rows, cols + 1))
    for start in range(0, rows, block):
        stop = min(rows, start + block)
        X = 1e3 + rng.standard_normal((stop - start, cols))
        out[start:stop, :cols] = X
        out[start:stop, cols] = X @ w + 5.0 + 0.1 * rng.standard_normal(stop - start)
    out.flush()
    del out
    return w


def _release(mm, start_row, stop_row, base):
    """madvise(MADV_DONTNEED) on the whole pages that rows [start_row, stop_row) occupy."""
    row_bytes = mm.strides[0]
    first = base + start_row * row_bytes
    last = base + stop_row * row_bytes
    page = mmap.PAGESIZE
    lo, hi = (first // page) * page, (last // page) * page  # the partial last page waits
    if hi > lo:
        mm._mmap.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{field} not in /proc/self/status")


def _reset_peak_rss():
    """Reset this process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0) and return
    that baseline in KiB. ``ru_maxrss`` cannot be used: across fork/exec it keeps the parent's
    peak, here the 1.7 GB of map pages touched while writing the file."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kb("VmRSS")


def worker(spec):
    """One fit in this (fresh) process; prints a JSON line of results."""
    import lsq_backends as lsq

    path, kind, rows, chunk = spec["path"], spec["kind"], spec["rows"], spec["chunk"]
    # Warm up the code path (imports, first-call costs) on a tiny problem before measuring.
    lsq.NormalAccumulator().update(np.ones((3, 2)), np.ones(3)).solve()
    rss0 = _reset_peak_rss()
    tracemalloc.start()
    t0 = time.perf_counter()
    if kind == "memory":
        data = np.load(path, mmap_mode="r")[:rows]
        X, y = np.array(data[:, :-1]), np.array(data[:, -1])  # in RAM, as a user would have it
        del data
        t1 = time.perf_counter()
        res = lsq.lstsq(X, y, method=spec["method"], fit_intercept=True)
        t_fit = time.perf_counter() - t1
    else:
        mm = np.load(path, mmap_mode="r")
        base = mm.ctypes.data - np.frombuffer(mm._mmap, dtype=np.uint8).ctypes.data
        cols = mm.shape[1] - 1
        buf = np.empty((chunk, cols + 1))
        acc = lsq.NormalAccumulator() if kind == "normal" else lsq.QRAccumulator()
        t1 = time.perf_counter()
        for start in range(0, rows, chunk):
            stop = min(rows, start + chunk)
            view = buf[: stop - start]
            np.copyto(view, mm[start:stop])
            if spec["madvise"]:
                _release(mm, start, stop, base)
            acc.update(view[:, :cols], view[:, cols])
        res = acc.solve()
        t_fit = time.perf_counter() - t1
        del mm
    elapsed = time.perf_counter() - t0
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = _status_kb("VmHWM")
    print(
        json.dumps(
            {
                "kind": kind,
                "rows": rows,
                "fit_s": t_fit,
                "total_s": elapsed,
                "tracemalloc_mb": traced_peak / 2**20,
                "rss_increase_mb": (rss - rss0) / 1024,
                "coef": np.asarray(res.coef).tolist(),
                "intercept": float(res.intercept),
                "rss": float(res.rss),
            }
        )
    )


def run_worker(spec):
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.stream", "--worker", json.dumps(spec)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.stream", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--cols", type=int, default=20)
    p.add_argument("--chunk", type=int, default=100_000, help="rows per chunk")
    p.add_argument(
        "--subset", type=int, default=1_000_000, help="rows fitted both in memory and streamed (accuracy and time peer)"
    )
    p.add_argument("--dir", default="/tmp")
    p.add_argument("--keep", action="store_true", help="keep the .npy file")
    p.add_argument("--no-madvise", action="store_true", help="do not release the map's pages after each chunk")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    path = os.path.join(args.dir, f"lsq_stream_{args.rows}x{args.cols}.npy")
    subset = min(args.subset, args.rows)
    try:
        t = time.perf_counter()
        write_file(path, args.rows, args.cols)
        size_gb = os.path.getsize(path) / 1e9
        print(f"wrote {path}: {args.rows} x {args.cols + 1} float64, {size_gb:.2f} GB, {time.perf_counter() - t:.1f} s")
        common = {"path": path, "chunk": args.chunk, "madvise": not args.no_madvise}
        rows = []
        for kind in KINDS:
            rows.append(run_worker({**common, "kind": kind, "rows": args.rows}))
        sub = {kind: run_worker({**common, "kind": kind, "rows": subset}) for kind in KINDS}
        mem = {kind: run_worker({**common, "kind": "memory", "method": kind, "rows": subset}) for kind in KINDS}
    finally:
        if not args.keep and os.path.exists(path):
            os.remove(path)
    p_state = args.cols + 1
    print(
        f"\nstate: p^2 + 3p + 3 = {p_state * (p_state + 3) + 3} float64 numbers, "
        f"{(p_state * (p_state + 3) + 3) * 8 / 1024:.1f} KiB; "
        f"chunk buffer {args.chunk * p_state * 8 / 2**20:.1f} MiB; madvise={'off' if args.no_madvise else 'on'}"
    )
    print(f"\nAll {args.rows} rows streamed ({size_gb:.2f} GB file):\n")
    print(
        "| accumulator | time (s) | rows/s | tracemalloc peak (MiB) | peak RSS increase (MiB) | rel. diff coef vs other accumulator |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r, other in zip(rows, rows[::-1], strict=False):
        print(
            f"| {r['kind']} | {r['fit_s']:.1f} | {r['rows'] / r['fit_s']:.3g} | {r['tracemalloc_mb']:.1f} | "
            f"{r['rss_increase_mb']:.1f} | {_rel(r['coef'], other['coef']):.1e} |"
        )
    print(f"\nFirst {subset} rows, streamed vs in memory (lsq_backends.lstsq, fit_intercept=True, same method):\n")
    print(
        "| method | stream (s) | in memory (s) | stream / in memory | rel. diff coef | rel. diff intercept | rel. diff rss "
        "| in-memory peak RSS increase (MiB) | stream peak RSS increase (MiB) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        s, m = sub[kind], mem[kind]
        print(
            f"| {kind} | {s['fit_s']:.2f} | {m['fit_s']:.2f} | {s['fit_s'] / m['fit_s']:.2f} | {_rel(s['coef'], m['coef']):.1e} | "
            f"{_rel(s['intercept'], m['intercept']):.1e} | {_rel(s['rss'], m['rss']):.1e} | "
            f"{m['rss_increase_mb']:.0f} | {s['rss_increase_mb']:.0f} |"
        )


if __name__ == "__main__":
    main()
