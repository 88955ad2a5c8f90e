"""Shared fixtures for the dashboard tests: edited copies of a committed paired sweep (test data, labelled so)."""
import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "edit_runs", Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "edit_runs.py")
EDIT = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(EDIT)


@pytest.fixture
def edit():
    """tests/fixtures/runs/edit_runs.py: r3(), incorrect(), failed(), below_floor(), write()."""
    return EDIT
