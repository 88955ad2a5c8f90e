"""This host's backend: one worker process (a WorkerPool), one task at a time."""
from __future__ import annotations

from typing import Callable

from profiler.backends.base import Task
from profiler.backends.isolate import ENVIRONMENT
from profiler.backends.pool import WorkerPool


class LocalBackend:
    """Where a command runs its tasks without --cluster: this host's one worker process. `call(task, *args)` runs
    task.run(pool, *args) here (profiler.backends.base.Backend)."""

    parallel = 1

    def __init__(self, config: dict, log: Callable[[str], None]):
        self.pool = WorkerPool(config, log)

    def call(self, task: Task, *args, pin: str | None = None):
        return task.run(self.pool, *args)

    def environment(self) -> dict:
        return dict(self.call(ENVIRONMENT))

    def records(self) -> list[dict]:
        return self.pool.records

    def detail(self) -> str | None:
        return None

    def cancel(self) -> None:
        pass

    def close(self, force: bool = False) -> None:
        self.pool.close(force)
