"""The parent's checks of a shape task's reply against what the parent can see itself. Candidate code runs in the
worker, so anything the worker says may have been written by it; the numbers a run file records are the ones the
parent derives here.

    verify_shape_reply(reply, timing_wall_s, seed, floor=None, error_factor=None) -> [reason, ...]

- Summaries are recomputed from the raw samples (median_us and its CI per result; ratio, CI, RSE and n_pairs per
  pair, from the two candidates' columns), and the parent's values replace the worker's; a worker summary that is not
  what its own samples give is a reason.
- Every timed candidate of a shape is sampled in the same paired rounds: each result's samples_us has n_samples
  entries, all results the same number, every sample a positive finite time.
- The samples of the timing phase are disjoint intervals of one stream (GPU) or one thread (CPU): their sum cannot
  exceed the wall-clock seconds the parent itself saw between the worker's "time" step and its answer
  (`timing_wall_s`, profiler.worker.process.Worker.phase_seconds), allowing WALL_SLACK_S for the clocks' reads.

- Every flag is the parent's: a result's flags are derived again here (profiler.worker.records.result_flags) from
  the parent's own summary of the raw samples, the floor the parent sent with the task (below_floor: faster than
  the device can read the bytes, a speed-of-light share over 100 %), the result's sample and throttle counts and
  its error ratio; the flags the worker sent are dropped, never merged (a worker that leaves out below_floor records
  nothing by it).

A reply that fails one is not recorded: every candidate of the task gets a failure naming the reason, and the worker
that sent it is replaced. What these checks cannot see -- a forger that makes its own times smaller yet still
possible -- is for the layers in the worker's process (the source screen, profiler.worker.integrity); docs/trust.md.
"""
from __future__ import annotations

import math

import numpy as np

from profiler.measure.stats import summarize_pairs, summarize_samples
from datasets.noise_model import shape_key
from profiler.worker.records import result_flags

FORGED = "the worker's reply failed the parent's checks (in-process forging)"
WALL_SLACK_S = 0.05          # two monotonic-clock reads and the pipe's latency, generously
SUMMARY_REL_TOL = 1e-3       # samples are recorded to 1e-4 us; a summary further off than this was not computed
                             # from them


def _finite(v):
    return v if v is not None and math.isfinite(v) else None


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= SUMMARY_REL_TOL * max(abs(a), abs(b), 1e-9)


def verify_shape_reply(reply: dict, timing_wall_s: float | None, seed: int = 0, floor: dict | None = None,
                       error_factor: float | None = None, device: str | None = None) -> list[str]:
    """Reasons the reply cannot be believed ([] when none); on [] the results' and pairs' summaries and the
    results' flags are the parent's own, derived from the samples and the parent's `floor`."""
    results = reply.get("results") or []
    if not results:
        return []
    reasons, samples = [], {}
    for r in results:
        s = r.get("samples_us")
        if not isinstance(s, list) or not s or not all(isinstance(v, (int, float)) for v in s):
            reasons.append(f"{r.get('candidate')}: no raw samples")
            continue
        x = np.asarray(s, dtype=np.float64)
        if not (np.isfinite(x).all() and (x > 0).all()):
            reasons.append(f"{r['candidate']}: a sample that is not a positive finite time")
            continue
        if r.get("n_samples") != x.size:
            reasons.append(f"{r['candidate']}: n_samples {r.get('n_samples')} but {x.size} samples")
        summ = summarize_samples(x, seed=seed)
        if not _close(r.get("median_us"), summ["median_us"]):
            reasons.append(f"{r['candidate']}: median_us {r.get('median_us')} is not the median of its own samples "
                           f"({summ['median_us']:.4f})")
        r.update(median_us=summ["median_us"], ci_low_us=_finite(summ["ci_low_us"]),
                 ci_high_us=_finite(summ["ci_high_us"]))
        throttled = r.get("throttled_samples")
        vs = (r.get("error") or {}).get("vs_baseline") if isinstance(r.get("error"), dict) else None
        r["flags"] = result_flags(summ["median_us"], r["ci_low_us"], r["ci_high_us"], floor,
                                  throttled if isinstance(throttled, int) and throttled > 0 else 0,
                                  vs if isinstance(vs, (int, float)) else None, error_factor, device=device,
                                  key=shape_key(str(r.get("family")), int(r.get("M") or 0)) if device else None)
        r["floor_us"] = (floor or {}).get("us")
        samples[r["candidate"]] = x
    if len({x.size for x in samples.values()}) > 1:
        reasons.append("the candidates of one paired timing have different sample counts: "
                       + ", ".join(f"{k} {x.size}" for k, x in samples.items()))
    total_s = sum(float(x.sum()) for x in samples.values()) * 1e-6
    if timing_wall_s is not None and total_s > timing_wall_s + WALL_SLACK_S:
        reasons.append(f"the samples add up to {total_s:.3f} s of timed calls, but the timing phase took "
                       f"{timing_wall_s:.3f} s on the parent's clock")
    for p in reply.get("pairs") or []:
        base, cand = samples.get(p.get("baseline")), samples.get(p.get("candidate"))
        if base is None or cand is None or base.size != cand.size:
            reasons.append(f"pair {p.get('baseline')}/{p.get('candidate')}: no paired samples to derive it from")
            continue
        q = summarize_pairs(base, cand, seed=seed)
        if not _close(p.get("ratio_median"), q["ratio_median"]):
            reasons.append(f"pair {p['baseline']}/{p['candidate']}: ratio {p.get('ratio_median')} is not what its "
                           f"samples give ({q['ratio_median']:.4f})")
        p.update(ratio_median=q["ratio_median"], ratio_ci_low=_finite(q["ratio_ci_low"]),
                 ratio_ci_high=_finite(q["ratio_ci_high"]), rse=_finite(q["rse"]), n_pairs=q["n_pairs"],
                 ratios=[round(v, 6) for v in q["ratios"]])
    return reasons
