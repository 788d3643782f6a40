"""The machine, the library versions and which GPU backends are usable, for ``python -m benchmarks.gpu``.

``python benchmarks/gpu/env.py [--json PATH]`` prints one line per fact as it is found (a hang
in one import still leaves the lines before it) and writes them as JSON; ``usable`` maps
``cupy``, ``torch-cuda`` and ``jax-gpu`` to ``true`` or to the reason they cannot run.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

OPTIONAL = ("tqdm", "dask", "sklearn", "statsmodels", "hypothesis", "xdist", "matplotlib", "threadpoolctl", "lineax")
LIBRARIES = ("lsq_backends", "numpy", "scipy", "array_api_compat", "array_api_strict", "cupy", "jax", "jaxlib", "torch")


def say(facts, key, value):
    facts[key] = value
    print(f"{key}: {value}", flush=True)


def nvidia_smi():
    query = "--query-gpu=name,driver_version,memory.total,compute_cap"
    try:
        done = subprocess.run(
            ["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({type(exc).__name__})"
    return done.stdout.strip() or done.stderr.strip()


def _cupy():
    import cupy

    if not cupy.cuda.is_available():
        return "cupy is installed but no CUDA device is usable"
    props = cupy.cuda.runtime.getDeviceProperties(0)
    return {"device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
            "cuda runtime": cupy.cuda.runtime.runtimeGetVersion()}  # fmt: skip


def _torch():
    import torch

    if not torch.cuda.is_available():
        return f"torch {torch.__version__} has no usable CUDA device (built for CUDA {torch.version.cuda})"
    return {"device": torch.cuda.get_device_name(0), "cuda": torch.version.cuda}


def _jax():
    import jax

    if jax.default_backend() == "cpu":
        return f"JAX's default backend is the CPU ({jax.devices()})"
    return {"devices": [str(d) for d in jax.devices()]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    facts = {}
    say(facts, "python", sys.version.split()[0])
    say(facts, "platform", platform.platform())
    say(facts, "cpus", os.cpu_count())
    say(facts, "nvidia-smi", nvidia_smi())
    say(facts, "optional modules", {m: importlib.util.find_spec(m) is not None for m in OPTIONAL})
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = getattr(importlib.import_module(name), "__version__", "?")
        except Exception as exc:  # noqa: BLE001 -- reported, the next library is tried
            versions[name] = f"not importable ({type(exc).__name__}: {exc})"[:200]
    say(facts, "versions", versions)
    usable = {}
    for name, probe in (("cupy", _cupy), ("torch-cuda", _torch), ("jax-gpu", _jax)):
        try:
            found = probe()
        except Exception as exc:  # noqa: BLE001
            found = f"{type(exc).__name__}: {exc}"[:300]
        say(facts, name, found)
        usable[name] = True if isinstance(found, dict) else found
    facts["usable"] = usable
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(facts, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
