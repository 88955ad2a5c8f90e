"""`python -m dashboard compare RUN_A[:CANDIDATE] RUN_B[:CANDIDATE] [--shapes]`: is B faster than A?

Both sides go through dashboard.model.compare.compare_runs, the function behind the Compare page, so the two print the
same numbers. Per load and overall: ratio (A time ÷ B time, > 1: B is faster), 95% bootstrap interval, verdict, and
the band it was judged against with its source (dashboard.model.noise); which shapes ran the identical route on both
sides (their difference is drift); `--shapes` adds one line per shape. A side is a run file (a path, or a name in
datasets/runs/) and optionally ':CANDIDATE' (default: the shipped plan, `best`); one run file with two candidates
compares them paired, within the run.
"""
from __future__ import annotations

import math
from pathlib import Path

from datasets.paths import find_run_file, no_run_file
from dashboard.model import compare, run_kinds, runs, workloads

DEFAULT_CANDIDATE = run_kinds.SHIPPED_PLAN


class SideError(ValueError):
    """A side that names no run file or no candidate of it (one line)."""


def parse_side(text: str) -> tuple[Path, str]:
    """'RUN' or 'RUN:CANDIDATE' → (run file, candidate)."""
    path = find_run_file(text)
    if path is not None:
        return path, DEFAULT_CANDIDATE
    head, sep, cand = text.rpartition(":")
    path = find_run_file(head) if sep and head else None
    if path is None or not cand:
        raise SideError(no_run_file(text))
    return path, cand


def load_side(text: str) -> tuple[runs.RunData, str]:
    path, cand = parse_side(text)
    data = runs.load_run_data(path)
    if cand not in data.candidates():
        names = ", ".join(data.candidates()) or "none"
        raise SideError(f"{path.name}: no candidate {cand!r} (found {names})")
    return data, cand


def _ci(lo: float, hi: float) -> str:
    return "[–]" if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{lo:.4f}–{hi:.4f}]"


def _ratio(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.4f}"


def _line(label: str, ratio: float, lo: float, hi: float, verdict: str, source: str) -> str:
    return f"  {label:<22} {_ratio(ratio):>7}  {_ci(lo, hi):<17}  {verdict:<10}  {source}".rstrip()


def format_comparison(cmp: compare.Comparison, a: str, b: str, shapes: bool = False) -> str:
    """The text `python -m dashboard compare` prints for a two-sided comparison (reference A, series B)."""
    loads = cmp.loads[cmp.loads["series"] == b]
    overall = cmp.overall[cmp.overall["series"] == b].iloc[0]
    rows = cmp.shapes[cmp.shapes["series"] == b]
    out = [f"A: {a}", f"B: {b}", f"  how: {cmp.how[b]}",
           "  ratio = A time ÷ B time (> 1: B is faster), 95% bootstrap interval; the verdict reads the interval "
           "against the band named beside it (dashboard.model.noise)",
           f"  {'load':<22} {'ratio':>7}  {'95% interval':<17}  {'verdict':<10}  band"]
    for r in loads.itertuples(index=False):
        same = f" ({r.n_same_route} of {r.n_shapes} shapes on the identical route)" if r.n_same_route else ""
        out.append(_line(f"{r.load}", r.ratio, r.ci_low, r.ci_high, r.verdict, r.band_source + same))
    out.append(_line(f"overall ({int(overall['n_loads'])} loads)", overall["score"], overall["ci_low"],
                     overall["ci_high"], overall["verdict"], overall["band_source"]))
    same = rows[rows["same_route"]]
    keys = [f"{r.load}/{r.family}" for r in same.itertuples(index=False)]
    out.append(f"  identical routes on both sides (their difference is drift, not a speedup): "
               f"{', '.join(keys) if keys else 'none'}")
    if shapes:
        out.append(f"  {'shape':<22} {'ratio':>7}  {'95% interval':<17}  {'verdict':<10}  band")
        for r in rows.itertuples(index=False):
            out.append(_line(f"{r.load}/{r.family}", r.ratio, r.ci_low, r.ci_high, r.verdict, r.band_source))
    if cmp.note:
        out.append(f"  note: {cmp.note}")
    return "\n".join(out)


def run(side_a: str, side_b: str, shapes: bool = False, include_below_floor: bool = False) -> tuple[str, list[str]]:
    """(text, no-score lines) of the comparison of two sides; SideError / ValueError for bad input."""
    a, ca = load_side(side_a)
    b, cb = load_side(side_b)
    cmp = compare.compare_runs(a, ca, b, cb, include_below_floor)
    name_a, name_b = compare.side_name(a, ca), compare.side_name(b, cb)
    text = format_comparison(cmp, name_a, name_b, shapes).split("\n")
    text.insert(2, f"  workload: {workloads.describe(a.workload)}")
    refused = [f"{name_b} vs {name_a}: {m}" for m in cmp.no_score().values()]
    return "\n".join(text), refused
