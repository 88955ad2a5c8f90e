"""The shape task's body, in the worker process: check every candidate at one shape, time the correct ones
together, return run-file records.

    measure_one_shape(sess, task) -> {"kind": "shape", "key", "results", "pairs", "failures", "info", "telemetry"}

A candidate that fails its checks is not timed; before the timed part, persisting L2 is reset (no candidate can pin
its weights across the flush). How a shape is timed (stopping rule, instances, clock floor, seed offsets) is the
task's timing policy (SweepSettings.timing, profiler.measure.policy).

Every timed graph is a checked graph (profiler.check.timed): each cold instance and every stream-mode graph is
judged with the contract's rules before timing (a failure: not timed, incorrect at this shape). In cold mode every
timed call reads an input made for it just before it (FreshFeed: fresh entropy, no pool, nothing to precompute),
its output is kept, and the calls to judge are drawn at random after they ran with entropy drawn then, each with
probability judge_share(policy): a wrong output at any call that was drawn fails the shape ("incorrect" at "time";
the shape's info records the share, the calls and P(caught) for a candidate wrong at 5 % of them). On the CPU,
whose timed calls run the candidate's Python, the parent process makes every timed input and judges every output
as the call ends (profiler.worker.call_judge); on a GPU the worker does, after each batch of graph replays. Stream-mode
graphs are judged again after timing as the last replay left them.

Each candidate is one Entry from its check to its records (state, check, graphs, static inputs, stream outputs,
the judgement after timing): the candidates left to time are a list of entries, filtered, never lists kept in step.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from datasets.shapes import shape_bytes, shape_identity
from datasets.shapes import shape_key_of as shape_key
from profiler.check.contract import CudaFault, capture_checked, check_candidate
from profiler.check.guards import PERSISTING_L2_SETTING, TaintedProcess, persisting_l2_limit, reset_persisting_l2
from profiler.check.inputs import as_dtype, default_contract, fresh_salt
from profiler.check.rules import WeightReference, error_vs_baseline
from profiler.check.timed import (FreshFeed, GraphJudge, TimedInput, detection_probability, judged_share,
                                  rotation_inputs, timed_inputs)
from profiler.measure import stats, timing
from profiler.measure.eager import eager_time
from profiler.worker.records import failure_record, finite, result_flags
from profiler.worker.settings import SweepSettings
from profiler.worker.steps import Fatal, current, parent_feed, step, verdict


def _check_options(check: str) -> dict:
    if check == "quick":
        return {"n_calls": 1, "use_graph": False, "outliers": False, "range_call": False}
    if check != "full":
        raise ValueError(f"settings.check must be 'full' or 'quick', not {check!r}")
    return {}


def _capture(sess, timer, fn, what: str) -> tuple[object, list[str]]:
    """Capture fn with the timer, guarded like a candidate step -> (handle, []) or (None, reasons)."""
    handle, reasons = None, []
    try:
        handle, why = capture_checked(fn, timer.capture)
        reasons = [why] if why else []
    except SystemExit as exc:
        reasons = [f"{what}: run() called sys.exit({exc.code!r})"]
    if reasons and sess.healthy() is not None:
        raise Fatal("cuda_fault", f"{what}: {reasons[0]} (the CUDA context is unusable afterwards: "
                                  f"{sess.healthy()})", *current())
    reasons += sess.guard_check(what)
    return (None if reasons else handle), reasons


def _timed_inputs(sess, shape, settings, weight, wref, contract, count: int, offset: int,
                  salt: int) -> list[TimedInput]:
    """`count` timing inputs of the shape (seeds seed + offset + k, values salted) with their references: once per
    shape, shared by every candidate (each graph reads its own copy)."""
    seeds = [settings.seed + offset + k for k in range(count)]
    return timed_inputs(shape, weight, seeds, sess.device, contract, wref, salt=salt)


def _cold_instances(sess, timer, cand, state, shape, shape_inputs, check_graph) -> tuple[list, list, list[str]]:
    """One graph of the candidate per timing input, each on its own copy; the first is the graph the check
    replayed (its static input gets the first timing input copied in). -> (graphs, their static inputs, reasons)"""
    family, instances, statics = shape["family"], [], []
    for k, tin in enumerate(shape_inputs):
        if k == 0 and check_graph is not None:
            check_graph.keep.copy_(tin.x)
            instances.append(check_graph)
            statics.append(check_graph.keep)
            continue
        x = tin.x.clone()
        handle, reasons = _capture(sess, timer, lambda x=x: cand.run(state, family, x), "timing capture")
        if reasons:
            return [], [], reasons
        handle.keep = x
        instances.append(handle)
        statics.append(x)
    return instances, statics, []


def _graph_names(n: int) -> list[str]:
    return [f"cold timing graph {k + 1} of {n}" + (" (the graph the contract replayed)" if k == 0 else
                                                     " (captured for timing)") for k in range(n)]


def _judge_cold(sess, judge: GraphJudge, name: str, insts, statics, shape_inputs, when: str) -> list[str]:
    """Every cold instance of one candidate replayed on its own timing input and judged `when`
    (profiler.check.timed); the first failure's reasons."""
    step(name, "check")
    names = _graph_names(len(insts))
    for k, (handle, x, tin) in enumerate(zip(insts, statics, shape_inputs)):
        try:
            reasons = judge.graph(handle, x, tin, names[k], when, replay=True)
        except Exception as exc:  # a replay that raises: a verdict, unless the context is gone
            reasons = [f"{names[k]}, {when}: replay raised {type(exc).__name__}: {exc}"[:400]]
            assert_healthy(sess, name, "check", reasons)
        if reasons:
            return reasons
    return []


