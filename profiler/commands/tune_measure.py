"""The tuner's measure step through the isolation worker: "check + time these (method, config) at this shape".

    WorkerMeasure(backend, settings, log)(shape, [(method, config), ...], timing) -> {"timed", "rejected", "info"}

is the `measure` function of profiler.commands.tune_rules (its contract is there), used by `python -m profiler tune`
and the config survey. Each call is ONE shape task (profiler.backends.isolate.SHAPE): every candidate a
`method:NAME:{config}` spec named by its label (kernels.method.format_config), checked with the contract's quick
check (one eager call on fresh inputs with probe rows, vs the FP64 reference) and the passing ones timed together
(paired rounds, the same sampler as `profiler run`), on whatever backend the command was given (this host's
worker, or a dask worker). A candidate whose worker died, hung or broke its CUDA context is a rejection with the
cause, the others are measured again in a fresh worker, and the tune goes on; a candidate that took a worker down
at `settings.max_incidents` shapes is not run again.

`tune_measured` turns a merged shape result into the measure contract; it is pure, so the same measurements give
the same timed/rejected lists, and so the same plan, on one worker or many.
"""
from __future__ import annotations

import threading
from dataclasses import asdict
from typing import Callable

from kernels.candidate import method_spec
from kernels.method import format_config
from profiler.backends.isolate import SHAPE
from profiler.measure.policy import SWEEP
from profiler.worker.records import INCIDENT_KINDS
from profiler.worker.settings import SweepSettings


def timing_settings(base: SweepSettings, timing: dict) -> SweepSettings:
    """The worker's settings for one tuner stage: quick check, cold mode, timed by the stage's policy (a
    TimingPolicy.stage() dict: profiler.measure.policy)."""
    return base.with_policy(SWEEP.with_stage(timing), mode="cold", check="quick", probes=False)


def tune_measured(merged: dict, labels: dict[str, tuple[str, dict]]) -> dict:
    """A merged shape result (results, failures, info) -> the tuner's {"timed", "rejected", "info"}.
    `labels`: candidate name -> (method, config). Results keep the task's candidate order (paired by index)."""
    timed = [{"method": labels[r["candidate"]][0], "config": dict(labels[r["candidate"]][1]),
              "samples_us": list(r["samples_us"])} for r in merged["results"]]
    rejected = {}
    for f in merged["failures"]:
        rejected.setdefault(f["candidate"], []).extend(f["reasons"])
    return {"timed": timed, "rejected": rejected, "info": dict(merged.get("info") or {})}


class WorkerMeasure:
    """tune_rules' measure function on the worker protocol (module docstring). The failure records of candidates
    that took a worker down (kinds in profiler.worker.records.INCIDENT_KINDS) come back under "failures", for the
    run file; `incidents` counts them per candidate across calls (threads may share one WorkerMeasure)."""

    def __init__(self, backend, settings: SweepSettings, log: Callable[[str], None] = print, workload=None):
        """`workload`: the Workload the shapes come from (None: the default); every task carries it, so the
        worker checks candidates with its contract and its dtypes."""
        self.backend, self.settings, self.log = backend, settings, log
        self.workload = workload.to_dict() if workload is not None else None
        self.incidents: dict[str, int] = {}
        self.telemetry: list[dict] = []   # one NVML sample per measured shape, as the worker took it
        self._lock = threading.Lock()   # points may be measured from several threads (a cluster tune)

    def __call__(self, shape: dict, cands: list, timing: dict, pin: str | None = None) -> dict:
        """`pin`: measurements with the same pin run on the same worker where there are several (a point's
        screen, finals and neighbours on one GPU)."""
        labels = {format_config(name, config): (name, dict(config)) for name, config in cands}
        live, skipped = [], {}
        with self._lock:
            counts = dict(self.incidents)
        for label, (name, config) in labels.items():
            if counts.get(label, 0) >= self.settings.max_incidents:
                skipped[label] = [f"not run: its worker died or hung at {counts[label]} shapes already "
                                  f"(max_incidents {self.settings.max_incidents})"]
            else:
                live.append({"spec": method_spec(name, config), "name": label})
        shape_settings = timing_settings(self.settings, timing)
        merged = self.backend.call(SHAPE, shape, live, {"kind": "shape", "settings": asdict(shape_settings),
                                                         "floor": None, "workload": self.workload},
                                   shape_settings, pin=pin)
        with self._lock:
            if merged.get("telemetry"):
                self.telemetry.append(merged["telemetry"])
            for name, n in merged["incidents"].items():
                self.incidents[name] = self.incidents.get(name, 0) + n
        out = tune_measured(merged, labels)
        out["rejected"].update(skipped)
        out["failures"] = [f for f in merged["failures"] if f.get("kind") in INCIDENT_KINDS]
        if "worker" in merged:
            out["info"]["worker"] = merged["worker"]
        return out
