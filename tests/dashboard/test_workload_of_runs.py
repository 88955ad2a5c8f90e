"""The dashboard reads each run's own workload: a run of another workload (the SYNTHETIC tiny_bf16_synthetic fixture,
embedded in the run) is validated, scored, tabulated and reported with its families and loads; an older run (no
"workload" key) is read as muse_bf16_proj with a note; the official table is joined only for muse."""
import json
import math
from pathlib import Path

import pytest

from dashboard.plots import figures
from dashboard.documents import report
from dashboard.model import runs, views, workloads
from datasets import load_workload
from datasets.runfile import RunFileError
from dashboard_cli import run_main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "runs"
TINY = FIXTURES / "2000-01-03_synthetic_synthetic-tiny-workload.json"
OLD = FIXTURES / "2000-01-01_synthetic_synthetic-complete.json"
MUSE_ONLY = "the official table is for muse_bf16_proj; this run is tiny_bf16_synthetic"


def cli(*args):
    return run_main(*args)   # in this process (dashboard_cli.py)


def test_a_run_carries_its_embedded_workload_and_is_scored_with_it():
    data = runs.load_run_data(TINY)
    assert data.workload.name == "tiny_bf16_synthetic" and data.workload_note is None
    assert data.workload.family_order == ["up", "down"] and data.workload.load_order == ["step 1", "step 4"]
    bd = runs.run_score(data, "baseline", "fast")
    assert bd.score == pytest.approx(math.sqrt(2))          # load ratios 2 and 1 by construction
    assert list(bd.loads["load"]) == ["step 1", "step 4"]
    assert runs.scored_candidates(data) == ["baseline", "fast"]
    table = runs.shape_table(data)
    assert set(table["family"]) == {"up", "down"} and table["floor_us"].notna().all()


def test_an_old_run_is_read_as_muse_with_a_note():
    data = runs.load_run_data(OLD)
    assert data.workload.name == "muse_bf16_proj"
    assert "does not record its workload" in data.workload_note and "muse_bf16_proj" in data.workload_note
    assert runs.run_score(data, "baseline", "fast").score == pytest.approx(2 ** (1 / 6))


def test_a_run_checked_against_another_workload_names_the_family():
    with pytest.raises(RunFileError, match=r"'up' is not a family of the workload \(qkv_gate, o"):
        runs.load_run_data(TINY, load_workload())