def judge_share(policy) -> float:
    """The probability each timed call is judged with (profiler.check.timed.judged_share) under `policy`: a
    candidate wrong at judge_miss_fraction of the fewest timed calls the stopping rule allows (min_rounds) is caught
    with probability >= judge_confidence."""
    min_calls = max(policy.min_pairs, policy.instances * policy.batch_rounds)
    return judged_share(min_calls, policy.judge_miss_fraction, policy.judge_confidence)


def _batch_judge(sess, judge: GraphJudge, entries: list, policy, wref):
    """measure_shape's after_batch: after every batch (its calls have run and their outputs are kept), each
    entry's calls of that batch are chosen for judging with fresh entropy and judged (FreshFeed.judge); the first
    failure kept in entry.drifted, the calls and judged calls counted in entry.judged. A Python thread a candidate
    left running is refused here too (profiler.worker.integrity)."""
    share = judge_share(policy)

    def after_batch(b: int, graphs: list) -> None:
        sess.assert_no_threads(f"timed batch {b + 1}")
        for e, g in zip(entries, graphs):
            k = next((k for k, h in enumerate(e.graphs) if h is g), None)
            if k is None or not e.feeds:
                continue
            feed, parent, report, capacity = e.feeds[k]
            if g.feed is not feed or type(feed) is not FreshFeed or feed.parent is not parent or \
                    feed.report is not report or feed.capacity != capacity or "settle" in vars(feed) or \
                    "judge" in vars(feed) or "keep" in vars(feed):
                e.drifted = e.drifted or [f"{_graph_names(len(e.graphs))[k]}, during timing (batch {b + 1}): its feed "
                                          f"(the fresh input of every timed call and its judge) was replaced or "
                                          f"changed (in-process forging)"]
                continue
            e.judged[0] += min(policy.batch_rounds, g.feed.n)
            if e.drifted:
                continue
            try:   # harness code only (no candidate code runs while it judges): still the "time" step
                n, e.drifted = g.feed.judge(judge, wref, share, policy.batch_rounds, _graph_names(len(e.graphs))[k],
                                            f"during timing (batch {b + 1})")
            except Exception as exc:
                e.drifted = [f"{_graph_names(len(e.graphs))[k]}, during timing (batch {b + 1}): judging raised "
                             f"{type(exc).__name__}: {exc}"[:400]]
                assert_healthy(sess, e.name, "check", e.drifted)
                n = 0
            e.judged[1] += n

    return after_batch


