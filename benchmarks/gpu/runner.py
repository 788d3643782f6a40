"""Run the stages of :mod:`benchmarks.gpu.plan`: every job under ``timeout``, its output in its
own file as it is written, everything packed into one archive after every job (and every
``PACK_EVERY_S`` while a long one runs), so that a timeout, of a job or of the whole command,
loses only what had not been written yet."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tarfile
import time

from .plan import GRACE_S

PACK_EVERY_S = 20
STATUS = {0: "ok", 124: "timeout", 137: "killed"}


def pack(work, archive):
    """``work`` as ``archive`` (.tgz), replaced whole: a kill during packing keeps the last one."""
    tmp = f"{archive}.part"
    with tarfile.open(tmp, "w:gz") as tar:
        for name in sorted(os.listdir(work)):
            tar.add(os.path.join(work, name), arcname=name)
    os.replace(tmp, archive)


def usable(work):
    """``{"cupy": True or why not, ...}`` from the env stage; None where that stage gave no
    answer (then a GPU run tries every job, a dry run takes the CPU stand-ins)."""
    try:
        with open(os.path.join(work, "env.json"), encoding="utf-8") as f:
            return json.load(f)["usable"]
    except (OSError, ValueError, KeyError):
        return None


class Runner:
    """Runs jobs, records one line per job in ``stages.txt`` and keeps ``archive`` current."""

    def __init__(self, work, archive, env, dry_run=False, echo=None):
        self.work, self.archive, self.env, self.dry_run = work, archive, env, dry_run
        self.echo = echo or (lambda line: print(line, flush=True))
        self.start = time.monotonic()
        self.records = []
        self.running = []  # (job, process, log, start) of the jobs under way
        self._packed = 0.0

    def elapsed(self):
        return time.monotonic() - self.start

    def note(self, line):
        line = f"[{self.elapsed():6.1f} s] {line}"
        with open(os.path.join(self.work, "stages.txt"), "a", encoding="utf-8") as f:
            f.write(line + "\n")
        self.echo(line)

    def pack(self):
        pack(self.work, self.archive)
        self._packed = time.monotonic()

    def choose(self, job):
        """``(job to run, note)``: ``job`` itself and no note; its CPU stand-in (a dry run where
        the GPU library is unusable) and why; or None and why ``job`` is skipped."""
        if job.needs is None:
            return job, None
        found = usable(self.work)
        ok = (not self.dry_run) if found is None else found.get(job.needs) is True
        if ok:
            return job, None
        why = "the env stage gave no answer" if found is None else found.get(job.needs, "not checked")
        if self.dry_run and job.cpu is not None:
            return job.cpu, f"{job.needs} unusable ({why}): its CPU stand-in runs"
        return None, f"skipped: {job.needs} unusable ({why})"

    def stage(self, stage):
        chosen = []
        for job in stage.jobs:
            run, why = self.choose(job)
            if run is None:
                self._record(job, why, 0.0)
                continue
            if why:
                self.note(f"{job.name}: {why} ({run.name})")
            chosen.append(run)
        if not chosen:
            self.pack()
            return
        if stage.parallel:
            self._run(chosen)
        else:
            for job in chosen:
                self._run([job])

    def _start(self, job):
        log = open(os.path.join(self.work, f"{job.name}.log"), "w", encoding="utf-8")  # noqa: SIM115
        log.write(f"$ {shlex.join(job.cmd)}   # limit {job.limit:.0f} s\n")
        log.flush()
        env = {**(os.environ if self.env is None else self.env), **job.env}
        wrap = ["timeout", "-k", str(GRACE_S), f"{job.limit:.1f}"] if shutil.which("timeout") else []
        proc = subprocess.Popen(
            [*wrap, *job.cmd], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
        self.running.append((job, proc, log, time.monotonic()))  # before anything can interrupt
        self.note(f"{job.name}: started (limit {job.limit:.0f} s)")

    def _run(self, jobs):
        self.running = running = []
        for job in jobs:
            self._start(job)
        while running:
            time.sleep(0.2)
            for item in list(running):
                job, proc, log, t0 = item
                rc = proc.poll()
                if rc is None and time.monotonic() - t0 > job.limit + GRACE_S + 5:
                    _kill_group(proc)  # the backstop where ``timeout`` is missing or hangs
                    rc = proc.wait()
                if rc is not None:
                    log.close()
                    running.remove(item)
                    self._record(job, STATUS.get(rc, f"exit {rc}"), time.monotonic() - t0)
            if running and time.monotonic() - self._packed > PACK_EVERY_S:
                self.pack()

    def stop(self):
        """End the jobs under way (their process groups), each recorded as stopped."""
        for job, proc, log, t0 in self.running:
            _kill_group(proc)
            log.close()
            self._record(job, "stopped", time.monotonic() - t0)
        self.running = []

    def _record(self, job, status, seconds):
        self.records.append({"job": job.name, "status": status, "seconds": round(seconds, 1), "limit": job.limit})
        self.note(f"{job.name}: {status} after {seconds:.1f} s")
        self.pack()


def _kill_group(proc):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(GRACE_S)
            return
        except subprocess.TimeoutExpired:
            pass
