"""`dashboard results` over a folder holding a run interrupted before any pair was timed (only failures, or only
the baseline's results): that run is skipped with one line naming it, the rest is written as usual."""
import json
from pathlib import Path

import pytest

from dashboard.cli.main import main

FIXTURE = Path(__file__).parents[1] / "fixtures" / "app" / "synthetic_a.json"


@pytest.mark.parametrize("keep", ["failures only", "baseline only"])
def test_a_run_without_pairs_is_skipped_with_one_line(tmp_path, capsys, keep):
    run = json.loads(FIXTURE.read_text())
    (tmp_path / "2026-01-01_nvidia-h200_complete.json").write_text(json.dumps(run))
    shape = {k: run["results"][0][k] for k in ("load", "family", "M", "N", "K")}
    cut = {**run, "status": "partial", "interrupted": True, "pairs": [],
           "results": [] if keep == "failures only" else [r for r in run["results"] if r["candidate"] == "baseline"],
           "failures": [{**shape, "candidate": "seed036", "kind": "died", "phase": "check", "reasons": ["lost"]}]}
    name = "2026-01-02_nvidia-h200_interrupted.json"
    (tmp_path / name).write_text(json.dumps(cut))
    assert main(["results", "--runs", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == [f"dashboard results: skipped {name}: no pairs (partial run of "
                                    f"{1 if keep == 'failures only' else 2} candidate(s), none timed against its baseline)"]
    assert "2026-01-01_nvidia-h200_complete.json" in out.out and name not in out.out
