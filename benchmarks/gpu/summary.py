"""One screen from a ``python -m benchmarks.gpu`` results folder: what ran, what passed, the
ratios to each library's own ``lstsq`` and to a bare ``X.T @ X``, float32 errors, the probes.

``python -m benchmarks.gpu.summary DIR`` prints it again from an unpacked ``results.tgz``.
Every part reads only what its job left: a job cut short by its limit shows its last lines.
"""

from __future__ import annotations

import glob
import json
import os
import re
import statistics
import sys
import textwrap

WIDTH = 118
TEST_LINE = re.compile(r"^(?:\[gw\d+\] \[\s*\d+%\] (?P<a>[A-Z]+) (?P<ida>\S+)|(?P<idb>\S+::\S+) (?P<b>[A-Z]+))")
STATES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _tail(path, n=2):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.rstrip() for ln in f if ln.strip()]
    except OSError:
        return ["(no output)"]
    return [ln[:WIDTH] for ln in lines[-n:]] or ["(no output)"]


def env_lines(work):
    env = _load(os.path.join(work, "env.json"))
    if env is None:
        return ["env: no answer: " + " / ".join(_tail(os.path.join(work, "env.log"), 1))]
    v = env.get("versions", {})
    libs = ", ".join(f"{k} {str(v.get(k, '?'))[:20]}" for k in ("numpy", "cupy", "jax", "torch", "array_api_compat"))
    usable = ", ".join(f"{k}: {'yes' if ok is True else 'no'}" for k, ok in env.get("usable", {}).items())
    return [f"device: {env.get('nvidia-smi', '?')}"[:WIDTH], f"python {env.get('python')}, {libs}"[:WIDTH],
            f"usable: {usable}"]  # fmt: skip


def check_lines(work):
    """Per self-check run: its summary line; per backend and dtype the pass count, the worst
    error over its threshold, and per method the median (over the problems) of the time over
    the backend's own lstsq and over a bare X.T @ X."""
    out = []
    for log in sorted(glob.glob(os.path.join(work, "check_*.log"))):
        name = os.path.basename(log)[:-4]
        doc = _load(log[:-4] + ".json")
        if doc is None:
            out.append(f"{name}: no report; last: {_tail(log, 1)[0]}")
            continue
        out.append(f"{name}: {doc['summary']['line']}"[:WIDTH])
        groups = {}
        for r in doc["rows"]:
            groups.setdefault((r["backend"], r["dtype"]), []).append(r)
        for (backend, dtype), rows in sorted(groups.items()):
            worst = max((r["error"] / r["threshold"] for r in rows if r["error"] is not None and r["threshold"]),
                        default=None)  # fmt: skip
            fails = sum(r["status"] != "pass" for r in rows)
            out.append(f"  {backend} {dtype}: {len(rows) - fails}/{len(rows)} pass, worst error/threshold "
                       + ("—" if worst is None else f"{worst:.2f}"))  # fmt: skip
            for key, label in (("x_native", "x own lstsq"), ("x_gram", "x X.T@X")):
                by = {}
                for r in rows:
                    if r[key] is not None:
                        by.setdefault(r["method"], []).append(r[key])
                cells = [f"{m} {statistics.median(v):.2g}" for m, v in by.items()]
                if cells:
                    out += textwrap.wrap(f"{label} (median): " + ", ".join(cells), WIDTH, initial_indent="    ",
                                         subsequent_indent="      ")  # fmt: skip
    return out


# A benchmark row as its progress line gives it: [i/n] case dtype backend solver [method]: ...
BENCH_LINE = re.compile(
    r"^\[\d+/\d+\] (?P<case>\S+) (?P<dtype>\S+) (?P<backend>\S+) (?P<what>.+?): "
    r"(?:(?P<ms>\S+) ms(?:, error (?P<err>\S+))?|failed: (?P<failed>.*))$"
)
OWN_LSTSQ = ("jax.numpy.linalg.lstsq", "torch.linalg.lstsq", "cupy.linalg.lstsq", "numpy.linalg.lstsq")