def _stream_graphs(sess, timer, entries: list, shape, weight, settings, shape_inputs) -> dict:
    """Per entry one graph of R calls rotating through copies of weights+inputs (rotation(shape_inputs): the timing
    inputs, partner inputs beside theirs at M=1) totalling >= 3 x L2, kept in entry.graphs (the outputs of its
    calls in entry.outputs). -> {name: reasons} of the entries that did not capture."""
    policy = settings.timing
    fam = shape["family"]
    xs = rotation_inputs(shape_inputs)
    n_copies = len(xs)
    reps = max(1, math.ceil(policy.stream_min_calls / n_copies))
    weights = [weight.clone() for _ in range(n_copies)]   # candidate code never gets the session's own weights
    failed = {}
    for e in entries:
        step(e.name, "capture")
        try:
            states = [e.cand.prepare(fam, w) for w in weights]
        except Exception as exc:
            failed[e.name] = [f"stream mode: prepare() raised {type(exc).__name__}: {exc}"[:300]]
            continue
        fns, outs = _recorded_calls(e.cand, fam, states, xs, n_copies * reps)
        handle, reasons = _capture(sess, timer, fns, "stream capture")
        if reasons:
            failed[e.name] = reasons
            continue
        handle.keep = (states, xs, weights, outs)
        e.graphs, e.outputs = [handle], outs
    return failed


def _recorded_calls(cand, family: str, states: list, xs: list, n_calls: int) -> tuple[list, list]:
    """n_calls callables, call j = cand.run(states[j % n], family, xs[j % n]), each keeping its output in outs[j]:
    after the capture, outs[j] is the graph's output of call j (what the judge reads after each replay)."""
    outs: list = [None] * n_calls

    def call(j: int):
        s, x = states[j % len(states)], xs[j % len(xs)]

        def run():
            outs[j] = cand.run(s, family, x)
            return outs[j]
        return run

    return [call(j) for j in range(n_calls)], outs


def _stream_copies(timer, shape, settings) -> int:
    policy = settings.timing
    return max(1, math.ceil(policy.stream_l2_multiple * timer.l2_bytes / shape_bytes(shape)))


def _judge_stream(sess, judge: GraphJudge, name: str, handle, outs, shape_inputs, when: str, replay: bool) -> list[str]:
    step(name, "check")
    what = "stream-mode graph"
    try:
        if replay:
            handle.replay()
            if sess.cuda:
                import torch

                torch.cuda.synchronize(sess.device)
        return judge.outputs(outs, shape_inputs, what, when)
    except Exception as exc:
        reasons = [f"{what}, {when}: replay raised {type(exc).__name__}: {exc}"[:400]]
        assert_healthy(sess, name, "check", reasons)
        return reasons


def assert_healthy(sess, name: str, phase: str, reasons: list[str]) -> None:
    """After a failed step on CUDA: when the context is dead (a sticky fault), this worker must end."""
    why = sess.healthy()
    if why is not None:
        cause = "; ".join(reasons)[:400] or why
        raise Fatal("cuda_fault", f"{cause} (the CUDA context is unusable afterwards: {why})", name, phase)


def error_record(chk) -> dict:
    return {k: (finite(v) if isinstance(v, float) else v) for k, v in chk.to_dict().items()}


