"""One run: probes, then per shape: correctness of every candidate, paired timing of the correct ones, records.

    run_sweep(specs, shapes, out_path, *, label, settings=SweepSettings(), device="cuda", progress=None,
              log=print, measure_shapes=True, worker_init=None, cluster=None, workload=None) -> dict (the run)

`workload`: the datasets.workload.Workload the shapes come from (None: the default, muse_bf16_proj). It is
embedded in the run file (top-level "workload") and sent with every task, so the worker loads plans and takes the
contract's numbers from it, never from its own default.

`specs`: candidate specs (kernels.candidate: plan name, plan .json, module .py, file.py:Class,
method:NAME:{config}); the first is the baseline of every pair. Repeated names get "#2", "#3".
`shapes`: dicts with load, family, M, N, K, x_dtype, w_dtype, y_dtype, rel_l2_tol (select_shapes()).

This process only orchestrates: every candidate is loaded, prepared, checked and timed in a worker process
(profiler.worker), one shape per task. When the worker dies or hangs, the candidate it was running gets a failure
record with the cause, and the shape is measured again in a fresh worker without it; a candidate that took a
worker down at `max_incidents` shapes is not run at the remaining ones. The run file is flushed after probes and
after every shape (status "partial"); finalized "complete" at the end. Ctrl-C leaves a valid partial file and
re-raises KeyboardInterrupt.

In the worker, measure_one_shape() is the unit of work: a candidate that fails its checks is not timed there;
before the timed part, persisting L2 is reset (no candidate can pin its weights across the flush).
"""
from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Callable, Sequence

import numpy as np

from datasets.shapes import DTYPE_BYTES, shape_bytes  # noqa: F401  (re-exported: one place for shape facts)
from datasets.shapes import shape_key_of as shape_key
from profiler import stats

STREAM_MIN_CALLS = 24          # stream mode: at least this many calls per replay
STREAM_L2_MULTIPLE = 3         # stream mode: rotated copies total >= 3 x L2 (a served decode step's cold L2)
MIN_CLOCK_FRACTION = 0.75      # samples below 75% of the max SM clock are dropped (clock-throttled batches)
TIMING_SEED_OFFSET = 300       # timing inputs: seed + 300 + instance (never one of the check's inputs)
PROBE_TIMEOUT_S = 900.0        # the probe task (harness code only): ~12 s on the H200, generous
INCIDENT_KINDS = ("died", "timeout", "cuda_fault", "exit", "tainted")  # a worker was lost to the candidate
WORKER_IDENTITY = ("hostname", "gpu", "gpu_uuid", "pci_bus_id")  # environment.workers[]: where each process timed


class SweepInputError(ValueError):
    """A candidate spec that cannot be used (broken module, unknown plan); the message names it."""


class WorkerStartError(RuntimeError):
    """A worker process could not start (no CUDA, a broken install): nothing can be measured."""


@dataclass
class SweepSettings:
    mode: str = "cold"                  # "cold" | "stream"
    shapes: str = "official"            # which set the shapes came from (recorded only)
    max_seconds_per_shape: float = 2.0
    rse_target: float = 0.005
    min_pairs: int = 30
    warmup_seconds: float = 0.05
    batch_rounds: int = 32
    instances: int = 3                  # cold mode: graphs per candidate, separately allocated, rotated
    seed: int = 0
    probes: bool = True
    probe_rounds: int = 24
    flush_bytes: int | None = None
    command: str = ""
    candidates: list = field(default_factory=list)
    shape_timeout_s: float = 120.0      # watchdog: a step of a shape (one candidate's load/prepare/check/capture,
                                        # or the shape's timing) that makes no progress for this long is stopped
    max_incidents: int = 2              # a candidate whose worker died/hung at this many shapes skips the rest
    check: str = "full"                 # "full" lifecycle contract | "quick" (one eager call: a tuner's screen)

    @classmethod
    def from_dict(cls, data: dict) -> "SweepSettings":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def select_shapes(selection: str, workload=None) -> list[dict]:
    """The shape rows a --shapes selection names (datasets.select_shapes: 'official', 'nearby', 'all',
    'qkv_gate:1,64', 'M=3,17', parts joined by '+'); ShapeSelectionError (a ValueError) names a bad one."""
    from datasets import load_workload
    from datasets.selection import select_shapes as select

    return select(selection, workload or load_workload())


