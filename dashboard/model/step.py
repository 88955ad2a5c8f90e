"""A step run (`python -m profiler step`): the decode step per candidate, Amdahl predicted beside measured.

    has_step(run) -> bool
    points(data) -> [(batch, context)]
    amdahl_table(data, mode="cold") -> DataFrame    one row per (batch, context, candidate other than the baseline)
    family_table(data, mode="cold") -> DataFrame    one row per (batch, context, candidate, family): isolated vs in-step
    breakdown_table(data, mode="cold") -> DataFrame one row per (batch, context, candidate, part): µs of the step
    format_step_table(data, mode="cold") -> str     what `python -m dashboard step RUN.json` prints
    curve(p, speedups) -> [step speedup]            Amdahl's curve at projection share p (dashboard.model.planner)

Every number is measured in the run or derived from its measurements, and labelled so:
  step_us, measured (the step's paired ratio baseline/candidate with its bootstrap interval): measured;
  p = the baseline's projection time inside its step (the breakdown: a Kineto trace on CUDA, the wall clock per
      segment on CPU) / the baseline's step time in the same mode: derived;
  s_isolated = sum over the layer's projection families of the baseline's isolated per-shape median ÷ the
      candidate's (the same run's shapes at M = batch, cold, one call of each family per layer): derived;
  predicted = 1 / ((1 - p) + p / s_isolated) (dashboard.model.planner.amdahl_speedup): derived;
  s_in_step = the baseline's projection time inside the step ÷ the candidate's: derived, and
  predicted_in_step = Amdahl with s_in_step: the part of (measured - predicted) that comes from the projections
      running at another ratio inside the step than alone is predicted_in_step - predicted; the rest,
      measured - predicted_in_step, is the step's other time changing (or noise: see the interval).
`unattributed` in the breakdown is the step time less every segment's kernel time (gaps between kernels, launch
latency, the trace's marker launches; on CPU the clock reads): derived, and negative where the traced replay's
kernels took longer than the timed step's median.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dashboard.model import planner

MODES = ("cold", "warm")
ROLES = ("qkv", "o", "gate_up", "down")
OTHER_PARTS = ("attention", "norms_activations", "rest")
UNATTRIBUTED = "unattributed"
PART_TITLES = {"attention": "attention", "norms_activations": "norms, rotary, SiLU-mul", "rest": "residual adds",
               UNATTRIBUTED: "gaps and launches (unattributed)"}


def has_step(run: dict) -> bool:
    return isinstance(run, dict) and isinstance(run.get("step"), dict)


def _step(data) -> dict:
    if not has_step(data.run):
        raise ValueError(f"{data.path.name} is not a step run (no \"step\" object; `python -m profiler step` makes "
                         "one)")
    return data.run["step"]


def families(data) -> list[str]:
    """The layer's projection families in step order (qkv, o, gate_up, down) from the run's embedded workload."""
    layer = (data.run.get("workload") or {}).get("layer") or {}
    projections = layer.get("projections") or {}
    return [projections[r] for r in ROLES if r in projections]


def points(data) -> list[tuple[int, int]]:
    return [(p["point"]["batch"], p["point"]["context"]) for p in _step(data)["points"]]


def at_point(table: pd.DataFrame, batch: int, context: int) -> pd.DataFrame:
    """The rows of a step table (amdahl_table, breakdown_table, family_table) at one (batch, context) point."""
    return table[(table["batch"] == batch) & (table["context"] == context)] if len(table) else table


def baseline(data) -> str | None:
    names = _step(data).get("candidates") or []
    return names[0] if names else None


def _isolated(data, fams: list[str], batch: int) -> dict[str, dict[str, float]]:
    """{candidate: {family: isolated cold median µs at M = batch}} for correct results of the run's shapes."""
    res = data.results
    if res.empty:
        return {}
    rows = res[(res["M"] == batch) & res["family"].isin(fams) & res["correct"].astype(bool)]
    out: dict[str, dict[str, float]] = {}
    for r in rows.itertuples():
        out.setdefault(r.candidate, {})[r.family] = float(r.median_us)
    return out


