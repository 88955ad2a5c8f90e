"""The step task's body, in the worker process: one whole decode step (profiler/worker/step_model.py) at one
(batch, context) point, its projections from each candidate, checked and timed together.

    measure_step(sess, task) -> {"kind": "step", "point": {...}, "candidates": [...], "pairs": [...],
                                 "failures": [...]}
    task: {"kind": "step", "workload": {...}, "batch": B, "context": T, "candidates": [{"spec", "name"}, ...],
           "settings": {"layers", "seed", "max_seconds", "trace"}}      the first candidate is the baseline

Per candidate, in this order (each announced with step(), so a death is blamed on the candidate and phase):
  prepare  every layer's projections, each from the candidate's own copy of the weights (guarded as in a shape task)
  check    the step run eagerly on the first input, then captured (one CUDA graph of the whole step; on a CPU device
           the eager stand-in) and the graph replayed on every input of the pool, each output judged by the step rule
  time     all passing candidates together, cold (the L2 flushed before every replay: ColdTimer) and warm (no flush,
           back to back: StreamTimer), by profiler.measure.timing.measure_shape -- the shapes' paired, alternating
           rounds and stopping rule; every timed replay reads the pool's next input (the graph's feed), every 4th
           batch's outputs are judged on the input they read, and every graph once more after timing
  breakdown  where the step's time goes by segment class (each projection family, attention, norms and activations,
           the rest): on CUDA from a Kineto trace of the step graph captured again with a marker kernel before each
           segment (profiler.measure.kineto), on a CPU device from the wall clock around each segment of eager runs

THE STEP RULE (the contract's, applied to the step as one operation): the reference is the same step code with every
projection replaced by the contract's reference, the FP64 product rounded to the output dtype (StepModel.reference:
same weights, cache and input), so a correct candidate differs from it only where its projections differ from their
contract references; the output's relative L2 error against it must be at most the largest rel_l2_tol of the layer's
projection families, and so must its distance from the baseline's step on the same input (error.vs_baseline_step);
a correct candidate whose error is over vs_baseline_flag_factor x the baseline's is flagged less_accurate. A
non-finite output fails. The baseline must pass for any candidate to be timed beside it.
Measured on CPU at Llama-3.1-8B's sizes (2 layers, batch 2, context 64): F.linear's step is 0.27 % from the
reference, a step whose projections are 2 % too large 4.9 % (tests/profiler/test_step.py checks a wrong one fails).
"""
from __future__ import annotations

import json
import math
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from datasets.layer_spec import layer_of
from profiler.check.contract import WEIGHT_MODIFIED, capture_checked
from profiler.check.rules import error_vs_baseline
from profiler.measure import kineto, stats, timing
from profiler.measure.policy import SWEEP
from profiler.worker.records import finite
from profiler.worker.steps import Fatal, current, step
from profiler.worker.step_model import NON_PROJECTION, SEGMENT_CLASS, StepModel

MODES = ("cold", "warm")
INPUT_POOL = 4            # distinct step inputs every graph's replays cycle through (as the shapes' input pool does)
JUDGE_EVERY_BATCHES = 4   # every 4th timed batch's graphs are judged on the input their last replay read
BREAKDOWN_REPLAYS = 3     # marked-graph replays traced (CUDA); the median per class
CPU_BREAKDOWN_RUNS = 7    # eager steps clocked per segment on a CPU device (a shared CPU's spikes: the median)
MARKER_CYCLES = 1         # the marker kernel (torch.cuda._sleep) spins ~nothing: only its launch shows in the trace
MARKER_KERNEL = "spin_kernel"   # torch.cuda._sleep's kernel name


@dataclass
class _Entry:
    name: str
    cand: Any
    states: list
    x: Any = None                  # the graph's static input
    handle: Any = None
    feed: Any = None
    eager: Any = None              # the eager step's output on the first input (compared with the baseline's)
    error: dict = field(default_factory=dict)
    reasons: list = field(default_factory=list)


class _Feed:
    """Before each timed replay: the pool's next input into the graph's static input (outside the timed interval)."""

    def __init__(self, x, inputs):
        self.x, self.inputs, self.last = x, inputs, 0

    def __call__(self) -> None:
        self.last = (self.last + 1) % len(self.inputs)
        self.x.copy_(self.inputs[self.last])


