"""`python -m profiler explain` through the worker protocol, on CPU (real worker processes; a fake timer and, for the
ncu pass, a fake ncu that runs the worker as ncu would and reports the H200's real CSV rows of the jobs it saw):
a candidate that kills its worker is a recorded failure and the others still get their verdicts and kernels."""
import os
import stat
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from profiler.commands import explain  # noqa: E402
from datasets.runfile import load_run  # noqa: E402

HERE = Path(__file__).resolve().parent
FAKE = str(HERE / "fake_device.py")

GOOD = '''
import torch.nn.functional as F
NAME = "good"
def prepare(weight):
    return weight
def run(state, family, x):
    return F.linear(x, state)
'''
CRASH = '''
import os
NAME = "crash"
def prepare(weight):
    return weight
def run(state, family, x):
    os._exit(139)  # what a segfault looks like to the parent
'''
WRONG = '''
import torch
NAME = "wrong"
def prepare(weight):
    return weight
def run(state, family, x):
    return torch.zeros(x.shape[0], state.shape[0], dtype=x.dtype)
'''
CRASH_UNDER_NCU = '''
import os
import torch.nn.functional as F
NAME = "crash_under_ncu"
def prepare(weight):
    return weight
def run(state, family, x):
    if os.environ.get("PROJLAB_UNDER_FAKE_NCU"):
        os._exit(139)
    return F.linear(x, state)
'''


def _shape(load="decode 1", family="o"):
    from profiler.commands.sweep import select_shapes

    return next(s for s in select_shapes("official") if s["load"] == load and s["family"] == family)


def _modules(tmp_path, *texts):
    paths = []
    for i, text in enumerate(texts):
        p = tmp_path / f"cand{i}.py"
        p.write_text(text)
        paths.append(str(p))
    return paths


def _pool(init="install"):
    from profiler.backends.pool import WorkerPool

    return WorkerPool({"device": "cpu", "mode": "cold", "flush_bytes": None, "init": f"{FAKE}:{init}"},
                      log=lambda m: None)


def test_a_crashing_candidate_is_a_recorded_failure_and_the_rest_still_get_verdicts(tmp_path):
    specs = _modules(tmp_path, GOOD, CRASH, WRONG, GOOD)
    names = ["good", "crash", "wrong", "good#2"]
    ((shape, jobs),) = explain.make_jobs([_shape()], names)
    pool = _pool()
    try:
        got = explain.check_task(pool, shape, explain._task_jobs(jobs, specs), explain.ExplainSettings())
    finally:
        pool.close()
    assert len(pool.records) == 2 and "exit code 139" in pool.records[0]["ended"]   # a fresh worker went on
    calls, failures = explain.shape_calls(jobs, got)
    assert {c["candidate"]: c["correct"] for c in calls} == {"good": True, "wrong": False, "good#2": True}
    (crash,) = [f for f in failures if f["candidate"] == "crash"]
    assert crash["stage"] == "check" and len(crash["reasons"]) == 1 and crash["reasons"][0].startswith(
        "check: worker died in check: exit code 139"), crash["reasons"]   # (+ "; last stderr: ..." if it had any)
    wrong = next(f for f in failures if f["candidate"] == "wrong" and f["stage"] == "check")
    assert any("rel-L2" in r for r in wrong["reasons"])
    # on CPU there are no graphs to replay: every passing call says so rather than pretending to a sequence
    assert {f["candidate"] for f in failures if f["stage"] == "kineto"} == {"good", "good#2"}


def _fake_ncu(tmp_path):
    from profiler.measure.ncu import NcuTool

    script = tmp_path / "ncu"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'fake_ncu.py'} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return NcuTool(str(script), "2025.3.1.0")


def test_explain_run_profiles_under_ncu_in_the_worker_and_goes_on_after_a_crash(tmp_path):
    """Shapes decode 1/qkv_gate and decode 1/o x (baseline, a candidate that dies only under ncu): jobs 0-3, as in
    the H200 run whose CSV the fake ncu returns. The crasher passes its check, kills its ncu worker at each shape;
    the next shape goes on in a new ncu process; the baseline's kernels come back at both."""
    (crasher,) = _modules(tmp_path, CRASH_UNDER_NCU)
    shapes = [_shape("decode 1", "qkv_gate"), _shape("decode 1", "o")]
    settings = explain.ExplainSettings(probes=False, keep_dir=str(tmp_path / "keep"))
    out = tmp_path / "explain.json"
    run = explain.run_explain(["baseline", crasher], shapes, out, label="explain-test", settings=settings,
                              tool=_fake_ncu(tmp_path), device="cpu", worker_init=f"{FAKE}:install_fake_nvtx",
                              log=lambda m: None)
    assert load_run(out)["status"] == "complete" and run["environment"]["settings"]["candidates"] == [
        "baseline", "crash_under_ncu"]
    assert [c["correct"] for c in run["calls"]] == [True, True, True, True]
    assert {(k["family"], k["candidate"]) for k in run["kernels"]} == {("qkv_gate", "baseline"), ("o", "baseline")}
    base = {c["family"]: c for c in run["calls"] if c["candidate"] == "baseline"}
    assert base["qkv_gate"]["launches"] == 2 and base["qkv_gate"]["ncu_us"] > 0
    ncu_fail = [f for f in run["failures"] if f["stage"] == "ncu"]
    assert [(f["family"], f["candidate"]) for f in ncu_fail] == [("qkv_gate", "crash_under_ncu"),
                                                                 ("o", "crash_under_ncu")]
    # the exit, and whatever stderr lines the reader thread had when the worker was named (a loaded machine may
    # have a warning there: the tail is appended as "; last stderr: ...")
    assert all(len(f["reasons"]) == 1 and f["reasons"][0].startswith("ncu: worker died in ncu: exit code 139")
               for f in ncu_fail), [f["reasons"] for f in ncu_fail]
    assert run["environment"]["ncu_processes"] == 2
    assert sorted(os.listdir(tmp_path / "keep")) == ["ncu-0-1.csv", "ncu-0-1.ncu-rep", "ncu-0-1.ranges",
                                                     "ncu-0-2.csv", "ncu-0-2.ncu-rep", "ncu-0-2.ranges"]


