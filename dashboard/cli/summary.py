"""Plain-text summary of a ScoreBreakdown (used by the CLI; kept apart so the app or a report can reuse it)."""
from __future__ import annotations

import math
import textwrap

import pandas as pd

from datasets import devices
from dashboard.model.scoring import ScoreBreakdown

CPU_TIMES = ("every time is a wall-clock eager call, host dispatch included (no CUDA graph); floors come from this "
             "CPU's fastest read and product rates, measured in this run. A CPU time ranks candidates on this "
             "machine and checks them; it says nothing about a GPU's times")


def plan_device_notes(run: dict) -> list[str]:
    """One line per plan candidate of `run` tuned on another kind of device than the run's (the run records each
    plan's `gpu`: environment.plans_tuned_on), naming the tuner as the way to tune it for this one."""
    env = run.get("environment") if isinstance(run, dict) else None
    tuned = (env or {}).get("plans_tuned_on") if isinstance(env, dict) else None
    here = devices.device_of(run)
    out = []
    for name, gpu in (tuned or {}).items() if isinstance(tuned, dict) else ():
        if gpu and not devices.same_kind(gpu, here):
            workload = (run.get("workload") or {}).get("name") if isinstance(run.get("workload"), dict) else None
            flag = " --device cpu" if devices.lookup(here).is_cpu else ""
            out.append(f"{name}: a plan tuned on {gpu}, run here on {here or 'an unrecorded device'}: its choices "
                       f"were timed on another device. Tune it for this one: python -m profiler tune{flag} "
                       f"--shapes official" + (f" --workload {workload}" if workload else "")
                       + f" --out-plan kernels/plans/<name>.json")
    return out


def device_lines(run: dict, results: pd.DataFrame | None = None) -> list[str]:
    """Header lines for a run whose device needs saying: a CPU's (what its times include, and each plan's routing,
    timed apart: `dispatch_us` in its results, profiler.commands.sweep.record_host_dispatch); any plan tuned on
    another device (plan_device_notes)."""
    dev = devices.of_run(run)
    notes = [f"  note: {n}" for n in plan_device_notes(run)]
    if not dev.is_cpu:
        return notes
    lines = [f"  device: {dev.key}: {CPU_TIMES}"] + notes
    if results is not None and len(results) and "dispatch_us" in results:
        for cand, g in results.groupby("candidate", sort=False):
            us = [float(v) for v in g["dispatch_us"] if isinstance(v, (int, float)) and math.isfinite(v)]
            if us:
                lines.append(f"  {cand}: a plan; its routing (entry lookup and shape check) inside each timed call, "
                             f"timed apart: {min(us):.2f}-{max(us):.2f} µs per call over {len(us)} shapes (a module "
                             f"running the same product pays none)")
    return lines


def format_loads(loads: pd.DataFrame, title: str) -> str:
    """Table of per-load weighted sums (w = 62 per shape) and ratios."""
    lines = [title, f"  {'load':<12}{'baseline Σw·t µs':>18}{'candidate Σw·t µs':>19}{'ratio':>9}"]
    for r in loads.itertuples():
        lines.append(f"  {r.load:<12}{r.baseline_sum_us:>18,.2f}{r.candidate_sum_us:>19,.2f}{r.ratio:>9.4f}")
    return "\n".join(lines)


def format_breakdown(b: ScoreBreakdown, title: str) -> str:
    lines = [format_loads(b.loads, title)]
    lines += [f"  score (geometric mean of load ratios): {b.score:.6f}" + (f"  [{b.screen}]" if b.screen else ""),
              f"  time saved: {b.time_saved:.2%}",
              f"  score-equivalent time: {b.baseline} {b.equiv_baseline_us:,.2f} µs, "
              f"{b.candidate} {b.equiv_candidate_us:,.2f} µs"]
    if b.accuracy:
        lines.append(f"  {b.candidate}: {b.accuracy}")
    return "\n".join(lines)


def format_unscored_pairs(pairs: pd.DataFrame, gates: dict, title: str, same_route: dict | None = None) -> str:
    """Shapes outside the scored set (nearby): per pair, how many shapes, how many pass the gate (both sides
    correct and timed), and the spread of per-shape paired ratios over those. Deliberately no geometric mean:
    nearby shapes are never scored. `gates` maps (baseline, candidate) → dashboard.model.scoring.Gate; `same_route` maps
    it to the shapes where the candidate ran the baseline's own route (dashboard.model.views.same_route): their
    ratios are the spread of two timings of one call, so they are reported apart from the others."""
    lines = [title]
    for (base, cand), grp in pairs.groupby(["baseline", "candidate"], sort=False):
        gate = gates[(base, cand)]
        ok = set(gate.usable["shape"])
        same = set((same_route or {}).get((base, cand), ()))
        usable = grp[grp["shape"].isin(ok)]
        r = usable.loc[~usable["shape"].isin(same), "ratio_median"]
        r_same = usable.loc[usable["shape"].isin(same), "ratio_median"]
        head = f"  {cand} vs {base}: {len(gate.shapes)} shapes, {len(ok)} correct and timed on both sides"
        if usable.empty:
            lines.append(f"{head}; no per-shape ratio")
        else:
            spread = "" if r.empty else (
                f"per-shape ratio min {r.min():.3f} ({_shape_name(grp.loc[r.idxmin()])}), median {r.median():.3f}, "
                f"max {r.max():.3f}")
            if len(r_same):
                spread = f"where it runs its own route ({len(r)} shapes): {spread or 'none'}"
            lines.append(f"{head}; {spread}")
            if len(r_same):
                lines.append(f"    {len(r_same)} shapes run the baseline's own route (the same call on both sides): "
                             f"ratios {r_same.min():.3f} ({_shape_name(grp.loc[r_same.idxmin()])}) – "
                             f"{r_same.max():.3f}, the spread of timing one call twice")
        if not gate.ok:
            lines.append(f"    {gate.message()}")
    return "\n".join(lines)