def rel_l2(y, ref) -> float:
    """||y - ref|| / ||ref|| in FP64; inf where y is not finite or has another shape."""
    if tuple(y.shape) != tuple(ref.shape):
        return math.inf
    yd, refd = y.double(), ref.double()
    if not bool(yd.isfinite().all()):
        return math.inf
    return float((yd - refd).norm() / refd.norm().clamp_min(1e-300))


def step_tolerance(workload, layer) -> float:
    """The step rule's tolerance: the largest rel_l2_tol of the layer's projection families (module docstring)."""
    return max(float(workload.family(layer.family(role))["rel_l2_tol"]) for role in ("qkv", "o", "gate_up", "down"))


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def _healthy_or_fatal(sess, name: str, phase: str, why: str) -> None:
    lost = sess.healthy()
    if lost is not None:
        raise Fatal("cuda_fault", f"{why} (the CUDA context is unusable afterwards: {lost})", name, phase)


def _sync(sess) -> None:
    if sess.cuda:
        import torch

        torch.cuda.synchronize(sess.device)


def _prepare(sess, entry: _Entry, model: StepModel) -> None:
    """Every layer's projection states, each prepared on the candidate's own copy of that weight."""
    import torch

    step(entry.name, "prepare")
    for l, per in enumerate(model.weights):
        states = {}
        for role, weight in per.items():
            own = weight.clone()
            try:
                states[role] = entry.cand.prepare(model.families[role], own)
                _sync(sess)
            except SystemExit as exc:
                entry.reasons = [f"prepare() called sys.exit({exc.code!r}) (layer {l} {role})"]
            except Exception as exc:
                entry.reasons = [f"prepare() raised {_err(exc)} (layer {l} {role})"]
                _healthy_or_fatal(sess, entry.name, "prepare", entry.reasons[0])
            entry.reasons += sess.guard_check("prepare()")
            if not entry.reasons and not torch.equal(own, weight):
                entry.reasons = [f"{WEIGHT_MODIFIED} by prepare() (layer {l} {role})"]
            if entry.reasons:
                return
        entry.states.append(states)


def _project(entry: _Entry, model: StepModel):
    cand, states, families = entry.cand, entry.states, model.families
    return lambda l, role, h: cand.run(states[l][role], families[role], h)


def _judge(y, ref, tol: float, what: str) -> tuple[float, list[str]]:
    err = rel_l2(y, ref)
    if not math.isfinite(err):
        return err, [f"{what}: the step's output is not finite or has another shape than [batch, hidden]"]
    if err > tol:
        return err, [f"{what}: step output rel-L2 error {err:.4g} vs the reference step (exact projections) is "
                     f"over the tolerance {tol:g}"]
    return err, []


def _check(sess, entry: _Entry, model: StepModel, inputs, refs, tol: float) -> None:
    """Eager step on input 0, then the captured graph replayed on every pool input, each output judged."""
    step(entry.name, "check")
    project = _project(entry, model)
    try:
        y = model.forward(inputs[0].clone(), project)
        _sync(sess)
        err, entry.reasons = _judge(y, refs[0], tol, "eager step")
        entry.eager = y
    except SystemExit as exc:
        err, entry.reasons = math.inf, [f"run() called sys.exit({exc.code!r}) in the eager step"]
    except Exception as exc:
        err, entry.reasons = math.inf, [f"the eager step raised {_err(exc)}"]
        _healthy_or_fatal(sess, entry.name, "check", entry.reasons[0])
    entry.reasons += sess.guard_check("the eager step")
    if entry.reasons:
        entry.error = {"rel_l2": err if math.isfinite(err) else None}
        return
    step(entry.name, "capture")
    x = inputs[0].clone()
    handle, why = capture_checked(lambda: model.forward(x, project), sess.timer("cold").capture)
    if why:
        entry.reasons = [f"step capture: {why}"]
        _healthy_or_fatal(sess, entry.name, "capture", why)
    entry.reasons += sess.guard_check("the step capture")
    if entry.reasons:
        return
    handle.keep = x
    entry.x, entry.handle = x, handle
    errs = []
    for k, ref in enumerate(refs):
        x.copy_(inputs[k])
        handle.replay()
        _sync(sess)
        err, reasons = _judge(handle.output, ref, tol, f"step graph on input {k + 1} of {len(refs)}")
        errs.append(err)
        if reasons:
            entry.reasons = reasons
            break
    entry.error = {"rel_l2": max(errs) if all(map(math.isfinite, errs)) else None}
    entry.feed = _Feed(x, inputs)
    handle.feed = entry.feed
    x.copy_(inputs[0])


