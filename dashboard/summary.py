"""Plain-text summary of a ScoreBreakdown (used by the CLI; kept apart so the app or a report can reuse it)."""
from __future__ import annotations

import pandas as pd

from dashboard.scoring import ScoreBreakdown


def format_loads(loads: pd.DataFrame, title: str) -> str:
    """Table of per-load weighted sums (w = 62 per shape) and ratios."""
    lines = [title, f"  {'load':<12}{'baseline Σw·t µs':>18}{'candidate Σw·t µs':>19}{'ratio':>9}"]
    for r in loads.itertuples():
        lines.append(f"  {r.load:<12}{r.baseline_sum_us:>18,.2f}{r.candidate_sum_us:>19,.2f}{r.ratio:>9.4f}")
    return "\n".join(lines)


def format_breakdown(b: ScoreBreakdown, title: str) -> str:
    lines = [format_loads(b.loads, title)]
    lines += [f"  score (geometric mean of load ratios): {b.score:.6f}",
              f"  time saved: {b.time_saved:.2%}",
              f"  score-equivalent time: {b.baseline} {b.equiv_baseline_us:,.2f} µs, "
              f"{b.candidate} {b.equiv_candidate_us:,.2f} µs"]
    return "\n".join(lines)


def format_unscored_pairs(pairs: pd.DataFrame, results: pd.DataFrame, title: str) -> str:
    """Shapes outside the scored set (nearby): per pair, how many shapes, how many correct, and the spread of
    per-shape paired ratios. Deliberately no geometric mean: nearby shapes are never scored."""
    lines = [title]
    for (base, cand), grp in pairs.groupby(["baseline", "candidate"], sort=False):
        res = results[results["candidate"] == cand]
        ok = int(res["correct"].astype(bool).sum())
        r = grp["ratio_median"]
        worst = grp.loc[r.idxmin()]
        lines.append(f"  {cand} vs {base}: {len(grp)} shapes, {ok}/{len(res)} correct; per-shape ratio "
                     f"min {r.min():.3f} ({worst['family']} M={int(worst['M'])}), median {r.median():.3f}, "
                     f"max {r.max():.3f}")
    return "\n".join(lines)