def unique_names(candidates) -> list[str]:
    """Names in order, repeated ones suffixed "#2", "#3"; takes names or objects with a .name."""
    names, seen = [], {}
    for c in candidates:
        base = c if isinstance(c, str) else str(getattr(c, "name", type(c).__name__))
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def _finite(v):
    return float(v) if v is not None and math.isfinite(v) else None


def _flags(median_us, lo, hi, floor: dict | None, dropped, vs_baseline=None, error_factor=None) -> list[str]:
    """below_floor: under the probe floor by more than the probe's noise (its CI low, or its median where the
    probe has no CI); throttled; wide_ci; less_accurate: error > error_factor x the baseline's."""
    flags = []
    if floor is not None:
        bound = floor.get("ci_low_us") if floor.get("ci_low_us") is not None else floor.get("us")
        if bound is not None and median_us < bound:
            flags.append("below_floor")
    if dropped:
        flags.append("throttled")
    if stats.ci_too_wide(median_us, lo if lo is not None else float("nan"), hi if hi is not None else float("nan")):
        flags.append("wide_ci")
    if error_factor is not None and vs_baseline is not None and vs_baseline > error_factor:
        flags.append("less_accurate")
    return flags


def failure_record(shape: dict, candidate: str, kind: str, phase: str, reasons: list[str], **extra) -> dict:
    """A run file `failures` record (profiler/README.md)."""
    base = {k: shape[k] for k in ("load", "family")} | {k: int(shape[k]) for k in ("M", "N", "K")}
    return base | {"candidate": candidate, "kind": kind, "phase": phase,
                   "reasons": [str(r)[:600] for r in reasons]} | extra


# =================================================================================== in the worker process

def _check_options(check: str) -> dict:
    if check == "quick":
        return {"n_calls": 1, "use_graph": False, "outliers": False}
    if check != "full":
        raise ValueError(f"settings.check must be 'full' or 'quick', not {check!r}")
    return {}


def _capture(sess, timer, fn, what: str) -> tuple[object, list[str]]:
    """Capture fn with the timer, guarded like a candidate step -> (handle, []) or (None, reasons)."""
    from profiler.contract import capture_checked

    from profiler.worker import Fatal, _CURRENT

    handle, reasons = None, []
    try:
        handle, why = capture_checked(fn, timer.capture)
        reasons = [why] if why else []
    except SystemExit as exc:
        reasons = [f"{what}: run() called sys.exit({exc.code!r})"]
    if reasons and sess.healthy() is not None:
        raise Fatal("cuda_fault", f"{what}: {reasons[0]} (the CUDA context is unusable afterwards: "
                                  f"{sess.healthy()})", _CURRENT["candidate"], _CURRENT["phase"])
    reasons += sess.guard_check(what)
    return (None if reasons else handle), reasons


def _timing_input(shape, settings, device, instance: int):
    from profiler.rules import make_input

    return make_input(int(shape["M"]), int(shape["K"]), settings.seed + TIMING_SEED_OFFSET + instance, device,
                      dtype=shape["x_dtype"])[0]  # vary=False: unscaled, one-hot rows only


def _cold_instances(sess, timer, cand, state, shape, settings, check_graph) -> tuple[list, list[str]]:
    """settings.instances graphs of the candidate, each on its own timing input; the first is the graph the
    check replayed (its static input gets a timing input copied in)."""
    family, instances = shape["family"], []
    for k in range(settings.instances):
        x = _timing_input(shape, settings, sess.device, k)
        if k == 0 and check_graph is not None:
            check_graph.keep.copy_(x)
            instances.append(check_graph)
            continue
        handle, reasons = _capture(sess, timer, lambda x=x: cand.run(state, family, x), "timing capture")
        if reasons:
            return [], reasons
        handle.keep = x
        instances.append(handle)
    return instances, []