@dataclass
class Entry:
    """One candidate through the shape task, start to end: what it runs with, how its checks went, the graphs
    that time it and what they left. A field added here is the one edit a new per-candidate fact needs."""

    index: int                        # its position among the task's candidates (0: the baseline the pairs use)
    name: str
    cand: Any
    state: Any
    check: Any                        # the lifecycle contract's Check (profiler.check.rules)
    graphs: list = field(default_factory=list)    # cold: its instances; stream: its one graph
    statics: list = field(default_factory=list)   # cold: each instance's static input
    outputs: list = field(default_factory=list)   # stream: the output of each call of its graph
    drifted: list = field(default_factory=list)   # reasons of the judge after timing ([]: right)
    judged: list = field(default_factory=lambda: [0, 0])   # cold: [timed calls, of them judged]
    feeds: tuple = ()                 # cold: each instance's (feed, parent, report, capacity) as given


def _shape_inputs(sess, shape, settings, timer, weight, wref, contract, salt) -> list[TimedInput]:
    policy = settings.timing
    if settings.mode == "cold":   # the instances' capture inputs; every timed call gets a fresh one (FreshFeed)
        return _timed_inputs(sess, shape, settings, weight, wref, contract, policy.instances,
                             policy.timing_seed_offset, salt)
    return _timed_inputs(sess, shape, settings, weight, wref, contract, _stream_copies(timer, shape, settings),
                         policy.stream_seed_offset, salt)


def _checked_entry(sess, shape, settings, contract, weight, salt, index: int, name: str, spec: str,
                   base_rel) -> tuple[Entry | None, dict | None]:
    """Load, prepare and check one candidate -> (its Entry, None) or (None, its failure record). The Entry's check
    holds vs_baseline (1.0 for the candidate at index 0, the baseline itself)."""
    cand = sess.load(spec, name)
    if cand is None:
        return None, failure_record(shape, name, "load", "load", [sess.load_errors[spec]["error"]])
    state, reasons = sess.state(spec, name, cand, shape, weight, settings.seed)
    if reasons:
        assert_healthy(sess, name, "prepare", reasons)
        return None, failure_record(shape, name, "incorrect", "prepare", reasons)
    step(name, "check")
    try:
        chk = check_candidate(cand, shape, sess.device, seed=settings.seed, contract=contract,
                              weight=sess.own_weight(spec, shape, settings.seed), pristine=weight, state=state,
                              baseline_rel_l2=base_rel, keep_graph=settings.mode == "cold", guard=sess.guard,
                              salt=salt, **_check_options(settings.check))
    except CudaFault as exc:
        raise Fatal("cuda_fault", str(exc), name, "check") from None
    except TaintedProcess as exc:
        raise Fatal("tainted", str(exc), name, "check") from None
    if index == 0:
        chk.vs_baseline = error_vs_baseline(chk.rel_l2, chk.rel_l2)  # 1.0, or None for a NaN/absent error
    entry = Entry(index, name, cand, state, chk)
    if not chk.ok:
        assert_healthy(sess, name, "check", chk.reasons)
        return entry, failure_record(shape, name, "incorrect", "check", chk.reasons, error=error_record(chk))
    return entry, None


