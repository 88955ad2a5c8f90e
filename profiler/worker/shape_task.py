"""The shape task's body, in the worker process: check every candidate at one shape, time the correct ones
together, return run-file records.

    measure_one_shape(sess, task) -> {"kind": "shape", "key", "results", "pairs", "failures", "info", "telemetry"}

A candidate that fails its checks is not timed; before the timed part, persisting L2 is reset (no candidate can pin
its weights across the flush). How a shape is timed (stopping rule, instances, clock floor, seed offsets) is the
task's timing policy (SweepSettings.policy(), profiler.measure.policy).
"""
from __future__ import annotations

import math

import numpy as np

from datasets.shapes import shape_bytes, shape_identity
from datasets.shapes import shape_key_of as shape_key
from profiler.check.contract import CudaFault, capture_checked, check_candidate
from profiler.check.guards import PERSISTING_L2_SETTING, TaintedProcess, persisting_l2_limit, reset_persisting_l2
from profiler.check.rules import default_contract, error_vs_baseline, make_input
from profiler.measure import stats, timing
from profiler.worker.records import failure_record, finite
from profiler.worker.settings import SweepSettings
from profiler.worker.steps import Fatal, current, step


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



def _check_options(check: str) -> dict:
    if check == "quick":
        return {"n_calls": 1, "use_graph": False, "outliers": False}
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


def _timing_input(shape, settings, device, instance: int):
    return make_input(int(shape["M"]), int(shape["K"]), settings.seed + settings.policy().timing_seed_offset + instance, device,
                      dtype=shape["x_dtype"])[0]  # vary=False: unscaled, one-hot rows only


def _cold_instances(sess, timer, cand, state, shape, settings, check_graph) -> tuple[list, list[str]]:
    """settings.instances graphs of the candidate, each on its own timing input; the first is the graph the
    check replayed (its static input gets a timing input copied in)."""
    family, instances = shape["family"], []
    for k in range(settings.policy().instances):
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
    policy = settings.policy()
    n_copies = max(1, math.ceil(policy.stream_l2_multiple * timer.l2_bytes / shape_bytes(shape)))
    reps = max(1, math.ceil(policy.stream_min_calls / n_copies))
    fam, M, K = shape["family"], int(shape["M"]), int(shape["K"])
    weights = [weight] + [weight.clone() for _ in range(n_copies - 1)]
    xs = [make_input(M, K, settings.seed + policy.stream_seed_offset + c, sess.device, dtype=shape["x_dtype"], sparse=False)[0]
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


def assert_healthy(sess, name: str, phase: str, reasons: list[str]) -> None:
    """After a failed step on CUDA: when the context is dead (a sticky fault), this worker must end."""
    why = sess.healthy()
    if why is not None:
        cause = "; ".join(reasons)[:400] or why
        raise Fatal("cuda_fault", f"{cause} (the CUDA context is unusable afterwards: {why})", name, phase)


def error_record(chk) -> dict:
    return {k: (finite(v) if isinstance(v, float) else v) for k, v in chk.to_dict().items()}


def measure_one_shape(sess, task: dict) -> dict:
    """The shape task (profiler.worker.process): check every candidate, time the correct ones together -> result."""
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
            assert_healthy(sess, name, "prepare", reasons)
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
            assert_healthy(sess, name, "check", chk.reasons)
            failures.append(failure_record(shape, name, "incorrect", "check", chk.reasons,
                                           error=error_record(chk)))
            continue
        if settings.mode == "cold":
            step(name, "capture")
            insts, reasons = _cold_instances(sess, timer, cand, state, shape, settings, chk.graph)
            if reasons:
                assert_healthy(sess, name, "capture", reasons)
                failures.append(failure_record(shape, name, "not_timed", "capture", reasons,
                                               error=error_record(chk)))
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
    policy = settings.policy()
    tel = sess.telemetry
    max_mhz = tel.max_sm_mhz() if tel.available else None
    return timing.measure_shape(instances, timer, **policy.measure_kwargs(),
                                clock=tel.sm_mhz if tel.available else None,
                                min_clock_mhz=policy.min_clock_fraction * max_mhz if max_mhz else None)


def _results(shape, names, cands, checks, ms, floor, settings, contract) -> tuple[list[dict], list[dict]]:
    """Result records of the timed candidates, and failures for those whose samples are unusable."""
    base = shape_identity(shape)
    results, failures = [], []
    for col, (name, cand, chk) in enumerate(zip(names, cands, checks)):
        s = ms.samples_us[:, col] if len(ms.samples_us) else np.empty(0)
        summ = stats.summarize_samples(s, seed=settings.seed)
        med = summ["median_us"]
        if not (len(s) and np.isfinite(s).all() and (s > 0).all() and math.isfinite(med)):
            failures.append(failure_record(shape, name, "not_timed", "time", [
                f"no usable timing: {int(np.sum(~(s > 0)))} of {len(s)} samples <= 0 us or not finite after "
                f"subtracting the replay overhead (dropped rounds {ms.dropped_rounds})"], error=error_record(chk)))
            continue
        lo, hi = finite(summ["ci_low_us"]), finite(summ["ci_high_us"])
        results.append(base | {
            "candidate": name, "method": str(cand.describe(shape["family"], int(shape["M"]))),
            "median_us": med, "ci_low_us": lo, "ci_high_us": hi, "samples_us": [round(float(v), 4) for v in s],
            "n_samples": int(s.size), "correct": True, "error": error_record(chk),
            "flags": _flags(med, lo, hi, floor, ms.dropped_rounds, chk.vs_baseline,
                            float(contract["vs_baseline_flag_factor"])),
            "throttled_samples": int(ms.dropped_rounds), "floor_us": (floor or {}).get("us"),
            "bytes": shape_bytes(shape), "stopped_by": ms.stopped_by})
    return results, failures


def _pairs(shape, names, ms, settings, have: set, baseline: str | None) -> list[dict]:
    base = shape_identity(shape)
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
                             "ratio_ci_low": finite(p["ratio_ci_low"]), "ratio_ci_high": finite(p["ratio_ci_high"]),
                             "rse": finite(p["rse"]), "n_pairs": p["n_pairs"],
                             "ratios": [round(v, 6) for v in p["ratios"]]})
    return pairs