def shapes_verdict(data, fams: list[str], batch: int, candidate: str) -> str:
    """Whether the candidate passed the contract at every projection shape of the step (the run's shapes at
    M = batch): "yes", or what failed -- a step that passes its own rule may still hold a projection the contract
    refuses (a lossy one whose error the step's tolerance does not see)."""
    res = data.results
    got = res[(res["M"] == batch) & res["family"].isin(fams) & (res["candidate"] == candidate)] if len(res) else res
    bad = sorted(set(got.loc[~got["correct"].astype(bool), "family"])) if len(got) else []
    failed = data.failures
    if len(failed) and {"M", "family", "candidate"} <= set(failed.columns):
        rows = failed[(failed["M"] == batch) & failed["family"].isin(fams) & (failed["candidate"] == candidate)]
        bad = sorted(set(bad) | set(rows["family"]))
    missing = sorted(set(fams) - set(got["family"]) - set(bad)) if len(got) else sorted(set(fams) - set(bad))
    if not bad and not missing:
        return "yes"
    return "; ".join(p for p in (f"failed the contract at {', '.join(bad)}" if bad else "",
                                 f"no result at {', '.join(missing)}" if missing else "") if p)


def _ratio(base: dict, cand: dict, fams: list[str]) -> float:
    if not all(f in base and f in cand for f in fams) or not fams:
        return math.nan
    return sum(base[f] for f in fams) / sum(cand[f] for f in fams)


def _in_step(rec: dict | None, mode: str) -> dict[str, float]:
    """{part: µs} of a candidate's step in `mode` (its breakdown), {} where it has none."""
    us = ((rec or {}).get("breakdown") or {}).get(mode) or {}
    return {k: float(v) for k, v in us.items()}


def _amdahl(p: float, s: float) -> float:
    if not (math.isfinite(p) and math.isfinite(s)) or s <= 0 or not 0 <= p <= 1:
        return math.nan
    return planner.amdahl_speedup(p, s)


def amdahl_table(data, mode: str = "cold") -> pd.DataFrame:
    """One row per (batch, context, candidate) paired with the baseline: measured vs predicted (module docstring)."""
    step, fams = _step(data), families(data)
    base = baseline(data)
    rows = []
    for rec in step["points"]:
        b, c = rec["point"]["batch"], rec["point"]["context"]
        by_name = {x["candidate"]: x for x in rec["candidates"]}
        iso = _isolated(data, fams, b)
        base_rec = by_name.get(base) or {}
        base_us = (base_rec.get(mode) or {}).get("median_us")
        base_parts = _in_step(base_rec, mode)
        base_proj = sum(base_parts.get(f, 0.0) for f in fams) if base_parts else math.nan
        p = base_proj / base_us if base_us and base_parts else math.nan
        for pair in rec["pairs"]:
            cand = pair["candidate"]
            cand_rec = by_name.get(cand) or {}
            ratio = pair[mode]
            parts = _in_step(cand_rec, mode)
            cand_proj = sum(parts.get(f, 0.0) for f in fams) if parts else math.nan
            s_iso = _ratio(iso.get(base, {}), iso.get(cand, {}), fams)
            s_in = base_proj / cand_proj if parts and base_parts and cand_proj > 0 else math.nan
            predicted, predicted_in = _amdahl(p, s_iso), _amdahl(p, s_in)
            measured = float(ratio["ratio_median"])
            rows.append({"batch": b, "context": c, "candidate": cand, "baseline": base, "mode": mode,
                         "baseline_us": base_us, "candidate_us": (cand_rec.get(mode) or {}).get("median_us"),
                         "p": p, "s_isolated": s_iso, "predicted": predicted, "measured": measured,
                         "measured_ci_low": ratio.get("ratio_ci_low"), "measured_ci_high": ratio.get("ratio_ci_high"),
                         "s_in_step": s_in, "predicted_in_step": predicted_in,
                         "from_projection_ratios": predicted_in - predicted,
                         "from_rest_of_step": measured - predicted_in,
                         "inside_interval": _inside(predicted, ratio.get("ratio_ci_low"), ratio.get("ratio_ci_high")),
                         "shapes_correct": shapes_verdict(data, fams, b, cand)})
    return pd.DataFrame(rows, columns=AMDAHL_COLUMNS)


AMDAHL_COLUMNS = ["batch", "context", "candidate", "baseline", "mode", "baseline_us", "candidate_us", "p",
                  "s_isolated", "predicted", "measured", "measured_ci_low", "measured_ci_high", "s_in_step",
                  "predicted_in_step", "from_projection_ratios", "from_rest_of_step", "inside_interval",
                  "shapes_correct"]


def _inside(value: float, lo, hi) -> str:
    if lo is None or hi is None or not math.isfinite(value):
        return "unknown"
    return "yes" if lo <= value <= hi else "no"


