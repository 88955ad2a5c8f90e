"""The backend protocol: where a command's units of work run.

    backend.call(task, *args, pin=None) -> task.run(pool, *args) on one of the backend's worker pools
    backend.environment() -> the worker's environment (gpu, versions, replay overhead; a cluster adds its workers)
    backend.parallel   how many calls may run at once (for_each runs that many in threads)
    backend.records() / detail() / cancel() / close(force)

A unit of work is a Task: `run(pool, *args)` runs on a profiler.backends.pool.WorkerPool (this host's, or a dask
worker's), and `lost(args, why)` is what the task records when it cannot run at all (its dask worker died twice):
each unit of work declares its own, so no backend needs to know the commands' records. Commands receive backends
(profiler.backends.open.open_backends) and never import dask.
"""
from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Protocol


@dataclass(frozen=True)
class Task:
    """One unit of work: `run(pool, *args) -> result`; `lost(args, why) -> result` where the task was lost with
    its worker (None: such a loss is an error of the whole command)."""
    name: str
    run: Callable[..., Any]
    lost: Callable[[tuple, str], Any] | None = None


class Backend(Protocol):
    parallel: int

    def call(self, task: Task, *args, pin: str | None = None) -> Any:
        """task.run(pool, *args) on one worker pool; calls with the same `pin` run on the same worker."""

    def environment(self) -> dict:
        """The environment of the backend's (first) worker process: gpu, versions, replay overhead."""

    def records(self) -> list[dict]:
        """Every worker process the backend started (the run file's environment.workers)."""

    def detail(self) -> str | None:
        """Progress detail (tasks done per worker), None where there is one worker."""

    def cancel(self) -> None:
        """Ctrl-C: stop the tasks running elsewhere."""

    def close(self, force: bool = False) -> None:
        """End the worker processes (force: kill them now)."""


def for_each(items, work: Callable, finished: Callable, parallel: int = 1, cancel: Callable = lambda: None) -> None:
    """finished(item, work(item)) for every item: in order in this thread (parallel 1), or `parallel` at a time in
    threads, each finished() called here as its work ends. Ctrl-C (or an error) cancels what is still queued
    (`cancel` stops the tasks already running elsewhere) and is raised once the threads have returned."""
    items = list(items)
    if parallel <= 1:
        for item in items:
            finished(item, work(item))
        return
    pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="projlab-task")
    futures = {pool.submit(work, item): item for item in items}
    try:
        pending = set(futures)
        while pending:
            # A timeout keeps the main thread responsive to Ctrl-C.
            ready, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in sorted(ready, key=lambda f: items.index(futures[f])):
                finished(futures[fut], fut.result())
    except BaseException:
        for fut in futures:
            fut.cancel()
        cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
