"""Kernel logic of splitk_swap / router_hilo_swap (kernels/triton/splitk_swap.py) under the Triton interpreter
(CPU), through the launcher: even and uneven K slices, token tiles with padded tokens, N tiles, the HILO pair
(both products in one accumulator), no split; every call leaves the workspace and counters zero."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

WORKER = Path(__file__).with_name("interp_worker_swap.py")


@pytest.fixture(scope="module")
def results():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, str(WORKER)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")][-1]
    return json.loads(line[len("RESULTS "):])


def test_every_case_ran(results):
    assert {r["hilo"] for r in results} == {False, True}
    assert {r["config"]["SPLIT"] for r in results} == {1, 3, 4, 8}
    assert len(results) == 4 * 2 * 3


def test_fp32_matches_fp64(results):
    for r in results:
        # fp32 operands and accumulation: every K step (and, with HILO, both halves) added exactly once
        assert r["rel"] < 1e-5, r


def test_workspace_and_counters_zero(results):
    for r in results:
        assert r["workspace_zero"], r
