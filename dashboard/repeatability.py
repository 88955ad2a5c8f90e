"""The SAME band ε from measured run-to-run spread.

A repeatability run times one plan twice in one sweep (candidates `baseline` and `baseline#2`,
`python -m profiler run --plan baseline --plan baseline`), so every difference between the two is noise that a
verdict should not call FAST or SLOW. Per shape that noise is much larger than per load or per score (placement
effects average out over a load's five shapes and over six loads), so there is one band per level: the largest
|ratio − 1| seen at that level across the repeatability runs given, rounded up to 0.1%.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from dashboard import compare, runs, scoring
from datasets import NEARBY_LOAD

ROUND_TO = 0.001  # bands are shown as percentages with one decimal


@dataclass(frozen=True)
class SameBands:
    shape: float
    load: float
    score: float
    runs: tuple[str, ...]   # file names of the repeatability runs measured
    n_shapes: int           # scored (shape, pair) points behind the per-shape band

    def describe(self) -> str:
        return (f"ε derived from {len(self.runs)} repeatability run(s) (one plan timed twice per sweep): the "
                f"largest |ratio − 1| of identical kernels was {self.shape:.1%} per shape ({self.n_shapes} points), "
                f"{self.load:.1%} per load and {self.score:.1%} per score.")


def repeat_pairs(data: runs.RunData) -> list[tuple[str, str]]:
    """(baseline, candidate) pairs of a run that time one plan against itself ('baseline' vs 'baseline#2')."""
    names = data.candidates()
    return [(b, c) for c in names for b in names if c != b and c.split("#", 1)[0] == b]


def _ceil(x: float) -> float:
    return math.ceil(round(x / ROUND_TO, 6)) * ROUND_TO


def same_bands(datas, workload=None) -> SameBands | None:
    """Per-shape, per-load and per-score SAME bands from the repeatability runs among `datas` (RunData); None if
    there is none. Per shape: ratio of the medians at scored shapes (the point the Compare page's CI is around);
    per load and score: dashboard.runs.run_score of the pair (each run with its own workload unless given)."""
    shape_dev, load_dev, score_dev, names, n = 0.0, 0.0, 0.0, [], 0
    for data in datas:
        pairs = repeat_pairs(data) if len(data.results) else []
        for base, cand in pairs:
            try:
                bd = runs.run_score(data, base, cand, workload)
            except scoring.ScoringError:
                continue  # a partial repeatability run: not a measure of the whole spread
            res = data.results[data.results["load"] != NEARBY_LOAD]
            med = res.pivot_table(index="shape", columns="candidate", values="median_us")
            dev = (med[base] / med[cand] - 1).abs().dropna()
            shape_dev, n = max(shape_dev, float(dev.max())), n + len(dev)
            load_dev = max(load_dev, float((bd.loads["ratio"] - 1).abs().max()))
            score_dev = max(score_dev, abs(bd.score - 1))
            names.append(data.path.name)
    if not names:
        return None
    return SameBands(_ceil(shape_dev), _ceil(load_dev), _ceil(score_dev), tuple(dict.fromkeys(names)), n)


JUDGED = ("FAST", "SLOW", "SAME", "AMBIGUOUS")  # verdicts read off a CI; the others (no samples, kept out by the
                                               # correctness gate) stay as they are


def apply_bands(cmp: compare.Comparison, bands: SameBands) -> compare.Comparison:
    """The comparison with load and overall verdicts judged against their own bands (shape verdicts keep the ε
    the comparison was made with); CIs, ratios and verdicts that no band decides are unchanged."""
    def judged(frame: pd.DataFrame, eps: float) -> pd.DataFrame:
        if frame.empty:
            return frame
        again = [compare.verdict(lo, hi, eps) if v in JUDGED else v
                 for v, lo, hi in zip(frame["verdict"], frame["ci_low"], frame["ci_high"])]
        return frame.assign(verdict=again)
    return replace(cmp, loads=judged(cmp.loads, bands.load), overall=judged(cmp.overall, bands.score))
