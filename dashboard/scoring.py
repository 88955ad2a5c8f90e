"""The competition score (seed: 'The exact scoring formula').

- per-load ratio  = Σ w·baseline_us ÷ Σ w·candidate_us over the load's five shapes (w = 62 for every family here,
  so it cancels — it is still applied, so a workload with unequal weights scores correctly);
- score           = geometric mean of the six load ratios;
- score-equivalent time (per side) = geometric mean over loads of Σ w·t. With w = 62 this is 62 × the geometric
  mean of the plain load sums, and score = baseline equivalent ÷ candidate equivalent;
- time saved      = 1 − 1/score (the fraction of aggregate time removed).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

SHAPE_ID = ["load", "family", "M", "N", "K"]


class ScoringError(ValueError):
    """The times given cannot be scored (a shape missing for one side, a non-positive time, ...)."""


@dataclass(frozen=True)
class ScoreBreakdown:
    baseline: str
    candidate: str
    shapes: pd.DataFrame   # load, family, M, N, K, weight, baseline_us, candidate_us, ratio
    loads: pd.DataFrame    # load, baseline_sum_us, candidate_sum_us, ratio (weighted sums), in load order
    score: float
    time_saved: float
    equiv_baseline_us: float
    equiv_candidate_us: float

    def load_ratios(self) -> dict[str, float]:
        return dict(zip(self.loads["load"], self.loads["ratio"]))


def family_weights(workload) -> dict[str, float]:
    """family → scoring weight (the workload's; 62 for every family) for the weighted load sums."""
    return {name: spec["weight"] for name, spec in workload.families.items()}


def geomean(values) -> float:
    """Geometric mean as exp(mean(log)) — the same number as the n-th root of the product."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0 or np.any(~np.isfinite(arr)) or np.any(arr <= 0):
        raise ScoringError(f"geometric mean needs positive finite values, got {arr.tolist()}")
    return float(np.exp(np.mean(np.log(arr))))


def time_saved(score: float) -> float:
    return 1.0 - 1.0 / score


def score_wide(shapes: pd.DataFrame, load_order: list[str] | None = None, baseline: str = "baseline",
               candidate: str = "candidate") -> ScoreBreakdown:
    """Score a table with one row per shape: load, family, baseline_us, candidate_us and optional weight.

    Missing weights default to 1, which gives the same ratios as the uniform 62 (it cancels) but a
    score-equivalent time 62× smaller — pass the workload's weights to get the published µs figures.
    """
    frame = shapes.copy()
    if "weight" not in frame:
        frame["weight"] = 1.0
    for col in ("baseline_us", "candidate_us", "weight"):
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = frame.loc[~(values > 0), ["load", "family"]]
        if len(bad):
            first = bad.iloc[0]
            raise ScoringError(f"{col} must be a positive number for {first['load']}/{first['family']}")
        frame[col] = values.astype(float)
    frame["ratio"] = frame["baseline_us"] / frame["candidate_us"]
    order = load_order or list(dict.fromkeys(frame["load"]))
    weighted = frame.assign(b=frame["weight"] * frame["baseline_us"], c=frame["weight"] * frame["candidate_us"])
    sums = weighted.groupby("load", sort=False)[["b", "c"]].sum().reindex(order)
    if sums.isna().any().any():
        raise ScoringError(f"no shapes for load(s) {sums.index[sums['b'].isna()].tolist()}")
    loads = pd.DataFrame({"load": order, "baseline_sum_us": sums["b"].to_numpy(),
                          "candidate_sum_us": sums["c"].to_numpy()})
    loads["ratio"] = loads["baseline_sum_us"] / loads["candidate_sum_us"]
    score = geomean(loads["ratio"])
    return ScoreBreakdown(baseline=baseline, candidate=candidate, shapes=frame, loads=loads, score=score,
                          time_saved=time_saved(score), equiv_baseline_us=geomean(loads["baseline_sum_us"]),
                          equiv_candidate_us=geomean(loads["candidate_sum_us"]))


def score_official(official: pd.DataFrame, workload) -> ScoreBreakdown:
    """Score datasets.load_official() output with the workload's weights and load order."""
    weights = workload.shapes[["load", "family", "weight"]]
    frame = official.merge(weights, on=["load", "family"], how="left", validate="one_to_one")
    return score_wide(frame, workload.load_order, baseline="baseline", candidate="036 (official)")


def score_long(times: pd.DataFrame, baseline: str, candidate: str, workload) -> ScoreBreakdown:
    """Score two candidates from a long table: load, family, M, N, K, candidate, median_us.

    Every scored shape of the workload must have a time for both candidates; otherwise ScoringError lists the
    missing ones (a partial run cannot be scored). Rows for other candidates or nearby shapes are ignored.
    """
    scored = workload.shapes[SHAPE_ID + ["weight"]]
    sides = {}
    for role, name in (("baseline_us", baseline), ("candidate_us", candidate)):
        rows = times.loc[times["candidate"] == name, SHAPE_ID + ["median_us"]]
        dup = rows.duplicated(SHAPE_ID)
        if dup.any():
            first = rows.loc[dup].iloc[0]
            raise ScoringError(f"candidate {name!r} has two times for {first['load']}/{first['family']}")
        merged = scored.merge(rows, on=SHAPE_ID, how="left")
        missing = merged.loc[merged["median_us"].isna(), ["load", "family"]]
        if len(missing):
            keys = [f"{r.load}/{r.family}" for r in missing.itertuples()]
            raise ScoringError(f"candidate {name!r} has no time for {len(keys)} scored shape(s): "
                               f"{', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}")
        sides[role] = merged["median_us"].to_numpy()
    frame = scored.assign(**sides)
    return score_wide(frame, workload.load_order, baseline=baseline, candidate=candidate)


def complete_loads(times: pd.DataFrame, baseline: str, candidate: str, workload) -> pd.DataFrame:
    """Per-load ratios for the loads where both candidates have every shape (a partial run's usable part).

    No overall score: the geometric mean needs all six loads.
    """
    rows = []
    for load in workload.load_order:
        try:
            part = score_long(times[times["load"] == load], baseline, candidate, _one_load(workload, load))
        except ScoringError:
            continue
        rows.append(part.loads.iloc[0].to_dict())
    return pd.DataFrame(rows, columns=["load", "baseline_sum_us", "candidate_sum_us", "ratio"])


class _one_load:
    """A workload view restricted to one load (just the attributes score_long reads)."""

    def __init__(self, workload, load: str):
        self.shapes = workload.shapes[workload.shapes["load"] == load]
        self.load_order = [load]
