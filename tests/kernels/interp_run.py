"""Runs an interpreter worker (tests/kernels/interp_worker*.py) in a subprocess with TRITON_INTERPRET=1 set before
triton is imported, and returns the JSON list it prints on its last "RESULTS " line."""
import json
import os
import subprocess
import sys
from pathlib import Path


def interp_results(worker: str, timeout: float = 600) -> list:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name(worker))], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")][-1]
    return json.loads(line[len("RESULTS "):])
