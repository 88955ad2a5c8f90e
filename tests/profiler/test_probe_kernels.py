"""The read-probe kernels read (and sum) exactly the bytes asked for: one-shot designs in the Triton
interpreter here; all designs on the GPU (test_gpu.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import torch
from profiler.measure import probes
buf = torch.rand(40000, dtype=torch.float32)
fns = probes.read_fns(buf, 4 * 33000, sm_count=4, designs=True)
ok_o, ok_p = probes._kernels()
for name, kind, block, warps in probes.READ_DESIGNS:
    n = 33000
    nb = -(-n // block)
    if kind == "oneshot":
        out = torch.zeros(nb); ok_o[(nb,)](buf, out, n, BLOCK=block)
    else:
        continue  # runtime loop bounds do not run in the triton 3.6 interpreter; GPU test covers them
    assert torch.allclose(out.sum(), buf[:n].sum(), rtol=1e-4), (name, float(out.sum()), float(buf[:n].sum()))
for name, f in fns.items():
    if name.startswith("oneshot") or name == "torch_mv":
        f()  # the launchers themselves run
print("ok", len(fns))
"""


def test_read_kernels_sum_exactly_the_prefix():
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    p = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "ok 7" in p.stdout
