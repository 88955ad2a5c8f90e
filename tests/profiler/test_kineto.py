"""Kineto traces captured on the H200 (tests/fixtures/ncu/README.md): re-parsing a shape's trace reproduces the
kernel sequences the committed explain run recorded for it; the flush before each replay is not counted."""
import json
from pathlib import Path

import pytest

from profiler.measure import kineto

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "fixtures" / "kineto"
RUN = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_explain-baseline-best.json"


@pytest.mark.parametrize("stem,shape", [("decode-16_router", ("decode 16", "router")),
                                        ("verify-1_unpooler", ("verify 1", "unpooler"))])
def test_reparsing_a_trace_reproduces_the_runs_sequences(stem, shape):
    trace = json.loads((TRACES / f"2026-12-01_nvidia-h200_explain-baseline-best_{stem}.json").read_text())
    run = json.loads(RUN.read_text())
    recorded = [c["kineto"] for c in run["calls"] if (c["load"], c["family"]) == shape]
    assert kineto.replay_sequences(trace) == recorded  # baseline, then best: the order they were replayed in


def test_router_sequences_read_by_hand():
    """decode 16/router: the FP32 baseline launches a cast + two cuBLAS kernels; best a zero-fill + the hi/lo kernel
    with programmatic dependent launch."""
    trace = json.loads((TRACES / "2026-12-01_nvidia-h200_explain-baseline-best_decode-16_router.json").read_text())
    base, best = kineto.replay_sequences(trace)
    assert base["launches"] == 3 and best["launches"] == 2
    assert [k["kernel"] for k in best["kernels"]] == ["zero_fill_pdl_kernel", "router_hilo_atomic_kernel"]
    assert best["span_us"] == pytest.approx(best["busy_us"] + best["gaps_us"])
    flush = [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and "reduce" in e["name"]]
    assert len(flush) == 2  # the L2 flush before each replay is in the trace, under another correlation id


def test_not_a_trace():
    with pytest.raises(kineto.TraceError, match="no traceEvents"):
        kineto.replay_sequences({"events": []})