def _cold_entry(sess, timer, judge, shape, shape_inputs, policy, contract, entry: Entry, wref) -> dict | None:
    """Capture the entry's cold instances (instance k on timing input k), judge them before timing and give each
    its feed (a fresh input per timed call, every output kept: profiler.check.timed.FreshFeed) -> None, or its
    failure record. The objects the timer touches are checked by type identity first: the static inputs and the
    graphs' outputs plain torch tensors (a subclass's methods would run candidate code inside the harness's own
    copies)."""
    import torch

    n_instances = policy.instances
    step(entry.name, "capture")
    insts, xs, reasons = _cold_instances(sess, timer, entry.cand, entry.state, shape, shape_inputs[:n_instances],
                                         entry.check.graph)
    if reasons:
        assert_healthy(sess, entry.name, "capture", reasons)
        return failure_record(shape, entry.name, "not_timed", "capture", reasons, error=error_record(entry.check))
    names = _graph_names(len(insts))
    reasons = [f"{names[k]}: its output is a {type(h.output).__name__}, not a plain torch.Tensor (the harness copies "
               f"every timed output and runs no method of the candidate's own types)"
               for k, h in enumerate(insts) if type(h.output) is not torch.Tensor][:1]
    reasons = reasons or _judge_cold(sess, judge, entry.name, insts, xs, shape_inputs, "before timing")
    if reasons:
        return failure_record(shape, entry.name, "incorrect", "check", reasons, error=error_record(entry.check))
    out_shape, out_dtype = (int(shape["M"]), int(shape["N"])), as_dtype(shape["y_dtype"])
    for k, (handle, x) in enumerate(zip(insts, xs)):
        # the CPU's timed calls run the candidate's Python: the parent makes their inputs and judges their outputs
        parent = None if sess.cuda else parent_feed(entry.name, names[k])
        handle.feed = FreshFeed(x, shape_inputs[k], shape_inputs[k].ref.layout, policy.batch_rounds, out_shape,
                                out_dtype, contract, parent=parent,
                                report=functools.partial(verdict, entry.name, shape_identity(shape)))
    entry.graphs, entry.statics = insts, xs
    entry.feeds = tuple((h.feed, h.feed.parent, h.feed.report, h.feed.capacity) for h in insts)
    return None


def _stream_entries(sess, timer, judge, shape, weight, settings, shape_inputs, entries: list[Entry],
                    failures: list) -> list[Entry]:
    """Capture each entry's stream-mode graph and judge it before timing -> the entries left to time (the others'
    failure records appended to `failures`)."""
    failed = _stream_graphs(sess, timer, entries, shape, weight, settings, shape_inputs)
    failures += [failure_record(shape, e.name, "not_timed", "capture", failed[e.name]) for e in entries
                 if e.name in failed]
    left = []
    for e in (e for e in entries if e.name not in failed):
        reasons = _judge_stream(sess, judge, e.name, e.graphs[0], e.outputs, shape_inputs, "before timing", replay=True)
        if reasons:
            failures.append(failure_record(shape, e.name, "incorrect", "check", reasons, error=error_record(e.check)))
        else:
            left.append(e)
    return left


def measure_one_shape(sess, task: dict) -> dict:
    """The shape task (profiler.worker.process): check every candidate, time the correct ones together, check every
    timed graph before and after timing -> result."""
    shape, settings = task["shape"], SweepSettings.from_dict(task.get("settings", {}))
    contract = sess.workload.contract if sess.workload is not None else default_contract()
    timer = sess.timer(settings.mode)
    weight = sess.weight(shape, settings.seed)
    judge = GraphJudge(shape, contract)
    # One salt for every input of this shape, checked and timed, drawn before any candidate runs here: every
    # candidate is judged on the same inputs (vs_baseline compares like with like), none can know them ahead.
    salt = settings.input_salt if settings.input_salt is not None else fresh_salt()
    wref = WeightReference(weight)
    shape_inputs = _shape_inputs(sess, shape, settings, timer, weight, wref, contract, salt)
    failures, entries, base_rel = [], [], None
    for j, c in enumerate(task["candidates"]):
        entry, failure = _checked_entry(sess, shape, settings, contract, weight, salt, j, c["name"], c["spec"],
                                        base_rel)
        if j == 0 and entry is not None:
            base_rel = entry.check.rel_l2
        if failure is None and settings.mode == "cold":
            failure = _cold_entry(sess, timer, judge, shape, shape_inputs, settings.timing, contract, entry, wref)
        if failure is not None:
            failures.append(failure)
            continue
        entry.check.graph = None
        entries.append(entry)
    if settings.mode == "stream" and entries:
        entries = _stream_entries(sess, timer, judge, shape, weight, settings, shape_inputs, entries, failures)
    out = {"kind": "shape", "key": shape_key(shape), "results": [], "pairs": [], "failures": failures, "info": {}}
    if entries:
        _time_entries(sess, timer, judge, shape, settings, contract, shape_inputs, entries, task.get("floor"), out, wref)
    out["telemetry"] = sess.telemetry.sample()
    return out


