"""Target, Amdahl, what-if and tile arithmetic from the write-up."""
import math

import pytest

from datasets import load_official, load_workload
from dashboard.model import planner, scoring


@pytest.fixture(scope="module")
def official():
    return scoring.score_official(load_official(), load_workload())


def test_gap_to_1_32():
    # Seed: 1.32 / 1.301203 ≈ 1.01445; time fraction ≈ 0.98576; about 1.424% less aggregate time.
    assert round(planner.required_speed_factor(1.301203, 1.32), 5) == 1.01445
    assert round(planner.required_time_reduction(1.301203, 1.32) * 100, 3) == 1.424
    # One load alone: 1.01445^6 ≈ 1.09 (1.0899 to four decimals).
    assert round(planner.single_load_factor(1.301203, 1.32), 4) == 1.0899


def test_amdahl():
    assert planner.amdahl_speedup(0.5, 2.0) == pytest.approx(4 / 3)   # seed: half the time, twice as fast
    assert planner.amdahl_limit(0.2) == pytest.approx(1.25)           # 20% share, infinitely fast
    assert round(planner.amdahl_speedup(0.2, 2.0), 4) == 1.1111        # doubled
    assert planner.amdahl_limit(1.0) == math.inf
    # 40 µs + 10 µs: 10% off the 40 saves 4 µs (50/46 = 1.0870×), 20% off the 10 saves 2 µs (50/48 = 1.0417×).
    assert round(planner.amdahl_speedup(0.8, 1 / 0.9), 4) == 1.0870
    assert round(planner.amdahl_speedup(0.2, 1 / 0.8), 4) == 1.0417


def test_part_speedup_needed_inverts_amdahl():
    s = planner.part_speedup_needed(0.4, 1.1)
    assert planner.amdahl_speedup(0.4, s) == pytest.approx(1.1)
    assert planner.part_speedup_needed(0.05, 1.1) == math.inf  # 1/(1-0.05) ≈ 1.053 < 1.1


def test_what_if():
    # Seed: a 6% gain in one load's ratio is about 0.98% overall.
    ratios = {f"l{i}": 1.0 for i in range(6)}
    assert round((planner.what_if_score(ratios, "l0", 1.06) - 1) * 100, 2) == 0.98
    assert planner.what_if_score(ratios, "l0", 2.0) == pytest.approx(2 ** (1 / 6))
    with pytest.raises(KeyError):
        planner.what_if_score(ratios, "nope", 2.0)


def test_what_if_on_official(official):
    ratios = official.load_ratios()
    boosted = planner.what_if_score(ratios, "verify 32", ratios["verify 32"] * 1.0899)
    assert boosted == pytest.approx(official.score * 1.0899 ** (1 / 6))


def test_load_ratios_needed_reach_the_target_exactly(official):
    needed = planner.load_ratios_needed(official, 1.32)
    assert list(needed) == list(official.load_ratios())
    for load, ratio in needed.items():
        assert planner.what_if_score(official.load_ratios(), load, ratio) == pytest.approx(1.32)
    assert needed["verify 32"] == pytest.approx(official.load_ratios()["verify 32"] * 1.0899, abs=1e-4)


def test_shape_targets(official):
    table = planner.shape_targets(official, 1.32)
    assert len(table) == 30 and table.feasible.all()
    factor = planner.single_load_factor(official.score, 1.32)
    row = table[(table.load == "decode 1") & (table.family == "pooler")].iloc[0]
    assert row.share == pytest.approx(16.532 / 39.535)
    assert planner.amdahl_speedup(row.share, row.speedup_needed) == pytest.approx(factor)
    # A far target: shapes with too small a share cannot deliver it alone, and say why.
    far = planner.shape_targets(official, 1.5)
    router = far[(far.load == "decode 16") & (far.family == "router")].iloc[0]
    assert not router.feasible and router.speedup_needed == math.inf
    assert "even at zero time" in router.reason


def test_tile_geometry():
    assert planner.tile_blocks(16, 4096, 16, 32) == 128                 # seed: pooler 16×32 tiles → 128 blocks
    assert round(planner.reuse_flop_per_operand_byte(16, 32), 2) == 10.67
    assert planner.tile_blocks(16, 256, 16, 64) == 4                    # seed: router unsplit grid
    assert planner.tile_blocks(16, 256, 16, 64, splits=32) == 128       # 32 splits
    assert planner.tile_blocks(17, 256, 16, 64) == 8                    # ceil: 17 rows need two row tiles
    assert planner.splitk_scratch_bytes(32, 16, 256) == 524_288         # 32 × 16 × 256 × 4 B
    assert planner.reuse_flop_per_operand_byte(2, 2) == 1.0             # seed's 2×2 tile example
    table = planner.tile_table(16, 4096, [(16, 32), (16, 64)])
    assert list(table.blocks) == [128, 64]


def test_a_target_time_below_the_floor_is_impossible(official):
    """A shape alone is not 'enough' when the time it would need is below its roofline floor."""
    free = planner.shape_targets(official, 1.32)
    row = free[(free.load == "decode 1") & (free.family == "pooler")].iloc[0]
    above = {("decode 1", "pooler"): row.new_us * 1.01}      # a floor just above what it would need
    below = {("decode 1", "pooler"): row.new_us * 0.99}
    stuck = planner.shape_targets(official, 1.32, above).set_index(["load", "family"]).loc[("decode 1", "pooler")]
    assert not stuck.feasible and "impossible" in stuck.reason and "below its floor" in stuck.reason
    fine = planner.shape_targets(official, 1.32, below).set_index(["load", "family"]).loc[("decode 1", "pooler")]
    assert fine.feasible and fine.reason == "" and fine.floor_us == pytest.approx(row.new_us * 0.99)
