"""dashboard.model.compare: verdict rule, bootstrap CIs, pairing, intersections, per-load and overall rows."""
import math

import numpy as np
import pandas as pd
import pytest

from dashboard.model import compare, noise
from datasets import load_official, load_workload

SHAPE = {"load": "decode 1", "family": "o", "M": 1, "N": 8192, "K": 1024}


@pytest.mark.parametrize("lo, hi, verdict", [
    (1.02, 1.05, "FAST"), (0.95, 0.98, "SLOW"), (0.995, 1.005, "SAME"), (0.99, 1.01, "SAME"),
    (1.005, 1.03, "AMBIGUOUS"), (0.97, 1.0, "AMBIGUOUS"), (0.9, 1.1, "AMBIGUOUS"), (math.nan, math.nan, "NO SAMPLES")])
def test_verdict_rule(lo, hi, verdict):
    assert noise.verdict(lo, hi, 0.01) == verdict


def _series(name, samples, group="run", shape=SHAPE):
    return pd.DataFrame([{"series": name, **shape, "median_us": float(np.median(samples)),
                          "samples_us": list(samples), "pair_group": group, "correct": True}])


def test_clear_speedup_is_fast_and_ci_brackets_the_ratio():
    rng = np.random.default_rng(0)
    base = 10 * rng.normal(1, 0.005, 200)
    cand = 8 * rng.normal(1, 0.005, 200)
    res = compare.compare(pd.concat([_series("a", base), _series("b", cand)]), "a")
    row = res.shapes.iloc[0]
    assert row["verdict"] == "FAST"
    assert row["ci_low"] < row["ratio"] < row["ci_high"]
    assert row["ratio"] == pytest.approx(np.median(base) / np.median(cand))
    assert row["paired"]


def test_identical_distributions_are_same_and_noisy_small_diff_is_ambiguous():
    rng = np.random.default_rng(1)
    x = 10 * rng.normal(1, 0.002, 300)
    y = 10 * rng.normal(1, 0.002, 300)
    assert compare.compare(pd.concat([_series("a", x), _series("b", y, "other")]), "a").shapes.iloc[0]["verdict"] \
        == "SAME"
    noisy = 10.1 * np.exp(rng.normal(0, 0.5, 20))   # 1 % slower under heavy noise: an interval wider than its band
    row = compare.compare(pd.concat([_series("a", x), _series("b", noisy, "other")]), "a").shapes.iloc[0]
    assert row["ci_high"] - row["ci_low"] > 2 * row["band"] and row["verdict"] == "AMBIGUOUS"
    assert row["verdict"] == noise.verdict(row["ci_low"], row["ci_high"], row["band"])   # the model's verdict


def test_series_from_different_runs_are_not_paired():
    res = compare.compare(pd.concat([_series("a", [1.0, 1.1, 1.2], "r1"), _series("b", [1.0, 1.1, 1.2], "r2")]), "a")
    assert not res.shapes.iloc[0]["paired"]


def test_published_table_reproduces_the_score_without_ci():
    wl = load_workload()
    off = load_official()
    df = pd.concat([compare.series_from_table(off, "baseline_us", "base", "off"),
                    compare.series_from_table(off, "candidate_us", "036", "off")])
    res = compare.compare(df, "base", {f: d["weight"] for f, d in wl.families.items()})
    overall = res.overall.iloc[0]
    assert overall["score"] == pytest.approx(1.301203, abs=1e-6)
    assert overall["verdict"] == "NO SAMPLES" and overall["n_loads"] == 6
    assert overall["delta_pct"] == pytest.approx(-23.148, abs=1e-3)  # the write-up's 23.15% less time
    loads = res.loads.set_index("load")["ratio"]
    assert loads["decode 1"] == pytest.approx(1.5116, abs=1e-4)
    assert loads["verify 32"] == pytest.approx(1.1150, abs=1e-4)
    assert res.note == ""


