"""Run file → DataFrames, floors/SOL per shape, scores per pair, run listing (synthetic fixtures)."""
import functools
import json
import shutil
from pathlib import Path

import pytest

from dashboard.model import run_kinds, runs, scoring

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
COMPLETE = FIXTURES / "2000-01-01_synthetic_synthetic-complete.json"
PARTIAL = FIXTURES / "2000-01-02_synthetic_synthetic-partial.json"


@pytest.fixture(scope="module")
def data():
    return runs.load_run_data(COMPLETE)


def test_frames(data):
    assert data.status == "complete" and data.label == "synthetic-complete"
    assert len(data.results) == 61 and len(data.pairs) == 30 and len(data.probes) == 3
    assert data.candidates() == ["baseline", "fast"]
    assert "decode 1/qkv_gate" in set(data.results["shape"])
    assert "nearby/o/M9" in set(data.results["shape"])
    env = dict(zip(data.environment["key"], data.environment["value"]))
    assert env["gpu"] == "SYNTHETIC (not measured)" and env["settings.mode"] == "cold"


def test_probe_curve(data):
    curve = runs.probe_curve(data)
    assert curve.us(1 << 24) == pytest.approx((1 << 24) / 4e6)   # 4 TB/s line
    assert curve.tbps_max_point == pytest.approx(4.0)


def test_shape_table_floors_and_sol(data):
    table = runs.shape_table(data)
    row = table[(table["shape"] == "decode 16/pooler") & (table["candidate"] == "fast")].iloc[0]
    nbytes = 4096 * 8192 * 2 + 16 * 8192 * 2 + 16 * 4096 * 2
    assert row["bytes"] == nbytes
    assert row["memory_floor_us"] == pytest.approx(nbytes / 4e6)                   # above the probes: 4 TB/s
    assert row["compute_floor_us"] == pytest.approx(2 * 16 * 4096 * 8192 / 800e12 * 1e6)
    assert row["bound"] == "memory"
    assert row["sol"] == pytest.approx(nbytes / 4e6 / 8.0)
    big = table[(table["shape"] == "verify 32/qkv_gate") & (table["candidate"] == "fast")].iloc[0]
    assert big["floor_us"] == max(big["memory_floor_us"], big["compute_floor_us"])


def test_run_score(data):
    assert runs.candidate_pairs(data) == [("baseline", "fast")]
    b = runs.run_score(data, "baseline", "fast")
    assert b.load_ratios()["decode 1"] == pytest.approx(2.0)
    assert b.score == pytest.approx(2 ** (1 / 6))
    assert b.equiv_candidate_us == pytest.approx(62 * 5 * 8.0)


def test_partial_run_cannot_be_scored_but_loads_can():
    data = runs.load_run_data(PARTIAL)
    assert data.status == "partial"
    with pytest.raises(scoring.ScoringError, match="no time for 25 scored shape"):
        runs.run_score(data, "baseline", "fast")
    from datasets import load_workload

    loads = scoring.complete_loads(data.results, "baseline", "fast", load_workload())
    assert list(loads["load"]) == ["decode 1"] and loads["ratio"].iloc[0] == pytest.approx(2.0)


def test_pairs_fall_back_to_candidates(tmp_path):
    run = json.loads(COMPLETE.read_text())
    run["pairs"] = []
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run))
    assert runs.candidate_pairs(runs.load_run_data(path)) == [("baseline", "fast")]


def test_only_read_probes_make_the_curve(tmp_path):
    run = json.loads(COMPLETE.read_text())
    run["probes"].append({"bytes": 1 << 24, "us": 0.5, "kind": "write"})  # would lower the floor if used
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run))
    curve = runs.probe_curve(runs.load_run_data(path))
    assert curve.us(1 << 24) == pytest.approx((1 << 24) / 4e6)


def test_no_probes_no_peak(tmp_path):
    run = json.loads(COMPLETE.read_text())
    run["probes"], run["compute_peak_tflops"] = [], None
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run))
    data = runs.load_run_data(path)
    assert runs.probe_curve(data) is None
    table = runs.shape_table(data)
    assert table["floor_us"].isna().all() and set(table["bound"]) == {"unknown"}


def test_list_runs_sorted_by_date(tmp_path):
    for name in ("2026-12-01_nvidia-h200_b.json", "2026-11-30_nvidia-h200_z.json", "notes.json",
                 "2026-11-30_nvidia-h200_a.json"):
        shutil.copy(COMPLETE, tmp_path / name)
    (tmp_path / "README.md").write_text("not a run")
    names = [p.name for p in runs.list_runs(tmp_path)]
    assert names == ["2026-11-30_nvidia-h200_a.json", "2026-11-30_nvidia-h200_z.json",
                     "2026-12-01_nvidia-h200_b.json", "notes.json"]
    assert runs.list_runs(tmp_path / "missing") == []
    assert runs.parse_run_name("2026-11-30_nvidia-h200_seed_036.json") == {
        "date": "2026-11-30", "gpu": "nvidia-h200", "label": "seed_036"}
    assert runs.parse_run_name("notes.json") is None


@functools.lru_cache(maxsize=1)
def _committed() -> dict:
    """{path: RunData} of every committed run, each file read and validated once for the tests below."""
    return {p: runs.load_run_data(p) for p in runs.list_runs()}


