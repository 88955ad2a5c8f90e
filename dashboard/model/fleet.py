"""The fleet view: one pair's score and SOL per GPU model, side by side, from one run file per model.

A fleet sweep (`python -m profiler run --cluster ...` over hosts with different GPUs) writes one run file per GPU
model with the same label (`<date>_<gpu>_<label>.json`): results of different models are never scored together,
so each row here is one run file scored on its own, through the same gate as every other page (runs.run_score).

    fleet_sets(paths)                        -> {label: [paths]}   run files grouped by their sweep's label
    default_set(sets, metas)                 -> label              most GPU models, then the shipped plan's newest
                                                                   (cluster) sweep
    fleet_table(datas, baseline, candidate, workload) -> DataFrame one row per run file (GPU model)
    overall_sol(wide, weights)               -> (baseline, candidate)   Σ w·floor ÷ Σ w·time over the scored shapes

Its chart is dashboard.plots.figures.fleet_figure.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dashboard.model import runs, scoring, views

COLUMNS = ["gpu", "run", "status", "score", "time_saved", "equiv_baseline_us", "equiv_candidate_us",
           "sol_baseline", "sol_candidate", "shapes", "hosts", "workers", "git_sha", "reason"]


def fleet_sets(paths) -> dict[str, list[Path]]:
    """Run files grouped by label (from the `<date>_<gpu>_<label>.json` name), each group sorted by GPU then
    date; files not named by the convention are left out."""
    sets: dict[str, list[Path]] = {}
    for path in map(Path, paths):
        parts = runs.parse_run_name(path)
        if parts is not None:
            sets.setdefault(parts["label"], []).append(path)
    return {label: sorted(ps, key=lambda p: (runs.parse_run_name(p)["gpu"], p.name)) for label, ps in
            sorted(sets.items())}


def sweep_sets(metas: dict) -> dict[str, list[Path]]:
    """fleet_sets of the plan sweeps among {path: RunMeta} (dashboard.model.run_kinds): a tune log, a survey or an
    explain run times configs or kernels, not plans, so none is ever a fleet set."""
    from dashboard.model import run_kinds

    return fleet_sets(p for p, m in metas.items() if m is not None and m.kind == run_kinds.SWEEP)


def default_set(sets: dict[str, list[Path]], metas: dict | None = None) -> str | None:
    """The set to open first: the one measured on the most distinct GPU models; among those, a sweep pairing the
    baseline with the shipped plan (run_kinds.RunMeta.shipped_pair), measured by a fleet (`--cluster`), the newest
    (created_utc, else the file name's date). `metas` maps a path to its RunMeta; without it only models and dates
    count. A tune log or a survey is never a fleet sweep: the page passes sweeps only."""
    if not sets:
        return None
    metas = metas or {}

    def key(label):
        names = [runs.parse_run_name(p) for p in sets[label]]
        info = [metas.get(p) for p in sets[label]]
        info = [m for m in info if m is not None]
        return (len({n["gpu"] for n in names}), any(m.shipped_pair for m in info), any(m.cluster for m in info),
                max([m.created_utc for m in info] or [""]), max(n["date"] for n in names), label)

    return max(sets, key=key)


def overall_sol(wide: pd.DataFrame, weights: dict[str, float]) -> tuple[float, float]:
    """SOL over every scored shape: Σ w·floor ÷ Σ w·time, for baseline and candidate; NaN where a floor is unknown
    or the gate kept a shape out (SOL is a speed figure, never from an incorrect result)."""
    if wide.empty or ("usable" in wide and not wide["usable"].all()) or wide["floor_us"].isna().any():
        return float("nan"), float("nan")
    w = wide["family"].map(weights).fillna(1.0)
    floor = float((w * wide["floor_us"]).sum())
    return floor / float((w * wide["baseline_us"]).sum()), floor / float((w * wide["candidate_us"]).sum())


def _where(run: dict) -> tuple[str, int]:
    """Hosts and projlab worker processes that measured the run (environment.workers; one host if absent)."""
    env = run.get("environment", {})
    workers = env.get("workers") or []
    hosts = sorted({w.get("hostname") for w in workers if w.get("hostname")} or
                   ({env["hostname"]} if env.get("hostname") else set()))
    return ", ".join(hosts), len(workers)


def fleet_row(data: runs.RunData, baseline: str, candidate: str, workload=None) -> dict:
    """One run file's row: its GPU, the pair's score and SOL over the scored shapes (of the run's own workload
    unless `workload` is given); status "scored", or "no score" with the gate's reason."""
    workload = runs.workload_of(data, workload)
    env = data.run.get("environment", {})
    hosts, n_workers = _where(data.run)
    row = {"gpu": env.get("gpu") or "?", "run": data.path.name, "hosts": hosts, "workers": n_workers,
           "git_sha": (env.get("git_sha") or "")[:10]}
    try:
        breakdown = runs.run_score(data, baseline, candidate, workload)
    except scoring.ScoringError as exc:
        reason = str(exc)   # the status column already says "no score": the reason alone, never "no score: no score:"
        return row | {"status": "no score", "reason": reason.removeprefix("no score: ")}
    gate = runs.pair_gate(data, baseline, candidate, workload)
    wide = views.wide_shapes(runs.shape_table(data, workload), data.pairs, baseline, candidate, gate)
    scored = wide.merge(workload.shapes[["load", "family", "M"]], on=["load", "family", "M"])
    sol_b, sol_c = overall_sol(scored, scoring.family_weights(workload))
    return row | {"status": "scored", "reason": "; ".join(filter(None, (breakdown.accuracy, breakdown.screen))),
                  "score": breakdown.score, "time_saved": breakdown.time_saved,
                  "equiv_baseline_us": breakdown.equiv_baseline_us, "equiv_candidate_us": breakdown.equiv_candidate_us,
                  "sol_baseline": sol_b, "sol_candidate": sol_c, "shapes": len(breakdown.shapes)}


def fleet_table(datas: list[runs.RunData], baseline: str, candidate: str, workload=None) -> pd.DataFrame:
    """One row per run file, by GPU model: measured per model, never pooled across models."""
    rows = [fleet_row(d, baseline, candidate, workload) for d in datas]
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["gpu", "run"], kind="stable").reset_index(drop=True)