def _stream_graphs(sess, timer, cands, shape, weight, settings) -> tuple[list, dict]:
    """Per candidate one graph of R calls rotating through copies of weights+input totalling >= 3 x L2.
    -> (graphs of the candidates that captured, {index: reasons} of those that did not)."""
    from profiler.rules import make_input
    from profiler.worker import step

    n_copies = max(1, math.ceil(STREAM_L2_MULTIPLE * timer.l2_bytes / shape_bytes(shape)))
    reps = max(1, math.ceil(STREAM_MIN_CALLS / n_copies))
    fam, M, K = shape["family"], int(shape["M"]), int(shape["K"])
    weights = [weight] + [weight.clone() for _ in range(n_copies - 1)]
    xs = [make_input(M, K, settings.seed + 500 + c, sess.device, dtype=shape["x_dtype"], sparse=False)[0]
          for c in range(n_copies)]
    graphs, failed = [], {}
    for i, (name, cand) in enumerate(cands):
        step(name, "capture")
        try:
            states = [cand.prepare(fam, w) for w in weights]
        except Exception as exc:
            failed[i] = [f"stream mode: prepare() raised {type(exc).__name__}: {exc}"[:300]]
            continue
        fns = [(lambda s=s, x=x: cand.run(s, fam, x)) for s, x in zip(states, xs)] * reps
        handle, reasons = _capture(sess, timer, fns, "stream capture")
        if reasons:
            failed[i] = reasons
            continue
        handle.keep = (states, xs, weights)
        graphs.append(handle)
    return graphs, failed


def _assert_healthy(sess, name: str, phase: str, reasons: list[str]) -> None:
    """After a failed step on CUDA: when the context is dead (a sticky fault), this worker must end."""
    from profiler.worker import Fatal

    why = sess.healthy()
    if why is not None:
        cause = "; ".join(reasons)[:400] or why
        raise Fatal("cuda_fault", f"{cause} (the CUDA context is unusable afterwards: {why})", name, phase)


def _error_record(chk) -> dict:
    return {k: (_finite(v) if isinstance(v, float) else v) for k, v in chk.to_dict().items()}


def measure_one_shape(sess, task: dict) -> dict:
    """The shape task (profiler.worker): check every candidate, time the correct ones together -> result."""
    from profiler.contract import CudaFault, check_candidate
    from profiler.guards import PERSISTING_L2_SETTING, TaintedProcess, persisting_l2_limit, reset_persisting_l2
    from profiler.rules import default_contract, error_vs_baseline
    from profiler.worker import Fatal, step

    shape, settings = task["shape"], SweepSettings.from_dict(task.get("settings", {}))
    cands = [(c["name"], c["spec"]) for c in task["candidates"]]
    contract = sess.workload.contract if sess.workload is not None else default_contract()
    timer = sess.timer(settings.mode)
    weight = sess.weight(shape, settings.seed)
    failures, checks, instances, timed, loaded = [], [], [], [], []
    base_rel = None
    for j, (name, spec) in enumerate(cands):
        cand = sess.load(spec, name)
        if cand is None:
            err = sess.load_errors[spec]
            failures.append(failure_record(shape, name, "load", "load", [err["error"]]))
            continue
        state, reasons = sess.state(spec, name, cand, shape, weight, settings.seed)
        if reasons:
            _assert_healthy(sess, name, "prepare", reasons)
            failures.append(failure_record(shape, name, "incorrect", "prepare", reasons))
            continue
        step(name, "check")
        try:
            chk = check_candidate(cand, shape, sess.device, seed=settings.seed, contract=contract, weight=weight,
                                  state=state, baseline_rel_l2=base_rel, keep_graph=settings.mode == "cold",
                                  guard=sess.guard, **_check_options(settings.check))
        except CudaFault as exc:
            raise Fatal("cuda_fault", str(exc), name, "check") from None
        except TaintedProcess as exc:
            raise Fatal("tainted", str(exc), name, "check") from None
        if j == 0:
            base_rel = chk.rel_l2
            chk.vs_baseline = error_vs_baseline(chk.rel_l2, base_rel)  # 1.0, or None for a NaN/absent error
        if not chk.ok:
            _assert_healthy(sess, name, "check", chk.reasons)
            failures.append(failure_record(shape, name, "incorrect", "check", chk.reasons,
                                           error=_error_record(chk)))
            continue
        if settings.mode == "cold":
            step(name, "capture")
            insts, reasons = _cold_instances(sess, timer, cand, state, shape, settings, chk.graph)
            if reasons:
                _assert_healthy(sess, name, "capture", reasons)
                failures.append(failure_record(shape, name, "not_timed", "capture", reasons,
                                               error=_error_record(chk)))
                continue
            instances.append(insts)
        chk.graph = None
        checks.append(chk)
        timed.append(j)
        loaded.append((name, cand))
    if settings.mode == "stream" and timed:
        graphs, failed = _stream_graphs(sess, timer, loaded, shape, weight, settings)
        failures += [failure_record(shape, loaded[i][0], "not_timed", "capture", failed[i]) for i in sorted(failed)]
        keep = [i for i in range(len(loaded)) if i not in failed]
        timed, checks, loaded = [timed[i] for i in keep], [checks[i] for i in keep], [loaded[i] for i in keep]
        instances = graphs
    out = {"kind": "shape", "key": shape_key(shape), "results": [], "pairs": [], "failures": failures, "info": {}}
    if instances:
        step(None, "time")
        l2 = reset_persisting_l2(sess.device) if sess.cuda else "not a CUDA device"
        if sess.cuda:  # the harness's own change: the guard holds candidates to the value it leaves
            sess.guard.harness_set(PERSISTING_L2_SETTING, persisting_l2_limit())
        ms = _measure(sess, timer, instances, settings)
        out["info"] = {"stopped_by": ms.stopped_by, "elapsed_s": round(ms.elapsed_s, 3),
                       "dropped_rounds": ms.dropped_rounds, "persisting_l2_reset": l2,
                       "instances": max(len(g) if isinstance(g, list) else 1 for g in instances),
                       "clocks_mhz": [c for c in ms.clocks_mhz if c is not None]}
        names = [cands[j][0] for j in timed]
        out["results"], bad = _results(shape, names, [c for _, c in loaded], checks, ms, task.get("floor"),
                                       settings, contract)
        out["failures"] += bad
        out["pairs"] = _pairs(shape, names, ms, settings, have={r["candidate"] for r in out["results"]},
                              baseline=cands[0][0] if timed and timed[0] == 0 else None)
    out["telemetry"] = sess.telemetry.sample()
    return out


