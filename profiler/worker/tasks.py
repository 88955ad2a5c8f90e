"""The table from task kind to task body, run in the worker process (task kinds: profiler/worker/process.py). A
task BODY is the worker's side of a task; the parent's side, a Task sent to a backend, is profiler.backends.

    run_task(task, config=None) -> result      one task in THIS process (the child runs every task through it)
"""
from __future__ import annotations

import time
from types import MappingProxyType

from datasets import load_seed_probes
from profiler.measure import probes
from profiler.worker import explain_task
from profiler.worker.session import Session, session
from profiler.worker.shape_task import measure_one_shape
from profiler.worker.step_task import measure_step
from profiler.worker.steps import step

PROBE_ROUNDS = 24   # rounds per probe size when a probes task gives none


def _load(sess: Session, task: dict) -> dict:
    loaded = []
    for spec in task["specs"]:
        cand = sess.load(spec)
        err = sess.load_errors.get(spec, {})
        loaded.append({"spec": spec, "name": getattr(cand, "name", None), "error": err.get("error"),
                       "refused": bool(err.get("refused"))})
    return {"kind": "load", "loaded": loaded}


def measure_probes(sess, shape_bytes_by_key: dict, rounds: int) -> dict:
    """The probe task: HBM read probes at the run's shape sizes, the write-up's and a log sweep; compute probe."""

    t0 = time.perf_counter()
    seed_probes = load_seed_probes()
    if sess.cuda:
        plan = probes.probe_plan(shape_bytes_by_key, zip(seed_probes["label"], seed_probes["bytes"]),
                                 probes.log_sweep_bytes())
    else:  # a CPU device: the floors of the run's shapes only (the write-up's sizes and the sweep are H200 figures)
        plan = probes.probe_plan(shape_bytes_by_key)
    cold = sess.timer("cold")
    read = probes.run_read_probes(cold, plan, n_rounds=rounds)
    compute = probes.run_compute_probe(cold)
    return {"probes": read, "compute_probe": compute, "seconds": round(time.perf_counter() - t0, 2)}



def _probes(sess: Session, task: dict) -> dict:
    step(None, "probes")
    return {"kind": "probes", **measure_probes(sess, task["shape_bytes"], int(task.get("rounds", PROBE_ROUNDS)))}


def _environment(sess: Session, task: dict) -> dict:
    return {"kind": "environment", "environment": sess.environment()}


# Read-only: a candidate in this process cannot swap a task body in place (profiler.check.guards).
BODIES = MappingProxyType({"shape": measure_one_shape, "load": _load, "probes": _probes, "environment": _environment,
                           "explain_check": explain_task.explain_check, "explain_ncu": explain_task.explain_ncu,
                           "step": measure_step})


def run_task(task: dict, config: dict | None = None) -> dict:
    """Run one task in THIS process. `config`: the session's config (device, mode, ...), also taken from
    task["worker"]; the in-process default is CUDA, cold mode."""
    sess = session(config or task.get("worker"))
    sess.use_workload(task.get("workload"))
    body = BODIES.get(task.get("kind"))
    if body is None:
        raise ValueError(f"unknown task kind {task.get('kind')!r}")
    return body(sess, task)