def test_a_broken_candidate_module_is_an_input_error_before_any_file(tmp_path):
    from profiler.commands.sweep import SweepInputError

    out = tmp_path / "e.json"
    with pytest.raises(SweepInputError, match="no such module file"):
        explain.run_explain([str(tmp_path / "missing.py")], [_shape()], out, label="e",
                            settings=explain.ExplainSettings(probes=False), tool=None, device="cpu",
                            worker_init=f"{FAKE}:install", log=lambda m: None)
    assert not out.exists()


def _ncu_case():
    """Two jobs of decode 1/qkv_gate, with job 0's real ncu records (tests/fixtures/ncu) and job 1 lost to a crash."""
    from profiler.measure import ncu

    csv = sorted((HERE.parents[0] / "fixtures" / "ncu").glob("*_ncu-0.csv"))[0]
    records = {0: ncu.kernel_records(ncu.parse_raw_csv(csv.read_text()))[0]}
    by_shape = explain.make_jobs([_shape("decode 1", "qkv_gate")], ["baseline", "best"])
    jobs = by_shape[0][1]
    calls = [{k: jobs[0].shape[k] for k in ("load", "family", "M", "N", "K")} | {"candidate": j.name, "method": "m",
             "correct": True, "launches": None, "ncu_us": None} for j in jobs]
    return jobs, records, calls


def test_ncu_bookkeeping_fills_calls_and_names_the_crash():
    jobs, records, calls = _ncu_case()
    got = {"records": records, "errors": {1: "ncu: worker died in ncu: killed by SIGSEGV"}, "export_errors": []}
    kernels, failures = explain.collect_ncu(jobs, got, calls)
    assert [k["kernel"] for k in kernels] == ["nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT",
                                              "cublasLt::splitKreduce_kernel"]
    assert calls[0]["launches"] == 2 and calls[0]["ncu_us"] == pytest.approx(sum(k["duration_us"] for k in kernels))
    assert calls[1]["launches"] is None
    assert failures == [{**{k: calls[1][k] for k in ("load", "family", "M", "N", "K", "candidate")},
                         "stage": "ncu", "reasons": ["ncu: worker died in ncu: killed by SIGSEGV"]}]


def test_an_export_error_is_the_reason_when_no_kernel_came_back():
    jobs, _, calls = _ncu_case()
    got = {"records": {}, "errors": {}, "export_errors": ["ncu wrote no report in attempt 1"]}
    _, failures = explain.collect_ncu(jobs[:1], got, calls)
    assert failures[0]["reasons"] == ["ncu: ncu wrote no report in attempt 1"]


def test_the_check_task_carries_the_workload_to_the_worker():
    """A tiny-workload shape (family 'gate', FP32 weights): the worker loads the "*" baseline plan against the
    workload the task carries -- under its own default (muse) the plan would have no family 'gate' -- and checks it
    with that workload's contract."""
    from datasets import load_workload

    tiny = load_workload(HERE.parent / "fixtures" / "workloads" / "tiny.json")
    shape = tiny.shape("gate", 4)
    ((shape, jobs),) = explain.make_jobs([shape], ["baseline"])
    pool = _pool()
    try:
        settings = explain.ExplainSettings(workload=tiny.to_dict())
        got = explain.check_task(pool, shape, explain._task_jobs(jobs, ["baseline"]), settings)
        assert got["calls"][0]["ok"] and got["calls"][0]["method"] == "torch_linear"
        bare = explain.check_task(pool, shape, explain._task_jobs(jobs, ["baseline"]),
                                  explain.ExplainSettings(workload=load_workload().to_dict()))
        assert not bare["calls"][0]["ok"] and "not in plan" in bare["calls"][0]["error"]["reasons"][0]
    finally:
        pool.close()
    assert "workload" not in settings.recorded()