def test_intersection_is_noted_and_dropped_rows_listed():
    off = load_official()
    full = compare.series_from_table(off, "baseline_us", "full", "a")
    part = compare.series_from_table(off[off["load"] == "decode 1"], "candidate_us", "part", "b")
    res = compare.compare(pd.concat([full, part]), "full")
    assert "intersection of 5 shapes" in res.note
    assert len(res.dropped) == 25
    assert list(res.loads["load"]) == ["decode 1"]
    assert res.overall.iloc[0]["n_loads"] == 1


def test_per_load_ci_contains_point_and_delta_sign():
    rng = np.random.default_rng(2)
    rows = []
    for fam, t in (("o", 6.0), ("router", 10.0)):
        shape = {**SHAPE, "family": fam}
        rows += [_series("a", t * rng.normal(1, 0.01, 60), shape=shape),
                 _series("b", 0.9 * t * rng.normal(1, 0.01, 60), shape=shape)]
    res = compare.compare(pd.concat(rows), "a")
    load = res.loads.iloc[0]
    assert load["ci_low"] < load["ratio"] < load["ci_high"]
    assert load["delta_pct"] < 0 and load["verdict"] == "FAST"


def test_errors():
    s = _series("a", [1.0, 2.0])
    with pytest.raises(ValueError, match="reference"):
        compare.compare(s, "zzz")
    with pytest.raises(ValueError, match="at least two"):
        compare.compare(s, "a")
    with pytest.raises(ValueError, match="no results"):
        compare.series_from_results(pd.DataFrame({"candidate": ["x"]}), "y", "y", "r")


def test_compare_candidates_drops_nearby_shapes_for_the_score():
    rows = []
    for load, M in (("decode 1", 1), ("nearby", 3)):
        shape = {**SHAPE, "load": load, "M": M}
        for cand, t in (("base", 10.0), ("fast", 8.0)):
            rows.append({**shape, "candidate": cand, "median_us": t, "samples_us": [t, t * 1.01, t * 0.99],
                         "correct": True})
    res = compare.compare_candidates(pd.DataFrame(rows), "base", ["fast"], "run")
    assert list(res.loads["load"]) == ["decode 1"] and res.overall.iloc[0]["n_loads"] == 1
    both = compare.compare_candidates(pd.DataFrame(rows), "base", ["fast"], "run", scored_only=False)
    assert both.overall.iloc[0]["n_loads"] == 2


def test_same_route_in_one_run_is_marked_whatever_the_verdict_reads():
    rows = []
    for family, routes in (("o", ("torch_linear", "torch_linear")), ("router", ("torch_linear", "router_x"))):
        shape = {**SHAPE, "family": family}
        for cand, route, t in (("base", routes[0], 10.0), ("best", routes[1], 9.5)):
            rows.append({**shape, "candidate": cand, "method": route, "median_us": t,
                         "samples_us": [t, t * 1.01, t * 0.99], "correct": True})
    res = compare.compare_candidates(pd.DataFrame(rows), "base", ["best"], "run")
    by = res.shapes.set_index("family")
    assert bool(by.loc["o", "same_route"]) and not bool(by.loc["router", "same_route"])
    # one call timed twice reads 5 % apart here: its difference is drift, never a speedup
    assert by.loc["o", "verdict"] == "SAME ROUTE" and by.loc["router", "verdict"] != "SAME ROUTE"
    assert res.loads.iloc[0]["n_same_route"] == 1
    # across runs, the same method is the identical route only on the same GPU model
    a = compare.series_from_results(pd.DataFrame(rows), "base", "a", "run1")
    b = compare.series_from_results(pd.DataFrame(rows), "base", "b", "run2")
    assert not compare.compare(pd.concat([a, b]), "a").shapes["same_route"].any()
    a, b = (compare.series_from_results(pd.DataFrame(rows), "base", n, r, gpu="NVIDIA H200") for n, r in
            (("a", "run1"), ("b", "run2")))
    assert compare.compare(pd.concat([a, b]), "a").shapes["same_route"].all()
    # series without a route (published tables) are never marked
    off = load_official()
    tab = pd.concat([compare.series_from_table(off, "baseline_us", "base", "off"),
                     compare.series_from_table(off, "baseline_us", "again", "off")])
    assert not compare.compare(tab, "base").shapes["same_route"].any()
