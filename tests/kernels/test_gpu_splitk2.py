"""GPU: splitk_atomic_v2, splitk_atomic_kn, streamk_small, splitk_swap, router_hilo_swap and gemv_rows.

- Every config at every official and nearby shape its guard admits, through the self-check sweep
  (kernels.selfcheck_configs.sweep: two fresh-input calls vs the FP64 product, workspace and counters zero after):
  one test per method, every failing (config, shape) named.
- The full contract (profiler.check.contract.check_candidate: poisoned outputs, fresh inputs, repeated calls, CUDA-graph
  replays with new inputs, inputs and weights unchanged) for every config at the first official shape it admits
  and for the default config at every official shape it admits.
- The BF16 split-K variants leave workspace and counters zero after eager calls and graph replays that mix M.
"""
from functools import partial

import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract

pytestmark = pytest.mark.gpu

NEW = ("splitk_atomic_v2", "splitk_atomic_kn", "streamk_small", "splitk_swap", "router_hilo_swap", "gemv_rows")
SELF_ZEROING = ("splitk_atomic_v2", "splitk_atomic_kn", "splitk_swap")


def _rows(nearby: bool) -> list[dict]:
    from datasets import load_workload

    wl = load_workload()
    return [r._asdict() for df in ((wl.shapes, wl.nearby) if nearby else (wl.shapes,))
            for r in df.itertuples(index=False)]


def _admits(m, cfg, row) -> bool:
    return m.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), cfg) is None


def _contract_cases():
    out = []
    for name in NEW:
        m = get_method(name)
        for i, cfg in enumerate(m.configs):
            admitted = [row for row in _rows(nearby=False) if _admits(m, cfg, row)]
            for row in admitted if i == 0 else admitted[:1]:
                out.append(pytest.param(name, i, row, id=f"{name}-c{i}-{row['family']}-M{row['M']}"))
    return out


@pytest.mark.parametrize("name", NEW)
def test_every_config_at_every_admitted_shape(name):
    from kernels.selfcheck_configs import sweep

    results = sweep(get_method(name), _rows(nearby=True), "cuda")
    assert results, f"{name}: no config admits any shape"
    failed = [f"{label}: {why}" for label, why in results if why]
    assert not failed, f"{len(failed)} of {len(results)} failed:\n" + "\n".join(failed[:20])


@pytest.mark.parametrize("name,config_index,row", _contract_cases())
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
