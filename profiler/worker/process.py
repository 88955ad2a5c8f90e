"""The worker: candidates are loaded, prepared, checked and timed in a separate process, so a candidate that
crashes, exits, hangs or poisons its CUDA context costs one failure record, never the sweep. This module is the
one place for the worker protocol.

Units of work are TASKS: plain JSON-able dicts, answered by plain dicts, so any executor can run them
(profiler.worker.tasks.run_task(task) -> result in this process; `Worker(config).call(task)` in a child process,
whose loop is profiler/worker/child.py; a dask worker runs the same tasks through its own Worker). Kinds:

Every task may carry "workload": the workload's JSON object (datasets.workload.Workload.to_dict; absent or null: the
one of the previous task, the default workload at first; the sweep sends it with every load and shape task). The
worker builds plans, dtypes and the contract's numbers from it (Session.use_workload), never from its own default,
so a remote worker measures exactly the workload the parent chose.

    {"kind": "load", "specs": [spec, ...]}
        -> {"kind": "load", "loaded": [{"spec", "name", "error": str | None, "refused": bool}, ...]}
        Loads every candidate spec (kernels.candidate.load_candidate); `refused`: the harness refused it (it
        changed a global setting, replaced the timer, called sys.exit); else `error` is a broken spec/module.
    {"kind": "shape", "shape": {load, family, M, N, K, x_dtype, w_dtype, y_dtype, rel_l2_tol},
     "candidates": [{"spec", "name"}, ...],       # the first is the baseline of every pair
     "settings": {SweepSettings fields}, "floor": {"us", "ci_low_us", "ci_high_us"} | None}
        -> {"kind": "shape", "key", "results": [...], "pairs": [...], "failures": [...], "info": {...},
            "telemetry": {...}}    (run-file records; profiler/README.md)
        All candidates of ONE shape in one process: paired timing never spans processes.
    {"kind": "probes", "shape_bytes": {shape key: bytes}, "rounds": int}
        -> {"kind": "probes", "probes": [...], "compute_probe": {...}}
    {"kind": "environment"} -> {"kind": "environment", "environment": {...}}
    {"kind": "explain_check" | "explain_ncu", ...}   `python -m profiler explain`'s per-shape work
        (profiler/worker/explain_task.py: contract check + one Kineto replay per call; one NVTX-ranged call per candidate
        for ncu, the worker then running under ncu: Worker(prefix=[ncu, ...]))

A shape task is what the tuner needs too ("check and time these candidate specs at this shape"): specs
`method:NAME:{json config}` (kernels.candidate.method_spec), settings {"check": "quick"} for one eager call per
candidate instead of the full lifecycle, and the timing knobs (min_pairs, rse_target, max_seconds_per_shape,
batch_rounds, instances).

PROTOCOL between the parent (Worker) and the child (`python -m profiler.worker`), one JSON object per line:
  parent -> child, on the child's stdin:
    {"op": "init", "config": {"device", "mode", "flush_bytes", "init": "file.py:function" | null}}   (first)
    {"op": "task", "task": {...}}                  one task; the child answers before reading the next
    {"op": "exit"}
  child -> parent, on the child's ORIGINAL stdout (kept as a private pipe; fd 1 is pointed at stderr and fd 0 at
  /dev/null, so a candidate that prints or reads cannot corrupt the protocol):
    {"msg": "ready", "pid", "environment"}        after torch import, CUDA init and timer calibration
    {"msg": "step", "candidate": name | null, "phase": "load|prepare|check|capture|time|probes"}   BEFORE each step
    {"msg": "done", "result": {...}}
    {"msg": "fatal", "candidate", "phase", "kind", "error"}   the process cannot go on (sticky CUDA error,
                                                   sys.exit, global state it could not restore); it exits next
    {"msg": "error", "error"}                      the task itself was bad (a harness bug); the process is fine
The child's stderr is forwarded line by line to the parent's log (from the waiting thread) and its last lines
kept: when the child dies without a word (os._exit, a signal, the OOM killer) or the watchdog kills it, the
parent names the candidate and phase of the last "step" message, the exit code or signal, and the last stderr
lines (faulthandler is on, so a segfault prints the candidate's Python frame). The watchdog restarts at every
"step" message: it stops exactly the step that makes no progress.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 300.0       # torch import + CUDA context + timer calibration; generous for a cold file cache
STDERR_TAIL_LINES = 40


class WorkerDied(RuntimeError):
    """The worker process ended or was stopped during a task; names the candidate and phase it was in."""

    def __init__(self, kind: str, message: str, candidate: str | None, phase: str | None):
        super().__init__(message)
        self.kind, self.message, self.candidate, self.phase = kind, message, candidate, phase

    def __reduce__(self):  # picklable with all four fields (it may come back from a dask worker)
        return WorkerDied, (self.kind, self.message, self.candidate, self.phase)


class WorkerError(RuntimeError):
    """The worker answered a task with a harness error (not a candidate's fault)."""


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def exit_description(code: int | None) -> str:
    """Words for a child's exit status (negative: killed by a signal)."""
    if code is None:
        return "still running"
    if code < 0:
        name = _signal_name(code)
        hint = {"SIGKILL": " (out of host memory? the OOM killer sends SIGKILL)",
                "SIGSEGV": " (segmentation fault)", "SIGABRT": " (abort)", "SIGBUS": " (bus error)"}.get(name, "")
        return f"killed by {name}{hint}"
    return f"exit code {code}"


def _stderr_summary(lines: list[str], limit: int = 500) -> str:
    """The useful part of the child's last stderr lines: a faulthandler header and the innermost frames, else
    the last lines."""
    lines = [l.rstrip() for l in lines if l.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Fatal Python error"):
            frames = [l.strip() for l in lines[i + 1:] if l.strip().startswith("File ")][:2]
            return " | ".join([line] + frames)[:limit]
    return " | ".join(lines[-3:])[:limit]


class Worker:
    """Parent-side handle of one child process. start() -> environment; call(task, timeout_s) -> result or
    WorkerDied (the process is gone afterwards; the next call starts a fresh one). `prefix`: a command put before
    the Python interpreter (e.g. a profiler such as ncu), given `exit_timeout_s` to finish after the child ends."""

    def __init__(self, config: dict, log: Callable[[str], None] | None = None, prefix: list[str] | None = None,
                 exit_timeout_s: float = 10.0):
        self.config, self.log, self.prefix = dict(config), log, list(prefix or [])
        self.exit_timeout_s = exit_timeout_s  # how long an ending child may take (a profiler writing its report)
        self.proc: subprocess.Popen | None = None
        self.environment: dict | None = None
        self.started = 0
        self._q: queue.Queue = queue.Queue()
        self._tail: collections.deque = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._last = {"candidate": None, "phase": None}

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        return self.prefix + [sys.executable, "-m", "profiler.worker"]

    def start(self, timeout_s: float = START_TIMEOUT_S) -> dict:
        """Spawn the child and wait for "ready"; returns its environment (gpu, versions, replay overhead)."""
        self.close()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                   PYTHONUNBUFFERED="1")
        # A new session: a Ctrl-C in the terminal reaches only the parent, which then stops the child itself.
        self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                     start_new_session=True)
        self.started += 1
        self._q, self._tail = queue.Queue(), collections.deque(maxlen=STDERR_TAIL_LINES)
        threading.Thread(target=self._read_protocol, args=(self.proc, self._q), daemon=True).start()
        self._stderr_thread = threading.Thread(target=self._read_stderr, args=(self.proc, self._q, self._tail),
                                               daemon=True)
        self._stderr_thread.start()
        self._send({"op": "init", "config": self.config})
        msg = self._wait({"ready"}, timeout_s)
        self.environment = msg["environment"]
        return self.environment

    def call(self, task: dict, timeout_s: float) -> dict:
        """Run one task in the child (started if needed) -> result dict. Raises WorkerDied when the child dies,
        reports a fatal error, or the watchdog runs out: timeout_s without progress (each "step" message restarts
        it, so a shape with many candidates is not cut short, and the step that hangs is the one named);
        WorkerError for a harness error the child survived."""
        if not self.alive:
            self.start()
        self._last = {"candidate": None, "phase": None}
        self._send({"op": "task", "task": task})
        return self._wait({"done"}, timeout_s)["result"]

    def close(self, force: bool = False) -> None:
        """Ask the child to exit (force: kill it now, e.g. after Ctrl-C); kill it if it does not within seconds."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if force:
            self._kill(proc)
        if proc.poll() is None:
            try:
                proc.stdin.write(json.dumps({"op": "exit"}) + "\n")
                proc.stdin.flush()
                proc.wait(timeout=self.exit_timeout_s)
            except Exception:
                self._kill(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except Exception:
                pass

    # -- internals ----------------------------------------------------------------------------------------
    def _send(self, msg: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the child is gone; _wait names why

    def _wait(self, wanted: set[str], timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill(self.proc)
                raise self._died("timeout", f"no progress for {timeout_s:.0f} s (watchdog; --shape-timeout-s)")
            try:
                msg = self._q.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            kind = msg.get("msg")
            if kind == "stderr":  # forwarded here, in the caller's thread (Streamlit elements need that)
                if self.log is not None:
                    self.log(f"[worker] {msg['text']}")
            elif kind == "step":  # progress: the watchdog restarts, so it stops exactly the step that hangs
                self._last = {"candidate": msg.get("candidate"), "phase": msg.get("phase")}
                deadline = time.monotonic() + timeout_s
            elif kind in wanted:
                return msg
            elif kind == "fatal":
                self._last = {"candidate": msg.get("candidate"), "phase": msg.get("phase")}
                self._reap(self.proc, self.exit_timeout_s)
                raise self._died(msg.get("kind") or "fatal", msg.get("error") or "fatal error")
            elif kind == "error":
                raise WorkerError(msg.get("error") or "worker error")
            elif kind == "eof":
                code = self._reap(self.proc, self.exit_timeout_s)
                self._stderr_thread.join(timeout=5)  # the last words (a faulthandler dump) may still be in flight
                tail = _stderr_summary(list(self._tail))
                raise self._died("died", exit_description(code) + (f"; last stderr: {tail}" if tail else ""))

    def _died(self, kind: str, message: str) -> WorkerDied:
        self.proc = None
        return WorkerDied(kind, message, self._last["candidate"], self._last["phase"])

    @staticmethod
    def _read_protocol(proc, q) -> None:
        for line in proc.stdout:
            try:
                q.put(json.loads(line))
            except ValueError:
                q.put({"msg": "log", "text": line})
        q.put({"msg": "eof"})

    @staticmethod
    def _read_stderr(proc, q, tail) -> None:
        for line in proc.stderr:
            tail.append(line)
            q.put({"msg": "stderr", "text": line.rstrip()})

    @staticmethod
    def _reap(proc, timeout_s: float = 10.0) -> int | None:
        if proc is None:
            return None
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            Worker._kill(proc)
            return proc.poll()

    @staticmethod
    def _kill(proc) -> None:
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the child and anything it started (compiler processes)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
