"""Eager (host-inclusive) time of one call: back-to-back calls from Python, each timed with CUDA events, the way
triton.testing.do_bench times a function -- beside the lab's graph time, which leaves the host out.

    eager_time(fn, timer, policy=EAGER) -> {"eager_us": median us per call, "eager_mean_us", "eager_calls"}

Per call: the timer's L2 flush (do_bench clears its cache the same way, before every call), a start event, fn()
called from Python, an end event; no host sync until the end. When the host needs longer to issue fn's launches
than the GPU needs to run the flush, the GPU waits for the host between the events, and that wait is what this
time adds to the graph time: the cost a deployment that calls the kernels eagerly pays. Serving engines replay
CUDA graphs, so the score stays the graph time; this is shown beside it.
Like do_bench: one call, an estimate from 5 calls, then warm-up calls for policy.warmup_seconds and timed calls
for policy.max_seconds (at least policy.min_pairs of them): the EAGER preset of profiler.measure.policy. do_bench
reports the mean; the lab reports the median (a host hiccup -- a GC pause, a page fault -- lands in one call) and
keeps the mean beside it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from profiler.measure.policy import EAGER
from profiler.measure.timing import pinned_environment

ESTIMATE_CALLS = 5          # do_bench's estimate
MAX_EAGER_CALLS = 10_000    # memory bound on events; the time budget normally stops far earlier


def eager_time(fn: Callable[[], Any], timer, policy=EAGER) -> dict:
    """fn's eager time per call (module docstring); `timer`: a ColdTimer (its flush and device). Every call runs
    under the environment the worker pinned (profiler.measure.timing.pinned_environment): cuBLAS reads its
    workspace variables on every eager call."""
    with pinned_environment():
        return _eager_time(fn, timer, policy)


def _eager_time(fn: Callable[[], Any], timer, policy) -> dict:
    import torch

    device = timer.device
    stream = torch.cuda.current_stream(device)
    fn()
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    for _ in range(ESTIMATE_CALLS):
        timer.flush()
        fn()
    end.record(stream)
    torch.cuda.synchronize(device)
    estimate_s = max(start.elapsed_time(end) / 1000.0 / ESTIMATE_CALLS, 1e-7)
    n_warmup = max(1, int(policy.warmup_seconds / estimate_s))
    n_calls = min(MAX_EAGER_CALLS, max(int(policy.min_pairs), int(policy.max_seconds / estimate_s)))
    for _ in range(n_warmup):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n_calls)]
    for s, e in events:
        timer.flush()
        s.record(stream)
        fn()
        e.record(stream)
    torch.cuda.synchronize(device)
    us = np.array([s.elapsed_time(e) * 1000.0 for s, e in events], dtype=np.float64)
    return {"eager_us": float(np.median(us)), "eager_mean_us": float(us.mean()), "eager_calls": int(n_calls)}
