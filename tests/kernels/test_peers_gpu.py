"""GPU: the peers pass the full contract (poisoned outputs, fresh inputs, repeated calls, CUDA-graph replays with new
inputs) at every official shape they serve; a sweep that times TunableOp beside the baseline leaves the baseline
untouched (the guard names no change, the canary finds the paired baseline where a clean worker found it); a candidate
that leaves TunableOp on is failed by the guard. Cost on an H200: torch_compile compiles and autotunes each of the 30
official products once (max-autotune), minutes in all; run this file on its own."""
from dataclasses import replace
from pathlib import Path

import pytest

from kernels.plans import load_plan
from profiler.measure.policy import SWEEP
from tests.kernels.gpu_contract import assert_contract

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
LEFT_ON = f"{ROOT / 'tests' / 'fixtures' / 'peers' / 'tunableop_left_on.py'}:TunableOpLeftOn"


def _rows():
    from datasets import load_workload

    return [r._asdict() for r in load_workload().shapes.itertuples(index=False)]


ROWS = _rows()
IDS = [f"{r['load']}-{r['family']}".replace(" ", "") for r in ROWS]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
@pytest.mark.parametrize("name", ["tunableop", "torch_compile"])
def test_tunableop_and_torch_compile_pass_the_contract_at_every_official_shape(name, row):
    assert_contract(name, {}, row, seed=int(row["M"]))


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_flashinfer_passes_the_contract_where_its_plan_runs_it(row):
    from kernels.launch.peers import flashinfer_unavailable

    reason = flashinfer_unavailable()
    if reason:
        pytest.skip(reason)
    entry = load_plan("flashinfer").select(row["family"], int(row["M"]), int(row["N"]))
    if entry.method != "flashinfer":
        pytest.skip(f"the flashinfer plan runs {entry.method} at {row['family']} (no FlashInfer GEMM for its dtypes)")
    assert_contract("flashinfer", entry.config, row, seed=int(row["M"]))


def _sweep(tmp_path, specs, selection="qkv_gate:1+router:256", canary="all"):
    from profiler.commands.sweep import SweepSettings, run_sweep, select_shapes
    from datasets.runfile import load_run

    out = tmp_path / "peers.json"
    run_sweep(specs, select_shapes(selection), out, label="peers-gpu-test", log=lambda m: None,
              settings=SweepSettings(probes=False, timing=replace(SWEEP, max_seconds=1.0), canary=canary))
    return load_run(out)


def test_tunableop_beside_the_baseline_leaves_the_baseline_as_a_clean_worker_finds_it(tmp_path):
    run = _sweep(tmp_path, ["baseline", "tunableop"])
    assert not run["failures"], run["failures"]
    assert run["canary"]["verdict"] == "ok", run["canary"]
    tuned = [r["setup"]["tunableop"] for r in run["results"] if r["candidate"] == "tunableop"]
    assert len(tuned) == 2 and all(t["tune_seconds"] > 0 and t["results"] for t in tuned)
    assert all((tmp_path / t["results_file"]).is_file() for t in tuned)   # beside the run file
    assert all("setup" not in r for r in run["results"] if r["candidate"] == "baseline")


def test_a_candidate_that_leaves_tunableop_on_is_failed_and_switched_off(tmp_path):
    run = _sweep(tmp_path, ["baseline", LEFT_ON], selection="qkv_gate:1", canary="off")
    (fail,) = [f for f in run["failures"] if f["candidate"] == "tunableop_left_on"]
    assert "torch.cuda.tunable.is_enabled()" in " ".join(fail["reasons"])
    assert [r["candidate"] for r in run["results"]] == ["baseline"]


def test_torch_compile_records_its_compile_and_autotune_seconds_and_kernels(tmp_path):
    run = _sweep(tmp_path, ["baseline", "torch_compile"], selection="qkv_gate:1", canary="off")
    (r,) = [r for r in run["results"] if r["candidate"] == "torch_compile"]
    setup = r["setup"]["torch_compile"]
    assert setup["kernels"] and setup["compile_seconds"] > 0 and setup["autotune_seconds"] >= 0
