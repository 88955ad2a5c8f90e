"""Run-file records built on both sides of the process boundary (failure records: profiler/README.md)."""
from __future__ import annotations

import math

from datasets.shapes import shape_identity

INCIDENT_KINDS = ("died", "timeout", "cuda_fault", "exit", "tainted")  # a worker was lost to the candidate


def finite(v):
    return float(v) if v is not None and math.isfinite(v) else None



def failure_record(shape: dict, candidate: str, kind: str, phase: str, reasons: list[str], **extra) -> dict:
    """A run file `failures` record (profiler/README.md)."""
    return shape_identity(shape) | {"candidate": candidate, "kind": kind, "phase": phase,
                   "reasons": [str(r)[:600] for r in reasons]} | extra