def _measure(sess, timer, instances, settings):
    from profiler import timing

    tel = sess.telemetry
    max_mhz = tel.max_sm_mhz() if tel.available else None
    return timing.measure_shape(instances, timer, min_pairs=settings.min_pairs, rse_target=settings.rse_target,
                                max_seconds=settings.max_seconds_per_shape, warmup_seconds=settings.warmup_seconds,
                                batch_rounds=settings.batch_rounds, clock=tel.sm_mhz if tel.available else None,
                                min_clock_mhz=MIN_CLOCK_FRACTION * max_mhz if max_mhz else None)


def _results(shape, names, cands, checks, ms, floor, settings, contract) -> tuple[list[dict], list[dict]]:
    """Result records of the timed candidates, and failures for those whose samples are unusable."""
    base = {k: shape[k] for k in ("load", "family")} | {k: int(shape[k]) for k in ("M", "N", "K")}
    results, failures = [], []
    for col, (name, cand, chk) in enumerate(zip(names, cands, checks)):
        s = ms.samples_us[:, col] if len(ms.samples_us) else np.empty(0)
        summ = stats.summarize_samples(s, seed=settings.seed)
        med = summ["median_us"]
        if not (len(s) and np.isfinite(s).all() and (s > 0).all() and math.isfinite(med)):
            failures.append(failure_record(shape, name, "not_timed", "time", [
                f"no usable timing: {int(np.sum(~(s > 0)))} of {len(s)} samples <= 0 us or not finite after "
                f"subtracting the replay overhead (dropped rounds {ms.dropped_rounds})"], error=_error_record(chk)))
            continue
        lo, hi = _finite(summ["ci_low_us"]), _finite(summ["ci_high_us"])
        results.append(base | {
            "candidate": name, "method": str(cand.describe(shape["family"], int(shape["M"]))),
            "median_us": med, "ci_low_us": lo, "ci_high_us": hi, "samples_us": [round(float(v), 4) for v in s],
            "n_samples": int(s.size), "correct": True, "error": _error_record(chk),
            "flags": _flags(med, lo, hi, floor, ms.dropped_rounds, chk.vs_baseline,
                            float(contract["vs_baseline_flag_factor"])),
            "throttled_samples": int(ms.dropped_rounds), "floor_us": (floor or {}).get("us"),
            "bytes": shape_bytes(shape), "stopped_by": ms.stopped_by})
    return results, failures