def _against_baseline(entry: _Entry, base: _Entry, tol: float) -> None:
    """The step rule's second half: the candidate's eager step within the tolerance of the baseline's step (the same
    input, weights and cache)."""
    step(entry.name, "check")
    err = rel_l2(entry.eager, base.eager)
    entry.error["vs_baseline_step"] = err if math.isfinite(err) else None
    if not err <= tol:
        entry.reasons = [f"eager step: rel-L2 {err:.4g} from the baseline's step is over the tolerance {tol:g}"]


def _timed(sess, entries: list[_Entry], timer, settings: dict, refs, tol: float, when: str):
    """measure_shape over the entries' graphs; judged every JUDGE_EVERY_BATCHES-th batch -> samples or None."""
    policy = replace(SWEEP, max_seconds=float(settings.get("max_seconds", SWEEP.max_seconds)))
    tel = sess.telemetry
    max_mhz = tel.max_sm_mhz() if tel.available else None

    def after_batch(b: int, graphs) -> None:
        if b % JUDGE_EVERY_BATCHES:
            return
        for e in entries:
            if not e.reasons:
                _, e.reasons = _judge(e.handle.output, refs[e.feed.last], tol, f"{when} timing, batch {b + 1}")

    return timing.measure_shape([e.handle for e in entries], timer, **policy.measure_kwargs(),
                                clock=tel.sm_mhz if tel.available else None,
                                min_clock_mhz=policy.min_clock_fraction * max_mhz if max_mhz else None,
                                after_batch=after_batch)


def _summaries(names: list[str], samples: np.ndarray, seed: int) -> tuple[dict, dict]:
    """({name: median_us, ci, n}, {name: paired ratio baseline/name with its CI}) of one timing mode."""
    def clean(d: dict) -> dict:   # a NaN (too few samples for an interval) is written as null
        return {k: (finite(v) if isinstance(v, float) else v) for k, v in d.items()}

    per = {n: clean(stats.summarize_samples(samples[:, j], seed=seed)) for j, n in enumerate(names)}
    pairs = {}
    for j, n in enumerate(names[1:], start=1):
        p = stats.summarize_pairs(samples[:, 0], samples[:, j], seed=seed)
        p.pop("ratios", None)
        pairs[n] = clean(p)
    return per, pairs


# --- the breakdown -------------------------------------------------------------------------------------------
def _classes(model: StepModel) -> list[str]:
    return [*model.families.values(), *NON_PROJECTION]


def _class_of(label: str, model: StepModel) -> str:
    return model.families.get(label) or SEGMENT_CLASS[label]


def _median_classes(runs: list[dict]) -> dict:
    return {c: float(np.median([r[c] for r in runs])) for c in runs[0]}


def _breakdown_cpu(sess, entry: _Entry, model: StepModel, inputs) -> dict:
    """Wall clock around each marked segment of CPU_BREAKDOWN_RUNS eager steps, each behind the cold timer's flush
    (cold) and back to back (warm): µs per class, the median over the runs."""
    project = _project(entry, model)
    timer = sess.timer("cold")
    out = {}
    for mode in MODES:
        runs = []
        for k in range(CPU_BREAKDOWN_RUNS):
            marks: list[tuple[str, int]] = []
            x = inputs[k % len(inputs)].clone()
            if mode == "cold":
                timer.flush()
            model.forward(x, project, mark=lambda label: marks.append((label, time.perf_counter_ns())))
            end = time.perf_counter_ns()
            totals = dict.fromkeys(_classes(model), 0.0)
            for (label, t0), (_, t1) in zip(marks, [*marks[1:], ("end", end)]):
                totals[_class_of(label, model)] += (t1 - t0) / 1000.0
            runs.append(totals)
        out[mode] = _median_classes(runs)
    return {"method": "wall clock per segment (CPU, eager)", **out}


def _segment_times(trace, labels: list[str], model: StepModel) -> list[dict]:
    """Per replay of the marked graph in the trace (in launch order): µs per class, each segment's kernels being
    those between its marker and the next (busy time: the sum of their durations)."""
    runs = []
    for seq in kineto.replay_sequences(trace):
        marks = [i for i, k in enumerate(seq["kernels"]) if MARKER_KERNEL in k["kernel_full"]]
        if not marks:
            continue   # the flush's replay
        if len(marks) != len(labels):
            raise kineto.TraceError(f"{len(marks)} marker kernels in a replay of the marked step, "
                                    f"{len(labels)} segments marked")
        totals = dict.fromkeys(_classes(model), 0.0)
        kernels = seq["kernels"]
        for label, lo, hi in zip(labels, marks, [*marks[1:], len(kernels)]):
            totals[_class_of(label, model)] += sum(k["duration_us"] for k in kernels[lo + 1:hi])
        runs.append(totals)
    return runs


