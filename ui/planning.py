"""The Planner's and the Overview's what-if arithmetic (dashboard.model.planner: every number derived from the View's
score, nothing predicted), and the per-shape targets with each shape's floor."""
from __future__ import annotations

import pandas as pd

from dashboard.model import planner
from dashboard.model.planner import (amdahl_limit, amdahl_speedup, reuse_flop_per_operand_byte, required_speed_factor,
                                     required_time_reduction, single_load_factor, splitk_scratch_bytes, tile_blocks,
                                     tile_table, what_if_score)

__all__ = ["amdahl_limit", "amdahl_speedup", "reuse_flop_per_operand_byte", "required_speed_factor",
           "required_time_reduction", "single_load_factor", "splitk_scratch_bytes", "tile_blocks", "tile_table",
           "what_if_score", "shape_targets"]


def shape_targets(breakdown, target: float, wide: pd.DataFrame) -> pd.DataFrame:
    """What each shape alone would need for `target`, judged against its floor from the View's shape rows (no floor
    where the rows have none)."""
    floors = {(r.load, r.family): r.floor_us for r in wide.itertuples()} if "floor_us" in wide else {}
    return planner.shape_targets(breakdown, target, floors)