def family_table(data, mode: str = "cold") -> pd.DataFrame:
    """Per (batch, context, candidate, family): the isolated cold median per call (the run's shapes) and the
    in-step time per call (the breakdown in `mode` ÷ the step's layers), and their ratio in-step / isolated."""
    step, fams = _step(data), families(data)
    rows = []
    for rec in step["points"]:
        b, c, layers = rec["point"]["batch"], rec["point"]["context"], rec["point"]["layers"]
        iso = _isolated(data, fams, b)
        for cand in rec["candidates"]:
            parts = _in_step(cand, mode)
            if not parts:
                continue
            for f in fams:
                alone = iso.get(cand["candidate"], {}).get(f, math.nan)
                inside = parts.get(f, math.nan) / layers
                rows.append({"batch": b, "context": c, "candidate": cand["candidate"], "family": f,
                             "isolated_us": alone, "in_step_us": inside,
                             "in_step_over_isolated": inside / alone if alone and math.isfinite(alone) else math.nan})
    return pd.DataFrame(rows, columns=["batch", "context", "candidate", "family", "isolated_us", "in_step_us",
                                       "in_step_over_isolated"])


def breakdown_table(data, mode: str = "cold") -> pd.DataFrame:
    """Per (batch, context, candidate, part): µs of the step in that part (the families, attention, norms and
    activations, the rest, and the unattributed remainder of the step time in `mode`), and the breakdown's method."""
    step, fams = _step(data), families(data)
    rows = []
    for rec in step["points"]:
        b, c = rec["point"]["batch"], rec["point"]["context"]
        for cand in rec["candidates"]:
            parts, total = _in_step(cand, mode), (cand.get(mode) or {}).get("median_us")
            if not parts or total is None:
                continue
            method = cand["breakdown"]["method"]
            for part in (*fams, *OTHER_PARTS):
                rows.append({"batch": b, "context": c, "candidate": cand["candidate"], "part": part,
                             "us": parts.get(part, 0.0), "method": method})
            rows.append({"batch": b, "context": c, "candidate": cand["candidate"], "part": UNATTRIBUTED,
                         "us": total - sum(parts.values()), "method": "step time less the parts (derived)"})
    return pd.DataFrame(rows, columns=["batch", "context", "candidate", "part", "us", "method"])


def curve(p: float, speedups) -> list[float]:
    """Amdahl's step speedup at projection share p for each projection speedup (dashboard.model.planner)."""
    return [_amdahl(p, float(s)) for s in speedups]


def failures(data) -> list[str]:
    """One line per step failure of the run (a candidate not checked, wrong or lost at a point)."""
    out = []
    for rec in _step(data)["points"]:
        pt = rec["point"]
        for f in rec["failures"]:
            out.append(f"batch {pt['batch']} context {pt['context']}: {f['candidate']} {f['kind']} "
                       f"({f.get('phase', '?')}): {'; '.join(f['reasons'])[:240]}")
    return out


def on_cpu(data) -> bool:
    """The run was made on a CPU device (`--device cpu`): plumbing, not a GPU measurement."""
    return str(data.run.get("environment", {}).get("device") or "").startswith("cpu")


# --- text --------------------------------------------------------------------------------------------------------
DASH = "—"


def _cell(v, spec: str) -> str:
    return _f(v, spec, DASH)


def display_amdahl(amd: pd.DataFrame) -> pd.DataFrame:
    """amdahl_table as the page shows it: every number formatted, "—" where it cannot be formed (never nan)."""
    rows = []
    for r in amd.itertuples():
        rows.append({"batch": str(r.batch), "context": str(r.context), "candidate": r.candidate,
                     "baseline µs": _cell(r.baseline_us, ".1f"), "candidate µs": _cell(r.candidate_us, ".1f"),
                     "p (derived)": _cell(r.p, ".1%"), "s isolated (derived)": _cell(r.s_isolated, ".4f"),
                     "predicted ×": _cell(r.predicted, ".4f"), "measured ×": _cell(r.measured, ".4f"),
                     "measured 95% CI": f"{_cell(r.measured_ci_low, '.4f')} – {_cell(r.measured_ci_high, '.4f')}",
                     "s in step (derived)": _cell(r.s_in_step, ".4f"),
                     "pred. in-step ×": _cell(r.predicted_in_step, ".4f"),
                     "from projection ratios": _cell(r.from_projection_ratios, "+.4f"),
                     "from the rest of the step": _cell(r.from_rest_of_step, "+.4f"),
                     "predicted in interval": r.inside_interval,
                     "contract at its shapes": r.shapes_correct})
    return pd.DataFrame(rows)


