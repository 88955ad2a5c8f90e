"""GPU: splitk_atomic_v2, splitk_atomic_kn, streamk_small, splitk_swap, router_hilo_swap and gemv_rows pass the full
contract (profiler.check.contract.check_candidate: poisoned outputs, fresh inputs, repeated calls, CUDA-graph replays
with new inputs, inputs and weights unchanged) with every config at every official and nearby shape their guards
admit, and the BF16 split-K variants leave workspace and counters zero after eager calls and graph replays that
mix M."""
from functools import partial

import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract

pytestmark = pytest.mark.gpu

NEW = ("splitk_atomic_v2", "splitk_atomic_kn", "streamk_small", "splitk_swap", "router_hilo_swap", "gemv_rows")
SELF_ZEROING = ("splitk_atomic_v2", "splitk_atomic_kn", "splitk_swap")


def _cases():
    from datasets import load_workload

    wl = load_workload()
    rows = [r._asdict() for df in (wl.shapes, wl.nearby) for r in df.itertuples(index=False)]
    out = []
    for name in NEW:
        m = get_method(name)
        for i, cfg in enumerate(m.configs):
            for row in rows:
                if m.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), cfg) is None:
                    out.append(pytest.param(name, i, row, id=f"{name}-c{i}-{row['family']}-M{row['M']}"))
    return out


@pytest.mark.parametrize("name,config_index,row", _cases())
def test_contract(name, config_index, row):
    assert_contract(name, get_method(name).configs[config_index], row, seed=int(row["M"]))


@pytest.mark.parametrize("name,config_index", [(n, i) for n in SELF_ZEROING for i in range(len(get_method(n).configs))])
def test_workspace_zero_after_calls_and_replays_of_mixed_m(name, config_index):
    """Eager calls at M = 8, 16, 3, 32 then graphs captured at two M replayed alternately with new inputs: every
    output right, and the workspace and counters all zero at the end (qkv_gate, N=2304, K=8192)."""
    import torch

    from profiler.check.contract import make_input, make_weight, reference
    from profiler.measure.timing import capture_graph

    N, K = 2304, 8192
    method = get_method(name)
    cfg = method.configs[config_index]
    w = make_weight("qkv_gate", N, K, 1, "cuda", dtype="bfloat16")
    state = method.prepare(w, "qkv_gate", cfg)

    def rel(y, x):
        ref = reference(x, w, "bfloat16")
        return float((y.double() - ref).norm() / ref.norm())

    for i, M in enumerate((8, 16, 3, 32)):
        x, _ = make_input(M, K, 10 + i, "cuda")
        assert rel(method.run(state, x), x) < 1e-2, (M, i)
    graphs = []
    for M in (8, 16):
        x_static, _ = make_input(M, K, 20 + M, "cuda")
        graphs.append((capture_graph(partial(method.run, state, x_static), "cuda", warmup_calls=1), x_static))
    for i in range(20):
        g, x_static = graphs[i % 2]
        x_static.copy_(make_input(x_static.shape[0], K, 100 + i, "cuda")[0])
        g.replay()
        torch.cuda.synchronize()
        assert rel(g.output, x_static) < 1e-2, i
    assert not bool(state["ws"].any()) and not bool(state["cnt"].any())
