"""A candidate flagged less_accurate is never scored silently: the score carries the flag and its factor, and the
CLI summary, the report and the fleet row show it beside the score (SYNTHETIC fixture runs, not measurements)."""
import json
import subprocess
import sys
from pathlib import Path

from dashboard.model import fleet, runs, scoring
from dashboard.documents import report
from dashboard.cli.summary import format_breakdown

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "app" / "synthetic_a.json"


def _run(tmp_path, flagged: dict[tuple[str, str], float]) -> Path:
    """synthetic_a with the candidate's results at `flagged` {(load, family): vs_baseline} flagged less_accurate."""
    run = json.loads(FIXTURE.read_text())
    for r in run["results"]:
        factor = flagged.get((r["load"], r["family"]))
        if r["candidate"] == "seed036" and factor is not None:
            r["flags"] = list(r.get("flags") or []) + ["less_accurate"]
            r["error"] = dict(r.get("error") or {}, vs_baseline=factor)
    path = tmp_path / "2026-12-02_synthetic-gpu_accuracy.json"
    path.write_text(json.dumps(run))
    return path


def test_a_flagged_candidate_scores_with_the_flag_and_its_factor(tmp_path):
    data = runs.load_run_data(_run(tmp_path, {("decode 1", "o"): 5.25, ("verify 16", "router"): 4.5}))
    bd = runs.run_score(data, "baseline", "seed036")
    # the worst shape's error against the contract's tolerance, beside the factor (fixture: rel_l2 0.002)
    assert bd.accuracy == ("less accurate: error up to 5.25x the baseline's (decode 1/o: rel. L2 error 0.002, "
                           "tolerance 0.01) at 2 of 30 scored shapes (decode 1/o, verify 16/router)")
    assert f"seed036: {bd.accuracy}" in format_breakdown(bd, "t")
    row = fleet.fleet_row(data, "baseline", "seed036")
    assert row["status"] == "scored" and row["reason"] == bd.accuracy


def test_an_unflagged_candidate_has_no_note_and_a_nearby_flag_does_not_count(tmp_path):
    data = runs.load_run_data(_run(tmp_path, {}))
    assert runs.run_score(data, "baseline", "seed036").accuracy is None
    times = runs.status_rows(data)
    times.loc[times["candidate"] == "seed036", "load"] = "nearby"  # no scored shape left for the flag
    assert scoring.accuracy_note(times.assign(flags=[["less_accurate"]] * len(times)), "seed036",
                                 data.workload.shapes) is None


def test_report_and_cli_show_the_flag_beside_the_score(tmp_path):
    path = _run(tmp_path, {("decode 32", "pooler"): 6.0})
    out = subprocess.run([sys.executable, "-m", "dashboard", "summarize", str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    score_line = next(i for i, l in enumerate(out.stdout.splitlines()) if "score (geometric mean" in l)
    assert "less accurate: error up to 6x the baseline's (decode 32/pooler: rel. L2 error 0.002, tolerance 0.01) " \
           "at 1 of 30 scored shapes (decode 32/pooler)" in \
        "\n".join(out.stdout.splitlines()[score_line:score_line + 5]), out.stdout
    rep = report.build_from_path(path)
    assert rep.summary["accuracy"] == "less accurate: error up to 6x the baseline's (decode 32/pooler: rel. L2 " \
                                      "error 0.002, tolerance 0.01) at 1 of 30 scored shapes (decode 32/pooler)"
    assert any(v.endswith(rep.summary["accuracy"]) for k, v in rep.facts if k == "Score (derived)"), rep.facts


def test_a_baseline_the_canary_found_disturbed_gives_the_pair_no_score(tmp_path):
    """The sweep flags the paired baseline's result where the canary saw it at another speed: no score, and the
    message says why and where."""
    run = json.loads(FIXTURE.read_text())
    for r in run["results"]:
        if r["candidate"] == "baseline" and (r["load"], r["family"]) == ("decode 1", "router"):
            r["flags"] = list(r.get("flags") or []) + [scoring.DISTURBED_FLAG]
    path = tmp_path / "2026-12-02_synthetic-gpu_disturbed.json"
    path.write_text(json.dumps(run))
    data = runs.load_run_data(path)
    try:
        runs.run_score(data, "baseline", "seed036")
    except scoring.NoScore as exc:
        assert str(exc) == ("no score: baseline ran at another speed than in a clean worker (canary: baseline "
                            "disturbed) at 1 scored shape (decode 1/router)")
        assert exc.gate.refused
    else:
        raise AssertionError("a disturbed baseline was scored")