def bench_lines(work):
    """Per benchmark run, per case, dtype and backend (not NumPy): each lsq method's time over
    the backend's own lstsq and over its bare X.T @ X, and the largest error. Read from the
    progress lines, so that a run cut short shows the rows it finished."""
    out = []
    for log in sorted(glob.glob(os.path.join(work, "bench_*.log"))):
        name = os.path.basename(log)[:-4]
        with open(log, encoding="utf-8", errors="replace") as f:
            rows = [m.groupdict() for m in map(BENCH_LINE.match, f) if m]
        groups = {}
        for r in rows:
            groups.setdefault((r["case"], r["dtype"], r["backend"]), []).append(r)
        for (case, dtype, backend), group in groups.items():
            times = {r["what"].split()[0]: float(r["ms"]) for r in group if r["ms"] and not r["what"].startswith("lsq")}
            own = next((times[k] for k in OWN_LSTSQ if k in times), None)
            gram = times.get("LIMIT")
            mine = [r for r in group if r["what"].startswith("lsq.")]
            if backend == "numpy" and not mine:
                continue
            cells = [f"{r['what'].split()[-1]} " + ("FAILED" if r["failed"] else
                     f"{_ratio(float(r['ms']), own)}/{_ratio(float(r['ms']), gram)}") for r in mine]  # fmt: skip
            errs = [float(r["err"]) for r in mine if r["err"]]
            head = f"{name} {case} {dtype} {backend}: own lstsq {_ms(own)}, X.T@X {_ms(gram)}; x own/x X.T@X: "
            out += textwrap.wrap(head + ", ".join(cells) + f"; max error {max(errs, default=float('nan')):.1e}",
                                 WIDTH, subsequent_indent="  ")  # fmt: skip
        if not rows:
            out.append(f"{name}: no row finished; last: {_tail(log, 1)[0]}")
        elif _load(log[:-4] + ".json") is None:
            out.append(f"{name}: cut short after {len(rows)} rows (no JSON)")
    return out


def _ratio(t, base):
    return "—" if t is None or not base else f"{t / base:.2g}"


def _ms(t):
    return "—" if t is None else f"{t:.3g} ms"


def test_lines(work):
    out = []
    for log in sorted(glob.glob(os.path.join(work, "tests_*.log"))):
        counts, failed = dict.fromkeys(STATES, 0), []
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = TEST_LINE.match(line)
                state = m and (m["a"] or m["b"])
                if state in counts:
                    counts[state] += 1
                    if state in ("FAILED", "ERROR"):
                        failed.append(m["ida"] or m["idb"])
        shown = ", ".join(f"{n} {s.lower()}" for s, n in counts.items() if n)
        out.append(f"{os.path.basename(log)[:-4]}: {shown or 'no test finished'}; last: {_tail(log, 1)[0]}"[:WIDTH])
        out += [f"  {t}"[:WIDTH] for t in failed[:6]] + ([f"  ... {len(failed) - 6} more"] if len(failed) > 6 else [])
    return out


def probe_lines(work, limit=18):
    out = []
    try:
        with open(os.path.join(work, "probes.log"), encoding="utf-8", errors="replace") as f:
            found = [json.loads(ln) for ln in f if ln.startswith('{"probe"')]
    except (OSError, ValueError) as exc:
        return [f"probes: unreadable ({type(exc).__name__})"]
    for p in found:
        name = p.pop("probe")
        if name == "env" or name.endswith(".done"):
            continue
        out.append(f"{name}: " + json.dumps(p, separators=(",", ":"), default=str)[: WIDTH - len(name) - 2])
    return out[:limit] + ([f"... {len(out) - limit} more lines in probes.log"] if len(out) > limit else [])


def summary(work, records=()):
    """The summary as a list of lines; ``records`` are the runner's (job, status, seconds)."""
    lines = ["== GPU check summary =="]
    lines += env_lines(work)
    if records:
        jobs = ", ".join(f"{r['job']} {r['status']} {r['seconds']:.0f}/{r['limit']:.0f} s" for r in records)
        lines += textwrap.wrap("jobs: " + jobs, WIDTH, subsequent_indent="  ")
    for title, part in (("self-check", check_lines), ("benchmark", bench_lines), ("tests", test_lines),
                        ("probes", probe_lines)):  # fmt: skip
        lines.append(f"-- {title}")
        try:
            lines += part(work) or ["(none ran)"]
        except Exception as exc:  # noqa: BLE001 -- a summary never hides the results behind a crash
            lines.append(f"(could not summarize: {type(exc).__name__}: {exc})"[:WIDTH])
    return lines


if __name__ == "__main__":
    print("\n".join(summary(sys.argv[1] if len(sys.argv) > 1 else ".")))