def test_a_broken_embedded_workload_is_one_run_file_error(tmp_path):
    run = json.loads(TINY.read_text())
    run["workload"]["families"]["up"]["K"] = -1
    path = tmp_path / TINY.name
    path.write_text(json.dumps(run))
    with pytest.raises(RunFileError, match=r"workload\.families\.up\.K"):
        runs.load_run_data(path)
    out = cli("summarize", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "workload.families.up.K" in out.stderr


def test_default_run_ranks_each_run_with_its_own_workload():
    # The tiny run has 2 fully scored candidates; checked against muse it would have none and fail validation.
    from dashboard.model import run_kinds

    assert run_kinds.default_run([TINY]) == TINY
    assert run_kinds.run_meta(TINY).scored == 2 and run_kinds.run_meta(TINY).workload != "muse_bf16_proj"


@pytest.mark.parametrize("command", ["summarize", "table"])
def test_cli_prints_the_runs_workload_and_score(command):
    out = cli(command, str(TINY))
    assert out.returncode == 0, out.stderr
    assert "workload: tiny_bf16_synthetic (2 families: up, down; 2 loads: step 1, step 4)" in out.stdout
    assert "note:" not in out.stdout
    if command == "summarize":
        assert "score (geometric mean of load ratios): 1.414214" in out.stdout
        assert [l.split()[0:2] for l in out.stdout.splitlines() if l.startswith("  step ")] == \
            [["step", "1"], ["step", "4"]]
    else:
        shapes = [l.split()[0] + " " + l.split()[1] for l in out.stdout.splitlines() if l.startswith("  step ")]
        assert shapes == ["step 1/up", "step 1/down", "step 4/up", "step 4/down"]


def test_cli_says_when_muse_was_assumed():
    out = cli("summarize", str(OLD))
    assert out.returncode == 0, out.stderr
    assert "workload: muse_bf16_proj (5 families" in out.stdout
    assert "note: 2000-01-01_synthetic_synthetic-complete.json does not record its workload" in out.stdout


def test_report_of_another_workload_says_the_official_table_is_muse_only(tmp_path):
    out = cli("report", str(TINY), "--out", str(tmp_path), "--format", "md,json")
    assert out.returncode == 0, out.stderr
    md = next(tmp_path.glob("*.md")).read_text()
    assert "tiny_bf16_synthetic (2 families: up, down; 2 loads: step 1, step 4)" in md
    assert MUSE_ONLY in md and "Local (measured) vs official" not in md
    assert "geometric mean of the 2 load ratios" in md
    summary = json.loads(next(tmp_path.glob("*.json")).read_text())["summary"]
    assert summary["workload"] == "tiny_bf16_synthetic" and summary["score"] == pytest.approx(math.sqrt(2))
    assert summary["official_table"] == MUSE_ONLY


def test_report_of_a_muse_run_keeps_the_official_table():
    rep = report.build_from_path(OLD, candidate="fast")
    assert "local vs official" in rep.tables and "official_table" not in rep.summary
    assert rep.summary["workload"] == "muse_bf16_proj" and "workload_note" in rep.summary


def test_official_only_and_mismatch_name_both_workloads():
    muse, tiny = load_workload(), runs.load_run_data(TINY).workload
    assert workloads.official_only(muse) is None and workloads.official_only(tiny) == MUSE_ONLY
    line = workloads.mismatch([("run A", muse), ("run B", tiny)])
    assert line.count("\n") == 0 and "muse_bf16_proj" in line and "tiny_bf16_synthetic" in line
    assert workloads.mismatch([("a", muse), ("b", load_workload())]) is None
    changed = muse.to_dict()
    changed["families"]["o"]["K"] = 2048      # same name, other shapes: still refused, by fingerprint
    from datasets import workload_from_dict
    assert workloads.mismatch([("a", muse), ("b", workload_from_dict(changed))]) is not None
    assert workloads.official_only(workload_from_dict(changed)) is not None


def test_family_colours_keep_muse_and_cover_any_family():
    muse = workloads.family_colors(load_workload().family_order)
    assert muse == figures.FAMILY_COLORS and muse["router"] == "#e45756"
    llama = workloads.family_colors(load_workload("llama31_8b_decode").family_order)
    assert set(llama) == {"qkv", "o", "gate_up", "down"} and len(set(llama.values())) == 4
    assert llama == workloads.family_colors(["qkv", "o", "gate_up", "down"])   # deterministic
    many = workloads.family_colors([f"f{i}" for i in range(15)])
    assert len(many) == 15


def test_figures_draw_families_muse_does_not_have():
    data = runs.load_run_data(TINY)
    wide = views.wide_shapes(runs.shape_table(data), data.pairs, "baseline", "fast")
    fig = figures.load_time_bars(wide, {"baseline": "baseline_us", "fast": "candidate_us"}, "synthetic",
                                 data.workload.load_order)
    assert [t.name for t in fig.data] == ["up", "down"]
    assert fig.data[0].marker.color != fig.data[1].marker.color
    shares = views.time_shares(wide, {"up": 1, "down": 2})
    assert [t.name for t in figures.share_bars(shares, "synthetic").data] == ["up", "down"]


# The committed H200 runs of the second shipped workload (measured; their workload is embedded).
LLAMA_RUN = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_baseline-vs-llama31_8b_decode-r5.json"
LLAMA_EXPLAIN = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_explain-llama31_8b_decode-r5.json"
LLAMA_LINE = "workload: llama31_8b_decode (4 families: qkv, o, gate_up, down; 4 loads: decode 1, decode 8, decode 32, " \
             "prefill 128)"


def test_cli_reads_the_committed_llama_runs(tmp_path):
    out = cli("summarize", str(LLAMA_RUN))
    assert out.returncode == 0, out.stderr
    assert LLAMA_LINE in out.stdout and "score (geometric mean of load ratios): 1.049339" in out.stdout
    out = cli("table", str(LLAMA_RUN), "--candidate", "llama31_8b_decode")
    assert out.returncode == 0 and "prefill 128/gate_up" in out.stdout and "decode 1     baseline  84.0%" in out.stdout
    out = cli("report", str(LLAMA_RUN), "--out", str(tmp_path), "--format", "md,json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(next(tmp_path.glob("*.json")).read_text())["summary"]
    assert summary["workload"] == "llama31_8b_decode" and summary["score"] == pytest.approx(1.049339, abs=5e-7)
    out = cli("explain", str(LLAMA_EXPLAIN), "--shape", "decode 1/gate_up")
    assert out.returncode == 0, out.stderr
    assert "gemv_wide_kernel" in out.stdout and "decode 1/gate_up" in out.stdout
