"""`python -m profiler explain` without CUDA or ncu: exit 2 and one line naming what is missing and where it looked."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _cuda():
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def _explain(*args, env=None):
    import os

    return subprocess.run([sys.executable, "-m", "profiler", "explain", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.skipif(_cuda(), reason="checks the no-CUDA path")
def test_missing_cuda_and_ncu_is_one_line_naming_where_it_looked(tmp_path):
    p = _explain("--plan", "baseline", env={"PROJLAB_NCU": str(tmp_path / "ncu")})
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert "CUDA" in p.stderr and f"$PROJLAB_NCU ({tmp_path / 'ncu'})" in p.stderr
    assert "/usr/local/cuda/bin/ncu" in p.stderr and not (tmp_path / "ncu").exists()


def test_no_candidate_is_bad_input():
    p = _explain()
    assert p.returncode == 2 and "--plan or --candidate" in p.stderr


@pytest.mark.parametrize("args, words", [(["--workload", "llama31_8b_decode", "--plan", "best"],
                                          "tuned for workload muse_bf16_proj"),
                                         (["--plan", "baseline", "--shape", "decode 99/o"], "decode 99/o")])
def test_bad_input_is_exit_2_with_one_line_before_the_gpu_is_asked_for(args, words):
    p = _explain(*args, env={"PROJLAB_NCU": "/nonexistent/ncu"})
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and words in p.stderr and "CUDA" not in p.stderr, p.stderr