def _time_entries(sess, timer, judge, shape, settings, contract, shape_inputs, entries: list[Entry], floor, out,
                  wref) -> None:
    """Time the entries together (cold: every timed call on a fresh input, its output kept and judged at random
    after it ran; stream: the graph's calls judged again as the last timed replay left them), and fill `out`'s
    results, pairs, failures and info."""
    step(None, "time")
    l2 = reset_persisting_l2(sess.device) if sess.cuda else "not a CUDA device"
    if sess.cuda:  # the harness's own change: the guard holds candidates to the value it leaves
        sess.guard.harness_set(PERSISTING_L2_SETTING, persisting_l2_limit())
    cold = settings.mode == "cold"
    shape_samples = _measure(sess, timer, [e.graphs if cold else e.graphs[0] for e in entries], settings,
                  _batch_judge(sess, judge, entries, settings.timing, wref) if cold else None)
    out["info"] = {"stopped_by": shape_samples.stopped_by, "elapsed_s": round(shape_samples.elapsed_s, 3),
                   "dropped_rounds": shape_samples.dropped_rounds, "persisting_l2_reset": l2,
                   "instances": max(len(e.graphs) if settings.mode == "cold" else 1 for e in entries),
                   "clocks_mhz": [c for c in shape_samples.clocks_mhz if c is not None]}
    if cold:
        share = judge_share(settings.timing)
        right = [e for e in entries if not e.drifted] or entries   # a failed candidate is judged no further
        calls = min(e.judged[0] for e in right)
        out["info"]["judged"] = {
            "share": round(share, 6), "miss_fraction": settings.timing.judge_miss_fraction, "calls": calls,
            "judged": min(e.judged[1] for e in right),
            "p_catch": round(detection_probability(share, calls, settings.timing.judge_miss_fraction), 6)}
    else:
        when = "after timing (its last timed replay)"
        for e in (e for e in entries if not e.drifted):   # the stream graphs again, as the last timed replay left them
            e.drifted = _judge_stream(sess, judge, e.name, e.graphs[0], e.outputs, shape_inputs, when, replay=False)
    out["results"], bad = _results(shape, entries, shape_samples, floor, settings, contract)
    out["failures"] += bad
    drifted = {e.name: e.drifted for e in entries if e.drifted}
    for r in [r for r in out["results"] if r["candidate"] in drifted]:
        out["results"].remove(r)
        out["failures"].append(failure_record(shape, r["candidate"], "incorrect", "time", drifted[r["candidate"]],
                                              error=r["error"]))
    out["pairs"] = _pairs(shape, [e.name for e in entries], shape_samples, settings, have={r["candidate"] for r in out["results"]},
                          baseline=entries[0].name if entries[0].index == 0 else None)
    if settings.eager and sess.cuda:
        _eager_times(sess, shape, out["results"], {e.name: e for e in entries}, shape_inputs)


def _eager_times(sess, shape, results: list[dict], by_name: dict, shape_inputs) -> None:
    """eager_us (host-inclusive, profiler.measure.eager) on each result, from eager calls on the first timing
    input; a candidate whose eager calls raise or change a guarded setting gets none, and the reason."""
    timer = sess.timer("cold")
    for r in results:
        cand, state = by_name[r["candidate"]].cand, by_name[r["candidate"]].state
        x = shape_inputs[0].x.clone()
        step(r["candidate"], "eager")
        try:
            r.update(eager_time(lambda: cand.run(state, shape["family"], x), timer))
        except Exception as exc:
            assert_healthy(sess, r["candidate"], "eager", [str(exc)])
            r["eager_error"] = f"{type(exc).__name__}: {exc}"[:300]
        changed = sess.guard_check("eager timing")
        if changed:
            r.pop("eager_us", None)
            r["eager_error"] = "; ".join(changed)[:300]


