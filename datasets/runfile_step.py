"""Schema of a step run's addition (profiler/README.md, 'Step run'): the top-level `step` object that
`python -m profiler step` writes beside the ordinary results and pairs of the layer's projection shapes.

    "step": {"layers", "batches", "contexts", "seconds_per_mode", "candidates", "seconds"?, "points": [point, ...]}
    point: {"point": {"batch", "context", "layers", "tolerance", "projection_bytes"},
            "candidates": [{"candidate", "correct", "error": {"rel_l2", "vs_baseline_step"?, "vs_baseline"?, "reasons"}, "flags"?,
                            "cold"?, "warm"?: {"median_us", "ci_low_us", "ci_high_us", "n_samples", ...},
                            "breakdown"?: {"method", "cold": {class: µs}, "warm": {class: µs}},
                            "breakdown_error"?}],
            "pairs": [{"baseline", "candidate", "cold", "warm": {"ratio_median", "ratio_ci_low", "ratio_ci_high",
                                                               "rse", "n_pairs"}}],
            "failures": [{"batch", "context", "candidate", "kind", "phase", "reasons"}], "worker"?}

Kept apart from runfile.py, which calls validate_step() for every run: a run without `step` is unaffected. Errors
name the JSON path, e.g. `..._step-baseline.json: step.points[2].candidates[1].cold.median_us: expected ...`.
"""
from __future__ import annotations

import math

MAX_STEP_US = 6e7     # a decode step over a minute is no measurement of one (a CPU step at a test size is ~1 ms)
MAX_POINTS = 1024

STEP = [("layers", "positive integer", True), ("batches", "list", True), ("contexts", "list", True),
        ("seconds_per_mode", "positive number", True), ("candidates", "list of strings", True),
        ("points", "list", True), ("seconds", "non-negative number or null", False)]
POINT = [("batch", "M", True), ("context", "positive integer", True), ("layers", "positive integer", True),
         ("tolerance", "positive number", True), ("projection_bytes", "positive integer", True)]
RECORD = [("point", "object", True), ("candidates", "list", True), ("pairs", "list", True),
          ("failures", "list", True), ("worker", "integer", False)]
CANDIDATE = [("candidate", "non-empty string", True), ("correct", "boolean", True), ("error", "object or null", False),
             ("flags", "list of strings", False), ("cold", "object", False), ("warm", "object", False),
             ("breakdown", "object or null", False), ("breakdown_error", "string", False)]
ERROR = [("rel_l2", "non-negative number or null", False), ("vs_baseline_step", "non-negative number or null", False),
         ("vs_baseline", "non-negative number or null", False), ("reasons", "list of strings", False)]
TIMES = [("median_us", "number", True), ("ci_low_us", "number or null", False), ("ci_high_us", "number or null", False),
         ("n_samples", "non-negative integer", True), ("stopped_by", "string", False),
         ("dropped_rounds", "non-negative integer", False)]
BREAKDOWN = [("method", "non-empty string", True), ("cold", "object", True), ("warm", "object", True)]
RATIO = [("ratio_median", "positive number", True), ("ratio_ci_low", "positive number or null", False),
         ("ratio_ci_high", "positive number or null", False), ("rse", "non-negative number or null", False),
         ("n_pairs", "non-negative integer", True)]
PAIR = [("baseline", "non-empty string", True), ("candidate", "non-empty string", True), ("cold", "object", True),
        ("warm", "object", True)]
FAILURE = [("batch", "M", True), ("context", "positive integer", True), ("candidate", "non-empty string", True),
           ("kind", "string", True), ("phase", "string", False), ("reasons", "list of strings", True)]
MODES = ("cold", "warm")