def display_families(fam: pd.DataFrame) -> pd.DataFrame:
    """family_table as the page shows it ("—" where a number cannot be formed)."""
    return pd.DataFrame([{"candidate": r.candidate, "family": r.family,
                          "isolated µs/call (measured)": _cell(r.isolated_us, ".2f"),
                          "in-step µs/call (derived)": _cell(r.in_step_us, ".2f"),
                          "in-step ÷ isolated": _cell(r.in_step_over_isolated, ".3f")} for r in fam.itertuples()])


def _f(v, spec: str, none: str = "-") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return none
    return format(v, spec)


def format_step_table(data, mode: str = "cold") -> str:
    """The step view as text: Amdahl predicted vs measured per (point, candidate), then in-step vs isolated per
    family, then the failures."""
    step = _step(data)
    fams = families(data)
    methods = sorted({c["breakdown"]["method"] for r in step["points"] for c in r["candidates"]
                      if c.get("breakdown")})
    head = [f"{data.path.name}: decode step of {step['layers']} distinct layers, {mode} timing (measured); "
            f"projections {', '.join(fams)}",
            f"  breakdown: {'; '.join(methods) or 'none recorded'}",
            "  p = projection share of the baseline's step (derived); s = projection speedup, isolated (the run's "
            "shapes) and in the step (derived); predicted = 1/((1-p)+p/s) (derived)"]
    amd = amdahl_table(data, mode)
    lines = head + [""]
    cols = (f"{'batch':>5} {'ctx':>6}  {'candidate':<24} {'base µs':>9} {'cand µs':>9} {'p':>6} {'s iso':>7} "
            f"{'predicted':>9} {'measured [95% CI]':>26} {'s step':>7} {'pred(step)':>10}")
    lines += [cols, "-" * len(cols)]
    for r in amd.itertuples():
        ci = f"{_f(r.measured, '.4f')} [{_f(r.measured_ci_low, '.4f')},{_f(r.measured_ci_high, '.4f')}]"
        lines.append(f"{r.batch:>5} {r.context:>6}  {r.candidate[:24]:<24} {_f(r.baseline_us, '.1f'):>9} "
                     f"{_f(r.candidate_us, '.1f'):>9} {_f(r.p, '.1%'):>6} {_f(r.s_isolated, '.4f'):>7} "
                     f"{_f(r.predicted, '.4f'):>9} {ci:>26} {_f(r.s_in_step, '.4f'):>7} "
                     f"{_f(r.predicted_in_step, '.4f'):>10}")
    if amd.empty:
        lines.append("  (no candidate paired with the baseline at any point)")
    else:
        lines += ["", "  measured - predicted = (pred(step) - predicted: the projections' ratio inside the step vs "
                      "alone) + (measured - pred(step): the rest of the step)"]
        for r in amd.itertuples():
            lines.append(f"  batch {r.batch} context {r.context} {r.candidate}: "
                         f"{_f(r.measured - r.predicted, '+.4f')} = {_f(r.from_projection_ratios, '+.4f')} "
                         f"+ {_f(r.from_rest_of_step, '+.4f')}; predicted inside the measured interval: "
                         f"{r.inside_interval}; the contract at its shapes: {r.shapes_correct}")
    fam = family_table(data, mode)
    if not fam.empty:
        lines += ["", f"{'batch':>5} {'ctx':>6}  {'candidate':<24} {'family':<10} {'isolated µs':>11} "
                      f"{'in-step µs':>10} {'in/iso':>7}"]
        for r in fam.itertuples():
            lines.append(f"{r.batch:>5} {r.context:>6}  {r.candidate[:24]:<24} {r.family[:10]:<10} "
                         f"{_f(r.isolated_us, '.2f'):>11} {_f(r.in_step_us, '.2f'):>10} "
                         f"{_f(r.in_step_over_isolated, '.3f'):>7}")
        lines.append("  per call: in-step = the family's time in the step ÷ layers (derived from the breakdown); "
                     "isolated = the run's cold shape median (measured)")
    bad = failures(data)
    if bad:
        lines += ["", *(f"FAILED {line}" for line in bad)]
    return "\n".join(lines)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("math", "np", "pd", "planner")]
