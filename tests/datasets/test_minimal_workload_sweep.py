"""A workload file with only each family's N and K and the loads goes through the CPU sweep path (a real worker
process, the fake timer of tests/profiler/fake_device.py): the defaults it was filled in with travel in the run
file, which validates. The fake times are made up: nothing here asserts a timing."""
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets import load_workload  # noqa: E402
from datasets.workload import RUN_KEY, workload_of_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(ROOT / "tests" / "profiler" / "fake_device.py")


def test_a_file_of_only_n_k_and_loads_sweeps_on_cpu(tmp_path):
    from profiler import wrong
    from profiler.runfile import load_run
    from profiler.sweep import SweepSettings, run_sweep

    path = tmp_path / "my_model.json"
    path.write_text(json.dumps({"families": {"up": {"N": 64, "K": 128}, "down": {"N": 32, "K": 64}},
                                "loads": [{"load": "one", "M": 1}, {"load": "four", "M": 4}]}))
    wl = load_workload(path)
    shapes = wl.select("official")
    assert [(s["load"], s["family"], s["M"]) for s in shapes] == [
        ("one", "up", 1), ("one", "down", 1), ("four", "up", 4), ("four", "down", 4)]
    out = tmp_path / "run.json"
    run_sweep(["baseline", wrong.spec(wrong.TorchLinear)], shapes, out, label=out.stem, device="cpu",
              log=lambda m: None, worker_init=f"{FAKE}:install", workload=wl,
              settings=SweepSettings(max_seconds_per_shape=0.1))
    run = load_run(out)
    assert run["status"] == "complete" and not run["failures"]
    assert run[RUN_KEY]["name"] == "my_model" and run[RUN_KEY]["families"]["up"]["rel_l2_tol"] == 0.01
    embedded, note = workload_of_run(run, str(out))
    assert note is None and embedded.fingerprint == wl.fingerprint
    assert {(r["family"], r["candidate"]) for r in run["results"]} == {
        (f, c) for f in ("up", "down") for c in ("baseline", "torch_linear_control")}
    assert all(r["correct"] for r in run["results"])
