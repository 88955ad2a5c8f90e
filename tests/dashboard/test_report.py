"""dashboard.report: whole-run and per-shape reports in four formats; HTML works offline; the CLI."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dashboard import report, runs
from datasets import load_official, load_seed_probes, load_workload

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "app"
RUN = FIXTURES / "synthetic_a.json"


@pytest.fixture(scope="module")
def run_report():
    return report.build_from_path(RUN)


def test_whole_run_summary_matches_the_scorer(run_report):
    data = runs.load_run_data(RUN)
    score = runs.run_score(data, "baseline", "seed036").score
    assert run_report.summary["score"] == pytest.approx(score)
    assert run_report.summary["score_ci_low"] < score < run_report.summary["score_ci_high"]
    assert run_report.summary["gpu"].startswith("SYNTHETIC")
    assert set(run_report.tables) >= {"loads", "shapes", "environment", "local vs official"}
    assert len(run_report.tables["shapes"]) == 30


def test_html_is_standalone_and_interactive(run_report):
    html = run_report.html()
    assert html.startswith("<!DOCTYPE html>")
    # plotly.js is inline (no CDN / network script), and every figure is a live plotly div
    assert not re.search(r"<script[^>]+src=", html)
    assert len(html) > 3_000_000  # the ~4.6 MB plotly.js bundle
    assert html.count("Plotly.newPlot") == len(run_report.figures) >= 4
    assert "measured (run file)" in html


def test_markdown_csv_json_carry_the_numbers(run_report):
    md = run_report.markdown()
    assert md.startswith("# projlab report — synthetic-a")
    assert f"{run_report.summary['score']:.4f}" in md
    assert "| decode 1 |" in md
    csv = pd.read_csv(pd.io.common.StringIO(run_report.csv()))
    assert len(csv) == 30 and {"baseline_us", "candidate_us", "ratio", "floor_us"} <= set(csv)
    js = json.loads(run_report.json())
    assert js["summary"]["score"] == pytest.approx(run_report.summary["score"])
    assert len(js["tables"]["shapes"]) == 30


def test_official_csv_report_is_published_and_reproduces_1_3012():
    rep = report.build_from_path(ROOT / "datasets" / "official_036.csv")
    assert rep.source == "published"
    assert f"{rep.summary['score']:.4f}" == "1.3012"
    assert "score_ci_low" not in rep.summary  # no samples, no CI
    assert "published (write-up, official run)" in rep.markdown()


def test_per_shape_report():
    rep = report.build_from_path(RUN, shape="decode 1/router")
    s = rep.summary
    assert (s["M"], s["N"], s["K"]) == (1, 256, 8192)
    assert s["verdict"] == "FAST" and s["ratio_ci_low"] < s["ratio"] < s["ratio_ci_high"]
    assert set(rep.tables["candidates"]["candidate"]) == {"baseline", "seed036"}
    assert rep.figures[0].data[0].type == "box"
    with pytest.raises(ValueError, match="no results for shape"):
        report.build_from_path(RUN, shape="decode 1/nope")


def test_partial_run_report_says_not_scored():
    wl = load_workload()
    data = runs.load_run_data(FIXTURES / "synthetic_decode_only.json")
    rep = report.build(data, "baseline", "seed036", wl, load_official(), "measured")
    assert str(rep.summary["score"]).startswith("no score: baseline has no time for 15 scored shapes")
    assert len(rep.tables["shapes"]) == 15


def test_write_all_formats(tmp_path, run_report):
    paths = run_report.write(tmp_path)
    assert sorted(p.suffix for p in paths) == [".csv", ".html", ".json", ".md"]
    assert all(p.stat().st_size > 0 for p in paths)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "dashboard", "report", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_cli_writes_reports(tmp_path):
    out = _cli(RUN, "--out", tmp_path, "--format", "md,json")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synthetic-a_seed036_vs_baseline.json",
                                                          "synthetic-a_seed036_vs_baseline.md"]
    out = _cli(RUN, "--out", tmp_path, "--shape", "verify 32/o", "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "synthetic-a_verify_32_o.csv").exists()


@pytest.mark.parametrize("args, words", [((FIXTURES / "corrupt.json",), "not valid JSON"),
                                         ((FIXTURES / "bad_columns.csv",), "baseline_us"),
                                         ((FIXTURES / "nope.json",), "no such file"),
                                         ((RUN, "--format", "pdf"), "unknown format")])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, words):
    out = _cli(*args, "--out", tmp_path)
    assert out.returncode == 2
    assert words in out.stderr and "Traceback" not in out.stderr