def _measure(sess, timer, instances, settings, after_batch=None):
    policy = settings.timing
    tel = sess.telemetry
    max_mhz = tel.max_sm_mhz() if tel.available else None
    return timing.measure_shape(instances, timer, **policy.measure_kwargs(),
                                clock=tel.sm_mhz if tel.available else None,
                                min_clock_mhz=policy.min_clock_fraction * max_mhz if max_mhz else None,
                                after_batch=after_batch)


def _results(shape, entries: list[Entry], shape_samples: timing.ShapeSamples, floor, settings,
             contract) -> tuple[list[dict], list[dict]]:
    """Result records of the timed candidates, and failures for those whose samples are unusable."""
    base = shape_identity(shape)
    results, failures = [], []
    for col, e in enumerate(entries):
        name, cand, chk = e.name, e.cand, e.check
        s = shape_samples.samples_us[:, col] if len(shape_samples.samples_us) else np.empty(0)
        summ = stats.summarize_samples(s, seed=settings.seed)
        med = summ["median_us"]
        if not (len(s) and np.isfinite(s).all() and (s > 0).all() and math.isfinite(med)):
            failures.append(failure_record(shape, name, "not_timed", "time", [
                f"no usable timing: {int(np.sum(~(s > 0)))} of {len(s)} samples <= 0 us or not finite after "
                f"subtracting the replay overhead (dropped rounds {shape_samples.dropped_rounds})"],
                error=error_record(chk)))
            continue
        lo, hi = finite(summ["ci_low_us"]), finite(summ["ci_high_us"])
        results.append(base | {
            "candidate": name, "method": str(cand.describe(shape["family"], int(shape["M"]))),
            "median_us": med, "ci_low_us": lo, "ci_high_us": hi, "samples_us": [round(float(v), 4) for v in s],
            "n_samples": int(s.size), "correct": True, "error": error_record(chk),
            "flags": result_flags(med, lo, hi, floor, shape_samples.dropped_rounds, chk.vs_baseline,
                            float(contract["vs_baseline_flag_factor"])),
            "throttled_samples": int(shape_samples.dropped_rounds), "floor_us": (floor or {}).get("us"),
            "bytes": shape_bytes(shape), "stopped_by": shape_samples.stopped_by} | setup_record(cand, e.state, shape))
    return results, failures


def setup_record(cand, state, shape) -> dict:
    """{"setup": what the candidate's method spent and chose setting itself up here (a peer's tuning or compile:
    kernels.candidate.Candidate.setup)} or {} -- a candidate without the method, or one whose report raises."""
    fn = getattr(cand, "setup", None)
    try:
        record = fn(state, shape["family"], int(shape["M"])) if callable(fn) else None
    except Exception:
        return {}
    return {"setup": record} if isinstance(record, dict) and record else {}


def _pairs(shape, names, shape_samples: timing.ShapeSamples, settings, have: set, baseline: str | None) -> list[dict]:
    base = shape_identity(shape)
    if baseline is None or baseline not in have:
        return []
    pairs = []
    for col, name in enumerate(names):
        if col == 0 or name not in have:
            continue
        p = stats.summarize_pairs(shape_samples.samples_us[:, 0], shape_samples.samples_us[:, col], seed=settings.seed)
        if not (math.isfinite(p["ratio_median"]) and p["ratio_median"] > 0):
            continue
        pairs.append(base | {"baseline": baseline, "candidate": name, "ratio_median": p["ratio_median"],
                             "ratio_ci_low": finite(p["ratio_ci_low"]), "ratio_ci_high": finite(p["ratio_ci_high"]),
                             "rse": finite(p["rse"]), "n_pairs": p["n_pairs"],
                             "ratios": [round(v, 6) for v in p["ratios"]]})
    return pairs

