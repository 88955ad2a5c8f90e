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
