"""A run measured with --trust-candidate (environment.settings.screened false) or in stream mode (settings.mode
"stream", whose calls read a fixed rotation of inputs) is never scored silently: every score of it carries the note --
the CLI summary and table, the report and the fleet row (SYNTHETIC fixture run)."""
import json
from pathlib import Path

import pytest

from dashboard.model import fleet, runs, scoring
from dashboard.documents import report
from dashboard.cli.main import main
from dashboard.cli.summary import format_breakdown

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "app" / "synthetic_a.json"


def _run(tmp_path, screened, mode="cold") -> Path:
    run = json.loads(FIXTURE.read_text())
    settings = run["environment"].setdefault("settings", {})
    settings["mode"] = mode
    if screened is None:
        settings.pop("screened", None)
    else:
        settings["screened"] = screened
    path = tmp_path / "2026-12-05_synthetic-gpu_screen.json"
    path.write_text(json.dumps(run))
    return path


def test_an_unscreened_run_shows_it_beside_every_score(tmp_path, capsys):
    path = _run(tmp_path, False)
    data = runs.load_run_data(path)
    bd = runs.run_score(data, "baseline", "seed036")
    assert bd.screen == scoring.UNSCREENED
    score_line = next(l for l in format_breakdown(bd, "t").splitlines() if "score (geometric mean" in l)
    assert "unscreened" in score_line
    assert "unscreened" in fleet.fleet_row(data, "baseline", "seed036")["reason"]
    rep = report.build_from_path(path)
    assert rep.summary["screen"] == scoring.UNSCREENED
    assert any("unscreened" in v for k, v in rep.facts if k == "Score (derived)")
    main(["table", str(path), "--candidate", "seed036"])
    assert "unscreened" in capsys.readouterr().out


@pytest.mark.parametrize("screened", [True, None], ids=["screened", "before the setting"])
def test_a_screened_run_and_an_older_one_carry_no_note(tmp_path, screened):
    data = runs.load_run_data(_run(tmp_path, screened))
    assert runs.run_score(data, "baseline", "seed036").screen is None


def test_a_stream_mode_run_says_what_its_judge_does_not_rule_out_beside_every_score(tmp_path, capsys):
    path = _run(tmp_path, True, mode="stream")
    data = runs.load_run_data(path)
    bd = runs.run_score(data, "baseline", "seed036")
    assert bd.screen == scoring.STREAM_MODE
    assert "stream mode" in next(l for l in format_breakdown(bd, "t").splitlines() if "score (geometric mean" in l)
    assert "stream mode" in fleet.fleet_row(data, "baseline", "seed036")["reason"]
    assert report.build_from_path(path).summary["screen"] == scoring.STREAM_MODE
    main(["table", str(path), "--candidate", "seed036"])
    assert "stream mode" in capsys.readouterr().out
    both = runs.run_score(runs.load_run_data(_run(tmp_path, False, mode="stream")), "baseline", "seed036")
    assert both.screen == f"{scoring.UNSCREENED}; {scoring.STREAM_MODE}"