def _pairs(shape, names, ms, settings, have: set, baseline: str | None) -> list[dict]:
    base = {k: shape[k] for k in ("load", "family")} | {k: int(shape[k]) for k in ("M", "N", "K")}
    if baseline is None or baseline not in have:
        return []
    pairs = []
    for col, name in enumerate(names):
        if col == 0 or name not in have:
            continue
        p = stats.summarize_pairs(ms.samples_us[:, 0], ms.samples_us[:, col], seed=settings.seed)
        if not (math.isfinite(p["ratio_median"]) and p["ratio_median"] > 0):
            continue
        pairs.append(base | {"baseline": baseline, "candidate": name, "ratio_median": p["ratio_median"],
                             "ratio_ci_low": _finite(p["ratio_ci_low"]), "ratio_ci_high": _finite(p["ratio_ci_high"]),
                             "rse": _finite(p["rse"]), "n_pairs": p["n_pairs"],
                             "ratios": [round(v, 6) for v in p["ratios"]]})
    return pairs


def measure_probes(sess, shape_bytes_by_key: dict, rounds: int) -> dict:
    """The probe task: HBM read probes at the run's shape sizes, the write-up's and a log sweep; compute probe."""
    from datasets import load_seed_probes
    from profiler import probes

    t0 = time.perf_counter()
    seed_probes = load_seed_probes()
    plan = probes.probe_plan(shape_bytes_by_key, zip(seed_probes["label"], seed_probes["bytes"]),
                             probes.log_sweep_bytes())
    cold = sess.timer("cold")
    read = probes.run_read_probes(cold, plan, n_rounds=rounds)
    compute = probes.run_compute_probe(cold)
    return {"probes": read, "compute_probe": compute, "seconds": round(time.perf_counter() - t0, 2)}


# =================================================================================== in the parent process

def _floor_lookup(probe_records: list[dict]) -> dict[int, dict]:
    return {int(p["bytes"]): {"us": float(p["us"]), "ci_low_us": p.get("ci_low_us"), "ci_high_us": p.get("ci_high_us")}
            for p in probe_records if p.get("kind", "read") == "read"}


class WorkerPool:
    """The parent's worker, respawned after a death, with the record of every process it started.

    WorkerPool({"device": "cuda", "mode": "cold", "flush_bytes": None, "init": None}, log).call(task, timeout_s,
    what) -> result (profiler.worker task kinds); measure_shape_isolated() adds the retry-without-the-culprit loop."""

    def __init__(self, config: dict, log):
        from profiler.worker import Worker

        self.worker = Worker(config, log=log)
        self.records: list[dict] = []
        self.log = log

    def call(self, task: dict, timeout_s: float, what: str) -> dict:
        from profiler.worker import WorkerDied

        if not self.worker.alive:
            try:
                env = self.worker.start()
            except WorkerDied as exc:
                raise WorkerStartError(f"the worker process could not start ({exc.kind}): {exc.message}") from None
            self.records.append({"index": len(self.records), "started_for": what,
                                 "replay_overhead_us": env.get("replay_overhead_us"),
                                 "replay_overhead_ci_us": env.get("replay_overhead_ci_us"), "ended": "running"}
                                | {k: env[k] for k in WORKER_IDENTITY if env.get(k) is not None})
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


def _load_all(workers: WorkerPool, specs: list[str], timeout_s: float,
              workload: dict | None = None) -> tuple[list[dict], dict[str, str]]:
    """Load every spec in the worker -> (loaded records in spec order, {spec: refusal reason}). A spec whose
    module took the worker down is refused with the cause; a broken spec raises SweepInputError."""
    from profiler.worker import WorkerDied

    refused, pending = {}, list(specs)
    while True:
        try:
            loaded = workers.call({"kind": "load", "specs": pending, "workload": workload}, timeout_s,
                                  "load")["loaded"]
            break
        except WorkerDied as exc:
            workers.died(str(exc))
            culprit = exc.candidate if exc.candidate in pending else pending[0]
            refused[culprit] = f"the worker died while loading it: {exc.message}"
            pending = [s for s in pending if s != culprit]
    broken = [r for r in loaded if r["error"] and not r["refused"]]
    if broken:
        raise SweepInputError("; ".join(f"cannot load candidate {r['spec']!r}: {r['error']}" for r in broken))
    for r in loaded:
        if r["refused"]:
            refused[r["spec"]] = f"refused at load: {r['error']}"
    by_spec = {r["spec"]: r for r in loaded}
    return [by_spec.get(s, {"spec": s, "name": None}) for s in specs], refused


