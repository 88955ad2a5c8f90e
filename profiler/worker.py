"""The worker: candidates are loaded, prepared, checked and timed in a separate process, so a candidate that
crashes, exits, hangs or poisons its CUDA context costs one failure record, never the sweep. This module is the
one place for the worker protocol.

Units of work are TASKS: plain JSON-able dicts, answered by plain dicts, so any executor can run them
(`run_task(task) -> result` in this process; `Worker(config).call(task)` in a child process; a dask.distributed
worker could call run_task on a remote host with the same task). Kinds:

Every task may carry "workload": the workload's JSON object (datasets.workload.Workload.to_dict; absent or null:
the one of the previous task, the default workload at first; the sweep sends it with every load and shape task). The worker builds plans, dtypes and the contract's numbers from it (Session.use_workload),
never from its own default, so a remote worker measures exactly the workload the parent chose.

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
        (profiler/explain_task.py: contract check + one Kineto replay per call; one NVTX-ranged call per candidate
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
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 300.0       # torch import + CUDA context + timer calibration; generous for a cold file cache
STDERR_TAIL_LINES = 40
# Prepared states kept across tasks (least recently used dropped first). A sweep keeps a few per family and
# reuses them at every load; a tuner sends ~100 method configs per point, each holding a copy of the weights
# (up to 67 MB for the unpooler), so without a bound they would fill the GPU within a few families.
MAX_CACHED_STATES = 192


# ============================================================================================ in the worker

class Fatal(Exception):
    """The worker process must end after reporting this (sticky CUDA error, sys.exit, tainted globals)."""

    def __init__(self, kind: str, error: str, candidate: str | None = None, phase: str | None = None):
        super().__init__(error)
        self.kind, self.error, self.candidate, self.phase = kind, error, candidate, phase


_REPORT: list[Callable[[str | None, str], None]] = [lambda candidate, phase: None]
_CURRENT: dict[str, Any] = {"candidate": None, "phase": None}


def step(candidate: str | None, phase: str) -> None:
    """Tell the parent (if any) which candidate and phase run next; a death from here on is theirs."""
    _CURRENT.update(candidate=candidate, phase=phase)
    _REPORT[0](candidate, phase)


class Session:
    """Per-process state across tasks: device, timers, telemetry, loaded candidates, weights, prepared states and
    the guard (global settings + harness functions as they were at start, before any candidate was loaded)."""

    def __init__(self, config: dict):
        import torch

        from profiler import guards

        self.config = dict(config)
        self.device = torch.device(config.get("device") or "cuda")
        if self.device.type == "cuda":
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(self.device)
            torch.zeros(1, device=self.device)  # create the context now, not inside a candidate's step
        # The FP32 router baseline must run true FP32; every candidate is held to this (profiler.guards).
        torch.backends.cuda.matmul.allow_tf32 = False
        if config.get("init"):
            _call_hook(config["init"])
        if self.device.type == "cuda":
            # The harness sets the persisting-L2 limit to 0 before every timed shape; the H200's driver default is
            # not 0 (seen on the device), so take the snapshot after the first reset, not before.
            guards.reset_persisting_l2(self.device)
        self.guard = guards.Guard(harness=guards.harness_now())
        self.workload = None                 # datasets.workload.Workload of the current task (use_workload)
        self.candidates: dict[str, Any] = {}
        self.load_errors: dict[str, dict] = {}
        self.weights: dict = {}
        self.states: collections.OrderedDict = collections.OrderedDict()
        self._timers: dict = {}
        self._telemetry = None

    # -- devices and timers ------------------------------------------------------------------------------
    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def timer(self, mode: str = "cold"):
        """The cold timer (always: probes use it) or the stream timer, created on first use."""
        from profiler import timing

        if "cold" not in self._timers:
            self._timers["cold"] = timing.ColdTimer(self.device, flush_bytes=self.config.get("flush_bytes"))
        if mode == "stream" and "stream" not in self._timers:
            self._timers["stream"] = timing.StreamTimer(self.device)
        return self._timers[mode]

    @property
    def telemetry(self):
        from profiler.telemetry import Telemetry

        if self._telemetry is None:
            import torch

            pci = getattr(torch.cuda.get_device_properties(self.device), "pci_bus_id", None) if self.cuda else None
            self._telemetry = Telemetry(self.device.index or 0, pci)
        return self._telemetry

    def environment(self) -> dict:
        from profiler.telemetry import environment

        env = environment(self.device, self.telemetry)
        cold = self.timer("cold")
        timer = self.timer(self.config.get("mode") or "cold")
        env.update(replay_overhead_us=timer.overhead_us,
                   replay_overhead_ci_us=[float(v) for v in timer.overhead_ci_us],
                   flush_bytes=int(cold.flush_bytes), l2_bytes=int(cold.l2_bytes) or env.get("l2_bytes"))
        if timer is not cold:
            env["probe_replay_overhead_us"] = cold.overhead_us
        return env

    def healthy(self) -> str | None:
        """None when the CUDA context still works; else the error (a sticky fault: illegal address, ...)."""
        from profiler.contract import cuda_context_error

        return cuda_context_error(self.device)

    def guard_check(self, where: str) -> list[str]:
        from profiler.guards import TaintedProcess

        try:
            return self.guard.check(where)
        except TaintedProcess as exc:
            raise Fatal("tainted", str(exc), _CURRENT["candidate"], _CURRENT["phase"]) from None

    # -- the workload -------------------------------------------------------------------------------------
    def use_workload(self, spec: dict | None) -> None:
        """Take the task's workload (its JSON object). None (a task that needs none: environment, probes) keeps the
        current one (the default workload at first). Candidates loaded and states prepared for another workload
        are dropped (a plan is validated against one workload)."""
        from datasets.workload import load_workload, workload_from_dict

        if spec is None and self.workload is not None:
            return
        workload = load_workload() if spec is None else workload_from_dict(spec, "task", "workload")
        if self.workload is not None and self.workload.fingerprint == workload.fingerprint:
            return
        self.workload = workload
        self.candidates.clear()
        self.load_errors.clear()
        self.states.clear()

    # -- candidates ---------------------------------------------------------------------------------------
    def load(self, spec: str, name: str | None = None):
        """The candidate for `spec` (loaded once per process) or None; errors go to self.load_errors[spec]."""
        if spec in self.candidates:
            return self.candidates[spec]
        if spec in self.load_errors:
            return None
        from kernels.candidate import load_candidate

        step(name or spec, "load")
        refused, error, cand = False, None, None
        try:
            cand = load_candidate(spec, self.workload)
        except SystemExit as exc:
            refused, error = True, f"importing it called sys.exit({exc.code!r})"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"[:400]
        changed = self.guard_check("loading the module")
        if changed:
            refused, error, cand = True, "; ".join(changed), None
        if cand is None:
            self.load_errors[spec] = {"error": error, "refused": refused}
            return None
        self.candidates[spec] = cand
        return cand

    def weight(self, shape: dict, seed: int):
        from profiler.rules import make_weight

        key = (shape["family"], int(shape["N"]), int(shape["K"]), shape["w_dtype"], seed)
        if key not in self.weights:
            self.weights[key] = make_weight(shape["family"], key[1], key[2], seed, self.device, dtype=key[3])
        return self.weights[key]

    def state(self, spec: str, name: str, cand, shape: dict, weight, seed: int) -> tuple[Any, list[str]]:
        """(prepared state, []) -- cached per (spec, family, N, K) -- or (None, reasons)."""
        key = (spec, shape["family"], int(shape["N"]), int(shape["K"]), seed)
        if key in self.states:
            self.states.move_to_end(key)
            return self.states[key], []
        step(name, "prepare")
        reasons = []
        try:
            state = cand.prepare(shape["family"], weight)
            if self.cuda:
                import torch

                torch.cuda.synchronize(self.device)
        except SystemExit as exc:
            state, reasons = None, [f"prepare() called sys.exit({exc.code!r})"]
        except Exception as exc:
            state, reasons = None, [f"prepare() raised {_err(exc)}"]
            lost = self.healthy()
            if lost is not None:  # before the guard: its CUDA-side reads would fail too
                raise Fatal("cuda_fault", f"{reasons[0]} (the CUDA context is unusable afterwards: {lost})",
                            name, "prepare")
        reasons += self.guard_check("prepare()")
        if reasons:
            return None, reasons
        self.states[key] = state
        while len(self.states) > MAX_CACHED_STATES:
            self.states.popitem(last=False)
        return state, []


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _call_hook(spec: str) -> None:
    """Run `file.py:function` (a trusted set-up hook, e.g. the tests' fake timer) in this process."""
    import importlib.util

    path, _, fn = spec.rpartition(":")
    module_spec = importlib.util.spec_from_file_location("projlab_worker_init", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    getattr(module, fn)()


_SESSION: list[Session] = []


def session(config: dict | None = None) -> Session:
    """This process's session (created on first use; a different config makes a new one)."""
    config = dict(config or {})
    if not _SESSION or (config and _SESSION[0].config != config):
        _SESSION[:] = [Session(config)]
    return _SESSION[0]


def run_task(task: dict, config: dict | None = None) -> dict:
    """Run one task in THIS process (module docstring). `config`: the session's config (device, mode, ...),
    also taken from task["worker"]; the in-process default is CUDA, cold mode."""
    sess = session(config or task.get("worker"))
    sess.use_workload(task.get("workload"))
    kind = task.get("kind")
    if kind == "shape":
        return run_shape_task(task, sess)
    if kind == "load":
        loaded = []
        for spec in task["specs"]:
            cand = sess.load(spec)
            err = sess.load_errors.get(spec, {})
            loaded.append({"spec": spec, "name": getattr(cand, "name", None), "error": err.get("error"),
                           "refused": bool(err.get("refused"))})
        return {"kind": "load", "loaded": loaded}
    if kind == "probes":
        from profiler.sweep import measure_probes

        step(None, "probes")
        return {"kind": "probes", **measure_probes(sess, task["shape_bytes"], int(task.get("rounds", 24)))}
    if kind == "environment":
        return {"kind": "environment", "environment": sess.environment()}
    if kind in ("explain_check", "explain_ncu"):
        from profiler import explain_task

        return getattr(explain_task, kind)(sess, task)
    raise ValueError(f"unknown task kind {kind!r}")


def run_shape_task(task: dict, sess: Session | None = None) -> dict:
    """Check and time every candidate of task["candidates"] at task["shape"] in this process -> result dict."""
    from profiler.sweep import measure_one_shape

    sess = sess or session(task.get("worker"))
    sess.use_workload(task.get("workload"))
    return measure_one_shape(sess, task)


def _exit_with_parent(parent_pid: int, every_s: float = 1.0) -> None:
    """End this worker within a second of its parent's death (a killed CLI or dask worker): an orphan would go on
    timing its shape on the GPU while a fresh worker measures there too."""
    while True:
        time.sleep(every_s)
        if os.getppid() != parent_pid:
            os._exit(0)


def _child_main() -> int:
    """`python -m profiler.worker`: the child side of the protocol."""
    import faulthandler

    proto_out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(2, 1)  # a candidate's print() goes to stderr, never into the protocol
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", closefd=False)
    # A segfault prints the candidate's Python frames to stderr, which the parent keeps (the current thread
    # only: the parent-watch thread's frames would come first and name nothing useful).
    faulthandler.enable(all_threads=False)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()

    def send(msg: dict) -> None:
        proto_out.write(json.dumps(msg, allow_nan=True) + "\n")
        proto_out.flush()

    _REPORT[0] = lambda candidate, phase: send({"msg": "step", "candidate": candidate, "phase": phase})
    sess = None
    for line in proto_in:
        msg = json.loads(line)
        try:
            if msg["op"] == "exit":
                return 0
            if msg["op"] == "init":
                step(None, "start")
                sess = session(msg["config"])
                send({"msg": "ready", "pid": os.getpid(), "environment": sess.environment()})
                continue
            send({"msg": "done", "result": run_task(msg["task"], sess.config)})
        except Fatal as exc:
            send({"msg": "fatal", "candidate": exc.candidate, "phase": exc.phase, "kind": exc.kind,
                  "error": exc.error})
            return 3
        except SystemExit as exc:  # a candidate's sys.exit() outside a guarded step
            send({"msg": "fatal", "candidate": _CURRENT["candidate"], "phase": _CURRENT["phase"], "kind": "exit",
                  "error": f"called sys.exit({exc.code!r})"})
            return 3
        except Exception as exc:
            why = sess.healthy() if sess is not None else None
            text = f"{type(exc).__name__}: {exc}"[:500]
            if why is not None or sess is None:
                send({"msg": "fatal", "candidate": _CURRENT["candidate"], "phase": _CURRENT["phase"],
                      "kind": "cuda_fault" if why else "start", "error": text})
                return 3
            send({"msg": "error", "error": text})
    return 0


# ============================================================================================ in the parent

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


if __name__ == "__main__":
    # Run the child through the imported module, not this __main__ copy: profiler.sweep reports its steps through
    # profiler.worker.step, which must be the same function the protocol was wired into.
    from profiler.worker import _child_main as main

    raise SystemExit(main())
