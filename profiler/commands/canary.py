"""The canary: the baseline timed in a worker that never loaded a candidate, compared with the baseline's times in
the worker that timed it beside the candidates. A candidate can reach process-wide state the guard does not see
(a library handle configured at import, an allocator setting, a background stream); whatever it changed shows as a
baseline that runs at another speed in its worker than in a clean one.

    canary_shapes(shapes, sample) -> the shapes the canary times ("all", or per family two: "sample")
    verdict(canary_results, paired_results, baseline, band=CANARY_BAND) -> the run file's `canary` record
    time_canary(backend, shapes, baseline_spec, task_base, settings) -> the canary's times (before the sweep)
    record_canary(life, times, baseline, settings) -> that record, in life.run["canary"], with the paired
        baseline's results at the disturbed shapes flagged DISTURBED_FLAG (the score gate refuses them)
    CANARY: the Task (profiler.backends.base) that times the baseline alone in a worker that loaded nothing else

When: on every sweep with a baseline, FIRST, at every shape of the run (`--canary all`, the default: a
disturbance at any family and M is compared, so it is found wherever it exceeds the band; `--canary sample`: per
family the smallest and the largest M only, 10 of the 30 official shapes; `--canary off`: none), in the sweep's
first worker process before it loads any other candidate (a fresh process when the current one has loaded one);
that process then goes on to the sweep. Then the sample shapes once more, in the same clean worker: the device's
own repeat evidence the band is derived from (device_band). Its cost is the baseline's timing alone at every shape
plus the sample's, and no worker start (the canary record's `seconds` says what it cost): one candidate's quick
check and timing per shape, against the paired sweep's two or more candidates with the full contract. On the H200:
the sample canary took 1.5-2.3 s and the all-shape canary 4.0-4.8 s (datasets/runs/2026-12-02_nvidia-h200_baseline-
alone-canary-all, ..._baseline-vs-two-controls-canary-all, 2026-12-04_nvidia-h200_baseline-vs-best-lt-b/-c), beside
a baseline-vs-best sweep's 21-26 s of wall time: all shapes plus the repeat of the sample are expected to add ~4.5 s,
about 1.2x the sweep's time (derived from those files; the H200 run measures it).

Rule: at each shape both sides have a median and a 95% CI; the shape is disturbed when the paired median differs
from the canary's by more than the run-to-run band (either way: a faster baseline is as suspect as a slower one)
AND the two CIs do not overlap. Any disturbed shape makes the verdict "baseline disturbed": the pair has no score.

The band is the device's own (device_band): max(CANARY_BAND, e^(3 s) - 1), s the largest clean-vs-clean spread of
the repeat. CANARY_BAND, the floor, comes from the H200: per-shape baseline medians of the committed official sweeps of 2026-12-01 (datasets/runs/
2026-12-01_nvidia-h200_baseline-seed036-best-r20 -> r23 -> r25 -> r28, fresh processes each) differed by a factor
0.938-1.061, and the 85-shape baseline-vs-baseline runs of 2026-11-30 (-a / -b) by 0.956-1.092. Timing the
baseline beside other candidates adds its own part, even when they are harmless: with two plain F.linear
controls timed beside it the paired baseline ran a median 0.42 us slower than the canary, up to 1.101x at
decode 16/o (2026-12-02_nvidia-h200_baseline-vs-two-controls-canary-all), against 0.969-1.059 when it was timed
alone (..._baseline-alone-canary-all); the known-wrong sweep, 3 candidates timed per shape, showed the same
offset (0.985-1.103, ..._baseline-vs-known-wrong-own-weights, verdict taken with a 10 % band). 15 % lies above
all of these. The slowdowns the canary exists for were 1.5-13.7x (a candidate's CUBLAS_WORKSPACE_CONFIG=:0:0 at
import) and 2x (a candidate that scaled the shared weights, before each prepare() got its own copy).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, replace
from typing import Iterable, Sequence

from datasets.runfile import DISTURBED_FLAG
from datasets.shapes import shape_key_of
from profiler.backends.base import Task
from profiler.backends.isolate import LOAD, loaded_names, measure_shape_isolated

CANARY_BAND = 0.15               # benign spread of a baseline median, paired vs alone in a clean process (docstring):
                                 # the band's floor on any device
REPEAT_FACTOR = 3.0              # band >= 3 x the device's own clean-vs-clean spread (device_band's docstring)
OK, DISTURBED, NOT_COMPARED = "ok", "baseline disturbed", "not compared"


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
        ms = [int(s["M"]) for s in shapes if s["family"] == fam]
        picked[fam] = {min(ms), max(ms)}
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


def device_band(first: Iterable[dict], repeat: Iterable[dict], baseline: str) -> tuple[float, dict]:
    """The band on this device, from its own repeat evidence: the canary times the baseline at the repeat shapes a
    second time in the same clean worker; s = the largest |ln(first / second)| of the medians there. Paired-vs-clean
    carries that noise on both sides and the offset of being timed beside other candidates; on the H200 that offset
    (up to 10.1 %) was 1.6 x the clean run-to-run spread (6.2 %) -- hence band = max(CANARY_BAND, e^(3 s) - 1), 3 =
    1 (the noise) + 1.6 (the offset) rounded up. On the H200 (s <= 0.06) the floor decides; on an idle 2-core CPU
    with a wall-clock timer the spread is wider and the band follows it, so a correct F.linear control is no longer
    called disturbed there. -> (band, {"repeat_spread", "repeat_shapes", "floor", "factor"})"""
    a, b = _times(first, baseline), _times(repeat, baseline)
    logs = [abs(math.log(float(b[k]["median_us"]) / float(a[k]["median_us"]))) for k in a if k in b]
    spread = max(logs) if logs else 0.0
    band = max(CANARY_BAND, math.expm1(REPEAT_FACTOR * spread))
    return round(band, 4), {"repeat_spread": round(spread, 4), "repeat_shapes": len(logs), "floor": CANARY_BAND,
                            "factor": REPEAT_FACTOR}


def verdict(canary_results: Iterable[dict], paired_results: Iterable[dict], baseline: str,
            band: float = CANARY_BAND) -> dict:
    """The `canary` record: {"verdict", "band", "baseline", "compared": n shapes, "shapes": the disturbed ones
    [{"key", "canary_us", "paired_us", "ratio"}], "ratios": {key: paired / canary}}."""
    clean, paired = _times(canary_results, baseline), _times(paired_results, baseline)
    common = [k for k in clean if k in paired]
    limit = math.log1p(band)
    ratios, disturbed = {}, []
    for key in common:
        c, p = clean[key], paired[key]
        ratio = float(p["median_us"]) / float(c["median_us"])
        ratios[key] = round(ratio, 4)
        if abs(math.log(ratio)) > limit and not _overlap(c, p):
            disturbed.append({"key": key, "canary_us": float(c["median_us"]), "paired_us": float(p["median_us"]),
                              "ratio": round(ratio, 4)})
    state = NOT_COMPARED if not common else DISTURBED if disturbed else OK
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
    record["started_for"] = f"{record['started_for']}; canary (the baseline alone, before any candidate)"
    results, failures, repeat = [], [], []
    baseline = {"spec": baseline_spec, "name": name}
    for shape in shapes:
        merged = measure_shape_isolated(pool, shape, [baseline], task_base | {"floor": None}, settings, {}, pool.log)
        results += merged["results"]
        failures += merged["failures"]
    for shape in canary_shapes(shapes, "sample"):   # the device's repeat evidence (device_band)
        repeat += measure_shape_isolated(pool, shape, [baseline], task_base | {"floor": None}, settings, {},
                                         pool.log)["results"]
    return {"results": results, "failures": failures, "worker": worker, "name": name, "repeat": repeat}


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


def record_canary(life, res: dict | None, baseline: str, settings) -> dict | None:
    """The canary's verdict on the paired baseline `baseline` (its name in life.run) from time_canary's result:
    stored in life.run["canary"], the paired baseline's results flagged where disturbed, flushed."""
    if res is None:
        return None
    band, evidence = device_band(res["results"], res.get("repeat", []), baseline)
    record = verdict(res["results"], life.run["results"], baseline, band=band)
    record |= {"sample": settings.canary, "band_evidence": evidence, "worker": res.get("worker"), "seconds": res.get("seconds"),
               "canary_us": {shape_key_of(r): {k: r.get(k) for k in ("median_us", "ci_low_us", "ci_high_us")}
                             for r in res["results"]},
               "not_timed": [f"{shape_key_of(f)}: {'; '.join(f['reasons'])[:200]}" for f in res["failures"]]}
    if res.get("lost"):
        record["lost"] = res["lost"]
    mark_disturbed(life.run["results"], record)
    life.run["canary"] = record
    life.flush()
    return record
