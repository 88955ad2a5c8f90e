"""dashboard.model.fleet: which run files form one fleet sweep, the overall SOL, and one row per GPU model."""
import numpy as np
import pandas as pd
import pytest

from dashboard.model import fleet


def test_fleet_sets_group_run_files_by_label_and_prefer_the_most_gpu_models():
    names = ["2026-12-01_nvidia-h200_sweep.json", "2026-12-02_nvidia-h100-80gb-hbm3_sweep.json",
             "2026-12-02_nvidia-h200_sweep.json", "2026-12-03_nvidia-h200_other.json", "notes.json"]
    sets = fleet.fleet_sets(names)
    assert set(sets) == {"sweep", "other"}
    assert [p.name for p in sets["sweep"]] == [names[1], names[0], names[2]]   # by GPU, then date
    assert fleet.default_set(sets) == "sweep" and fleet.default_set({}) is None


def test_overall_sol_weights_floors_and_times_and_refuses_a_gated_shape():
    wide = pd.DataFrame({"family": ["o", "router"], "floor_us": [4.0, 2.0], "baseline_us": [8.0, 8.0],
                         "candidate_us": [5.0, 4.0], "usable": [True, True]})
    base, cand = fleet.overall_sol(wide, {"o": 1.0, "router": 3.0})
    assert base == pytest.approx((4 + 6) / (8 + 24)) and cand == pytest.approx((4 + 6) / (5 + 12))
    assert all(np.isnan(fleet.overall_sol(wide.assign(usable=[True, False]), {})))
    assert all(np.isnan(fleet.overall_sol(wide.assign(floor_us=[4.0, np.nan]), {})))


def test_fleet_table_scores_each_run_alone_and_says_why_one_has_no_score(fleet_run_files):
    from dashboard.model import runs
    from datasets import load_workload

    wl = load_workload()
    paths = fleet_run_files(break_b=True)
    table = fleet.fleet_table([runs.load_run_data(p, wl) for p in paths], "baseline", "seed036", wl)
    assert list(table["status"]) == ["scored", "no score"] and "incorrect" in table.loc[1, "reason"]
    assert table.loc[0, "score"] == runs.run_score(runs.load_run_data(paths[0], wl), "baseline", "seed036", wl).score
    assert np.isnan(table.loc[1, "score"]) and table.loc[0, "shapes"] == 30


def test_the_default_fleet_set_is_the_shipped_plans_newest_cluster_sweep_never_a_tune_log():
    """On the committed runs (all one GPU model): plan sweeps only (run_kinds), and among them the newest one made
    with `--cluster` that pairs the baseline with the shipped plan; a tune log (one router config as candidate) is
    never offered."""
    import json

    from dashboard.documents import run_index
    from dashboard.model import run_kinds, runs

    metas = run_index.metas(runs.list_runs(), run_index.read())   # the index: test_run_index.py checks it
    sweeps = {p: m for p, m in metas.items() if m is not None and m.kind == run_kinds.SWEEP}
    others = {p for p, m in metas.items() if m is not None and m.kind != run_kinds.SWEEP}
    assert others, "the committed runs hold tune, screen and explain runs: what this test keeps out"
    sets = fleet.sweep_sets(metas)
    # judged by what each file is (its kind), not by its label: a sweep labelled "...-retune" is still a sweep
    offered = {p for ps in sets.values() for p in ps}
    assert offered and not offered & others
    label = fleet.default_set(sets, sweeps)
    docs = [json.loads(p.read_text()) for p in sets[label]]
    assert all("--cluster" in d["environment"]["settings"]["command"] for d in docs)
    assert all({"baseline", "best"} <= {r["candidate"] for r in d["results"]} for d in docs)
    newest = max(d["created_utc"] for d in docs)
    others = [m for m in sweeps.values() if m.cluster and m.shipped_pair and m.path not in sets[label]]
    assert all(m.created_utc <= newest for m in others)


def test_a_no_score_reason_is_not_prefixed_twice(fleet_run_files):
    from dashboard.model import runs

    paths = fleet_run_files(break_b=True)
    table = fleet.fleet_table([runs.load_run_data(p) for p in paths], "baseline", "seed036")
    reason = table.loc[1, "reason"]
    assert reason and not reason.startswith("no score") and "seed036 is incorrect" in reason, reason
