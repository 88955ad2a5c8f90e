"""A capture that fails gives the caching allocator back what it took (profiler.measure.timing.abandon_failed_capture):
the decision on CPU with torch's two allocator calls replaced, the memory on the GPU."""
import pytest

torch = pytest.importorskip("torch")

from profiler.measure import timing  # noqa: E402


POOL = (0, 7)   # what torch.cuda.graph_pool_handle() gives: a pool id


def _record(monkeypatch, end_raises: bool) -> list:
    calls = []

    def end(index, pool):
        calls.append(("end", index, pool))
        if end_raises:
            raise RuntimeError("endAllocatePool: not currently recording to mempool_id")

    monkeypatch.setattr(torch._C, "_cuda_endAllocateToPool", end, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_releasePool", lambda index, pool: calls.append(("release", index, pool)),
                        raising=False)
    return calls


def test_a_capture_still_underway_is_ended_and_its_pool_released(monkeypatch):
    calls = _record(monkeypatch, end_raises=False)
    assert timing.abandon_failed_capture(POOL, "cuda:3") is True
    assert calls == [("end", 3, POOL), ("release", 3, POOL)]


def test_a_capture_that_ended_is_left_to_the_graph_destructor(monkeypatch):
    """capture_end got past the allocator's end (e.g. the body raised a Python error, the capture itself was
    fine): the allocator refuses a second end, and the pool is not released twice."""
    calls = _record(monkeypatch, end_raises=True)
    assert timing.abandon_failed_capture(POOL, "cuda:0") is False
    assert calls == [("end", 0, POOL)]


def test_a_torch_without_the_allocator_bindings_is_left_as_it_is(monkeypatch):
    monkeypatch.delattr(torch._C, "_cuda_endAllocateToPool", raising=False)
    assert timing.abandon_failed_capture(POOL, "cuda:0") is False


@pytest.mark.gpu
def test_gpu_memory_is_given_back_after_a_capture_a_host_sync_invalidated():
    """A host sync inside the capture invalidates it (torch's capture_end raises before it ends the allocator's
    capture). Afterwards, captures that allocate 256 MiB each must still give it all back to empty_cache()."""
    stream = torch.cuda.current_stream()
    x = torch.ones(4, device="cuda")
    with pytest.raises(Exception):
        timing.capture_graph(lambda: (x * 2).sum().item(), "cuda", warmup_calls=1)
    torch.cuda.set_stream(stream)   # a failed capture can leave its capture stream current
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    for _ in range(4):
        handle = timing.capture_graph(lambda: torch.ones(256 << 20, dtype=torch.uint8, device="cuda"), "cuda",
                                      warmup_calls=1)
        handle.replay()
        assert int(handle.output[-1]) == 1   # the graph runs: a failed capture before it broke nothing
        del handle
        torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() <= before + (64 << 20), (before, torch.cuda.memory_reserved())


@pytest.mark.gpu
def test_no_torch_stream_is_the_capture_stream():
    """torch hands its streams out round-robin from pools of 32 per priority: two whole turns of both pools never
    give the stream captures run on, so a candidate's own stream is never silently part of a capture."""
    capture = timing.capture_stream("cuda")
    assert capture is not None, "the driver library did not load on this GPU host"
    pooled = [torch.cuda.Stream(priority=p) for p in (0, -1) for _ in range(70)]
    pooled.append(torch.cuda.graphs.graph.default_capture_stream or torch.cuda.Stream())
    assert all(s.cuda_stream != capture.cuda_stream for s in pooled)
    assert timing.capture_stream("cuda") is capture                 # one per device and process
    handle = timing.capture_graph(lambda: torch.full((4,), 3.0, device="cuda") * 2, "cuda", warmup_calls=1)
    handle.replay()
    torch.cuda.synchronize()
    assert handle.output.tolist() == [6.0] * 4


class _OnTorchsCaptureStream:
    """A candidate queuing its work, unjoined, on the very stream torch.cuda.graph captures on by default: the case
    the stream pool's round-robin produced by chance (a known-wrong candidate then passed one GPU test run)."""

    name = "on_torchs_capture_stream"

    def prepare(self, family, weight):
        return {"w": weight}

    def describe(self, family, M):
        return self.name

    def run(self, state, family, x):
        from torch.cuda import graphs

        if graphs.graph.default_capture_stream is None:
            graphs.graph.default_capture_stream = torch.cuda.Stream()
        side = graphs.graph.default_capture_stream
        main = torch.cuda.current_stream()
        capturing = torch.cuda.is_current_stream_capturing()
        if not capturing:
            side.wait_stream(main)
        with torch.cuda.stream(side):
            y = torch.nn.functional.linear(x, state["w"])
        if not capturing:
            main.wait_stream(side)
            y.record_stream(main)
        return y


@pytest.mark.gpu
def test_work_on_torchs_default_capture_stream_is_not_captured():
    from profiler.check import contract as C

    shape = dict(load="test", family="qkv_gate", M=16, N=64, K=256, x_dtype="bfloat16", w_dtype="bfloat16",
                 y_dtype="bfloat16", rel_l2_tol=0.01)
    c = C.check_candidate(_OnTorchsCaptureStream(), shape, "cuda", contract=C.default_contract())
    assert not c.ok
    assert "another stream" in " | ".join(c.reasons), c.reasons
