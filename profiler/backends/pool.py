"""The parent's worker pool: one worker process at a time, respawned after a death, with the record of every
process it started (the run file's environment.workers)."""
from __future__ import annotations

from profiler.worker.process import Worker, WorkerDied

WORKER_IDENTITY = ("hostname", "gpu", "gpu_uuid", "pci_bus_id")  # environment.workers[]: where each process timed


class WorkerStartError(RuntimeError):
    """A worker process could not start (no CUDA, a broken install): nothing can be measured."""


class WorkerPool:
    """The parent's worker, respawned after a death, with the record of every process it started.

    WorkerPool({"device": "cuda", "mode": "cold", "flush_bytes": None, "init": None}, log).call(task, timeout_s,
    what) -> result (profiler.worker.process task kinds); measure_shape_isolated() adds the
    retry-without-the-culprit loop (profiler.backends.isolate)."""

    def __init__(self, config: dict, log):

        self.worker = Worker(config, log=log)
        self.records: list[dict] = []
        self.log = log
        self.loaded: set[str] = set()   # the candidate specs the current worker process has loaded

    def fresh_for(self, specs) -> bool:
        """True when the current worker has loaded nothing but `specs` (or no worker runs): work that must not
        share a process with any other candidate can run in it without a new start."""
        return self.loaded <= set(specs) or not self.worker.alive

    def call(self, task: dict, timeout_s: float, what: str) -> dict:

        if not self.worker.alive:
            self.loaded = set()
            try:
                env = self.worker.start()
            except WorkerDied as exc:
                raise WorkerStartError(f"the worker process could not start ({exc.kind}): {exc.message}") from None
            self.records.append({"index": len(self.records), "started_for": what,
                                 "replay_overhead_us": env.get("replay_overhead_us"),
                                 "replay_overhead_ci_us": env.get("replay_overhead_ci_us"), "ended": "running",
                                 "sandbox": self.worker.sandbox}
                                | {k: env[k] for k in WORKER_IDENTITY if env.get(k) is not None})
        self.loaded |= set(task.get("specs") or ()) | {c["spec"] for c in task.get("candidates") or ()
                                                        if isinstance(c, dict) and "spec" in c}
        return self.worker.call(task, timeout_s)

    def died(self, why: str) -> None:
        if self.records:
            self.records[-1]["ended"] = why[:300]
        self.log(f"worker {len(self.records) - 1} lost: {why}; the next task starts a fresh one")

    @property
    def index(self) -> int:
        return len(self.records) - 1

    def close(self, force: bool = False) -> None:
        if self.records and self.records[-1]["ended"] == "running":
            self.records[-1]["ended"] = "stopped (interrupted)" if force else "closed"
        self.worker.close(force)

