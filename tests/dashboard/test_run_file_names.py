"""Every dashboard subcommand finds a run file the same way (datasets.paths.find_run_file): a path, or a name in
datasets/runs/, with or without .json / .json.gz; and `compare` says how it compared in words true for the pair."""
import gzip
import json

import pytest

from dashboard_cli import run_main
from datasets.paths import find_run_file

R3 = "2026-11-30_nvidia-h200_baseline-seed036-best-r3"            # committed as .json
GZ = "2026-12-04_nvidia-h200_baseline-vs-best-b-final"           # committed as .json.gz
EXPLAIN = "2026-12-01_nvidia-h200_explain-baseline-best-r12"     # an explain run, .json


def test_find_run_file_takes_a_path_or_a_name_with_or_without_its_suffix(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.json").write_text("{}")
    (runs / "b.json.gz").write_bytes(gzip.compress(b"{}"))
    (tmp_path / "here.json").write_text("{}")
    assert find_run_file(str(tmp_path / "here.json"), runs) == tmp_path / "here.json"
    assert find_run_file(str(tmp_path / "here"), runs) == tmp_path / "here.json"
    for text in ("a", "a.json", "a.json.gz"):
        assert find_run_file(text, runs) == runs / "a.json", text
    for text in ("b", "b.json", "b.json.gz"):
        assert find_run_file(text, runs) == runs / "b.json.gz", text
    for text in ("c", "c.json", "", str(runs)):
        assert find_run_file(text, runs) is None, text


@pytest.mark.parametrize("args", [("summarize", R3), ("summarize", f"{R3}.json.gz"), ("summarize", GZ),
                                  ("summarize", f"{GZ}.json"), ("table", R3), ("table", f"{GZ}.json.gz"),
                                  ("explain", EXPLAIN), ("compare", R3, f"{R3}.json:baseline")])
def test_every_subcommand_takes_a_bare_run_name(args):
    out = run_main(*args)
    assert out.returncode in (0, 3), out.stderr      # 3: a pair the gate refuses is still a run that was found
    assert "no run file" not in out.stderr and out.stdout


@pytest.mark.parametrize("command", ["summarize", "table", "explain"])
def test_a_name_that_is_no_run_file_is_one_line(command):
    out = run_main(command, "2026-01-01_no-such-run")
    assert out.returncode == 2
    assert out.stderr.strip() == ("error: 2026-01-01_no-such-run: no run file (.json / .json.gz) by that name, as a "
                                  "path or in datasets/runs/")


def test_report_takes_a_bare_run_name(tmp_path):
    out = run_main("report", R3, "--out", tmp_path, "--format", "json")
    assert out.returncode in (0, 3), out.stderr
    assert json.loads(next(tmp_path.glob("*.json")).read_text())


def test_compare_of_a_baseline_with_itself_across_runs_says_why_raw_times():
    """Each side is its run's baseline: there is no own-run baseline to divide by, and the routes are identical
    (5 of 5) -- the 'how' line must not claim the runs lack the baseline on the same routes."""
    out = run_main("compare", f"{R3}:baseline", "2026-11-30_nvidia-h200_baseline-seed036-best-r2:baseline")
    assert out.returncode == 0, out.stderr
    how = next(line for line in out.stdout.splitlines() if line.strip().startswith("how:"))
    assert "a side has no baseline of its own run to divide by" in how
    assert "not both runs hold the baseline on the same routes" not in out.stdout
    assert "(5 of 5 shapes on the identical route)" in out.stdout


def test_compare_of_two_candidates_across_runs_divides_by_each_runs_baseline():
    out = run_main("compare", R3, "2026-11-30_nvidia-h200_baseline-seed036-best-r2")
    assert out.returncode == 0, out.stderr
    how = next(line for line in out.stdout.splitlines() if line.strip().startswith("how:"))
    assert "relative to its own run's baseline" in how