def _shape_name(row) -> str:
    return f"{row['family']} M={int(row['M'])}"


METHOD_COLUMN = 44  # characters; a longer method wraps onto continuation lines, between its words
RATIO_COLUMN, PAIRED_COLUMN = 7, 26  # the ratio, two spaces, the paired ratio with its CI; a status spans all three
STATUS_WORDS = {"failed": "FAILED", "incorrect": "INCORRECT", "below_floor": "BELOW FLOOR", "missing": "no time",
                "disturbed": "DISTURBED"}


def _method_lines(method: str) -> list[str]:
    """A method label cut into lines of the method column at spaces, never inside a word ('cache=.cg' stays whole;
    a single word longer than the column gets a line of its own and runs over)."""
    return textwrap.wrap(method, METHOD_COLUMN - 1, break_long_words=False, break_on_hyphens=False) or [""]


def _status_cell(r) -> str:
    """What a row shows instead of a ratio when the gate keeps it out: the worse side's status and whose."""
    for role in ("candidate", "baseline"):
        status = getattr(r, f"status_{role}")
        if status != "ok":
            return f"{STATUS_WORDS.get(status, status)} ({role})"
    return ""


def format_shape_table(wide: pd.DataFrame, methods: dict, sol: pd.DataFrame, title: str) -> str:
    """The per-shape benchmark table: method, µs, ratio with CI, floor, SOL, bound; then SOL per load.

    `wide` is dashboard.model.views.wide_shapes output, `methods` maps shape → the candidate's method string,
    `sol` is dashboard.model.views.load_sol output. Long method labels wrap within their column; '(= baseline)' marks a
    shape where the candidate ran the baseline's own route; a shape the gate keeps out shows its status instead
    of ratios."""
    lines = [title, f"  {'shape':<20}{'M':>4}  {'method':<{METHOD_COLUMN}}{'base µs':>9}{'cand µs':>9}"
                    f"{'ratio':>{RATIO_COLUMN}}  {'paired [95% CI]':<{PAIRED_COLUMN}}{'floor µs':>9}{'SOL':>7}  bound",
             "  (ratio = ratio of the medians, what the score sums; paired = median of per-round ratios, with its CI)"]
    for r in wide.itertuples():
        usable = getattr(r, "usable", True)
        paired = (f"{r.ratio_paired:.3f} [{r.ratio_ci_low:.3f},{r.ratio_ci_high:.3f}]"
                  if pd.notna(r.ratio_ci_low) else "")
        ratio = (f"{r.ratio:>{RATIO_COLUMN}.3f}  {paired:<{PAIRED_COLUMN}}" if usable
                 else f"  {_status_cell(r):<{RATIO_COLUMN + PAIRED_COLUMN}}")
        label = str(methods.get(r.shape, "") or "")
        first, *more = _method_lines(label + (" (= baseline)" if label and getattr(r, "same_route", False) else ""))
        lines.append(f"  {r.shape:<20}{int(r.M):>4}  {first:<{METHOD_COLUMN}}"
                     f"{_num(r.baseline_us, 9)}{_num(r.candidate_us, 9)}{ratio}"
                     f"{_num(r.floor_us, 9, unknown='no floor')}"
                     f"{_pct_cell(_div(r.floor_us, r.candidate_us), 7)}  {r.bound}")
        lines += [f"  {'':<20}{'':>4}  {part}" for part in more]
    lines.append("  SOL per load (Σ floor ÷ Σ time; floors from the run's probes and compute peak; none for a load "
                 "with a shape the gate keeps out):")
    for r in sol.itertuples():
        lines.append(f"    {r.load:<12} baseline {_pct_cell(r.sol_baseline, 6, 'none')}   "
                     f"candidate {_pct_cell(r.sol_candidate, 6, 'none')}")
    return "\n".join(lines)


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _div(a, b):
    return float(a) / float(b) if _finite(a) and _finite(b) and float(b) > 0 else math.nan


def _num(x, width: int, unknown: str = "no time") -> str:
    """A right-aligned µs cell that never runs into its neighbour (a space before it, whatever its length) and says
    why where there is no number."""
    text = f"{float(x):.2f}" if _finite(x) else unknown
    return f" {text:>{width - 1}}"


def _pct_cell(x, width: int, unknown: str = "none") -> str:
    text = f"{float(x):.1%}" if _finite(x) else unknown
    return f" {text:>{width - 1}}"