def _names(loaded: list[dict]) -> list[str]:
    from pathlib import Path

    raw = [r["name"] or Path(r["spec"].split(":")[0]).stem or r["spec"] for r in loaded]
    return unique_names(raw)


def measure_shape_isolated(workers: WorkerPool, shape: dict, live: list[dict], task_base: dict, settings,
                           incidents: dict, log) -> dict:
    """One shape in the worker, again in a fresh one without the candidate that took it down -> merged
    {"results", "pairs", "failures", "info", "telemetry"}. `live`: [{"spec", "name"}] (the first is the baseline of
    the pairs); task_base: {"kind": "shape", "settings": asdict(settings), "floor": ...}; `incidents` counts the
    workers each candidate took down (updated here). The tuner can call this with method specs."""
    from profiler.worker import WorkerDied, WorkerError

    merged = {"results": [], "pairs": [], "failures": [], "info": {}, "telemetry": None}
    while live:
        task = task_base | {"shape": shape, "candidates": live}
        try:
            res = workers.call(task, settings.shape_timeout_s, shape_key(shape))
        except WorkerDied as exc:
            workers.died(f"{exc.kind}: {exc.message}")
            names = [c["name"] for c in live]
            culprits = [exc.candidate] if exc.candidate in names else names  # timing/harness phase: all of them
            what = ("during paired timing of all candidates" if exc.phase == "time" else f"in {exc.phase}")
            for name in culprits:
                merged["failures"].append(failure_record(shape, name, exc.kind, exc.phase or "unknown",
                                                         [f"worker {exc.kind} {what}: {exc.message}"],
                                                         worker=workers.index))
                incidents[name] = incidents.get(name, 0) + 1
            live = [c for c in live if c["name"] not in culprits]
            continue
        except WorkerError as exc:
            log(f"{shape_key(shape)}: harness error in the worker: {exc}")
            merged["failures"] += [failure_record(shape, c["name"], "error", "harness", [f"harness error: {exc}"])
                                   for c in live]
            break
        for key in ("results", "pairs", "failures"):
            merged[key] += [r | {"worker": workers.index} for r in res[key]]
        merged["info"], merged["telemetry"] = res["info"], res.get("telemetry")
        break
    merged["worker"] = workers.index  # the process that measured the shape last (a per-shape reference)
    return merged


def environment_task(pool: WorkerPool) -> dict:
    """The worker's environment (gpu, versions, replay overhead); starts it."""
    return pool.call({"kind": "environment"}, PROBE_TIMEOUT_S, "start")["environment"]


def load_task(pool: WorkerPool, specs: list[str], timeout_s: float,
              workload: dict | None = None) -> tuple[list[dict], dict[str, str]]:
    """Load every spec in the worker; `workload`: the workload's JSON object (Workload.to_dict; None: the
    default), which plans are validated against there."""
    return _load_all(pool, specs, timeout_s, workload)


def record_probes(backend, run: dict, shapes: Sequence[dict], rounds: int, writer) -> float:
    """Run the HBM read and compute probes at the shapes' byte counts on `backend` (local or cluster), put them in
    `run` and write it; returns the probes' seconds. One place for run and explain."""
    res = backend.call(probes_task, {"kind": "probes", "rounds": rounds,
                                     "shape_bytes": {shape_key(s): shape_bytes(s) for s in shapes}})
    run["probes"], run["compute_probe"] = res["probes"], res["compute_probe"]
    run["compute_peak_tflops"] = res["compute_probe"]["tflops"]
    run["environment"]["probe_seconds"] = res["seconds"]
    writer.flush(run)
    return res["seconds"]


def probes_task(pool: WorkerPool, task: dict) -> dict:
    return pool.call(task, PROBE_TIMEOUT_S, "probes")


def shape_task(pool: WorkerPool, shape: dict, live: list[dict], task_base: dict, settings) -> dict:
    """measure_shape_isolated as a self-contained task: the merged result plus "incidents", the workers each
    candidate took down here (the caller keeps the count across shapes)."""
    incidents: dict[str, int] = {}
    merged = measure_shape_isolated(pool, shape, live, task_base, settings, incidents, pool.log)
    return merged | {"incidents": incidents}


