"""The table from task kind to task body, run in the worker process (task kinds: profiler/worker/process.py). A
task BODY is the worker's side of a task; the parent's side, a Task sent to a backend, is profiler.backends.

    run_task(task, config=None) -> result      one task in THIS process (the child runs every task through it)
"""
from __future__ import annotations

import os
import time
from types import MappingProxyType

from datasets import load_seed_probes
from profiler.measure import probes
from profiler.measure.timing import cpu_cache_bytes
from profiler.worker import explain_task
from profiler.worker.session import Session, session
from profiler.worker.shape_task import measure_one_shape
from profiler.worker.step_task import measure_step
from profiler.worker.steps import step

PROBE_ROUNDS = 24   # rounds per probe size when a probes task gives none
CPU_READ_ROUNDS = 6  # rounds per CPU read size (each reads megabytes to hundreds of them)


def _load(sess: Session, task: dict) -> dict:
    loaded = []
    for spec in task["specs"]:
        cand = sess.load(spec)
        err = sess.load_errors.get(spec, {})
        loaded.append({"spec": spec, "name": getattr(cand, "name", None), "error": err.get("error"),
                       "refused": bool(err.get("refused"))})
    return {"kind": "load", "loaded": loaded}


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def measure_probes(sess, shape_bytes_by_key: dict, rounds: int) -> dict:
    """The probe task: on a GPU, read probes at the run's shape sizes, the write-up's and a log sweep; on a CPU, its
    read rate past its caches and each shape's floor derived from it; the compute probe."""

    t0 = time.perf_counter()
    seed_probes = load_seed_probes()
    if sess.cuda:
        plan = probes.probe_plan(shape_bytes_by_key, zip(seed_probes["label"], seed_probes["bytes"]),
                                 probes.log_sweep_bytes())
        cold = sess.timer("cold")
        read = probes.run_read_probes(cold, plan, n_rounds=rounds)
    else:  # a CPU device: its read rate past its caches, each shape's floor derived from the fastest (probes' doc)
        cold = sess.timer("cold")
        sizes = probes.cpu_read_sizes(cold.l2_bytes, cpu_cache_bytes(3), _memory_bytes())
        read = probes.run_read_probes(cold, [(b, probes.CPU_READ_LABEL) for b in sizes], n_rounds=CPU_READ_ROUNDS)
        read += probes.cpu_floors(read, shape_bytes_by_key)
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
