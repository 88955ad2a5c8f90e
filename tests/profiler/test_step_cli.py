"""`python -m profiler step --device cpu` end to end (the worker in this process: inprocess_worker.py): one run file
holds the layer's shapes and the step points, valid and complete; the dashboard's table and the app's data read it
with no None or nan. CPU times are wall-clock times: only their presence is checked."""
from pathlib import Path

import pytest

pytest.importorskip("torch")

from inprocess_worker import in_process_worker  # noqa: E402,F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "workloads" / "tiny_layer.json"
MODULE = ROOT / "tests" / "fixtures" / "app" / "step_linear_module.py"


def test_the_step_command_writes_one_run_of_shapes_and_steps(tmp_path, in_process_worker, capsys):
    from dashboard.model import run_kinds, runs, step
    from datasets.runfile import load_run
    from profiler.cli.main import main

    out = tmp_path / "step.json"
    code = main(["step", "--workload", str(TINY), "--plan", "baseline", "--candidate", str(MODULE),
                 "--device", "cpu", "--layers", "2", "--batches", "2", "--contexts", "8",
                 "--max-seconds-per-step", "0.05", "--max-seconds-per-shape", "0.05", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "linear_module" in printed and f"python -m dashboard step {out}" in printed
    run = load_run(out)
    assert run["status"] == "complete" and run["step"]["layers"] == 2
    # the shapes: every projection family of the layer at M = batch, both candidates, paired
    assert {(r["family"], r["M"]) for r in run["results"]} == {(f, 2) for f in ("qkv", "o", "gate_up", "down")}
    assert len(run["pairs"]) == 4
    (point,) = run["step"]["points"]
    assert point["point"]["batch"] == 2 and point["point"]["context"] == 8 and point["failures"] == []
    assert [c["candidate"] for c in point["candidates"]] == ["baseline", "linear_module"]
    data = runs.load_run_data(out)
    assert run_kinds.kind_of(data.run) == run_kinds.STEP
    text = step.format_step_table(data)
    assert "linear_module" in text and "None" not in text and "nan" not in text.lower()
