"""GPU: the single-launch methods (splitk_atomic, streamk, router_hilo_fused, router_hilo_flag, router_fma_flag)
pass the full contract (profiler.check.contract.check_candidate: poisoned outputs, fresh inputs, repeated calls,
CUDA-graph replays with new inputs, inputs and weights unchanged) with every config at every official shape it
admits, and the default config at the nearby shapes; and their workspace and counters (router_hilo_flag,
router_fma_flag: token counts) are zero after eager calls and graph replays that mix M (a count left non-zero would
corrupt the next call)."""
from functools import partial

import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract

pytestmark = pytest.mark.gpu

NEW = ("splitk_atomic", "streamk", "router_hilo_fused", "router_hilo_flag", "router_fma_flag")


def _rows(which):
    from datasets import load_workload

    wl = load_workload()
    frames = {"official": [wl.shapes], "nearby": [wl.nearby], "extra": []}[which]
    rows = [r._asdict() for df in frames for r in df.itertuples(index=False)]
    if which == "extra":    # past the nearby shapes: M the dispatch must also serve (streamk up to 512)
        for fam, spec in wl.families.items():
            for M in (384, 512):
                rows.append({"load": "nearby", "family": fam, "M": M, "N": int(spec["N"]), "K": int(spec["K"]),
                             **{k: spec[k] for k in ("x_dtype", "w_dtype", "y_dtype", "rel_l2_tol")}})
    return rows


def _cases():
    out = []
    for name in NEW:
        m = get_method(name)
        for i, cfg in enumerate(m.configs):
            for which in ("official", "nearby", "extra") if i == 0 else ("official",):
                for row in _rows(which):
                    if m.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), cfg) is None:
                        out.append(pytest.param(name, i, row, id=f"{name}-c{i}-{row['family']}-M{row['M']}"))
    return out


@pytest.mark.parametrize("name,config_index,row", _cases())
def test_contract(name, config_index, row):
    assert_contract(name, get_method(name).configs[config_index], row, seed=int(row["M"]))


@pytest.mark.parametrize("name,family,N,K", [("splitk_atomic", "qkv_gate", 2304, 8192),
                                             ("streamk", "pooler", 4096, 8192),
                                             ("router_hilo_fused", "router", 256, 8192),
                                             ("router_hilo_flag", "router", 256, 8192),
                                             ("router_fma_flag", "router", 256, 8192)])
def test_workspace_zero_after_calls_and_replays_of_mixed_m(name, family, N, K):
    """Eager calls at M = 8, 16, 3 then graphs captured at two M replayed alternately with new inputs: every
    output right, and the workspace and counters all zero at the end."""
    import torch

    from profiler.check.contract import make_input, make_weight, reference
    from profiler.measure.timing import capture_graph

    method = get_method(name)
    cfg = next(c for c in method.configs if c.get("SPLIT", 2) > 1)
    w = make_weight(family, N, K, 1, "cuda", dtype="float32" if family == "router" else "bfloat16")
    y_dtype = "float32" if family == "router" else "bfloat16"
    tol = 1e-4 if family == "router" else 1e-2
    state = method.prepare(w, cfg)

    def rel(y, x):
        ref = reference(x, w, y_dtype)
        return float((y.double() - ref).norm() / ref.norm())

    Ms = (8, 16, 3) if name != "streamk" else (128, 256, 100)
    for i, M in enumerate(Ms):
        x, _ = make_input(M, K, 10 + i, "cuda")
        assert rel(method.run(state, x), x) < tol, (M, i)
    graphs = []
    for M in Ms[:2]:
        x_static, _ = make_input(M, K, 20 + M, "cuda")
        graphs.append((capture_graph(partial(method.run, state, x_static), "cuda", warmup_calls=1), x_static))
    for i in range(20):
        g, x_static = graphs[i % 2]
        x_static.copy_(make_input(x_static.shape[0], K, 100 + i, "cuda")[0])
        g.replay()
        torch.cuda.synchronize()
        assert rel(g.output, x_static) < tol, i
    leftover = [state["flags"]] if "flags" in state else [state["ws"], state["cnt"]]
    assert not any(bool(t.any()) for t in leftover)
