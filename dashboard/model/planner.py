"""Planning arithmetic (seed: 'Derive the remaining 1.32× gap', Amdahl, 'Reuse versus the work grid').

These are what-would-it-take calculations, not predictions: a plan here says how much time must go, never that a
kernel will deliver it.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dashboard.model.scoring import ScoreBreakdown, geomean

N_LOADS = 6  # muse_bf16_proj's six loads: the default only; a breakdown passes its own count
FP32_PARTIAL_BYTES = 4  # split-K partial sums are kept in FP32


# --- target ------------------------------------------------------------------------------------------------
def required_speed_factor(score: float, target: float) -> float:
    """Aggregate speed factor still needed: target ÷ score (1.32 / 1.301203 ≈ 1.01445)."""
    return target / score


def required_time_reduction(score: float, target: float) -> float:
    """Fraction of aggregate time to remove: 1 − score/target (≈ 1.424% for 1.301203 → 1.32)."""
    return 1.0 - score / target


def single_load_factor(score: float, target: float, n_loads: int = N_LOADS) -> float:
    """Factor one load's ratio needs if it alone closes the gap: (target/score)^n (≈ 1.0899 here)."""
    return (target / score) ** n_loads


# --- Amdahl --------------------------------------------------------------------------------------------------
def amdahl_speedup(fraction: float, speedup: float) -> float:
    """Total speedup when `fraction` of the original time runs `speedup`× faster: 1 / ((1−f) + f/s)."""
    if not 0 <= fraction <= 1 or speedup <= 0:
        raise ValueError("fraction must be in [0, 1] and speedup positive")
    return 1.0 / ((1.0 - fraction) + fraction / speedup)


def amdahl_limit(fraction: float) -> float:
    """The most that part can ever give (infinitely fast part): 1 / (1 − f); infinite when f = 1."""
    return math.inf if fraction >= 1 else 1.0 / (1.0 - fraction)


def part_speedup_needed(fraction: float, total_factor: float) -> float:
    """Speedup the part must reach for the whole to gain `total_factor`; inf when Amdahl forbids it."""
    denom = 1.0 / total_factor - (1.0 - fraction)
    return fraction / denom if denom > 0 else math.inf


def what_if_score(load_ratios: dict[str, float], load: str, new_ratio: float) -> float:
    """New score after setting one load's ratio to `new_ratio` (the others unchanged)."""
    if load not in load_ratios:
        raise KeyError(f"unknown load {load!r}; known: {list(load_ratios)}")
    return geomean([new_ratio if name == load else r for name, r in load_ratios.items()])


def load_ratios_needed(breakdown: ScoreBreakdown, target: float) -> dict[str, float]:
    """load → the ratio that load alone would need (the others unchanged) for the score to equal `target`."""
    factor = single_load_factor(breakdown.score, target, len(breakdown.loads))
    return {load: ratio * factor for load, ratio in breakdown.load_ratios().items()}


def shape_targets(breakdown: ScoreBreakdown, target: float, floors: dict | None = None) -> pd.DataFrame:
    """For every shape: the candidate speedup it alone would need to lift the score to `target`.

    The shape's load must gain single_load_factor(); the shape holds a share f of that load's weighted candidate
    time, so by Amdahl it needs s = f / (1/F − (1 − f)). When f ≤ 1 − 1/F even an instant kernel falls short:
    feasible is False, speedup_needed is inf and `reason` says why. `floors` maps (load, family) to the shape's
    roofline floor (µs): a time it would need below its floor is impossible too (no kernel beats the floor), and
    `reason` says so.
    """
    floors = floors or {}
    factor = single_load_factor(breakdown.score, target, len(breakdown.loads))
    sums = dict(zip(breakdown.loads["load"], breakdown.loads["candidate_sum_us"]))
    rows = []
    for rec in breakdown.shapes.itertuples():
        share = rec.weight * rec.candidate_us / sums[rec.load]
        speedup = part_speedup_needed(share, factor) if factor > 1 else 1.0
        feasible = math.isfinite(speedup)
        new_us = rec.candidate_us / speedup if feasible else math.nan
        floor = floors.get((rec.load, rec.family), math.nan)
        reason = "" if feasible else (
            f"holds {share:.1%} of {rec.load}; even at zero time the load gains at most "
            f"{amdahl_limit(share):.4f}×, short of the {factor:.4f}× needed")
        if feasible and math.isfinite(floor) and new_us < floor:
            feasible = False
            reason = (f"impossible: it would need {new_us:.3f} µs, below its floor of {floor:.3f} µs (no kernel "
                      "is faster than its roofline floor)")
        rows.append({"load": rec.load, "family": rec.family, "candidate_us": rec.candidate_us, "floor_us": floor,
                     "share": share, "speedup_needed": speedup, "new_us": new_us, "feasible": feasible,
                     "reason": reason})
    return pd.DataFrame(rows)


# --- tile geometry ------------------------------------------------------------------------------------------
def tile_blocks(M: int, N: int, BM: int, BN: int, splits: int = 1) -> int:
    """Blocks in the grid: ceil(M/BM)·ceil(N/BN)·splits (pooler M=16, 16×32 tiles → 128)."""
    return math.ceil(M / BM) * math.ceil(N / BN) * splits


def reuse_flop_per_operand_byte(BM: int, BN: int, operand_bytes: int = 2) -> float:
    """Full-tile reuse: a K step loads (BM+BN)·BK operands and does 2·BM·BN·BK FLOPs.

    With 2-byte BF16 operands this is BM·BN/(BM+BN) (16×32 → 10.67). Ignores scratch, outputs and caches.
    """
    return 2.0 * BM * BN / ((BM + BN) * operand_bytes)


def splitk_scratch_bytes(splits: int, M: int, N: int, partial_bytes: int = FP32_PARTIAL_BYTES) -> int:
    """Temporary partial sums of split-K: splits·M·N·4 B (router 32×16×256×4 = 524,288)."""
    return splits * M * N * partial_bytes


def tile_table(M: int, N: int, tiles: list[tuple[int, int]], splits: int = 1) -> pd.DataFrame:
    """Blocks and reuse for several (BM, BN) tiles of one shape — the 'reuse versus the work grid' trade."""
    return pd.DataFrame([{"BM": bm, "BN": bn, "splits": splits, "blocks": tile_blocks(M, N, bm, bn, splits),
                          "reuse_flop_per_byte": reuse_flop_per_operand_byte(bm, bn)} for bm, bn in tiles])


__all__ = [name for name in dir() if not name.startswith("_") and name not in ("math", "np", "pd")]
