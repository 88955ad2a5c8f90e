"""Known-wrong candidates that behave one way where the lifecycle contract looks and another in the graphs
that are captured and timed (profiler/check/contract.py's capture, profiler/check/timed.py): another stream, a host
sync, a capture-only lossy path, later captures doing half the work, a result that degrades after N replays.
"""
from __future__ import annotations

from profiler.wrong.base import _linear, TorchLinear, _capturing, _device_count, _int8_groups  # noqa: F401


class SideStream(TorchLinear):
    """Computes on its own CUDA stream. Eager calls join the streams properly; under capture it skips the join,
    so the work runs outside the graph (the graph holds no kernels) and replays never follow a new input."""

    name, expect = "side_stream", "another stream"

    def run(self, state, family, x):
        import torch

        if not x.is_cuda:
            return _linear(x, state["w"])
        side = state.setdefault("stream", torch.cuda.Stream(x.device))
        main = torch.cuda.current_stream(x.device)
        capturing = torch.cuda.is_current_stream_capturing()
        if not capturing:
            side.wait_stream(main)
        with torch.cuda.stream(side):
            y = _linear(x, state["w"])
        if not capturing:
            main.wait_stream(side)
            y.record_stream(main)
        return y



class HostSync(TorchLinear):
    """Reads a value back to the host in run() (a debugging print left in): fine eagerly, but a CUDA graph cannot
    capture it."""

    name, expect = "host_sync", "synchronised with the host during capture"

    def run(self, state, family, x):
        y = _linear(x, state["w"])
        state["last_peak"] = float(y.abs().max())  # .item(): a device -> host copy and a sync
        return y



class CaptureOnlyLossy(TorchLinear):
    """Exact eagerly; what it records into a CUDA graph reads int8 weights (one scale per 128 columns). Every
    number a graph replay produces is lossy, every eager call exact. GPU-only."""

    name, expect = "capture_only_lossy", ("graph replay", "timing graph")

    def prepare(self, family, weight):
        return {"w": weight, "lossy": _int8_groups(weight)}

    def run(self, state, family, x):
        return _linear(x, state["lossy"] if _capturing(x) else state["w"])



class LaterCapturesHalfK(TorchLinear):
    """Exact on eager calls and on the first graph captured at each M; every later capture at that M (the sweep's
    other timing instances) drops the second half of K: half the work, scored as a speed-up unless every timed
    graph is checked. GPU-only (a capture needs CUDA)."""

    name, expect = "later_captures_half_k", "timing graph"

    def run(self, state, family, x):
        if not _capturing(x):
            return _linear(x, state["w"])
        seen = state.setdefault("captures", {})
        M = int(x.shape[0])
        seen[M] = seen.get(M, 0) + 1
        if seen[M] == 1:
            return _linear(x, state["w"])
        half = x.shape[1] // 2
        return _linear(x[:, :half].contiguous(), state["w"][:, :half].contiguous())



class DegradesAfterReplays(TorchLinear):
    """Right for its first `AFTER` calls or replays at each M, then drops the second half of K: a counter on the
    device (one per M) is incremented by every call (inside the graph too), and torch.where picks the truncated
    result once it passes AFTER -- no host sync, so it captures. The lifecycle contract, the timing captures and the
    check before timing make ~25 calls and replays at a shape; timing makes >= 96 timed replays plus its warm-up
    (hundreds, so it is wrong from the first timed batch on). Caught by the check of the timed graphs during timing
    (the first judged batch: tests/profiler/test_trust_sweep.py's GPU test of TIMED_WRONG)."""

    name, expect = "degrades_after_replays", "during timing"
    AFTER = 100

    def run(self, state, family, x):
        import torch

        counter = _device_count(state, x)
        half = x.shape[1] // 2
        full = _linear(x, state["w"])
        cut = _linear(x[:, :half].contiguous(), state["w"][:, :half].contiguous())
        return torch.where(counter > self.AFTER, cut, full)