def _breakdown_cuda(sess, entry: _Entry, model: StepModel, keep: str | None) -> dict:
    """The step graph captured again with a marker kernel before each segment, replayed BREAKDOWN_REPLAYS times
    behind the cold timer's L2 flush (cold), then as many times back to back (warm), under torch.profiler: µs per
    class (_segment_times), the median over each mode's replays."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    project = _project(entry, model)
    labels: list[str] = []
    x = entry.x

    def marked():
        labels.clear()

        def mark(label):
            labels.append(label)
            torch.cuda._sleep(MARKER_CYCLES)
        return model.forward(x, project, mark=mark)

    timer = sess.timer("cold")
    handle, why = capture_checked(marked, timer.capture)
    if why:
        _healthy_or_fatal(sess, entry.name, "breakdown", why)
        raise kineto.TraceError(f"the marked step graph could not be captured: {why}")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(BREAKDOWN_REPLAYS):
            timer.flush()
            handle.replay()
            torch.cuda.synchronize(sess.device)
        for _ in range(BREAKDOWN_REPLAYS):
            handle.replay()
        torch.cuda.synchronize(sess.device)
    path = Path(keep) if keep else Path(tempfile.mkstemp(suffix=".json")[1])
    try:
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
    finally:
        if not keep:
            path.unlink(missing_ok=True)
    runs = _segment_times(trace, labels, model)
    if len(runs) != 2 * BREAKDOWN_REPLAYS:
        raise kineto.TraceError(f"{len(runs)} replays of the marked step graph in the trace, "
                                f"{2 * BREAKDOWN_REPLAYS} made")
    return {"method": "Kineto trace of the step graph with a marker kernel before each segment (kernel busy time)",
            "cold": _median_classes(runs[:BREAKDOWN_REPLAYS]), "warm": _median_classes(runs[BREAKDOWN_REPLAYS:])}


def _breakdown(sess, entry: _Entry, model: StepModel, inputs, keep: str | None) -> tuple[dict | None, str | None]:
    step(entry.name, "breakdown")
    try:
        found = (_breakdown_cuda(sess, entry, model, keep) if sess.cuda else
                 _breakdown_cpu(sess, entry, model, inputs))
    except Exception as exc:
        _healthy_or_fatal(sess, entry.name, "breakdown", _err(exc))
        return None, f"breakdown: {_err(exc)}"
    finally:
        if sess.cuda:
            import torch

            torch.cuda.empty_cache()
    changed = sess.guard_check("the step breakdown")
    return (None, "breakdown: " + "; ".join(changed)) if changed else (found, None)


# --- the task ------------------------------------------------------------------------------------------------
def _failure(point: dict, name: str, kind: str, phase: str, reasons: list[str]) -> dict:
    return {**point, "candidate": name, "kind": kind, "phase": phase, "reasons": [str(r)[:600] for r in reasons]}


def measure_step(sess, task: dict) -> dict:
    """The step task (module docstring); on CUDA the point's weights, caches and graphs are given back at the end,
    so the next point starts from a clean allocator."""
    try:
        return _measure_step(sess, task)
    finally:
        if sess.cuda:
            import gc

            import torch

            gc.collect()
            torch.cuda.empty_cache()


def _measure_step(sess, task: dict) -> dict:
    workload = sess.workload
    layer = layer_of(workload)
    if layer is None:
        raise ValueError(f"workload {workload.name} declares no decoder layer")
    settings = task.get("settings") or {}
    batch, context = int(task["batch"]), int(task["context"])
    n_layers, seed = int(settings.get("layers", 4)), int(settings.get("seed", 0))
    point = {"batch": batch, "context": context}
    step(None, "step build")
    model = StepModel(layer, workload.families, batch, context, n_layers, sess.device, seed)
    inputs = [model.input(k) for k in range(INPUT_POOL)]
    refs = [model.reference(x) for x in inputs]
    tol = step_tolerance(workload, layer)
    factor = float(workload.contract["vs_baseline_flag_factor"])
    entries, failures = [], []
    for c in task["candidates"]:
        cand = sess.load(c["spec"], c["name"])
        if cand is None:
            why = sess.load_errors.get(c["spec"], {}).get("error") or "could not be loaded"
            failures.append(_failure(point, c["name"], "load", "load", [why]))
            continue
        entry = _Entry(c["name"], cand, [])
        _prepare(sess, entry, model)
        if not entry.reasons:
            _check(sess, entry, model, inputs, refs, tol)
        base = entries[0] if entries and entries[0].name == task["candidates"][0]["name"] else None
        if not entry.reasons and base is not None and not base.reasons:
            _against_baseline(entry, base, tol)
        if entry.reasons:
            failures.append(_failure(point, entry.name, "incorrect", current()[1] or "check", entry.reasons)
                            | {"error": entry.error or None})
        entries.append(entry)
    base_name = task["candidates"][0]["name"] if task["candidates"] else None
    passing = [e for e in entries if not e.reasons]
    records = {e.name: {"candidate": e.name, "correct": not e.reasons,
                        "error": {**e.error, "reasons": e.reasons[:3]}} for e in entries}
    result = {"kind": "step", "point": point | {"layers": n_layers, "tolerance": tol,
                                                "projection_bytes": model.projection_bytes()},
              "candidates": [], "pairs": [], "failures": failures}
    if not passing or passing[0].name != base_name:
        for e in passing:
            failures.append(_failure(point, e.name, "not_timed", "none", [
                f"not timed: the baseline {base_name!r} has no correct step here, so there is nothing to pair with"]))
        result["candidates"] = list(records.values())
        return result
    base_err = passing[0].error.get("rel_l2")
    for e in passing[1:]:   # the contract's flag, by its own arithmetic (an exact baseline: any error is inf x)
        ratio = error_vs_baseline(e.error.get("rel_l2"), base_err)
        records[e.name]["error"]["vs_baseline"] = finite(ratio)
        if ratio is not None and ratio > factor:
            records[e.name]["flags"] = ["less_accurate"]
    names = [e.name for e in passing]
    step(None, "time")
    timed = {}
    for mode, timer in zip(MODES, (sess.timer("cold"), sess.timer("stream"))):
        samples = _timed(sess, passing, timer, settings, refs, tol, mode)
        if not len(samples.samples_us):   # every batch dropped (the SM clock below the floor): no times at all
            for e in passing:
                failures.append(_failure(point, e.name, "not_timed", "time", [
                    f"{mode} timing kept no sample: all {samples.dropped_rounds} rounds ran below the SM clock floor "
                    "(throttled)"]))
            result["candidates"] = list(records.values())
            return result
        timed[mode] = (samples, *_summaries(names, samples.samples_us, seed))
    # on a CPU device every timed replay runs the candidates' code (a graph replay runs none): a changed global
    # setting voids the times
    changed = sess.guard_check("the step timing")
    for e in passing:
        if changed and not e.reasons:
            e.reasons = [f"during the step timing: {'; '.join(changed)}"]
    step(None, "check")
    for e in passing:   # once more after timing, on every input
        for k, ref in enumerate(refs):
            if e.reasons:
                break
            e.x.copy_(inputs[k])
            e.handle.replay()
            _sync(sess)
            _, e.reasons = _judge(e.handle.output, ref, tol, f"step graph after timing, input {k + 1}")
    for e in passing:
        rec = records[e.name]
        if e.reasons:   # judged wrong during or after timing: its times are dropped
            rec.update(correct=False, error={**e.error, "reasons": e.reasons[:3]})
            failures.append(_failure(point, e.name, "incorrect", "time", e.reasons))
            continue
        for mode, (samples, per, _) in timed.items():
            rec[mode] = per[e.name] | {"stopped_by": samples.stopped_by, "dropped_rounds": samples.dropped_rounds}
    if records[base_name]["correct"]:
        for e in passing[1:]:
            if records[e.name]["correct"]:
                result["pairs"].append({"baseline": base_name, "candidate": e.name,
                                        **{mode: pairs[e.name] for mode, (_, _, pairs) in timed.items()}})
    for e in passing:
        if records[e.name]["correct"]:
            breakdown, why = _breakdown(sess, e, model, inputs, settings.get("trace"))
            records[e.name]["breakdown"] = breakdown
            if why:
                records[e.name]["breakdown_error"] = why
    result["candidates"] = list(records.values())
    return result
