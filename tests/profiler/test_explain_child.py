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
