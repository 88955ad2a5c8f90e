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
candidate instead of the full lifecycle, and `timing` (profiler.measure.policy.TimingPolicy: the stopping rule,
the instances).

PROTOCOL between the parent (Worker) and the child (`python -m profiler.worker`), one JSON object per line:
  parent -> child, on the child's stdin:
    {"op": "init", "config": {"device", "mode", "flush_bytes", "init": "file.py:function" | null}}   (first)
    {"op": "task", "task": {...}}                  one task; the child answers before reading the next
    {"op": "go"}                                   the answer to each "step" message, after the parent's check
    {"op": "input", "x", "token"}                  the answer to each "input" message: the next timed call's input,
                                                   made by the parent then (profiler.worker.call_judge)
    {"op": "exit"}
  child -> parent, on the child's ORIGINAL stdout (kept as a private pipe; fd 1 is pointed at stderr and fd 0 at
  /dev/null, so a candidate that prints or reads cannot corrupt the protocol):
    {"msg": "ready", "pid", "environment"}        after torch import, CUDA init and timer calibration
    {"msg": "step", "candidate": name | null, "phase": "load|prepare|check|capture|time|probes"}   BEFORE each step;
                                                   the child then waits for {"op": "go"}: the parent looks for
                                                   processes the steps so far left running while the child is held
                                                   between two steps, so one the next step starts is never blamed
                                                   on the last one (nor missed: the next boundary or the answer
                                                   finds it)
    {"msg": "verdict", "candidate", "shape", "reasons"}   a judged call failed (sent the moment it is found, no
                                                   answer awaited): the parent applies it to this task's result
                                                   whatever the "done" says (records.apply_verdicts)
    {"msg": "input", "candidate", "graph"}         a CPU worker's shape task, before each timed call: the child waits
                                                   for the parent's input
    {"msg": "output", "candidate", "graph", "token", "y" | "bad"}
                                                   that call's output, sent the moment it ends (no answer
                                                   awaited): the parent judges it or not, by its own draw, and
                                                   applies its verdicts to the task's result (CallJudge.apply)
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
import ctypes
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

from profiler.worker.integrity import proc_table
from profiler.worker.call_judge import CallJudge
from profiler.worker.call_judge import wanted as wants_call_judge
from profiler.worker.records import apply_verdicts
from profiler.worker.sandbox import WorkerFolders, sandbox_plan, worker_environment

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 300.0       # torch import + CUDA context + timer calibration; generous for a cold file cache
STDERR_TAIL_LINES = 40
MAX_LINE_CHARS = 1 << 16      # a longer line from the child is cut here (a candidate's 50 MB print is one line)
EXITED_GRACE_S = 2.0          # the child's process has ended: its last messages are in the pipe within this
STOP_TREE_S = 5.0             # stop_tree gives up looking for stragglers after this (each pass is ~ms)
PR_SET_CHILD_SUBREAPER = 36   # linux/prctl.h


def become_subreaper() -> bool:
    """Make this process the child subreaper of everything it starts (Linux prctl): an orphaned descendant of a
    worker (a candidate's double fork) is re-parented here, where stop_tree finds it. False where it cannot be."""
    if getattr(become_subreaper, "done", False):
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        ok = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        ok = False
    become_subreaper.done = ok
    return ok


def _parents() -> dict[int, int]:
    """{pid: parent pid} of every process (/proc; zombies included)."""
    return {pid: ppid for pid, (_, ppid) in proc_table().items()}


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def orphans_of_workers(table: dict[int, int], protected: set[int], since: int | None = None,
                       old_sessions: frozenset[int] = frozenset()) -> set[int]:
    """This process's children that a worker started: re-parented here (child subreaper) after their parent died.
    A worker starts in a session of its own and no process can join an existing session, so everything a worker
    started is outside this process's session; this process's own children (a compile pool, a dask worker, a
    subprocess) share it and are never counted. A process tree this process started before, in a session of its own
    (a browser, a server), is re-parented here too when its parent ends, and is no worker's. Hence, for one worker:
    `since` (its start, _start_ticks): an orphan that started earlier is not its (the kernel's start time cannot be
    set by the process); `old_sessions` (the sessions there were when it started): an orphan in one of them is not
    its either (what the worker starts is in the worker's new session or in a session made later)."""
    me, mine = os.getpid(), os.getsid(0)
    found = {pid for pid, ppid in table.items() if ppid == me and _session(pid) != mine} - protected - _LIVE
    if since is not None:
        found = {pid for pid in found if (_start_ticks(pid) or -1) >= since}
    return {pid for pid in found if _session(pid) not in old_sessions}