def test_committed_runs_are_valid():
    # Whatever measured runs are committed must load (synthetic files must never be there).
    if not _committed():
        pytest.skip("no measured runs committed in datasets/runs yet")
    for path, data in _committed().items():
        assert "synthetic" not in data.label.lower(), path.name
        assert "SYNTHETIC" not in str(data.run["environment"].get("gpu", "")), path.name


def test_default_run_prefers_the_most_fully_scored_sweep_of_the_default_workload():
    """The app opens on a plan sweep of muse_bf16_proj with the most fully scored candidates, not on a tune log or
    a screen (they time dozens of configs per shape) nor on another workload's run."""
    from dashboard.model.run_kinds import SWEEP, default_run, kind_of, meta_of
    from dashboard.model.runs import scored_candidates

    loaded = _committed()
    if not loaded:
        pytest.skip("no committed runs")
    chosen = default_run([meta_of(d) for d in loaded.values()], opens=loaded.__getitem__)
    data = loaded[chosen]
    assert kind_of(data.run) == SWEEP and data.workload.name == "muse_bf16_proj"
    n_chosen = len(scored_candidates(data))
    assert n_chosen >= 2
    scored = {p: len(scored_candidates(d)) for p, d in loaded.items()}
    home = meta_of(data).device   # the write-up's device: a sweep of another GPU is never the default
    assert home == "NVIDIA H200"
    assert all(scored[p] <= n_chosen for p, d in loaded.items()
               if kind_of(d.run) == SWEEP and d.workload.name == "muse_bf16_proj" and meta_of(d).device == home)
    tune_logs = [p for p, d in loaded.items() if "tune" in d.run]
    assert tune_logs and any(scored[p] > n_chosen for p in tune_logs)


def test_default_run_skips_a_top_ranked_file_that_fails_validation(tmp_path):
    """default_run ranks files from their raw JSON and validates only the winner: a file that would rank first
    but fails validation (or is not JSON) must not be opened; the next valid one is."""
    good = tmp_path / "2000-01-01_synthetic_good.json"
    shutil.copy(COMPLETE, good)
    run = json.loads(COMPLETE.read_text())
    run["created_utc"] = "2999-01-01T00:00:00Z"  # newer than `good`: it would win the tie on scored candidates
    run["schema_version"] = 999
    bad = tmp_path / "2000-01-02_synthetic_bad-schema.json"
    bad.write_text(json.dumps(run))
    (tmp_path / "2000-01-03_synthetic_corrupt.json").write_text("{not json")
    partial = tmp_path / PARTIAL.name
    shutil.copy(PARTIAL, partial)
    assert run_kinds.default_run(runs.list_runs(tmp_path)) == good
    run["schema_version"] = json.loads(COMPLETE.read_text())["schema_version"]
    bad.write_text(json.dumps(run))  # now valid: the newer of two equally scored runs wins
    assert run_kinds.default_run(runs.list_runs(tmp_path)) == bad


def test_scored_candidates_needs_every_scored_shape(tmp_path):
    import json

    from dashboard.model.runs import load_run_data, scored_candidates

    src = FIXTURES / "2000-01-01_synthetic_synthetic-complete.json"
    run = json.loads(src.read_text())
    full = scored_candidates(load_run_data(src))
    assert full, "fixture should have fully scored candidates"
    victim = full[-1]
    first = next(i for i, r in enumerate(run["results"]) if r["candidate"] == victim)
    run["results"][first]["correct"] = False
    run["pairs"] = [p for p in run.get("pairs", []) if p["candidate"] != victim]
    bad = tmp_path / src.name
    bad.write_text(json.dumps(run))
    assert victim not in scored_candidates(load_run_data(bad))


def test_the_tables_use_the_runs_own_floor_the_one_below_floor_was_flagged_with(tmp_path):
    """A result's floor_us (its exact-bytes probe) is the tables' memory floor; the probe curve's value at the same
    bytes keeps its own name, curve_floor_us, and stands in only for a result without a floor of its own."""
    run = json.loads(COMPLETE.read_text())
    own = [r for r in run["results"] if r["candidate"] == "fast" and r["load"] == "decode 16"]
    for r in own:
        r["floor_us"] = 123.0
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run))
    table = runs.shape_table(runs.load_run_data(path))
    mine = table[(table["candidate"] == "fast") & (table["load"] == "decode 16")]
    assert len(mine) == len(own) and (mine["memory_floor_us"] == 123.0).all()
    assert mine["curve_floor_us"].to_numpy() == pytest.approx((mine["bytes"] / 4e6).to_numpy())  # named apart
    others = table[~table.index.isin(mine.index)]
    assert (others["memory_floor_us"] == others["curve_floor_us"]).all()   # no floor of their own: the curve


def test_any_workload_gets_floors_from_the_run_in_view():
    """A workload no run has measured (llama31_8b_decode) shows floors: the run's probe curve at each shape's
    bytes and its compute peak, the rules shape_table uses for curve_floor_us."""
    from datasets import load_workload
    from dashboard.model import runs

    run = Path(__file__).parents[2] / "datasets/runs/2026-11-30_nvidia-h200_baseline-seed036-best-r2.json"
    data = runs.load_run_data(run)
    workload = load_workload("llama31_8b_decode")
    table = runs.workload_floors(workload, data)
    assert len(table) == len(workload.shapes) and table["floor_us"].gt(0).all()
    curve = runs.probe_curve(data)
    assert list(table["memory_floor_us"]) == list(curve.us(table["bytes"].to_numpy()))
    assert set(table["bound"]) <= {"memory", "compute"}
