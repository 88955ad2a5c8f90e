"""Shared pytest setup: the repo root on sys.path and the `gpu` marker.

GPU tests are marked `@pytest.mark.gpu`; they skip cleanly (with a reason) where torch has no CUDA.
"""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped elsewhere")


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fleet_run_files(tmp_path):
    """make(break_b=False) -> two run files of one fleet sweep ('fleet-demo'): the SYNTHETIC app fixtures
    synthetic_a / synthetic_b under the made-up GPU names 'SYNTHETIC GPU A/B' (not measurements); break_b marks one
    scored decode-16 result of B's candidate incorrect (the gate must then refuse B's score)."""
    import json

    fixtures = ROOT / "tests" / "fixtures" / "app"

    def make(break_b: bool = False) -> list[Path]:
        paths = []
        for src, gpu in (("synthetic_a.json", "A"), ("synthetic_b.json", "B")):
            run = json.loads((fixtures / src).read_text())
            run["label"] = "fleet-demo"
            run["environment"]["gpu"] = f"SYNTHETIC GPU {gpu} (test fixture, not a measurement)"
            if break_b and gpu == "B":
                bad = next(r for r in run["results"] if r["candidate"] != "baseline" and r["load"] == "decode 16")
                bad["correct"], bad["flags"] = False, ["incorrect"]
            path = tmp_path / f"2026-12-02_synthetic-gpu-{gpu.lower()}_fleet-demo.json"
            path.write_text(json.dumps(run))
            paths.append(path)
        return paths

    return make
