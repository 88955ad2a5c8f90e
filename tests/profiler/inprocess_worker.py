"""An in-process stand-in for profiler.worker.process.Worker, for tests of what the parent does with a worker's
answers (records, pairs, settings, workloads, retries of a lost shape), not of the worker process itself.

The same tasks run through the same code as in a child (profiler.worker.tasks.run_task on a
profiler.worker.session.Session, the init hook installing the fake timer, step() reporting, the session's
integrity check after every task, every answer through a JSON round trip as over the pipe); what is left out is the
process: no watchdog, no death, no stray-process check, no sandbox. So a test that needs any of those -- a candidate
that crashes, hangs, exits, forks or forges -- keeps a real worker (test_worker.py, test_reach.py, test_isolation.py,
test_trust_sweep.py's canary tests, test_tune_worker.py). What it saves is one process start per worker (~2 s on the
2-core machine: torch's import), ~35 s of test time over the files that use it.

    from inprocess_worker import in_process_worker  # noqa: F401  (the fixture)
    def test_something(tmp_path, in_process_worker): ...    # the sweeps this test runs use it

Everything a worker's life changes in this process is put back when it closes: the modules the init hook patched
(the fake timer), atexit.register (the session's integrity check wraps it), the environment, step reporting, the
session, and the modules candidates brought in from outside the repository and the installed libraries.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import time
from pathlib import Path

import pytest

from profiler.worker.process import Worker

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("datasets", "kernels", "profiler", "dashboard")


def _project_modules() -> dict:
    return {name: mod for name, mod in list(sys.modules.items())
            if name.split(".")[0] in PACKAGES and mod is not None}


class InProcessWorker:
    """profiler.worker.process.Worker's interface (start, call, close, alive, phase_seconds, the records a
    WorkerPool reads), each task run in this process."""

    def __init__(self, config: dict, log=None, prefix=None, exit_timeout_s: float = 10.0):
        if prefix:
            raise ValueError("an in-process worker cannot run under a command prefix (ncu): use the real Worker")
        self.config, self.log = dict(config), log
        self.environment: dict | None = None
        self.started = 0
        self.steps: list[tuple] = []
        self.killed: list[int] = []
        self.sandbox = "none: in the test's process"
        self.child_pid: int | None = None
        self._session = None
        self._saved: dict | None = None
        self._workload: dict | None = None

    @property
    def alive(self) -> bool:
        return self._session is not None

    def start(self, timeout_s: float = 0.0) -> dict:
        from profiler.worker import session as session_mod
        from profiler.worker import steps

        self.close()
        self._saved = {"modules": {name: dict(vars(mod)) for name, mod in _project_modules().items()},
                       "module_names": set(sys.modules), "environ": dict(os.environ),
                       "atexit_register": atexit.register}
        steps.report_to(lambda candidate, phase: self.steps.append((candidate, phase, time.monotonic())))
        session_mod._SESSION.clear()          # a fresh Session, as a fresh process would have
        self._session = session_mod.session(self.config)
        self.started += 1
        self.child_pid = os.getpid()
        self.environment = json.loads(json.dumps(self._session.environment(), allow_nan=True))
        return self.environment

    def call(self, task: dict, timeout_s: float) -> dict:
        from profiler.worker import steps
        from profiler.worker.call_judge import CallJudge
        from profiler.worker.call_judge import wanted as wants_call_judge
        from profiler.worker.process import WorkerDied, WorkerError, _contract
        from profiler.worker.steps import Fatal
        from profiler.worker.tasks import run_task

        if not self.alive:
            self.start()
        self.steps = [(None, "sent", time.monotonic())]
        task = json.loads(json.dumps(task, allow_nan=True))
        if task.get("workload") is not None:
            self._workload = task["workload"]
        judge = (CallJudge(task, _contract(self._workload), stand_in=bool(self.config.get("init")))
                 if wants_call_judge(task, self.config) else None)
        if judge is not None:   # the parent's judge of every timed CPU call, its messages through JSON as over the pipe
            steps.feed_from(lambda c, g: json.loads(json.dumps(judge.input({"candidate": c, "graph": g}))),
                            lambda c, g, payload: judge.output(json.loads(json.dumps({"candidate": c, "graph": g}
                                                                                      | payload))))
        try:
            result = run_task(task, self._session.config)
            self._session.assert_integrity("the task")
        except Fatal as exc:
            self.close()
            raise WorkerDied(exc.kind, exc.error, exc.candidate, exc.phase) from None
        except Exception as exc:
            if self._session.healthy() is not None:
                self.close()
                raise WorkerDied("cuda_fault", f"{type(exc).__name__}: {exc}"[:500], None, None) from None
            raise WorkerError(f"{type(exc).__name__}: {exc}"[:500]) from None
        finally:
            steps.feed_from(None)
        self.steps.append((None, "done", time.monotonic()))
        result = json.loads(json.dumps(result, allow_nan=True))
        return judge.apply(result) if judge is not None else result

    phase_seconds = Worker.phase_seconds   # from the steps recorded as a real worker's parent records them

    def close(self, force: bool = False) -> None:
        from profiler.worker import session as session_mod
        from profiler.worker import steps

        if self._saved is None:
            return
        saved, self._saved, self._session = self._saved, None, None
        session_mod._SESSION.clear()
        steps.report_to(lambda candidate, phase: None)
        atexit.register = saved["atexit_register"]
        os.environ.clear()
        os.environ.update(saved["environ"])
        for name, mod in _project_modules().items():
            before = saved["modules"].get(name)
            if before is None:
                continue
            now = vars(mod)
            for key in [k for k in now if k not in before]:
                del now[key]
            now.update(before)
        outside = (str(ROOT), *_library_dirs())
        for name in set(sys.modules) - saved["module_names"]:
            path = getattr(sys.modules[name], "__file__", None) or ""
            if name.split(".")[0] not in PACKAGES and not path.startswith(outside):
                del sys.modules[name]   # a candidate's module (or one it imported from outside the libraries)


def _library_dirs() -> tuple[str, ...]:
    from profiler.worker.integrity import _LIBRARY_DIRS

    return _LIBRARY_DIRS


@pytest.fixture
def in_process_worker(monkeypatch):
    """Every worker a command starts in this test runs its tasks in this process (InProcessWorker)."""
    from profiler.backends import pool

    monkeypatch.setattr(pool, "Worker", InProcessWorker)
    yield