def sessions_now() -> frozenset[int]:
    """The session ids of every process now (/proc/PID/stat field 6)."""
    out = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    out.add(int(fh.read().rsplit(b")", 1)[1].split()[3]))
            except (OSError, IndexError, ValueError):
                continue
    return frozenset(out)


def _descendants(roots: set[int], table: dict[int, int]) -> set[int]:
    found, frontier = set(), set(roots)
    while frontier:
        found |= frontier
        frontier = {pid for pid, ppid in table.items() if ppid in frontier} - found
    return found


# Pids of the worker processes this process runs now, and of children it had before each was started: stop_tree
# never touches them (another Worker's child, a dask cluster's processes).
_LIVE: set[int] = set()


def stop_tree(root: int | None, protected: set[int], since: int | None = None,
              old_sessions: frozenset[int] = frozenset()) -> list[int]:
    """Stop and kill `root` and every process it started, with the orphans re-parented to this process (child
    subreaper) that are not `protected` (nor another tree's: `since`, `old_sessions`, orphans_of_workers); reap
    those that are this process's children. Returns the pids killed other than root. Stopping (SIGSTOP) before
    killing means no process can fork a new one behind the walk."""
    me, killed, deadline = os.getpid(), set(), time.monotonic() + STOP_TREE_S
    while time.monotonic() < deadline:
        table = _parents()
        orphans = orphans_of_workers(table, protected, since, old_sessions)
        found = _descendants(({root} if root in table else set()) | orphans, table) - {me}
        states = {pid: _state(pid) for pid in found}
        alive = {pid for pid in found if states[pid] not in ("Z", "X", "?")}
        mine = {pid for pid in found - alive if table.get(pid) == me and pid != root}   # zombies to reap here
        for pid in mine:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not alive and not mine:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in alive:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        killed |= alive
        time.sleep(0.005)
    return sorted(killed - {root})


def _start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks after boot (/proc/PID/stat field 22); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return "?"


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:80] or "?"
    except OSError:
        return "?"


def host_pid(root: int, ns_pid: int) -> int:
    """The pid, as this process sees it, of the descendant of `root` that calls itself `ns_pid` in its own PID
    namespace (the sandboxed worker is pid 1 there: /proc/PID/status NSpid); `root` where none does."""
    table = _parents()
    for pid in sorted(_descendants({root}, table) - {root}):
        try:
            with open(f"/proc/{pid}/status") as fh:
                ids = next((line.split()[1:] for line in fh if line.startswith("NSpid:")), [])
        except OSError:
            continue
        if len(ids) > 1 and int(ids[-1]) == ns_pid:
            return pid
    return root


def _children_now() -> set[int]:
    me = os.getpid()
    return {pid for pid, ppid in _parents().items() if ppid == me}


class WorkerDied(RuntimeError):
    """The worker process ended or was stopped during a task; names the candidate and phase it was in."""

    def __init__(self, kind: str, message: str, candidate: str | None, phase: str | None):
        super().__init__(message)
        self.kind, self.message, self.candidate, self.phase = kind, message, candidate, phase

    def __reduce__(self):  # picklable with all four fields (it may come back from a dask worker)
        return WorkerDied, (self.kind, self.message, self.candidate, self.phase)


class WorkerError(RuntimeError):
    """The worker answered a task with a harness error (not a candidate's fault)."""


