"""The explain child process on CPU: a candidate that kills its process becomes a recorded failure, the rest of
the jobs still get their verdicts in a restarted child (profiler.explain.run_child + collect_checks)."""
import pytest

from profiler import explain

pytest.importorskip("torch")

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


def _shape():
    from profiler.sweep import select_shapes

    return next(s for s in select_shapes("official") if s["load"] == "decode 1" and s["family"] == "o")


def _modules(tmp_path, *texts):
    paths = []
    for i, text in enumerate(texts):
        p = tmp_path / f"cand{i}.py"
        p.write_text(text)
        paths.append(str(p))
    return paths


def test_a_crashing_candidate_is_a_recorded_failure_and_the_rest_still_run(tmp_path):
    specs = _modules(tmp_path, GOOD, CRASH, WRONG, GOOD)
    names = ["good", "crash", "wrong", "good#2"]
    by_shape = explain.make_jobs([_shape()], names)
    spec = explain._check_spec(by_shape, specs, names, explain.ExplainSettings()) | {"device": "cpu"}
    logs = []
    outcome = explain.run_child(spec, tmp_path, explain._check_finished, timeout_s=120, log=logs.append)
    assert outcome.attempts == 2, logs
    calls, failures = explain.collect_checks(by_shape, outcome)
    verdict = {c["candidate"]: c["correct"] for c in calls}
    assert verdict == {"good": True, "wrong": False, "good#2": True}
    crash = [f for f in failures if f["candidate"] == "crash"]
    assert len(crash) == 1 and crash[0]["stage"] == "check"
    assert "child exited 139" in crash[0]["reasons"][0]
    wrong = next(f for f in failures if f["candidate"] == "wrong")
    assert any("rel-L2" in r for r in wrong["reasons"])


def test_a_child_that_dies_outside_any_job_fails_every_job_without_a_verdict(tmp_path):
    names = ["good"]
    by_shape = explain.make_jobs([_shape()], names)
    spec = explain._check_spec(by_shape, [str(tmp_path / "missing.py")], names, explain.ExplainSettings())
    outcome = explain.run_child(spec | {"device": "cpu"}, tmp_path, explain._check_finished, timeout_s=120,
                                log=lambda m: None)
    calls, failures = explain.collect_checks(by_shape, outcome)
    assert calls == [] and len(failures) == 1
    assert "no such module file" in failures[0]["reasons"][0]


def _ncu_case():
    """Two jobs of decode 1/qkv_gate, with job 0's real ncu records (tests/fixtures/ncu) and job 1 lost to a crash."""
    from pathlib import Path

    from profiler import ncu

    csv = sorted((Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "ncu").glob("*_ncu-0.csv"))[0]
    records = {0: ncu.kernel_records(ncu.parse_raw_csv(csv.read_text()))[0]}
    by_shape = explain.make_jobs([_shape_named("decode 1", "qkv_gate")], ["baseline", "best"])
    jobs = by_shape[0][1]
    calls = [{k: jobs[0].shape[k] for k in ("load", "family", "M", "N", "K")} | {"candidate": j.name, "method": "m",
             "correct": True, "launches": None, "ncu_us": None} for j in jobs]
    return jobs, records, calls


def _shape_named(load, family):
    from profiler.sweep import select_shapes

    return next(s for s in select_shapes("official") if s["load"] == load and s["family"] == family)


def test_ncu_bookkeeping_fills_calls_and_names_the_crash():
    jobs, records, calls = _ncu_case()
    start = {"event": "start", "stage": "ncu", "job": 1}
    events = [{"event": "start", "stage": "ncu", "job": 0}, {"event": "done", "stage": "ncu", "job": 0}, start]
    assert explain.unfinished_start(events) == start
    outcome = explain.ChildOutcome(events=events, crashes=[{"start": start, "reason": "child exited -11"}])
    kernels, failures = explain.collect_ncu(jobs, outcome, records, [], calls)
    assert [k["kernel"] for k in kernels] == ["nvjet_sm90_tst_128x8_64x12_4x1_v_bz_splitK_TNT",
                                              "cublasLt::splitKreduce_kernel"]
    assert calls[0]["launches"] == 2 and calls[0]["ncu_us"] == pytest.approx(sum(k["duration_us"] for k in kernels))
    assert calls[1]["launches"] is None
    assert failures == [{**{k: calls[1][k] for k in ("load", "family", "M", "N", "K", "candidate")},
                         "stage": "ncu", "reasons": ["ncu: child exited -11"]}]


def test_an_export_error_is_the_reason_when_no_kernel_came_back():
    jobs, _, calls = _ncu_case()
    events = [{"event": "start", "stage": "ncu", "job": 0}, {"event": "done", "stage": "ncu", "job": 0}]
    _, failures = explain.collect_ncu(jobs[:1], explain.ChildOutcome(events=events), {},
                                      ["ncu wrote no report in attempt 1"], calls)
    assert failures[0]["reasons"] == ["ncu: ncu wrote no report in attempt 1"]


def test_a_finished_job_is_not_an_unfinished_start():
    events = [{"event": "start", "stage": "check", "job": 3}, {"event": "check", "job": 3, "ok": True},
              {"event": "start", "stage": "kineto", "shape": 0}, {"event": "done", "stage": "kineto", "shape": 0}]
    assert explain.unfinished_start(events) is None
    assert explain.unfinished_start(events[:3]) == events[2]