class LocalBackend:
    """Where the default sweep runs its tasks: this host's one worker process (WorkerPool), one task at a time.
    `call(fn, *args)` runs fn(pool, *args) here (fn: environment_task, load_task, probes_task, shape_task, ...).
    profiler.cluster.ClusterGroup has the same methods and runs fn on a dask worker of one GPU model, with that
    worker's own pool."""

    parallel = 1

    def __init__(self, config: dict, log):
        self.pool = WorkerPool(config, log)

    def call(self, fn: Callable, *args, pin: str | None = None):
        return fn(self.pool, *args)

    def records(self) -> list[dict]:
        return self.pool.records

    def detail(self) -> str | None:
        return None

    def cancel(self) -> None:
        pass

    def close(self, force: bool = False) -> None:
        self.pool.close(force)


def run_sweep(specs: Sequence[str], shapes: Sequence[dict], out_path, *, label: str,
              settings: SweepSettings | None = None, device="cuda", progress: Callable | None = None,
              log: Callable[[str], None] = print, measure_shapes: bool = True, worker_init: str | None = None,
              cluster: str | None = None, workload=None) -> dict:
    """Probes, then every shape, all in a worker process; returns the run dict (also written to out_path).
    measure_shapes=False: probes only (`python -m profiler probe`); the shapes only give byte counts.
    worker_init: 'file.py:function' run in every worker before its first task (tests: a fake timer).
    cluster: a dask scheduler address or "local" / "local:N" (profiler.cluster.run_sweep_cluster; one run file
    per GPU model, the returned run is the first model's); None: this host's one worker (dask never imported)."""
    from kernels.candidate import resolve_spec

    if workload is None:
        from datasets import load_workload

        workload = load_workload()
    settings = settings or SweepSettings()
    given = [str(s) for s in specs]
    resolved = [resolve_spec(s) for s in given]  # the worker runs in the repository root: file paths made absolute
    config = {"device": str(device), "mode": settings.mode, "flush_bytes": settings.flush_bytes, "init": worker_init}
    if cluster is not None:
        from profiler.cluster import run_sweep_cluster

        runs = run_sweep_cluster(cluster, resolved, given, shapes, out_path, label=label, settings=settings,
                                 config=config, progress=progress, log=log, measure_shapes=measure_shapes,
                                 workload=workload)
        return next(iter(runs.values()))
    from profiler.runfile import RunWriter

    writer = RunWriter(out_path)  # refuses an existing file before any work
    return sweep_on(LocalBackend(config, log), resolved, given, shapes, writer, label=label, settings=settings,
                    progress=progress, log=log, measure_shapes=measure_shapes, workload=workload)


def live_candidates(shape: dict, candidates: list[dict], refused: dict, incidents: dict,
                    settings: SweepSettings) -> tuple[list[dict], list[dict]]:
    """(candidates to run at this shape, failure records of those that will not: refused at load, or past
    max_incidents)."""
    live, skipped = [], []
    for c in candidates:
        if c["spec"] in refused:
            skipped.append(failure_record(shape, c["name"], "load", "load", [refused[c["spec"]]]))
        elif incidents.get(c["name"], 0) >= settings.max_incidents:
            skipped.append(failure_record(shape, c["name"], "skipped", "none", [
                f"not run: its worker died or hung at {incidents[c['name']]} shapes already "
                f"(max_incidents {settings.max_incidents})"]))
        else:
            live.append(c)
    return live, skipped


def _shape_records(run: dict, done: dict, shapes: Sequence[dict]) -> None:
    """Rebuild results, pairs, failures, shape_info and per-shape telemetry from the finished shapes, in shape
    order (tasks may finish in any order on several workers; the file reads the same as a one-worker run's)."""
    run["results"], run["pairs"], run["failures"], run["shape_info"], telemetry = [], [], [], {}, []
    for i in sorted(done):
        merged, skipped = done[i]
        run["results"] += merged["results"]
        run["pairs"] += merged["pairs"]
        run["failures"] += skipped + merged["failures"]
        run["shape_info"][shape_key(shapes[i])] = merged["info"] | (
            {"worker": merged["worker"]} if merged.get("worker") is not None else {})
        if merged["telemetry"]:
            telemetry.append(merged["telemetry"])
    run["telemetry"] = telemetry