def _step_time(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 < v <= MAX_STEP_US


def validate_step(run: dict, fail, check_record) -> None:
    """Check the run's `step` object where present; `fail(path, problem)` raises."""
    if "step" not in run:
        return
    step = run["step"]
    check_record(step, STEP, "step", fail)
    workload = run.get("workload")
    if isinstance(workload, dict) and not isinstance(workload.get("layer"), dict):
        fail("workload.layer", "missing: a step run's workload declares the decoder layer its step ran")
    for key, kind in (("batches", "M"), ("contexts", "positive integer")):
        for i, v in enumerate(step[key]):
            check_record({"v": v}, [("v", kind, True)], f"step.{key}[{i}]", fail)
    if len(step["points"]) > MAX_POINTS:
        fail("step.points", f"{len(step['points']):,} points is over the limit {MAX_POINTS:,}")
    seen: dict[tuple, int] = {}
    for i, rec in enumerate(step["points"]):
        where = f"step.points[{i}]"
        check_record(rec, RECORD, where, fail)
        check_record(rec["point"], POINT, f"{where}.point", fail)
        key = (rec["point"]["batch"], rec["point"]["context"])
        if key in seen:
            fail(f"{where}.point", f"duplicate point batch {key[0]} context {key[1]} "
                                   f"(first at step.points[{seen[key]}])")
        seen[key] = i
        _check_point(rec, where, fail, check_record)


def _check_point(rec: dict, where: str, fail, check_record) -> None:
    timed: set[str] = set()
    names: set[str] = set()
    for j, c in enumerate(rec["candidates"]):
        at = f"{where}.candidates[{j}]"
        check_record(c, CANDIDATE, at, fail, null_ok=True)
        if c["candidate"] in names:
            fail(f"{at}.candidate", f"duplicate candidate {c['candidate']!r} at this point")
        names.add(c["candidate"])
        if c.get("error") is not None:
            check_record(c["error"], ERROR, f"{at}.error", fail, null_ok=True)
            if c["correct"] and c["error"].get("reasons"):
                fail(f"{at}.correct", f"true, but error.reasons holds {len(c['error']['reasons'])} reason(s) "
                                      "against it")
        modes = [m for m in MODES if c.get(m) is not None]
        if modes and not c["correct"]:
            fail(f"{at}.{modes[0]}", "an incorrect step has no times (a step judged wrong is never timed or its "
                                     "times are dropped)")
        for m in modes:
            check_record(c[m], TIMES, f"{at}.{m}", fail, null_ok=True)
            for key in ("median_us", "ci_low_us", "ci_high_us"):
                v = c[m].get(key)
                if v is not None and not _step_time(v):
                    fail(f"{at}.{m}.{key}", f"expected a step time in µs, 0 < t <= {MAX_STEP_US:.0e}, got {v!r}")
            lo, hi = c[m].get("ci_low_us"), c[m].get("ci_high_us")
            if lo is not None and hi is not None and lo > hi:
                fail(f"{at}.{m}.ci_low_us", f"the interval's low end {lo!r} is above its high end {hi!r}")
        if len(modes) == len(MODES):
            timed.add(c["candidate"])
        if c.get("breakdown") is not None:
            check_record(c["breakdown"], BREAKDOWN, f"{at}.breakdown", fail)
            for m in MODES:
                for cls, v in c["breakdown"][m].items():
                    if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
                        fail(f"{at}.breakdown.{m}.{cls}", f"expected a time in µs >= 0, got {v!r}")
    for j, p in enumerate(rec["pairs"]):
        at = f"{where}.pairs[{j}]"
        check_record(p, PAIR, at, fail)
        for role in ("baseline", "candidate"):
            if p[role] not in timed:
                fail(f"{at}.{role}", f"{p[role]!r} has no correct, timed step at this point")
        for m in MODES:
            check_record(p[m], RATIO, f"{at}.{m}", fail, null_ok=True)
            lo, hi = p[m].get("ratio_ci_low"), p[m].get("ratio_ci_high")
            if lo is not None and hi is not None and lo > hi:
                fail(f"{at}.{m}.ratio_ci_low", f"the interval's low end {lo!r} is above its high end {hi!r}")
    for j, f in enumerate(rec["failures"]):
        check_record(f, FAILURE, f"{where}.failures[{j}]", fail)