def _contract(workload: dict | None) -> dict:
    """The contract the child judges a task by: its workload's (the last one sent), else the default workload's."""
    from datasets.workload import workload_from_dict
    from profiler.check.inputs import default_contract

    return workload_from_dict(workload, "task", "workload").contract if workload is not None else default_contract()


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
        self.verdicts: list[dict] = []    # the judge's verdicts the child sent during the current task
        self.call_judge: CallJudge | None = None   # the current task's judge of every timed call (a CPU worker)
        self._workload: dict | None = None   # the last task's workload (the child keeps it for a task without one)
        self._protected: set[int] = set()
        self._since: int | None = None    # the child's start (_start_ticks) and the sessions there were then:
        self._old_sessions: frozenset[int] = frozenset()   # an orphan older, or in one of them, is not the child's
        self.steps: list[tuple[str | None, str | None, float]] = []   # (candidate, phase, parent's monotonic s)
        self.killed: list[int] = []    # processes the last child left behind, killed when it ended (stop_tree)
        self.sandbox = "none: not started"
        self.child_pid: int | None = None
        self.folders: WorkerFolders | None = None   # the child's scratch folder (profiler.worker.sandbox)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command(self) -> list[str]:
        return self.prefix + [sys.executable, "-m", "profiler.worker"]

    def start(self, timeout_s: float = START_TIMEOUT_S) -> dict:
        """Spawn the child and wait for "ready"; returns its environment (gpu, versions, replay overhead)."""
        self.close()
        become_subreaper()
        self._protected = _children_now()
        self._old_sessions = sessions_now()
        self._remove_folders()
        folders = self.folders = WorkerFolders.make()
        env = worker_environment(os.environ, folders, {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1"})
        sandbox, self.sandbox = [], "none: not asked (config unprivileged is false)"
        if self.config.get("unprivileged"):
            plan = sandbox_plan(folders, env, [Path(p) for p in self.config.get("read") or ()],
                                [Path(p) for p in self.config.get("writable") or ()])
            sandbox, self.sandbox = plan.prefix, plan.description
        # A new session: a Ctrl-C in the terminal reaches only the parent, which then stops the child itself.
        self.proc = subprocess.Popen(sandbox + self.command(), cwd=folders.paths["cwd"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     bufsize=1, encoding="utf-8", errors="replace", start_new_session=True)
        _LIVE.add(self.proc.pid)
        self._since = _start_ticks(self.proc.pid)
        self.started += 1
        self._q, self._tail = queue.Queue(), collections.deque(maxlen=STDERR_TAIL_LINES)
        self._protocol_thread = threading.Thread(target=self._read_protocol, args=(self.proc, self._q), daemon=True)
        self._protocol_thread.start()
        self._stderr_thread = threading.Thread(target=self._read_stderr, args=(self.proc, self._q, self._tail),
                                               daemon=True)
        self._stderr_thread.start()
        self._send({"op": "init", "config": self.config})
        self.child_pid = None   # known from "ready" (a prefix such as ncu forks the interpreter); no candidate runs before
        msg = self._wait({"ready"}, timeout_s)
        self.child_pid = host_pid(self.proc.pid, int(msg.get("pid") or self.proc.pid)) if sandbox else \
            int(msg.get("pid") or self.proc.pid)
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
        self.steps = [(None, "sent", time.monotonic())]
        self.verdicts = []
        if task.get("workload") is not None:
            self._workload = task["workload"]
        self.call_judge = (CallJudge(task, _contract(self._workload), stand_in=bool(self.config.get("init")))
                           if wants_call_judge(task, self.config) else None)
        try:
            self._send({"op": "task", "task": task})
            result = self._wait({"done"}, timeout_s)["result"]
            self.steps.append((None, "done", time.monotonic()))
            result = apply_verdicts(result, self.verdicts) if self.verdicts else result
            return self.call_judge.apply(result) if self.call_judge is not None else result
        finally:
            self.call_judge = None

    def phase_seconds(self, phase: str) -> float | None:
        """The parent's own wall-clock seconds from the first "step" message of `phase` to the answer of the last
        call (None when the child never entered it): what the child's timing could at most have measured."""
        starts = [t for _, p, t in self.steps if p == phase]
        return self.steps[-1][2] - starts[0] if starts and self.steps[-1][1] == "done" else None

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
                pass
        self._kill(proc)   # whatever it left behind, or the child itself where it did not exit in time
        try:
            proc.stdin.close()
        except Exception:
            pass
        self._remove_folders()
        # stdout/stderr are closed by their reader threads at end of file; closing a pipe another thread is reading
        # blocks until that read returns (it hung the CLI while a candidate's child held the pipe open)

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
                if self.proc is not None and self.proc.poll() is not None:
                    # The child ended but no end of file came: a process it started holds its pipes. Whatever it
                    # said is in the pipe by now; kill the holders, so the readers see the end of the stream.
                    exited = getattr(self, "_exited_at", None) or time.monotonic()
                    self._exited_at = exited
                    if time.monotonic() - exited >= EXITED_GRACE_S:
                        self._kill(self.proc)
                continue
            kind = msg.get("msg")
            if kind == "stderr":  # forwarded here, in the caller's thread (Streamlit elements need that)
                if self.log is not None:
                    self.log(f"[worker] {msg['text']}")
            elif kind == "step":  # progress: the watchdog restarts, so it stops exactly the step that hangs
                self._no_strays()   # the step that just ended left no process behind (the child waits for "go")
                self._last = {"candidate": msg.get("candidate"), "phase": msg.get("phase")}
                self.steps.append((msg.get("candidate"), msg.get("phase"), time.monotonic()))
                deadline = time.monotonic() + timeout_s
                self._send({"op": "go"})
            elif kind == "verdict":   # kept here, out of the worker's reach, until the task's answer comes
                self.verdicts.append(msg)
            elif kind == "input":     # the next timed call's input, made here now (a CPU worker's shape task)
                self._send(self._judge_input(msg))
            elif kind == "output":    # the output that call left, judged here now or not at all
                if self.call_judge is not None:
                    self.call_judge.output(msg)
            elif kind in wanted:
                self._no_strays()
                return msg
            elif kind == "fatal":
                self._last = {"candidate": msg.get("candidate"), "phase": msg.get("phase")}
                self._reap(self.proc, self.exit_timeout_s)
                raise self._died(msg.get("kind") or "fatal", msg.get("error") or "fatal error")
            elif kind == "error":
                raise WorkerError(msg.get("error") or "worker error")
            elif kind == "eof":
                code = self._reap(self.proc, self.exit_timeout_s)
                self._kill(self.proc)
                self._stderr_thread.join(timeout=5)  # the last words (a faulthandler dump) may still be in flight
                tail = _stderr_summary(list(self._tail))
                raise self._died("died", exit_description(code) + (f"; last stderr: {tail}" if tail else ""))

    def _judge_input(self, msg: dict) -> dict:
        if self.call_judge is None:   # no judge of timed calls for this task: the child ends at this answer
            return {"op": "no_input"}
        try:
            return self.call_judge.input(msg)
        except Exception as exc:
            self._kill(self.proc)
            raise WorkerError(f"the parent could not make a timed input: {type(exc).__name__}: {exc}"[:500]) from None

    def _no_strays(self) -> None:
        """Raise WorkerDied("outlived") naming the last step's candidate where a process the child started is still
        running once that step has ended (a fork, a Popen, a detached daemon; a build's compiler processes end
        with their step): it could outlive the worker and touch what the parent writes. The worker and all of
        them are killed (_died)."""
        if self.proc is None or self.child_pid is None:
            return
        table = _parents()
        orphans = orphans_of_workers(table, self._protected, self._since, self._old_sessions)
        strays = {pid for pid in _descendants({self.child_pid} | orphans, table) - {self.child_pid}
                  if _state(pid) not in ("Z", "X", "?")}
        if strays:
            what = ", ".join(f"{pid} ({_cmdline(pid)})" for pid in sorted(strays)[:3])
            raise self._died("outlived", f"outliving the worker: started {len(strays)} process(es) still running "
                                         f"after its step ended "
                                         f"({what}): a candidate may not start processes (they could outlive the "
                                         f"worker and touch what the parent records); all were killed")

    def _remove_folders(self) -> None:
        """The ended child's scratch folder, with whatever it wrote there (its compile caches too)."""
        if self.folders is not None:
            self.folders.remove()
            self.folders = None

    def _died(self, kind: str, message: str) -> WorkerDied:
        self._kill(self.proc)
        self._remove_folders()
        self._exited_at = None
        self.proc = None
        return WorkerDied(kind, message, self._last["candidate"], self._last["phase"])

    @staticmethod
    def _read_protocol(proc, q) -> None:
        stream = proc.stdout
        for line in iter(stream.readline, ""):  # protocol lines are whole (a result may be long: no size cap)
            try:
                q.put(json.loads(line))
            except ValueError:
                q.put({"msg": "log", "text": line[:MAX_LINE_CHARS]})
        q.put({"msg": "eof"})
        stream.close()

    @staticmethod
    def _read_stderr(proc, q, tail) -> None:
        stream, cut = proc.stderr, False
        for part in iter(lambda: stream.readline(MAX_LINE_CHARS), ""):
            if cut:   # the rest of a line longer than MAX_LINE_CHARS: dropped
                cut = not part.endswith("\n")
                continue
            cut = not part.endswith("\n")
            text = part.rstrip() + (" [line cut]" if cut else "")
            tail.append(text)
            q.put({"msg": "stderr", "text": text})
        stream.close()

    def _reap(self, proc, timeout_s: float = 10.0) -> int | None:
        if proc is None:
            return None
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._kill(proc)
            return proc.poll()

    def _kill(self, proc) -> None:
        """Kill the child (if it still runs) and every process it started, wherever they went (stop_tree)."""
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the child and its process group (compiler processes)
            except (ProcessLookupError, PermissionError):
                pass
        self.killed = stop_tree(proc.pid, self._protected, self._since, self._old_sessions)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        _LIVE.discard(proc.pid)
        if self.killed and self.log is not None:
            self.log(f"[worker] killed {len(self.killed)} process(es) the worker had started and left running")
