"""CLI behaviour that does not need a GPU: the no-CUDA exit, summarize, tune dispatch."""
import subprocess
import sys
import types
from pathlib import Path

import pytest

from profiler.runfile import new_run, write_run_atomic

ROOT = Path(__file__).resolve().parents[2]


def _cuda():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


@pytest.mark.skipif(_cuda(), reason="checks the no-CUDA path")
@pytest.mark.parametrize("cmd", [["run", "--plan", "baseline"], ["probe"]])
def test_no_cuda_exits_2_with_one_line(cmd):
    p = subprocess.run([sys.executable, "-m", "profiler", *cmd], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "CUDA" in p.stderr


def test_run_without_plan_is_an_error():
    p = subprocess.run([sys.executable, "-m", "profiler", "run"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 1 and "--plan" in p.stderr


def _synthetic_run(tmp_path):
    env = {"gpu": "Test GPU", "replay_overhead_us": 3.3, "replay_overhead_ci_us": [3.2, 3.4],
           "settings": {"mode": "cold", "candidates": ["baseline", "fast"]}}
    run = new_run("synthetic", env)
    shape = {"load": "decode 1", "family": "qkv_gate", "M": 1, "N": 2304, "K": 8192}
    run["results"] = [shape | {"candidate": "baseline", "median_us": 14.0, "correct": True, "flags": []},
                      shape | {"candidate": "fast", "median_us": 10.0, "correct": False, "flags": ["incorrect"],
                               "error": {"reasons": ["eager call 1: rel-L2 error 2e-2 > tolerance 1e-2"]}}]
    run["pairs"] = [shape | {"baseline": "baseline", "candidate": "fast", "ratio_median": 1.4,
                             "ratio_ci_low": 1.39, "ratio_ci_high": 1.41}]
    run["probes"] = [{"bytes": 37748736, "us": 10.1, "tbps": 3.74, "design": "persistent_b8192"}]
    path = tmp_path / "run.json"
    write_run_atomic(run, path)
    return path


def test_summarize_prints_table(tmp_path):
    path = _synthetic_run(tmp_path)
    p = subprocess.run([sys.executable, "-m", "profiler", "summarize", str(path)], cwd=ROOT, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert "decode 1/qkv_gate" in p.stdout and "1.4000 [1.3900,1.4100]" in p.stdout
    assert "INCORRECT" in p.stdout and "persistent_b8192" in p.stdout


def test_summarize_bad_file_names_it(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    p = subprocess.run([sys.executable, "-m", "profiler", "summarize", str(bad)], cwd=ROOT, capture_output=True,
                       text=True)
    assert p.returncode == 1 and "bad.json" in p.stderr and "Traceback" not in p.stderr


def test_tune_dispatches_to_profiler_tune(monkeypatch):
    seen = {}
    fake = types.ModuleType("profiler.tune")
    fake.main = lambda argv: seen.setdefault("argv", argv) and 0
    monkeypatch.setitem(sys.modules, "profiler.tune", fake)
    from profiler.__main__ import main

    assert main(["tune", "--plan", "x", "--family", "router"]) == 0
    assert seen["argv"] == ["--plan", "x", "--family", "router"]
