"""The correctness gate: no score, load ratio, speedup, Compare verdict or SOL comes from a shape where either side
is incorrect, failed or (unless included) below the measured floor. Fixtures are edited copies of a committed
paired sweep (tests/fixtures/runs/edit_runs.py; labelled EDITED-, test data only)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dashboard.model import compare, runs, scoring, views
from datasets import load_workload
from dashboard_cli import run_main

ROOT = Path(__file__).resolve().parents[2]
WL = load_workload()


@pytest.fixture(scope="module")
def r3_scores():
    data = runs.load_run_data(ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-seed036-best-r3.json")
    return {c: runs.run_score(data, "baseline", c).score for c in ("seed036", "best")}


def _load(edit, tmp_path, change, tag):
    return runs.load_run_data(edit.write(change(edit.r3()), tmp_path, tag))


def test_one_incorrect_shape_refuses_that_pair_only(edit, tmp_path, r3_scores):
    data = _load(edit, tmp_path, lambda r: edit.incorrect(r, "best", "decode 1", "o"), "inc")
    with pytest.raises(scoring.NoScore) as info:
        runs.run_score(data, "baseline", "best")
    assert str(info.value).startswith("no score: best is incorrect at 1 scored shape (decode 1/o: rel_l2 0.31")
    assert info.value.gate.refused and info.value.gate.wrong
    # The edit made best 'faster' (0.5 µs): scoring it anyway would have raised the score — the gate stops that.
    assert runs.run_score(data, "baseline", "seed036").score == pytest.approx(r3_scores["seed036"], rel=1e-12)
    assert scoring.complete_loads(runs.status_rows(data), "baseline", "best", WL)["load"].tolist() == \
        [l for l in WL.load_order if l != "decode 1"]  # only loads whose every shape passes


def test_an_incorrect_baseline_refuses_every_pair_and_names_the_baseline(edit, tmp_path):
    data = _load(edit, tmp_path, lambda r: edit.incorrect(r, "baseline", "verify 32", "router", 40.0), "base")
    for cand in ("seed036", "best"):
        with pytest.raises(scoring.NoScore, match=r"no score: baseline is incorrect at 1 scored shape "
                                                  r"\(verify 32/router"):
            runs.run_score(data, "baseline", cand)


def test_a_failure_record_is_failed_not_missing(edit, tmp_path):
    data = _load(edit, tmp_path, lambda r: edit.failed(r, "best", "decode 16", "router"), "fail")
    with pytest.raises(scoring.NoScore, match=r"best failed at 1 scored shape \(decode 16/router: run\(\) raised"):
        runs.run_score(data, "baseline", "best")
    assert "best" not in runs.scored_candidates(data)


def test_below_floor_is_left_out_unless_included(edit, tmp_path, r3_scores):
    data = _load(edit, tmp_path, lambda r: edit.below_floor(r, "best", "verify 1", "unpooler"), "floor")
    with pytest.raises(scoring.NoScore, match="below the measured HBM floor at 1 scored shape") as info:
        runs.run_score(data, "baseline", "best")
    assert info.value.gate.refused and not info.value.gate.wrong
    assert scoring.BELOW_FLOOR_NOTE in str(info.value)
    bd = runs.run_score(data, "baseline", "best", include_below_floor=True)
    assert bd.score == pytest.approx(r3_scores["best"], rel=1e-12) and bd.below_floor_included == ("verify 1/unpooler",)


def test_times_without_correctness_cannot_be_scored():
    times = pd.DataFrame({"load": ["decode 1"], "family": ["o"], "M": [1], "N": [8192], "K": [1024],
                          "candidate": ["a"], "median_us": [1.0]})
    with pytest.raises(scoring.ScoringError, match="no correctness"):
        scoring.score_long(times, "a", "a", WL)


def test_compare_gives_the_status_as_verdict_and_no_score(edit, tmp_path, r3_scores):
    data = _load(edit, tmp_path, lambda r: edit.incorrect(r, "best", "decode 1", "o"), "cmp")
    res = compare.compare_candidates(data.results, "baseline", ["seed036", "best"], "run", failures=data.failures)
    best = res.shapes[res.shapes["series"] == "best"].set_index(["load", "family"])
    assert best.loc[("decode 1", "o"), "verdict"] == "INCORRECT" and np.isnan(best.loc[("decode 1", "o"), "ratio"])
    loads = res.loads[res.loads["series"] == "best"].set_index("load")
    assert loads.loc["decode 1", "verdict"] == "NO SCORE" and np.isnan(loads.loc["decode 1", "ratio"])
    assert loads.drop("decode 1")["ratio"].notna().all()
    overall = res.overall.set_index("series")
    assert overall.loc["best", "verdict"] == "NO SCORE" and np.isnan(overall.loc["best", "score"])
    assert overall.loc["seed036", "score"] == pytest.approx(r3_scores["seed036"], rel=1e-6)  # medians of samples
    assert list(res.no_score()) == ["best"] and "best is incorrect at 1 shape (decode 1/o" in res.no_score()["best"]


def test_compare_of_a_failed_shape_across_runs(edit, tmp_path):
    good = runs.load_run_data(edit.write(edit.r3(), tmp_path, "plain"))
    bad = _load(edit, tmp_path, lambda r: edit.failed(r, "best", "decode 1", "qkv_gate"), "fail2")
    df = pd.concat([compare.series_from_run(good, "best", "A"), compare.series_from_run(bad, "best", "B")])
    res = compare.compare(df, "A")
    assert not res.note  # the failed shape is in both series: no silent intersection drop
    row = res.shapes.set_index(["load", "family"]).loc[("decode 1", "qkv_gate")]
    assert row["verdict"] == "FAILED" and res.overall.iloc[0]["verdict"] == "NO SCORE"


def test_wide_table_blanks_ratios_and_sol_the_gate_keeps_out(edit, tmp_path):
    data = _load(edit, tmp_path, lambda r: edit.incorrect(r, "best", "decode 1", "o"), "wide")
    gate = runs.pair_gate(data, "baseline", "best", WL, scored_only=False)
    wide = views.wide_shapes(runs.shape_table(data, WL), data.pairs, "baseline", "best", gate).set_index("shape")
    row = wide.loc["decode 1/o"]
    assert row["status_candidate"] == "incorrect" and not row["usable"] and not row["correct"]
    assert np.isnan(row["ratio"]) and np.isnan(row["ratio_paired"]) and row["candidate_us"] == 0.5
    assert wide.drop("decode 1/o")["ratio"].notna().all()
    sol = views.load_sol(wide.reset_index()).set_index("load")
    assert np.isnan(sol.loc["decode 1", "sol_candidate"]) and sol.drop("decode 1")["sol_candidate"].notna().all()
    # Without a gate given, wide_shapes gates from the table's own statuses: the same blank.
    assert np.isnan(views.wide_shapes(runs.shape_table(data, WL), data.pairs, "baseline", "best")
                    .set_index("shape").loc["decode 1/o", "ratio"])


# --- the CLI: exit 3 and a 'no score' line for the refused pair ----------------------------------------------------
def _cli(*args):
    return run_main(*args)   # in this process (dashboard_cli.py)


def test_cli_summarize_table_report_exit_3_for_an_incorrect_pair(edit, tmp_path):
    path = edit.write(edit.incorrect(edit.r3(), "best", "decode 1", "o"), tmp_path, "cli")
    out = _cli("summarize", path)
    assert out.returncode == 3, out.stderr
    assert "best vs baseline: no score: best is incorrect at 1 scored shape (decode 1/o" in out.stdout
    assert "seed036 vs baseline\n" in out.stdout and "complete loads" not in out.stdout
    assert out.stderr.strip().startswith("best vs baseline: no score: best is incorrect")
    table = _cli("table", path)  # default pair: best vs baseline
    assert table.returncode == 3
    row = next(l for l in table.stdout.splitlines() if l.startswith("  decode 1/o "))
    assert "INCORRECT (candidate)" in row
    assert _cli("table", path, "--candidate", "seed036").returncode == 0
    rep = _cli("report", path, "--candidate", "best", "--out", tmp_path / "rep", "--format", "md")
    assert rep.returncode == 3 and "no score: best is incorrect" in rep.stderr
    md = next((tmp_path / "rep").glob("*.md")).read_text()
    assert "no score: best is incorrect at 1 scored shape" in md


def test_cli_below_floor_needs_the_flag(edit, tmp_path):
    path = edit.write(edit.below_floor(edit.r3(), "best", "decode 1", "o"), tmp_path, "clifloor")
    out = _cli("summarize", path, "--candidate", "best")
    assert out.returncode == 3 and "--include-below-floor" in out.stderr
    ok = _cli("summarize", path, "--candidate", "best", "--include-below-floor")
    assert ok.returncode == 0 and "below the measured HBM floor (decode 1/o)" in ok.stdout


def test_nearby_only_run_with_an_incorrect_shape(edit, tmp_path):
    import json

    run = json.loads((ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-vs-best-nearby-r3.json").read_text())
    rec = next(r for r in run["results"] if r["candidate"] == "best")
    rec["correct"] = False
    path = edit.write(run, tmp_path, "nearby")
    out = _cli("summarize", path)
    assert out.returncode == 3
    n = sum(r["candidate"] == "best" for r in run["results"])
    assert f"{n} shapes, {n - 1} correct and timed on both sides" in out.stdout
    assert "best is incorrect at 1 shape" in out.stdout


def test_a_blocked_load_still_counts_its_shapes(edit, tmp_path):
    data = _load(edit, tmp_path, lambda r: edit.incorrect(r, "best", "verify 1", "o"), "count")
    res = compare.compare_candidates(data.results, "baseline", ["best"], "run", failures=data.failures)
    loads = res.loads.set_index("load")
    assert loads.loc["verify 1", "verdict"] == "NO SCORE" and loads["n_shapes"].tolist() == [5] * 6
    assert list(loads.index) == WL.load_order


def test_a_candidate_rejected_everywhere_is_still_summarized():
    """The committed H200 known-wrong run: most wrong candidates have no timed result at all (only failures);
    the summary must still name each one and why it has no score."""
    from dashboard.model import runs as drun
    from datasets import RUNS_DIR

    data = drun.load_run_data(RUNS_DIR / "2026-12-01_nvidia-h200_baseline-vs-known-wrong-r4.json")
    pairs = drun.candidate_pairs(data)
    named = {c for _, c in pairs}
    assert {b for b, _ in pairs} == {"baseline"}
    assert {"hang", "segfault", "exit_process", "one_hot_int8", "tf32_flipper", "timer_patcher"} <= named
    assert len(named) == 21
    gate = drun.pair_gate(data, "baseline", "hang")
    assert not gate.ok and "hang failed at 30 scored shapes" in gate.message()


def _same_call_split(path: Path):
    """From the raw run file, independently of dashboard code: shapes where best dispatched the very method string
    the baseline did, and best's paired ratios (shape key → (ratio, family, M)) apart at those and the others."""
    import json

    run = json.loads(path.read_text())
    method = {(r["candidate"], r["load"], r["family"], r["M"]): r["method"] for r in run["results"]}
    own, same = {}, {}
    for p in run["pairs"]:
        key = (p["load"], p["family"], p["M"])
        where = same if method[("baseline", *key)] == method[("best", *key)] else own
        where[key] = (p["ratio_median"], p["family"], p["M"])
    return own, same


def test_nearby_summary_reports_the_baselines_own_route_apart():
    # A nearby run where best dispatches F.linear at some shapes: the candidate's own routes are summarised without
    # them, and their spread is shown as what it is (counts and extremes read from the run file itself)
    path = ROOT / "datasets/runs/2026-12-01_nvidia-h200_baseline-vs-best-nearby-extra-r17.json"
    own, same = _same_call_split(path)
    assert own and same
    out = _cli("summarize", path)
    assert out.returncode == 0, out.stderr
    low, fam, M = min(own.values())
    assert f"where it runs its own route ({len(own)} shapes): per-shape ratio min {low:.3f} ({fam} M={M})" \
        in out.stdout
    low, fam, M = min(same.values())
    assert f"{len(same)} shapes run the baseline's own route (the same call on both sides): ratios {low:.3f} " \
           f"({fam} M={M})" in out.stdout
    table = _cli("table", ROOT / "datasets/runs/2026-12-01_nvidia-h200_baseline-vs-best-b-r17.json")
    assert table.returncode == 0 and "torch_linear (= baseline)" in table.stdout
    assert "gemv_wide BN=1 BK=8192 num_warps=16 (= baseline)" not in table.stdout
