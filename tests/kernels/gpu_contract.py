"""The GPU kernel tests' one contract check: a method + config through profiler.check.contract.check_candidate (poisoned
outputs, fresh inputs, repeated calls, CUDA-graph replays with new inputs, inputs and weights unchanged)."""


def assert_contract(name: str, config: dict, row: dict, seed: int) -> None:
    import torch

    from kernels.candidate import MethodCandidate
    from profiler.check.contract import check_candidate

    torch.backends.cuda.matmul.allow_tf32 = False
    check = check_candidate(MethodCandidate(name, config), row, "cuda", seed=seed)
    assert check.ok, (name, config, row["family"], row["M"], check.reasons)


def assert_self_zeroing(method, config: dict, eager_m: tuple, graph_m: tuple, replays: int,
                        zero: tuple = ("ws", "cnt")) -> None:
    """Eager calls at `eager_m`, then graphs captured at the two `graph_m` replayed alternately with new inputs
    (`replays` in all): every output right (rel-L2 < 1e-2 vs FP64), and the method's state tensors named in `zero`
    (its workspace and counters) all zero at the end (qkv_gate, N=2304, K=8192)."""
    from functools import partial

    import torch

    from profiler.check.contract import make_input, make_weight, reference
    from profiler.measure.timing import capture_graph

    N, K = 2304, 8192
    w = make_weight("qkv_gate", N, K, 1, "cuda", dtype="bfloat16")
    state = method.prepare(w, config)

    def rel(y, x):
        ref = reference(x, w, "bfloat16")
        return float((y.double() - ref).norm() / ref.norm())

    for i, M in enumerate(eager_m):
        x, _ = make_input(M, K, 10 + i, "cuda")
        assert rel(method.run(state, x), x) < 1e-2, (M, i)
    graphs = []
    for M in graph_m:
        x_static, _ = make_input(M, K, 20 + M, "cuda")
        graphs.append((capture_graph(partial(method.run, state, x_static), "cuda", warmup_calls=1), x_static))
    for i in range(replays):
        g, x_static = graphs[i % 2]
        x_static.copy_(make_input(x_static.shape[0], K, 100 + i, "cuda")[0])
        g.replay()
        torch.cuda.synchronize()
        assert rel(g.output, x_static) < 1e-2, i
    assert not any(bool(state[name].any()) for name in zero), {name: int(state[name].count_nonzero()) for name in zero}


def assert_matches_fp32(name: str, config: dict, M: int, N: int = 2304, K: int = 8192, family: str = "qkv_gate"):
    """A BF16 method's y at M tokens within 5e-3 relative L2 of the FP32 product (random weights of unit-variance
    output, a partial token tile wherever M is not a multiple of the method's tile)."""
    import torch

    from kernels.registry import get_method

    m = get_method(name)
    w = (torch.randn(N, K, device="cuda") * K ** -0.5).to(torch.bfloat16)
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    y = m.run(m.prepare(w, config), x)
    ref = x.float() @ w.float().t()
    rel = ((y.float() - ref).norm() / ref.norm()).item()
    assert y.shape == (M, N) and y.dtype == torch.bfloat16 and rel < 5e-3, (name, config, M, rel)


def official_cases(name: str, every_config_at) -> list:
    """pytest params (config index, shape row) for method `name`: every admitted config at the (family, M) pairs in
    `every_config_at`, the first admitted config at every other official shape."""
    import pytest

    from datasets import load_workload
    from kernels.registry import get_method

    m = get_method(name)
    out = []
    for row in (r._asdict() for r in load_workload().shapes.itertuples(index=False)):
        admitted = [i for i, cfg in enumerate(m.configs)
                    if m.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), cfg) is None]
        if (row["family"], row["M"]) not in every_config_at:
            admitted = admitted[:1]
        out += [pytest.param(i, row, id=f"c{i}-{row['family']}-M{row['M']}") for i in admitted]
    return out
