"""`python -m profiler step`: the whole decode step of a workload's declared layer, per candidate, beside the same run's
per-shape ratios.

    run_step(specs, workload, batches, contexts, out_path, *, label, layers=4, settings=SweepSettings(),
             step_seconds=2.0, step_timeout_s=300.0, device="cuda", log=print, worker_init=None,
             progress=None) -> dict (the run)

One run file holds both halves, so the Amdahl comparison (dashboard/model/step.py) uses numbers of one run:
  1. the shapes: every projection family of the layer at every batch (M = batch), the ordinary sweep
     (profiler.commands.sweep.sweep_on: the contract, paired cold timing; results, pairs, failures as any run's);
  2. the step: one task per (batch, context) point in the worker (profiler/worker/step_task.py), every candidate in
     it, again without a candidate that took the worker down (profiler.backends.isolate.without_culprits).
The file is flushed after the shapes and after every point (status "partial"), finalized "complete" at the end; the
run's "step" object (datasets/runfile_step.py) holds the settings and the points.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Sequence

from datasets.layer_spec import layer_of
from datasets.runfile import RunWriter
from kernels.candidate import resolve_spec
from profiler.backends.base import Task
from profiler.backends.isolate import without_culprits
from profiler.backends.open import open_backends
from profiler.commands.sweep import select_shapes, sweep_on, worker_config
from profiler.worker.process import WorkerDied, WorkerError
from profiler.worker.settings import SweepSettings

STEP_KEY = "step"       # the run file's top-level object of a step run (datasets/runfile_step.py)


class StepInputError(ValueError):
    """A workload without a declared layer, or a layer the step cannot run; one line."""


def step_selection(workload, batches: Sequence[int]) -> str:
    """The --shapes selection of the layer's projection families at the step's batches."""
    layer = layer_of(workload)
    families = ",".join(layer.family(r) for r in ("qkv", "o", "gate_up", "down"))
    return f"{families}:{','.join(str(int(b)) for b in batches)}"


def check_step_input(workload, batches, contexts) -> list[int]:
    """The contexts to measure (the layer's declared ones where none are given); StepInputError otherwise."""
    layer = layer_of(workload)
    if layer is None:
        raise StepInputError(f"workload {workload.name} declares no decoder layer (add a \"layer\" section: "
                             "datasets/README.md, 'The decoder layer')")
    if layer.mlp != "gated":
        raise StepInputError(f"workload {workload.name}: the step measures a gated dense MLP; its layer's MLP is "
                             f"{layer.mlp!r} (routed experts are declared, not measured)")
    if not batches:
        raise StepInputError("no batch sizes given")
    return [int(c) for c in (contexts or layer.contexts)]


class _HeldWriter:
    """The sweep's writer, whose finalize only flushes: the step points come after the shapes, in the same file."""

    def __init__(self, writer: RunWriter):
        self.writer = writer

    def flush(self, run: dict):
        return self.writer.flush(run)

    def finalize(self, run: dict):
        return self.writer.flush(run)


def _point_failures(point: dict, names: list[str], kind: str, phase: str, why: str) -> list[dict]:
    return [{**point, "candidate": n, "kind": kind, "phase": phase, "reasons": [why[:600]]} for n in names]


def _point(pool, task: dict, live: list[dict], timeout_s: float) -> dict:
    """One step point in the worker; after a worker death, again without the candidate it named (all of them where
    it named none: the timing runs every candidate at once) -> the task's result, with every failure."""
    point = {"batch": task["batch"], "context": task["context"]}
    lost: list[dict] = []

    def blame(exc: WorkerDied, culprits: list[str]) -> list[str]:
        lost.extend(_point_failures(point, culprits, exc.kind, exc.phase or "unknown",
                                    f"worker {exc.kind} in {exc.phase or 'the step'}: {exc.message}"))
        return culprits

    def call(cands: list[dict]) -> dict:
        try:
            return pool.call(task | {"candidates": cands}, timeout_s, f"step batch {point['batch']} context "
                                                                      f"{point['context']}")
        except WorkerError as exc:
            return {"kind": "step", "point": point, "candidates": [], "pairs": [],
                    "failures": _point_failures(point, [c["name"] for c in cands], "error", "harness",
                                                f"harness error: {exc}")}

    res = without_culprits(pool, list(live), call, blame)
    if res is None:
        res = {"kind": "step", "point": point, "candidates": [], "pairs": [], "failures": []}
    res["failures"] = lost + res["failures"]
    res["worker"] = pool.index
    return res


STEP_POINT = Task("step", _point)


def run_step(specs: Sequence[str], workload, batches: Sequence[int], contexts: Sequence[int] | None, out_path, *,
             label: str, layers: int = 4, settings: SweepSettings | None = None, step_seconds: float = 2.0,
             step_timeout_s: float = 300.0, device: str = "cuda", log: Callable[[str], None] = print,
             worker_init: str | None = None, progress: Callable | None = None, trace: str | None = None) -> dict:
    contexts = check_step_input(workload, batches, contexts)
    batches = [int(b) for b in batches]
    shapes = select_shapes(step_selection(workload, batches), workload)
    settings = settings or SweepSettings()
    settings = replace(settings, shapes=step_selection(workload, batches))
    given = [str(s) for s in specs]
    resolved = [resolve_spec(s) for s in given]
    config = worker_config(device, replace(settings, mode="cold"), out_path, resolved, worker_init)
    writer = RunWriter(out_path)   # refuses an existing file before any work
    with open_backends(None, config, log) as backends:
        backend = next(iter(backends.values()))
        run = sweep_on(backend, resolved, given, shapes, _HeldWriter(writer), label=label, settings=settings,
                       progress=progress, log=log, workload=workload)
        names = list(run["environment"]["settings"].get("candidates") or [])
        candidates = [{"spec": s, "name": n} for s, n in zip(resolved, names)]
        points = [(b, c) for c in contexts for b in batches]
        run[STEP_KEY] = {"layers": int(layers), "batches": batches, "contexts": contexts,
                         "seconds_per_mode": float(step_seconds), "candidates": names, "points": []}
        t0 = time.perf_counter()
        try:
            for i, (b, c) in enumerate(points):
                task = {"kind": "step", "workload": workload.to_dict(), "batch": b, "context": c,
                        "settings": {"layers": int(layers), "seed": settings.seed, "max_seconds": float(step_seconds),
                                     "trace": None if trace is None else f"{trace}.b{b}.c{c}.json"}}
                res = backend.call(STEP_POINT, task, candidates, step_timeout_s)
                res.pop("kind", None)
                run[STEP_KEY]["points"].append(res)
                run["environment"]["workers"] = backend.records()
                writer.flush(run)
                if progress:
                    progress("step points", i + 1, len(points))
        except KeyboardInterrupt:
            run["interrupted"] = True
            writer.flush(run)
            raise
        finally:
            backend.close()
        run[STEP_KEY]["seconds"] = round(time.perf_counter() - t0, 2)
        run["environment"]["workers"] = backend.records()
        writer.finalize(run)
        run["status"] = "complete"
    return run


__all__ = ["run_step", "check_step_input", "step_selection", "StepInputError", "STEP_KEY", "STEP_POINT"]
