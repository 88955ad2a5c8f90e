"""Kernel sequences from a torch.profiler (Kineto) Chrome trace: which kernels one CUDA-graph replay ran, how
long each took and the gaps between them.

Torch-free (tests parse traces captured on the H200, tests/fixtures/kineto/). A trace is the JSON that
`torch.profiler.profile(...).export_chrome_trace(path)` writes; Chrome's about:tracing and ui.perfetto.dev open it.

Attribution: every kernel a graph replay runs carries the `correlation` id of the host's `cudaGraphLaunch` call
(seen in every H200 trace: all kernels of one replay share it), so the k-th `cudaGraphLaunch` of a trace is the
k-th replayed graph. Other launches in the same trace (the L2 flush before each replay) have other ids.
"""
from __future__ import annotations

import math
from profiler.measure.ncu import short_name

DEVICE_CATEGORIES = {"kernel": "kernel", "gpu_memset": "memset", "gpu_memcpy": "memcpy"}
GRAPH_LAUNCH_NAMES = ("cudaGraphLaunch", "cudaGraphLaunch_v10000")


class TraceError(ValueError):
    """A trace without the events this parser needs; the message says which."""


def _prod(dims) -> int | None:
    if not isinstance(dims, list) or not dims:
        return None
    return math.prod(int(d) for d in dims)


def _events(trace) -> list[dict]:
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        raise TraceError("not a Chrome trace: no traceEvents list")
    return [e for e in events if isinstance(e, dict)]


def graph_launches(trace) -> list[int]:
    """Correlation ids of the trace's cudaGraphLaunch calls, in host order."""
    launches = [e for e in _events(trace) if e.get("cat") == "cuda_runtime" and e.get("name") in GRAPH_LAUNCH_NAMES]
    return [int(e["args"]["correlation"]) for e in sorted(launches, key=lambda e: float(e["ts"]))]


def sequence(trace, correlation: int) -> dict:
    """The device work of one launch: {"launches", "span_us", "busy_us", "gaps_us", "kernels": [...]}, each kernel
    {kernel_full, kind, start_us (from the first one's start), duration_us, gap_before_us, grid, block}.
    gaps_us = span − Σ durations: idle time between kernels (negative where kernels overlap, e.g. with
    programmatic dependent launch)."""

    work = [e for e in _events(trace) if e.get("cat") in DEVICE_CATEGORIES
            and isinstance(e.get("args"), dict) and e["args"].get("correlation") == correlation]
    if not work:
        raise TraceError(f"no device work with correlation {correlation}")
    work.sort(key=lambda e: float(e["ts"]))
    t0 = float(work[0]["ts"])
    kernels, prev_end = [], None
    for e in work:
        ts, dur = float(e["ts"]), float(e.get("dur", 0.0))
        kernels.append({"kernel": short_name(e["name"]), "kernel_full": e["name"],
                        "kind": DEVICE_CATEGORIES[e["cat"]], "start_us": round(ts - t0, 3),
                        "duration_us": round(dur, 3),
                        "gap_before_us": None if prev_end is None else round(ts - prev_end, 3),
                        "grid": _prod(e["args"].get("grid")), "block": _prod(e["args"].get("block"))})
        prev_end = ts + dur if prev_end is None else max(prev_end, ts + dur)
    span = prev_end - t0
    busy = sum(k["duration_us"] for k in kernels)
    return {"launches": len(kernels), "span_us": round(span, 3), "busy_us": round(busy, 3),
            "gaps_us": round(span - busy, 3), "kernels": kernels}


def replay_sequences(trace) -> list[dict]:
    """One sequence() per cudaGraphLaunch in the trace, in launch order."""
    return [sequence(trace, c) for c in graph_launches(trace)]
