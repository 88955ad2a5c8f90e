"""dashboard.model.views: the per-shape wide table (CI next to the point it belongs to), SOL per load, time shares,
Amdahl rows and local-vs-official — on small hand-made tables whose right answers are known."""
import numpy as np
import pandas as pd
import pytest

from dashboard.model import planner, views


def _long(rows):
    """A runs.shape_table-like long table: shape, candidate, median_us and the per-shape columns wide_shapes keeps."""
    out = []
    for shape, load, family, cand, us, sol in rows:
        out.append({"shape": shape, "load": load, "family": family, "M": 1, "N": 8, "K": 8, "bytes": 100,
                    "flops": 128, "intensity_flop_per_byte": 1.28, "memory_floor_us": 1.0, "compute_floor_us": 0.1,
                    "floor_us": 1.0, "bound": "memory", "candidate": cand, "median_us": us, "sol": sol,
                    "correct": True, "method": f"{cand}-m", "flags": ["wide_ci"] if cand == "c" else []})
    return pd.DataFrame(out)


TABLE = _long([("L1/a", "L1", "a", "b", 10.0, 0.1), ("L1/a", "L1", "a", "c", 4.0, 0.25),
               ("L1/x", "L1", "x", "b", 30.0, 0.2), ("L1/x", "L1", "x", "c", 30.0, 0.2),
               ("L2/a", "L2", "a", "b", 6.0, 0.5), ("L2/a", "L2", "a", "c", 3.0, 1.0)])
# Paired ratios whose median (2.4) is not the ratio of the medians (10/4 = 2.5): the CI [2.3, 2.45] belongs to 2.4.
PAIRS = pd.DataFrame([{"shape": "L1/a", "baseline": "b", "candidate": "c", "ratio_median": 2.4,
                       "ratio_ci_low": 2.3, "ratio_ci_high": 2.45},
                      {"shape": "L1/a", "baseline": "c", "candidate": "b", "ratio_median": 0.41,
                       "ratio_ci_low": 0.40, "ratio_ci_high": 0.42}])


def test_wide_shapes_puts_the_ci_on_the_paired_median():
    wide = views.wide_shapes(TABLE, PAIRS, "b", "c").set_index("shape")
    a = wide.loc["L1/a"]
    assert (a["baseline_us"], a["candidate_us"], a["ratio"]) == (10.0, 4.0, 2.5)
    assert (a["ratio_paired"], a["ratio_ci_low"], a["ratio_ci_high"]) == (2.4, 2.3, 2.45)
    assert not a["ratio_ci_low"] <= a["ratio"] <= a["ratio_ci_high"]  # the CI is not around the ratio of medians
    assert (a["sol_baseline"], a["sol_candidate"], a["method"], a["flags"]) == (0.1, 0.25, "c-m", "wide_ci")
    assert np.isnan(wide.loc["L2/a", "ratio_paired"]) and np.isnan(wide.loc["L2/a", "ratio_ci_low"])


def test_wide_shapes_takes_the_pair_of_the_chosen_direction_only():
    wide = views.wide_shapes(TABLE, PAIRS, "c", "b").set_index("shape")
    assert wide.loc["L1/a", "ratio"] == pytest.approx(0.4)
    assert wide.loc["L1/a", "ratio_paired"] == 0.41
    no_pairs = views.wide_shapes(TABLE, pd.DataFrame(), "b", "c")
    assert no_pairs["ratio_paired"].isna().all() and list(no_pairs["ratio"]) == [2.5, 1.0, 2.0]


def test_load_sol_is_weighted_floor_over_weighted_time():
    wide = views.wide_shapes(TABLE, PAIRS, "b", "c")
    sol = views.load_sol(wide, {"a": 2.0, "x": 1.0}).set_index("load")
    assert sol.loc["L1", "floor_sum_us"] == pytest.approx(2 * 1.0 + 1 * 1.0)
    assert sol.loc["L1", "sol_baseline"] == pytest.approx(3.0 / (2 * 10 + 30))
    assert sol.loc["L1", "sol_candidate"] == pytest.approx(3.0 / (2 * 4 + 30))
    assert sol.loc["L2", "sol_candidate"] == pytest.approx(1.0 / 3.0)


def test_time_shares_and_amdahl_rows():
    wide = views.wide_shapes(TABLE, PAIRS, "b", "c")
    shares = views.time_shares(wide, {"a": 1.0, "x": 1.0})
    l1 = shares[shares["load"] == "L1"].set_index("family")["share"]
    assert l1["a"] == pytest.approx(4 / 34) and l1["x"] == pytest.approx(30 / 34)
    ratios = {"L1": 40 / 34, "L2": 2.0}
    amd = views.amdahl_table(shares, "L1", 2.0, ratios).set_index("family")
    assert amd.loc["x", "load_speedup"] == pytest.approx(planner.amdahl_speedup(30 / 34, 2.0))
    assert amd.loc["x", "new_score"] == pytest.approx(
        np.sqrt(ratios["L1"] * planner.amdahl_speedup(30 / 34, 2.0) * ratios["L2"]))
    free = views.amdahl_table(shares, "L1", np.inf, ratios).set_index("family")
    assert free.loc["a", "load_speedup"] == pytest.approx(34 / 30)  # ∞× faster: that shape's time is gone
    assert free.loc["a", "new_score"] == pytest.approx(np.sqrt(ratios["L1"] * 34 / 30 * ratios["L2"]))


