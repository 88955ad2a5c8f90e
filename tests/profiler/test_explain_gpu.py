"""`python -m profiler explain` end to end on the GPU (skips without CUDA or ncu): a crashing candidate becomes a
recorded failure (its worker died), the baseline's kernels are recorded with the Kineto sequence of its replay."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.measure.ncu import find_ncu

ROOT = Path(__file__).resolve().parents[2]
CRASH = ("import os\nNAME = 'crash'\ndef prepare(weight):\n    return weight\n"
         "def run(state, family, x):\n    os._exit(139)\n")


@pytest.mark.gpu
@pytest.mark.skipif(find_ncu() is None, reason="needs Nsight Compute (ncu)")
def test_explain_one_shape_with_a_crashing_candidate(tmp_path):
    mod = tmp_path / "crash.py"
    mod.write_text(CRASH)
    out = tmp_path / "explain.json"
    p = subprocess.run([sys.executable, "-m", "profiler", "explain", "--plan", "baseline", "--candidate", str(mod),
                        "--shape", "decode 16/router", "--no-probes", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    run = json.loads(out.read_text())
    assert run["status"] == "complete"
    base = [k for k in run["kernels"] if k["candidate"] == "baseline"]
    call = next(c for c in run["calls"] if c["candidate"] == "baseline")
    assert base and len(base) == call["launches"] == call["kineto"]["launches"]
    crash = [f for f in run["failures"] if f["candidate"] == "crash"]
    assert crash and crash[0]["stage"] == "check" and "worker died in check: exit code 139" in crash[0]["reasons"][0]
