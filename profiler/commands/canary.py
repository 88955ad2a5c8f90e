"""The canary: the baseline timed in a worker that never loaded a candidate, compared with the baseline's times in
the worker that timed it beside the candidates. A candidate can reach process-wide state the guard does not see
(a library handle configured at import, an allocator setting, a background stream); whatever it changed shows as a
baseline that runs at another speed in its worker than in a clean one.

    canary_shapes(shapes, sample) -> the shapes the canary times ("all", or per family two: "sample")
    device_band(first, repeat, baseline, device) -> (band or None, its evidence): the noise model's band
    verdict(canary_results, paired_results, baseline, band) -> the run file's `canary` record
    time_canary(backend, shapes, baseline_spec, task_base, settings) -> the canary's times (before the sweep)
    record_canary(life, times, baseline, settings) -> that record, in life.run["canary"], with the paired
        baseline's results at the disturbed shapes flagged DISTURBED_FLAG (the score gate refuses them)
    CANARY: the Task (profiler.backends.base) that times the baseline alone in a worker that loaded nothing else

When: on every sweep with a baseline, FIRST, at every shape of the run (`--canary all`, the default: a
disturbance at any family and M is compared, so it is found wherever it exceeds the band; `--canary sample`: per
family the smallest and the largest M only; `--canary off`: none), in the sweep's first worker process before it
loads any other candidate (a fresh process when the current one has loaded one); that process then goes on to the
sweep. On a device without committed repeat evidence, after the sweep the baseline is timed once more in a fresh worker
that loads the baseline alone at the canary's shapes (repeat_canary): two clean timings as far apart in time as the
sweep itself, the
device's own repeat evidence (device_band; clean timings moments apart in one process agreed within 2 % on a
2-core CPU where the sweep's baseline later read 2-7 % slower, so they would not bound the band). Its cost is the
baseline's timing alone at every shape, with no worker start, plus there the repeat and one worker start (the
record's `seconds` and `repeat_seconds` say what they cost); it prints its progress shape by shape.

Rule: at each shape both sides have a median and a 95% CI; the shape is disturbed when the paired median differs
from the canary's by more than the band (either way: a faster baseline is as suspect as a slower one) AND the two
CIs do not overlap. Any disturbed shape makes the verdict "baseline disturbed": the pair has no score.

The band is the noise model's (datasets.noise_model), never a typed number: on a device with committed repeat
evidence, its cross-run band per shape (the clean and the paired baseline are two processes, as two sweeps are);
elsewhere the bound noise_model.band_from_repeats gives on this run's clean repeats (a few pairs: the wider the
fewer); too few of them to bound a band (fewer than noise_model.MIN_PAIRS): "not compared", said so. The slowdowns the canary exists for were 1.5-13.7x (a candidate's CUBLAS_WORKSPACE_CONFIG=:0:0 at import)
and 2x (a candidate that scaled the shared weights, before each prepare() got its own copy).
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, replace
from typing import Iterable, Sequence

from datasets import noise_model
from datasets.runfile import DISTURBED_FLAG
from datasets.shapes import shape_key_of
from profiler.backends.base import Task
from profiler.backends.isolate import LOAD, loaded_names, measure_shape_isolated

OK, DISTURBED, NOT_COMPARED = "ok", "baseline disturbed", "not compared"
REPEAT = "canary_repeat"   # the task's mark: the canary's repeat after the sweep (its worker record says so)


def canary_shapes(shapes: Sequence[dict], sample: str = "sample") -> list[dict]:
    """The shapes the canary times: "all"; "sample": per family the smallest and the largest M of the run (the
    library's fixed costs show most at the smallest, its workspace at the largest), in run order; "off": none."""
    if sample == "all":
        return list(shapes)
    if sample == "off":
        return []
    if sample != "sample":
        raise ValueError(f"canary must be 'all', 'sample' or 'off', not {sample!r}")
    picked: dict[str, set[int]] = {}
    for fam in dict.fromkeys(s["family"] for s in shapes):
        m_values = [int(s["M"]) for s in shapes if s["family"] == fam]
        picked[fam] = {min(m_values), max(m_values)}
    seen, out = set(), []
    for s in shapes:
        key = (s["family"], int(s["M"]))
        if int(s["M"]) in picked[s["family"]] and key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _times(results: Iterable[dict], baseline: str) -> dict[str, dict]:
    return {shape_key_of(r): r for r in results if r.get("candidate") == baseline and r.get("median_us")}


def _overlap(a: dict, b: dict) -> bool:
    lo_a, hi_a = a.get("ci_low_us"), a.get("ci_high_us")
    lo_b, hi_b = b.get("ci_low_us"), b.get("ci_high_us")
    if None in (lo_a, hi_a, lo_b, hi_b):
        return False  # no CI to excuse the difference: the band alone decides
    return lo_a <= hi_b and lo_b <= hi_a


def _deviations(first: Iterable[dict], repeat: Iterable[dict], baseline: str) -> list[float]:
    """max(a, b) / min(a, b) - 1 for every pair of clean timings of one shape: before the sweep and after it."""
    by_key: dict[str, list[float]] = {}
    for r in [*first, *repeat]:
        if r.get("candidate") == baseline and r.get("median_us"):
            by_key.setdefault(shape_key_of(r), []).append(float(r["median_us"]))
    return [max(a, b) / min(a, b) - 1 for times in by_key.values() for a, b in itertools.combinations(times, 2)]


def device_band(first: Iterable[dict], repeat: Iterable[dict], baseline: str,
                device: str | None = None) -> tuple[float | None, dict]:
    """The band on `device` (its driver-reported name): its committed cross-run band at shape level where the
    noise model has evidence for it, else the derivation's rule on this run's clean repeats (every pair of clean
    timings of one shape: before the sweep, and after it in a fresh worker); None where neither bounds one.
    -> (band, {"source", "repeat_pairs", "repeat_largest"})"""
    devs = _deviations(first, repeat, baseline)
    largest = round(max(devs), 4) if devs else None
    if device and noise_model.has_evidence(device):
        b = noise_model.band(noise_model.ACROSS, noise_model.SHAPE, device)
        return b.frac, {"source": b.text(), "repeat_pairs": len(devs), "repeat_largest": largest}
    frac = noise_model.band_from_repeats(devs, noise_model.SHAPE)
    if frac is None:
        why = (f"no verdict: {len(devs)} clean repeat pairs on {device or 'this device'} (fewer than "
               f"{noise_model.MIN_PAIRS}) cannot bound a band, and it has no committed repeat evidence")
        return None, {"source": why, "repeat_pairs": len(devs), "repeat_largest": largest}
    return frac, {"source": f"{noise_model.OWN}: {len(devs)} clean repeat pairs on {device or 'this device'} "
                            f"(noise_model.band_from_repeats: quantile {noise_model.QUANTILE[noise_model.SHAPE]:g} "
                            f"at the spread's {noise_model.CONFIDENCE:.0%} upper bound)",
                  "repeat_pairs": len(devs), "repeat_largest": largest}


def verdict(canary_results: Iterable[dict], paired_results: Iterable[dict], baseline: str,
            band: float | None) -> dict:
    """The `canary` record: {"verdict", "band", "baseline", "compared": n shapes, "shapes": the disturbed ones
    [{"key", "canary_us", "paired_us", "ratio"}], "ratios": {key: paired / canary}}. band None: no band could be
    bounded, the ratios are kept and the verdict is NOT_COMPARED."""
    clean, paired = _times(canary_results, baseline), _times(paired_results, baseline)
    common = [k for k in clean if k in paired]
    limit = math.log1p(band) if band is not None else math.inf
    ratios, disturbed = {}, []
    for key in common:
        c, p = clean[key], paired[key]
        ratio = float(p["median_us"]) / float(c["median_us"])
        ratios[key] = round(ratio, 4)
        if abs(math.log(ratio)) > limit and not _overlap(c, p):
            disturbed.append({"key": key, "canary_us": float(c["median_us"]), "paired_us": float(p["median_us"]),
                              "ratio": round(ratio, 4)})
    state = NOT_COMPARED if not common or band is None else DISTURBED if disturbed else OK
    return {"verdict": state, "band": band, "baseline": baseline, "compared": len(common), "shapes": disturbed,
            "ratios": ratios}


def mark_disturbed(results: list[dict], record: dict) -> int:
    """Put DISTURBED_FLAG on the paired baseline's results at the record's disturbed shapes; returns how many."""
    keys = {d["key"] for d in record.get("shapes", [])}
    n = 0
    for r in results:
        if r.get("candidate") == record.get("baseline") and shape_key_of(r) in keys:
            flags = r.setdefault("flags", [])
            if DISTURBED_FLAG not in flags:
                flags.append(DISTURBED_FLAG)
                n += 1
    return n


def _canary_task(pool, shapes: list[dict], baseline_spec: str, task_base: dict, settings) -> dict:
    """In a worker process that has loaded no other candidate (the current one when it has not: at the start of
    a sweep, so no worker start is spent on it; else a fresh one): load the baseline, time it at each shape.
    The process goes on serving the sweep. -> {"results", "failures", "worker", "name"}"""
    if not pool.fresh_for([baseline_spec]):
        pool.close()
    loaded, refused = LOAD.run(pool, [baseline_spec], settings.shape_timeout_s, task_base.get("workload"))
    name = loaded_names(loaded)[0]
    worker = pool.index
    if baseline_spec in refused:
        return {"results": [], "failures": [], "worker": worker, "name": name, "lost": refused[baseline_spec]}
    record = pool.records[worker]
    record["started_for"] = (f"{record['started_for']}; "
                             + ("canary repeat (the baseline alone, after the sweep)" if task_base.get(REPEAT)
                                else "canary (the baseline alone, before any candidate)"))
    results, failures = [], []
    baseline = {"spec": baseline_spec, "name": name}
    say = getattr(pool, "log", None) or (lambda line: None)
    for i, shape in enumerate(shapes, 1):
        merged = measure_shape_isolated(pool, shape, [baseline], {k: v for k, v in task_base.items() if k != REPEAT}
                                        | {"floor": None}, settings, {}, pool.log)
        results += merged["results"]
        failures += merged["failures"]
        say(f"canary: {i}/{len(shapes)} shapes (the baseline alone, in a worker that loaded no candidate)")
    return {"results": results, "failures": failures, "worker": worker, "name": name}


def _canary_lost(args: tuple, why: str) -> dict:
    return {"results": [], "failures": [], "worker": None, "name": None, "lost": why}


CANARY = Task("canary", _canary_task, lost=_canary_lost)


def time_canary(backend, shapes: Sequence[dict], baseline_spec: str, task_base: dict, settings) -> dict | None:
    """Time the baseline alone at canary_shapes(shapes, settings.canary), before any candidate is loaded (the
    sweep calls this first) -> the raw canary result for record_canary, with its "seconds"; None: canary off."""
    picked = canary_shapes(shapes, settings.canary)
    if not picked:
        return None
    # the baseline passes the full contract in the paired worker; its eager time is not the canary's job
    quick = replace(settings, check="quick", eager=False)
    t0 = time.perf_counter()
    res = backend.call(CANARY, picked, baseline_spec, task_base | {"settings": asdict(quick)}, quick)
    return res | {"seconds": round(time.perf_counter() - t0, 2)}


def needs_repeat(device: str | None) -> bool:
    """Whether the canary's band needs this run's own clean repeat: the device has no committed repeat evidence."""
    return not noise_model.has_evidence(device)


def repeat_canary(backend, shapes: Sequence[dict], baseline_spec: str, task_base: dict, settings) -> dict | None:
    """After the sweep: the baseline alone again at the shapes the canary timed, in a fresh worker (the sweep's has
    loaded candidates) -> time_canary's result. Every shape (the more pairs, the tighter the bound), and each as
    many times as it takes to make noise_model.MIN_PAIRS pairs with the first timings (a canary of one or two
    shapes: two or three passes)."""
    picked = canary_shapes(shapes, settings.canary)
    passes = 1
    while picked and len(picked) * (passes + 1) * passes // 2 < noise_model.MIN_PAIRS:
        passes += 1
    return time_canary(backend, picked * passes, baseline_spec, task_base | {REPEAT: True},
                       replace(settings, canary="all"))


def record_canary(life, res: dict | None, baseline: str, settings, repeat: dict | None = None) -> dict | None:
    """The canary's verdict on the paired baseline `baseline` (its name in life.run) from time_canary's result and
    (a device without committed evidence) repeat_canary's: stored in life.run["canary"], the paired baseline's
    results flagged where disturbed, flushed."""
    if res is None:
        return None
    device = (life.run.get("environment") or {}).get("gpu")
    band, evidence = device_band(res["results"], (repeat or {}).get("results", []), baseline, device)
    record = verdict(res["results"], life.run["results"], baseline, band=band)
    record |= {"sample": settings.canary, "band_evidence": evidence, "worker": res.get("worker"), "seconds": res.get("seconds"),
               "canary_us": {shape_key_of(r): {k: r.get(k) for k in ("median_us", "ci_low_us", "ci_high_us")}
                             for r in res["results"]},
               "not_timed": [f"{shape_key_of(f)}: {'; '.join(f['reasons'])[:200]}" for f in res["failures"]]}
    if repeat is not None:
        record["repeat_seconds"], record["repeat_worker"] = repeat.get("seconds"), repeat.get("worker")
    if res.get("lost"):
        record["lost"] = res["lost"]
    mark_disturbed(life.run["results"], record)
    life.run["canary"] = record
    life.flush()
    return record
