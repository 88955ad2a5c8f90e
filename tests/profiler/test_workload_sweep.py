"""Any workload through the profiler on CPU (the fake timer of fake_device.py; the worker in this process,
inprocess_worker.py, but for the llama sweep, whose muse plan a real worker process refuses): the tiny
synthetic workload and llama31_8b_decode are selected, swept and tuned like muse; the worker builds plans and the
contract from the workload it is sent (a muse plan is refused there for llama), and every run file embeds its
workload, which runfile.load_run validates. The fake times are made up: nothing here asserts a timing."""
import json
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets import load_workload  # noqa: E402
from datasets.workload import RUN_KEY, workload_of_run  # noqa: E402
from profiler import wrong  # noqa: E402
from datasets.runfile import load_run  # noqa: E402
from datasets.paths import run_paths  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402
from inprocess_worker import in_process_worker  # noqa: E402,F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(Path(__file__).with_name("fake_device.py"))
TINY = ROOT / "tests" / "fixtures" / "workloads" / "tiny.json"
CONTROL = wrong.spec(wrong.TorchLinear)


def _sweep(specs, shapes, out, workload, **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep

    return run_sweep(specs, shapes, out, label=out.stem, device="cpu", log=lambda m: None,
                     worker_init=f"{FAKE}:install", workload=workload,
                     settings=SweepSettings(**({"timing": replace(SWEEP, max_seconds=0.1)} | settings)))


def test_tiny_workload_selection_sweep_and_run_file(tmp_path, in_process_worker):
    tiny = load_workload(TINY)
    shapes = tiny.select("proj:3+official")
    assert [(s["load"], s["family"], s["M"], s["N"]) for s in shapes] == [
        ("nearby", "proj", 3, 64), ("one", "proj", 1, 32), ("one", "gate", 1, 16), ("four", "proj", 4, 64),
        ("four", "gate", 4, 16)]
    out = tmp_path / "tiny.json"
    _sweep(["baseline", CONTROL], shapes, out, tiny)
    run = load_run(out)                                     # the schema check validates the embedded workload
    assert run["status"] == "complete" and run[RUN_KEY] == tiny.to_dict()
    embedded, note = workload_of_run(run, str(out))
    assert note is None and embedded.fingerprint == tiny.fingerprint
    # the "*" baseline ran torch_linear for both tiny families; the FP32-weight family came out correct under
    # the tiny workload's own contract (its 1e-4 tolerance)
    assert {(r["family"], r["candidate"]) for r in run["results"]} == {
        (f, c) for f in ("proj", "gate") for c in ("baseline", "torch_linear_control")}
    assert {r["method"] for r in run["results"] if r["candidate"] == "baseline"} == {"torch_linear"}
    assert not run["failures"] and len(run["pairs"]) == len(shapes)


def test_llama_workload_sweeps_with_the_generic_baseline_and_refuses_a_muse_plan_in_the_worker(tmp_path):
    from profiler.commands.sweep import SweepInputError

    llama = load_workload("llama31_8b_decode")
    shapes = [s | {"N": 64, "K": 256} for s in llama.select("qkv:1,32+down:8")]   # CPU-sized, llama's families
    out = tmp_path / "llama.json"
    _sweep(["baseline", CONTROL], shapes, out, llama, probes=False)
    run = load_run(out)
    assert run[RUN_KEY]["name"] == "llama31_8b_decode"
    assert {(r["load"], r["family"]) for r in run["results"]} == {("decode 1", "qkv"), ("decode 32", "qkv"),
                                                                  ("decode 8", "down")}
    # best.json records muse: the worker, validating against the workload it was sent, refuses it
    with pytest.raises(SweepInputError, match="tuned for workload muse_bf16_proj .*not llama31_8b_decode"):
        _sweep(["baseline", "best"], shapes, tmp_path / "refused.json", llama, probes=False)


def test_a_run_file_with_a_malformed_or_mismatched_workload_is_rejected(tmp_path):
    from datasets.runfile import RunFileError, new_run, validate_run

    tiny = load_workload(TINY)
    run = new_run("r", {}, workload=tiny)
    validate_run(run)
    bad = json.loads(json.dumps(run))
    bad[RUN_KEY]["families"]["proj"]["K"] = "128"
    with pytest.raises(RunFileError, match=r"workload\.families\.proj\.K"):
        validate_run(bad, "bad.json")
    other = json.loads(json.dumps(run))
    other["results"] = [{"load": "decode 1", "family": "qkv_gate", "M": 1, "N": 64, "K": 128, "candidate": "c",
                         "median_us": 1.0, "correct": True}]
    with pytest.raises(RunFileError, match=r"results\[0\]\.family: 'qkv_gate' is not a family of the run's "
                                           r"workload tiny_synthetic"):
        validate_run(other, "other.json")


def test_committed_runs_without_a_workload_still_load():
    runs = run_paths(ROOT / "datasets" / "runs")
    assert runs
    for path in runs[:3]:
        run = load_run(path)
        assert RUN_KEY not in run
        workload, note = workload_of_run(run, str(path))
        assert workload.name == "muse_bf16_proj" and "does not record its workload" in note


def test_tune_on_the_tiny_workload_writes_a_plan_that_records_it(tmp_path, in_process_worker):
    from kernels.method import PlanError
    from kernels.plans import load_plan
    from profiler.commands import tune
    from profiler.commands.tune_rules import scored_points

    tiny = load_workload(TINY)
    settings = tune.TuneSettings(workload=tiny.name, methods=["mm_wt"], compile_workers=0)
    (out,) = tune.tune_sweep(scored_points(tiny), tmp_path / "tune.json", tmp_path / "tiny_plan.json",
                             settings=settings, device="cpu", worker_init=f"{FAKE}:install_keyed",
                             workload=tiny, log=lambda m: None)
    run = load_run(out["run_path"])
    assert run[RUN_KEY] == tiny.to_dict() and [(d["family"], d["M"]) for d in run["tune"]] == [
        ("proj", 1), ("gate", 1), ("proj", 4), ("gate", 4)]
    # mm_wt computes BF16 only: never a candidate for the FP32-weight family
    assert not any(r["candidate"].startswith("mm_wt") for r in run["results"] if r["family"] == "gate")
    assert any(r["candidate"].startswith("mm_wt") for r in run["results"] if r["family"] == "proj")
    plan = load_plan(tmp_path / "tiny_plan.json", tiny)
    assert plan.name == "tiny_plan" and plan.recorded == tiny.ref and set(plan.families) == {"proj", "gate"}
    with pytest.raises(PlanError, match="tuned for workload tiny_synthetic"):
        load_plan(tmp_path / "tiny_plan.json")                                    # the default workload: refused


def test_a_workload_file_of_only_n_k_and_loads_sweeps(tmp_path, in_process_worker):
    """Only each family's N and K and the loads written: the defaults (bfloat16, the dtype's tolerance, weight 1,
    the default contract, the file's stem as name) travel in the run file, which validates."""
    path = tmp_path / "my_model.json"
    path.write_text(json.dumps({"families": {"up": {"N": 64, "K": 128}, "down": {"N": 32, "K": 64}},
                                "loads": [{"load": "one", "M": 1}, {"load": "four", "M": 4}]}))
    wl = load_workload(path)
    shapes = wl.select("official")
    assert [(s["load"], s["family"], s["M"]) for s in shapes] == [
        ("one", "up", 1), ("one", "down", 1), ("four", "up", 4), ("four", "down", 4)]
    out = tmp_path / "run.json"
    _sweep(["baseline", CONTROL], shapes, out, wl)
    run = load_run(out)
    assert run["status"] == "complete" and not run["failures"]
    assert run[RUN_KEY]["name"] == "my_model" and run[RUN_KEY]["families"]["up"]["rel_l2_tol"] == 0.01
    embedded, note = workload_of_run(run, str(out))
    assert note is None and embedded.fingerprint == wl.fingerprint
    assert {(r["family"], r["candidate"]) for r in run["results"]} == {
        (f, c) for f in ("up", "down") for c in ("baseline", "torch_linear_control")}
    assert all(r["correct"] for r in run["results"])
