"""The pool tasks every command uses, and the ONE retry-without-the-culprit loop.

    without_culprits(pool, live, call, on_death) -> call(live), again without the candidate that took the worker
        down each time one does (the worker protocol names it), until it returns or nobody is left
    ENVIRONMENT, LOAD, PROBES, SHAPE: Tasks (profiler.backends.base) run on a WorkerPool by any backend; SHAPE is
        the sweep's and the tuner's "check and time these candidates at this shape"

The load, shape and explain-check tasks all go through without_culprits. Explain's ncu pass does not re-run
anything: the calls profiled before a death are already in that ncu process's report, so it goes on with the jobs
after the culprit in a new ncu process (profiler.commands.explain._profile_shapes).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from datasets.shapes import shape_key_of as shape_key
from profiler.backends.base import Task
from profiler.backends.pool import WorkerPool
from profiler.backends.verify import FORGED, verify_shape_reply
from profiler.worker.process import WorkerDied, WorkerError
from profiler.worker.records import failure_record

PROBE_TIMEOUT_S = 900.0        # the probe task (harness code only): ~12 s on the H200, generous


def _error_factor(task_base: dict) -> float:
    """The contract's less_accurate factor for the task's workload (the default workload's where it has none)."""
    from profiler.check.inputs import default_contract

    contract = (task_base.get("workload") or {}).get("contract") if isinstance(task_base.get("workload"), dict) \
        else None
    return float((contract or default_contract())["vs_baseline_flag_factor"])


class SweepInputError(ValueError):
    """A candidate spec that cannot be used (broken module, unknown plan); the message names it."""


def without_culprits(pool: WorkerPool, live: list, call: Callable[[list], object],
                     on_death: Callable[[WorkerDied, list[str]], list[str]], name: Callable = lambda c: c["name"],
                     unknown: str = "all", ended: Callable[[WorkerDied], str] = lambda e: f"{e.kind}: {e.message}"):
    """call(live) until it returns; after each worker death the pool records it (`ended`), the culprits are the
    candidate the worker named or, where it named none of `live` (timing, harness code), all of them
    (unknown="all") or the first (unknown="first"); on_death(exc, culprits) records them and returns those to
    leave out (an empty list: run the same candidates again, e.g. without an optional step). Returns None when
    nobody is left."""
    while live:
        try:
            return call(live)
        except WorkerDied as exc:
            pool.died(ended(exc))
            names = [name(c) for c in live]
            culprits = [exc.candidate] if exc.candidate in names else (names if unknown == "all" else names[:1])
            out = set(on_death(exc, culprits))
            live = [c for c in live if name(c) not in out]
    return None


def _load_all(pool: WorkerPool, specs: list[str], timeout_s: float,
              workload: dict | None = None) -> tuple[list[dict], dict[str, str]]:
    """Load every spec in the worker -> (loaded records in spec order, {spec: refusal reason}). A spec whose
    module took the worker down is refused with the cause; a broken spec raises SweepInputError."""
    refused = {}

    def refuse(exc: WorkerDied, culprits: list[str]) -> list[str]:
        refused[culprits[0]] = f"the worker died while loading it: {exc.message}"
        return culprits

    loaded = without_culprits(pool, list(specs), lambda pending: pool.call(
        {"kind": "load", "specs": pending, "workload": workload}, timeout_s, "load")["loaded"], refuse,
        name=lambda s: s, unknown="first", ended=str) or []
    broken = [r for r in loaded if r["error"] and not r["refused"]]
    if broken:
        raise SweepInputError("; ".join(f"cannot load candidate {r['spec']!r}: {r['error']}" for r in broken))
    for r in loaded:
        if r["refused"]:
            refused[r["spec"]] = f"refused at load: {r['error']}"
    by_spec = {r["spec"]: r for r in loaded}
    return [by_spec.get(s, {"spec": s, "name": None}) for s in specs], refused


def unique_names(candidates) -> list[str]:
    """Names in order, repeated ones suffixed "#2", "#3"; takes names or objects with a .name."""
    names, seen = [], {}
    for c in candidates:
        base = c if isinstance(c, str) else str(getattr(c, "name", type(c).__name__))
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def loaded_names(loaded: list[dict]) -> list[str]:
    """The candidates' names from a load task's records (a spec's file stem where it has no name), unique."""
    raw = [r["name"] or Path(r["spec"].split(":")[0]).stem or r["spec"] for r in loaded]
    return unique_names(raw)


def measure_shape_isolated(pool: WorkerPool, shape: dict, live: list[dict], task_base: dict, settings,
                           incidents: dict, log) -> dict:
    """One shape in the worker, again in a fresh one without the candidate that took it down -> merged
    {"results", "pairs", "failures", "info", "telemetry"}. `live`: [{"spec", "name"}] (the first is the baseline of
    the pairs); task_base: {"kind": "shape", "settings": asdict(settings), "floor": ...}; `incidents` counts the
    workers each candidate took down (updated here). The tuner calls this with method specs."""
    merged = {"results": [], "pairs": [], "failures": [], "info": {}, "telemetry": None}

    def blame(exc: WorkerDied, culprits: list[str]) -> list[str]:
        what = ("during paired timing of all candidates" if exc.phase == "time" else f"in {exc.phase}")
        for name in culprits:
            merged["failures"].append(failure_record(shape, name, exc.kind, exc.phase or "unknown",
                                                     [f"worker {exc.kind} {what}: {exc.message}"],
                                                     worker=pool.index))
            incidents[name] = incidents.get(name, 0) + 1
        return culprits

    def measure(cands: list[dict]) -> dict:
        try:
            reply = pool.call(task_base | {"shape": shape, "candidates": cands}, settings.shape_timeout_s,
                              shape_key(shape))
        except WorkerError as exc:
            log(f"{shape_key(shape)}: harness error in the worker: {exc}")
            merged["failures"] += [failure_record(shape, c["name"], "error", "harness", [f"harness error: {exc}"])
                                   for c in cands]
            return None
        forged = verify_shape_reply(reply, pool.worker.phase_seconds("time"), settings.seed,
                                    floor=task_base.get("floor"), error_factor=_error_factor(task_base),
                                    device=(pool.worker.environment or {}).get("gpu"))
        if forged:   # nothing of this reply is recorded, and the process that sent it measures nothing more
            why = f"{FORGED}: " + "; ".join(forged)[:500]
            log(f"{shape_key(shape)}: {why}")
            pool.died(why)
            pool.worker.close(force=True)
            merged["failures"] += [failure_record(shape, c["name"], "forged", "time", [why], worker=pool.index)
                                   for c in cands]
            return None
        return reply

    res = without_culprits(pool, list(live), measure, blame)
    if res is not None:
        for key in ("results", "pairs", "failures"):
            merged[key] += [r | {"worker": pool.index} for r in res[key]]
        merged["info"], merged["telemetry"] = res["info"], res.get("telemetry")
    merged["worker"] = pool.index  # the process that measured the shape last (a per-shape reference)
    return merged


def _environment(pool: WorkerPool) -> dict:
    """The worker's environment (gpu, versions, replay overhead); starts it."""
    return pool.call({"kind": "environment"}, PROBE_TIMEOUT_S, "start")["environment"]


def _probes(pool: WorkerPool, task: dict) -> dict:
    return pool.call(task, PROBE_TIMEOUT_S, "probes")


def _shape(pool: WorkerPool, shape: dict, live: list[dict], task_base: dict, settings) -> dict:
    """measure_shape_isolated as a self-contained task: the merged result plus "incidents", the workers each
    candidate took down here (the caller keeps the count across shapes)."""
    incidents: dict[str, int] = {}
    merged = measure_shape_isolated(pool, shape, live, task_base, settings, incidents, pool.log)
    return merged | {"incidents": incidents}


def _shape_lost(args: tuple, why: str) -> dict:
    """A shape task lost with its worker: every candidate it carried failed there ("died", phase "dask")."""
    shape, live = args[0], args[1]
    return {"results": [], "pairs": [], "info": {}, "telemetry": None, "worker": None, "incidents": {},
            "failures": [failure_record(shape, c["name"], "died", "dask", [why]) for c in live]}


ENVIRONMENT = Task("environment", _environment)
LOAD = Task("load", _load_all)
PROBES = Task("probes", _probes)
SHAPE = Task("shape", _shape, lost=_shape_lost)
