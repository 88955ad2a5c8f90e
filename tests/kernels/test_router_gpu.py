"""GPU: every router method (and gemv_wide) passes the full contract on every admitted official and nearby M,
and the atomic / PDL routes stay correct over many back-to-back calls and graph replays (no lost zero-fill)."""
import pytest

from kernels.registry import METHODS
from tests.kernels.gpu_contract import assert_contract

pytestmark = pytest.mark.gpu

ROUTER_NAMES = ("router_gemv_fp32", "router_hilo_splitk", "router_hilo_atomic", "router_hilo_atomic_pdl",
                "router_hilo_packed_mm")
ALL_M = (1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 128, 129, 255, 256)
CONFIG_M = (1, 8, 17, 256)   # every config is checked here; the default config at every M


def _shape(family, M):
    from datasets import load_workload

    return load_workload().shape(family, M)


def _cases():
    out = []
    for name in ROUTER_NAMES:
        m = METHODS[name]
        for i, cfg in enumerate(m.configs):
            for M in (ALL_M if i == 0 else CONFIG_M):
                sh = _shape("router", M)
                if m.supports(sh, M, sh["N"], sh["K"], cfg) is None:
                    out.append(pytest.param(name, i, M, "router", id=f"{name}-c{i}-M{M}"))
    wide = METHODS["gemv_wide"]
    for i, cfg in enumerate(wide.configs):
        # every muse BF16 family at M=1 the config's shape check admits (o: K=1024, unpooler: K=4096, the others 8192)
        fams = [f for f in ("o", "unpooler", "qkv_gate", "pooler")
                if wide.supports(_shape(f, 1), 1, _shape(f, 1)["N"], _shape(f, 1)["K"], cfg) is None]
        assert fams, cfg
        out += [pytest.param("gemv_wide", i, 1, f, id=f"gemv_wide-c{i}-{f}-M1") for f in fams]
    return out


@pytest.mark.parametrize("name,config_index,M,family", _cases())
def test_contract(name, config_index, M, family):
    assert_contract(name, METHODS[name].configs[config_index], _shape(family, M), seed=M)


@pytest.mark.parametrize("name", ["router_hilo_atomic", "router_hilo_atomic_pdl"])
@pytest.mark.parametrize("M", [1, 16, 256])
def test_atomic_routes_repeat_and_replay(name, M):
    """50 eager calls and 50 graph replays with new inputs: a missing/late zero-fill would double outputs."""
    from profiler.check.contract import make_input, make_weight, reference
    from profiler.measure.timing import capture_graph

    method = METHODS[name]
    w = make_weight("router", 256, 8192, 1, "cuda", dtype="float32")
    state = method.prepare(w, method.configs[0])
    worst = 0.0
    for i in range(50):
        x, _ = make_input(M, 8192, 100 + i, "cuda")
        ref = reference(x, w, "float32")
        y = method.run(state, x)
        worst = max(worst, float((y.double() - ref).norm() / ref.norm()))
    x_static, _ = make_input(M, 8192, 7, "cuda")
    g = capture_graph(lambda: method.run(state, x_static), "cuda", warmup_calls=1)
    for i in range(50):
        x, _ = make_input(M, 8192, 500 + i, "cuda")
        x_static.copy_(x)
        g.replay()
        ref = reference(x, w, "float32")
        worst = max(worst, float((g.output.double() - ref).norm() / ref.norm()))
    assert worst < 1e-4, worst