def sweep_on(backend, specs: list[str], given: list[str], shapes: Sequence[dict], writer, *, label: str,
             settings: SweepSettings, progress: Callable | None = None, log: Callable[[str], None] = print,
             measure_shapes: bool = True, workload=None) -> dict:
    """One run file's sweep on `backend` (LocalBackend, or the dask workers of one GPU model): load check,
    probes, then the shapes -- `backend.parallel` at a time, each one task -- flushed as each finishes.
    `workload` (None: the default) is embedded in the run and sent with the load and shape tasks."""
    from profiler.runfile import new_run

    if workload is None:
        from datasets import load_workload

        workload = load_workload()
    wl_spec = workload.to_dict()

    t_start = time.perf_counter()
    run = None
    try:
        env = dict(backend.call(environment_task))
        loaded, refused = (backend.call(load_task, specs, settings.shape_timeout_s, wl_spec) if specs else ([], {}))
        names = _names(loaded)
        settings.candidates = names
        env["settings"] = asdict(settings) | {"flush_bytes": env.pop("flush_bytes", settings.flush_bytes),
                                              "allow_tf32": False, "min_clock_fraction": MIN_CLOCK_FRACTION,
                                              "specs": given}
        env["workers"] = backend.records()
        ci = env.get("replay_overhead_ci_us", [0, 0])
        log(f"replay overhead {env.get('replay_overhead_us', 0):.2f} us (95% CI {ci[0]:.2f}-{ci[1]:.2f}); "
            f"flush reads {(env['settings']['flush_bytes'] or 0) / 1e6:.0f} MB; candidates run in a worker process")
        run = new_run(label, env, workload=workload)
        run["failures"], run["shape_info"] = [], {}
        if settings.probes:
            record_probes(backend, run, shapes, settings.probe_rounds, writer)
            if progress:
                progress("probes", 1, 1)
        floors = _floor_lookup(run["probes"])
        candidates = [{"spec": s, "name": n} for s, n in zip(specs, names)]
        incidents: dict[str, int] = {}
        counting = threading.Lock()   # shapes may run in several threads (a cluster backend)
        task_base = {"kind": "shape", "settings": asdict(settings), "workload": wl_spec}
        t_shapes = time.perf_counter()
        done: dict[int, tuple[dict, list]] = {}

        def measure(i: int) -> tuple[dict, list]:
            with counting:
                live, skipped = live_candidates(shapes[i], candidates, refused, incidents, settings)
            merged = backend.call(shape_task, shapes[i], live,
                                  task_base | {"floor": floors.get(shape_bytes(shapes[i]))}, settings)
            with counting:
                for name, n in merged.pop("incidents").items():
                    incidents[name] = incidents.get(name, 0) + n
            return merged, skipped

        def finished(i: int, outcome: tuple[dict, list]) -> None:
            done[i] = outcome
            _shape_records(run, done, shapes)
            run["environment"]["workers"] = backend.records()
            writer.flush(run)
            if progress:
                detail = backend.detail()   # per-worker counts on a cluster; the app's progress takes 3 arguments
                progress("shapes", len(done), len(shapes), **({"detail": detail} if detail is not None else {}))

        for_each(range(len(shapes)) if measure_shapes else [], measure, finished, backend.parallel, backend.cancel)
        env = run["environment"]
        env["sweep_seconds"] = round(time.perf_counter() - t_shapes, 2)
        env["wall_seconds"] = round(time.perf_counter() - t_start, 2)
        if run["telemetry"]:
            env.setdefault("clocks", {})["sm_mhz_end"] = run["telemetry"][-1].get("sm_mhz")
        backend.close()
        env["workers"] = backend.records()
        writer.finalize(run)
        run["status"] = "complete"
    except KeyboardInterrupt:
        backend.cancel()
        backend.close(force=True)
        if run is not None:
            run["environment"]["wall_seconds"] = round(time.perf_counter() - t_start, 2)
            run["environment"]["workers"] = backend.records()
            run["interrupted"] = True
            writer.flush(run)
            print(f"\ninterrupted: partial run kept in {writer.path}", file=sys.stderr)
        raise
    finally:
        backend.close()
    return run


def for_each(items, work: Callable, finished: Callable, parallel: int = 1, cancel: Callable = lambda: None) -> None:
    """finished(item, work(item)) for every item: in order in this thread (parallel 1), or `parallel` at a time in
    threads, each finished() called here as its work ends. Ctrl-C (or an error) cancels what is still queued
    (`cancel` stops the tasks already running elsewhere) and is raised once the threads have returned."""
    items = list(items)
    if parallel <= 1:
        for item in items:
            finished(item, work(item))
        return
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

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
