"""Run-file records built on both sides of the process boundary (failure records: profiler/README.md)."""
from __future__ import annotations

import math

from datasets.shapes import shape_identity

INCIDENT_KINDS = ("died", "timeout", "cuda_fault", "exit", "tainted")  # a worker was lost to the candidate


def finite(v):
    return float(v) if v is not None and math.isfinite(v) else None



def failure_record(shape: dict, candidate: str, kind: str, phase: str, reasons: list[str], **extra) -> dict:
    """A run file `failures` record (profiler/README.md)."""
    return shape_identity(shape) | {"candidate": candidate, "kind": kind, "phase": phase,
                   "reasons": [str(r)[:600] for r in reasons]} | extra



NOT_IN_REPLY = ("the worker's reply recorded no failure for it, though its judge had sent this one: the reply or the "
                "harness's records were changed in the worker (in-process forging)")


def apply_verdicts(result: dict, verdicts: list[dict], note: str | None = NOT_IN_REPLY) -> dict:
    """A shape task's result with the judge's verdicts the worker sent while it ran (profiler.worker.steps.verdict)
    applied by the parent: each candidate with one has no result and no pair at this shape, and a failure
    ("incorrect" at "time") -- its own where the reply kept one, else the verdict's reasons, said to be missing from
    the worker's reply (`note`; None for the parent's own judge, whose verdicts the worker never knew). A verdict is
    sent before any other candidate code runs, so what a candidate changes in the worker afterwards (the reply, the
    harness's records of it) cannot take it back."""
    if not isinstance(result, dict) or not isinstance(result.get("results"), list):
        return result
    failures = result.setdefault("failures", [])
    for v in verdicts:
        name, reasons = v.get("candidate"), [str(r) for r in (v.get("reasons") or [])][:4]
        if not isinstance(name, str) or not reasons or not isinstance(v.get("shape"), dict):
            continue
        result["results"] = [r for r in result["results"] if r.get("candidate") != name]
        result["pairs"] = [p for p in result.get("pairs") or [] if name not in (p.get("candidate"), p.get("baseline"))]
        if not any(f.get("candidate") == name for f in failures):
            failures.append(failure_record(v["shape"], name, "incorrect", "time", reasons + ([note] if note else [])))
    return result


def result_flags(median_us, lo, hi, floor: dict | None, dropped, vs_baseline=None, error_factor=None,
                 device: str | None = None, key: str | None = None) -> list[str]:
    """A result's flags, from its summary and the parent's floor -- computed the same way by the worker and, from
    the raw samples, again by the parent, whose flags replace the worker's (profiler/backends/verify.py).
    below_floor: under the probe floor by more than the probe's noise (its CI low, or its median where the probe
    has no CI): faster than the device can read the bytes; throttled; wide_ci; less_accurate: error >
    error_factor x the baseline's. `device`, `key`: the device that timed it and its noise_model.shape_key, whose
    within-run band says what is wide (the parent knows the device; the worker's flags are replaced anyway)."""
    from profiler.measure import stats

    flags = []
    if floor is not None:
        bound = floor.get("ci_low_us") if floor.get("ci_low_us") is not None else floor.get("us")
        if bound is not None and median_us < bound:
            flags.append("below_floor")
    if dropped:
        flags.append("throttled")
    if stats.ci_too_wide(median_us, lo if lo is not None else float("nan"), hi if hi is not None else float("nan"),
                         device=device, key=key):
        flags.append("wide_ci")
    if error_factor is not None and vs_baseline is not None and vs_baseline > error_factor:
        flags.append("less_accurate")
    return flags