def test_local_vs_official_joins_on_the_scored_shapes_only():
    official = pd.DataFrame({"load": ["L1", "L9"], "family": ["a", "a"], "baseline_us": [11.0, 1.0],
                             "candidate_us": [5.0, 1.0]})
    side = views.local_vs_official(TABLE, official)
    assert list(side["load"]) == ["L1"]
    row = side.iloc[0]
    assert (row["baseline µs (published)"], row["036 µs (published)"]) == (11.0, 5.0)
    assert (row["b µs (measured)"], row["c µs (measured)"]) == (10.0, 4.0)


def test_readable_shapes_units_and_ci_text():
    wide = views.readable_shapes(views.wide_shapes(TABLE, PAIRS, "b", "c")).set_index("shape")
    assert wide.loc["L1/a", "mb"] == pytest.approx(100 / 1e6) and wide.loc["L1/a", "gflop"] == pytest.approx(128 / 1e9)
    assert wide.loc["L1/a", "paired_ci"] == "2.400 [2.300–2.450]"
    assert wide.loc["L2/a", "paired_ci"] == "—"  # no pairs, no CI: said so, not 'nan'
    assert views.ci_text(np.nan, 1.0) == "—" and views.ci_text(1.0, 1.23456) == "1.0000–1.2346"


def test_sol_over_100_lists_each_side_above_one():
    wide = views.wide_shapes(TABLE, PAIRS, "b", "c")  # L2/a candidate SOL is exactly 1.0: not above
    assert views.sol_over_100(wide).empty
    over = views.sol_over_100(wide.assign(sol_candidate=[1.05, 0.5, 0.9]))
    assert over.to_dict("records") == [{"shape": "L1/a", "side": "candidate", "sol": 1.05}]


@pytest.mark.parametrize("score, target", [(1.301203, 1.32), (1.3878, 1.41), (1.0, 1.01), (1.399, 1.42),
                                           (0.5, 1.0)])
def test_default_target_is_above_the_score(score, target):
    got = views.default_target(score)
    assert got == pytest.approx(target)
    assert got > score


def test_time_above_floor_per_family_sums_the_loads():
    wide = views.wide_shapes(TABLE, PAIRS, "b", "c")  # floor 1 µs everywhere
    above = views.time_above_floor(wide, family_order=["x", "a"]).set_index("family")
    assert list(above.index) == ["x", "a"]
    assert above.loc["a", "baseline_above_us"] == pytest.approx((10 - 1) + (6 - 1))
    assert above.loc["a", "candidate_above_us"] == pytest.approx((4 - 1) + (3 - 1))
    assert above.loc["a", "candidate_share_above"] == pytest.approx(5 / 7)


def test_clock_summary_ignores_the_idle_reading_and_gpu_idle():
    run = {"environment": {"clocks": {"sm_max_mhz": 1980, "sm_mhz_start": 345, "sm_mhz_end": 510},
                           "throttle_reasons": ["gpu_idle"]},
           "telemetry": [{"t_s": 0, "sm_mhz": 1980, "throttle": ["gpu_idle"]},
                         {"t_s": 1, "sm_mhz": 1965, "throttle": ["sw_power_cap"]}]}
    c = views.clock_summary(run)
    assert (c["sm_min_mhz"], c["sm_max_mhz"], c["n_samples"]) == (1965, 1980, 2)
    assert c["throttle_reasons"] == ["sw_power_cap"]
    text = views.clock_text(c)
    assert "1965–1980 MHz" in text and "345 / 510 MHz" in text and "gpu_idle" in text
    quiet = views.clock_summary({"environment": {"throttle_reasons": ["gpu_idle"]}})
    assert quiet["throttle_reasons"] == [] and quiet["sm_min_mhz"] is None
    assert "not read" in views.clock_text(quiet) and views.clock_text(quiet).endswith("none.")
    assert views.mhz_range(quiet) == views.NOT_READ and "?" not in views.clock_text(quiet)
    cpu = views.clock_summary({"environment": {"gpu": "CPU: Some CPU"}})
    assert views.mhz_range(cpu) == views.NOT_ON_CPU and "not measured on this device" in views.clock_text(cpu)
    half = views.clock_summary({"environment": {"clocks": {"sm_max_mhz": 1980}}})
    assert "limit 1980 MHz" in views.clock_text(half) and "not read / not read" in views.clock_text(half)


def test_series_label_is_short_and_shape_order_follows_loads():
    assert views.series_label("run: 2026-11-30_nvidia-h200_baseline-seed036-best-r3.json",
                              "datasets/runs/2026-11-30_nvidia-h200_baseline-seed036-best-r3.json", "best") \
        == "2026-11-30 · baseline-seed036-best-r3 · best"
    assert views.series_label("Official 036 table (published)", "datasets/official_036.csv", "036") \
        == "published 036 table · 036"
    assert views.series_label("upload: my.csv", "/tmp/my-abc.csv", "candidate") == "my-abc · candidate"
    assert views.shape_order(["d1", "d16"], ["qkv", "o"]) == ["d1/qkv", "d1/o", "d16/qkv", "d16/o"]


def test_same_route_marks_shapes_where_the_candidate_runs_the_baselines_call():
    # at L1/x the candidate ran the baseline's own method: its ratio (1.0 here) is one call timed twice
    table = TABLE.copy()
    table.loc[(table["shape"] == "L1/x") & (table["candidate"] == "c"), "method"] = "b-m"
    wide = views.wide_shapes(table, PAIRS, "b", "c").set_index("shape")
    assert list(wide["same_route"]) == [False, True, False]
    shown = views.readable_shapes(wide.reset_index()).set_index("shape")
    assert shown.loc["L1/x", "method_label"] == "b-m (= baseline)" and shown.loc["L1/a", "method_label"] == "c-m"
    assert shown.loc["L1/x", "method"] == "b-m"                      # the raw method stays as measured
    assert not views.wide_shapes(TABLE, PAIRS, "b", "c")["same_route"].any()
