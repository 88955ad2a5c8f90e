"""GPU: every dense method (default config) at every admitted official and nearby shape passes the full
contract (profiler.check.contract.check_candidate: poisoned outputs, fresh inputs, repeated calls, CUDA-graph
replay with new inputs, inputs/weights unchanged), and every config of the Triton methods passes at the
official shapes its shape check admits."""
import pytest

from kernels.registry import get_method

DENSE = ["torch_linear", "gemv", "splitk", "splitk_fused", "packed", "mm_wt", "mm_swapped", "mm_bias0"]


def _shapes():
    from datasets import load_workload

    wl = load_workload()
    rows = [r._asdict() for r in wl.shapes.itertuples(index=False)]
    rows += [r._asdict() for r in wl.nearby.itertuples(index=False)]
    return rows


def _admitted(method, config=None):
    m = get_method(method)
    for row in _shapes():
        if m.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), config) is None:
            yield row


def _check(method, config, row):
    from kernels.candidate import MethodCandidate
    from profiler.check.contract import check_candidate

    c = check_candidate(MethodCandidate(method, config), row, "cuda", seed=3)
    assert c.ok, f"{method} {config} {row['load']}/{row['family']} M={row['M']}: {c.reasons}"


@pytest.mark.gpu
@pytest.mark.parametrize("method", DENSE)
def test_default_config_every_admitted_shape(method):
    rows = list(_admitted(method))
    assert rows, method
    for row in rows:
        _check(method, None, row)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gemv", "splitk", "splitk_fused", "packed", "mm_bias0"])
def test_every_config_at_admitted_official_shapes(method):
    m = get_method(method)
    for config in m.configs[1:]:
        for row in (r for r in _admitted(method, config) if r["load"] != "nearby"):
            _check(method, config, row)


@pytest.mark.gpu
def test_mm_swapped_records_path():
    import torch

    from kernels.launch.mm_orient import MM_SWAPPED

    w = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
    state = MM_SWAPPED.prepare(w, {})
    for M, path in ((16, "swapped"), (17, "fallback")):
        y = MM_SWAPPED.run(state, torch.randn(M, 512, device="cuda", dtype=torch.bfloat16))
        assert state["last_path"] == path and y.shape == (M, 256)


@pytest.mark.gpu
def test_fused_counters_back_to_zero_after_replays():
    import torch

    from kernels.launch.splitk import SPLITK_FUSED

    cfg = dict(get_method("splitk_fused").configs[0])
    w = torch.randn(2304, 8192, device="cuda", dtype=torch.bfloat16) * 8192 ** -0.5
    state = SPLITK_FUSED.prepare(w, cfg)
    x = torch.randn(16, 8192, device="cuda", dtype=torch.bfloat16)
    SPLITK_FUSED.run(state, x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = SPLITK_FUSED.run(state, x)
    for _ in range(20):
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        ref = x.double() @ w.double().t()
        assert float((y.double() - ref).norm() / ref.norm()) < 1e-2
    assert int(state["counters"].abs().sum()) == 0
