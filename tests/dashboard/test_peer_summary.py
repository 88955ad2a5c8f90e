"""`best` against the best of peers (dashboard/model/peers.py) on the SYNTHETIC peers run (tests/fixtures/runs/make_peers.py,
hand-checkable numbers): per shape the fastest correct peer, per load and overall through dashboard.model.compare, a
failing peer shown with its shapes, and `python -m dashboard summarize` printing it. The fixture's device is a
SYNTHETIC one without repeat evidence, so its verdicts read NO VERDICT (datasets.noise_model: never another device's
band); the committed H200 peers runs read theirs (RESULTS.md)."""
NO_VERDICT = "NO VERDICT"
import math
from pathlib import Path

import pytest

from dashboard.model import peers, runs

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "fixtures" / "runs" / "2000-01-05_synthetic_synthetic-peers.json"
LOAD_RATIOS = {"decode 1": 47 / 40, "decode 16": 1.25, "decode 32": 1.25, "verify 1": 1.125, "verify 16": 1.5,
               "verify 32": 1.5}   # make_peers.py's docstring


def test_best_of_peers_takes_the_fastest_correct_peer_per_shape():
    pc = peers.peer_comparison(runs.load_run_data(RUN))
    win = {(r.load, r.family): r.peer for r in pc.winners.itertuples()}
    assert win[("decode 1", "qkv_gate")] == "torch_compile"   # flashinfer failed there
    assert win[("decode 1", "o")] == "torch_compile"          # flashinfer incorrect there
    assert win[("decode 1", "pooler")] == "flashinfer" and win[("decode 16", "o")] == "torch_compile"
    assert win[("verify 32", "router")] == "tunableop"
    loads = pc.comparison.loads.set_index("load")
    for load, ratio in LOAD_RATIOS.items():
        assert loads.loc[load, "ratio"] == pytest.approx(ratio) and loads.loc[load, "verdict"] == NO_VERDICT
    overall = pc.comparison.overall.iloc[0]
    assert overall.score == pytest.approx(math.prod(LOAD_RATIOS.values()) ** (1 / 6))
    fi = pc.peers.set_index("peer").loc["flashinfer"]
    assert fi.correct == 28 and sorted(fi.failing) == ["decode 1/o incorrect", "decode 1/qkv_gate failed"]


def test_a_shape_no_peer_got_right_leaves_its_load_without_a_score():
    from dashboard.model import scoring

    data = runs.load_run_data(RUN)
    bad = (data.results["load"] == "verify 16") & (data.results["family"] == "pooler") & \
        data.results["candidate"].isin(peers.PEER_NAMES)
    data.results.loc[bad, "correct"] = False
    if "status" in data.results:
        data.results.loc[bad, "status"] = scoring.INCORRECT
    pc = peers.peer_comparison(data)
    loads = pc.comparison.loads.set_index("load")
    assert loads.loc["verify 16", "verdict"] == "NO SCORE" and loads.loc["verify 32", "verdict"] == NO_VERDICT
    assert pc.comparison.overall.iloc[0].verdict == "NO SCORE"
    text = peers.format_peer_comparison(pc)
    assert "verify 16/pooler incorrect" in text and "NO SCORE" in text


def test_a_run_without_peers_has_no_peer_block():
    plain = ROOT / "tests" / "fixtures" / "runs" / "2000-01-01_synthetic_synthetic-complete.json"
    assert peers.peer_comparison(runs.load_run_data(plain)) is None


def test_summarize_prints_best_against_the_best_of_peers(capsys):
    from dashboard.cli.main import main

    assert main(["summarize", str(RUN)]) == 3   # flashinfer has no score against the baseline: it failed twice
    text = capsys.readouterr().out
    assert "best vs best of peers (derived)" in text and "derived:" in text
    assert "decode 1     peers Σw·t   2914.00 µs  best   2480.00 µs  ratio 1.175 [1.175, 1.175]  NO VERDICT" in text
    assert f"overall (geomean of load ratios): {math.prod(LOAD_RATIOS.values()) ** (1 / 6):.3f}" in text
    assert "peer flashinfer: correct at 28/30 scored shapes" in text and "FAILING at 2" in text


def test_results_md_shows_best_against_the_strongest_peer(tmp_path):
    import shutil

    from dashboard.documents import results_doc

    shutil.copy(RUN, tmp_path)
    text = results_doc.build(tmp_path)
    section = text[text.index("### `best` vs the strongest peer"):text.index("## Every run file")]
    assert "| decode 1 | 1.175 | [1.175, 1.175] | NO VERDICT |" in section
    assert f"| **overall** | **{math.prod(LOAD_RATIOS.values()) ** (1 / 6):.3f}** |" in section
    assert "`flashinfer`: correct at 28/30 scored shapes" in section and "**failing** at 2" in section


def test_explain_prints_the_kernels_torch_compile_generated(tmp_path, capsys):
    """An explain run whose call carries a torch_compile set-up record (SYNTHETIC: a committed explain run with one
    made-up record added) prints its compile and autotune seconds and kernel names."""
    import json

    from dashboard.cli.main import main
    from datasets.jsonfile import read_json

    src = sorted((ROOT / "datasets" / "runs").glob("*_explain-baseline-best-r1*.json"))[0]
    run = read_json(src)
    call = run["calls"][0]
    call["setup"] = {"torch_compile": {"compile_seconds": 1.5, "autotune_seconds": 20.25, "mode": "synthetic",
                                       "kernels": ["triton_tem_fused_mm_0", "extern_kernels.mm"]}}
    (tmp_path / src.name).write_text(json.dumps(run))
    assert main(["explain", str(tmp_path / src.name)]) == 0
    out = capsys.readouterr().out
    line = f"  {call['load']}/{call['family']} M={call['M']} {call['candidate']} (torch_compile): compile 1.50 s; " \
           "autotune 20.25 s; kernels triton_tem_fused_mm_0, extern_kernels.mm"
    assert line in out.splitlines()
