"""GPU: cublaslt's enumerated algorithms pass the full contract (poisoned outputs, fresh inputs, repeated calls,
CUDA-graph replays with new inputs) in every orientation at official shapes; an identity the library does not
offer is refused at prepare with one line; a config never names a list position."""
import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract

pytestmark = pytest.mark.gpu

SHAPES = (("pooler", 128), ("pooler", 16), ("qkv_gate", 128), ("unpooler", 256))


def _row(family, M):
    from datasets import load_workload

    wl = load_workload()
    rows = [r._asdict() for r in wl.shapes.itertuples(index=False)]
    return next(r for r in rows if r["family"] == family and r["M"] == M)


@pytest.mark.parametrize("family,M", SHAPES, ids=[f"{f}-M{m}" for f, m in SHAPES])
def test_every_enumerated_algorithm_passes_the_contract(family, M):
    m = get_method("cublaslt")
    row = _row(family, M)
    configs = m.configs_for(M, int(row["N"]), int(row["K"]))
    assert len(configs) >= 3, configs
    assert {c["orient"] for c in configs} == {"nk", "kn", "swap"}
    for cfg in configs:
        assert m.check_config(cfg) is None and m.supports(row, M, int(row["N"]), int(row["K"]), cfg) is None
        assert_contract("cublaslt", cfg, row, seed=M)


def test_an_identity_not_offered_is_refused():
    import torch

    m = get_method("cublaslt")
    cfg = dict(m.configs_for(128, 4096, 8192)[0], algo_id=987654)
    w = torch.randn(4096, 8192, device="cuda").to(torch.bfloat16)
    with pytest.raises(ValueError, match=r"does not offer algorithm id=987654|algo_id=987654"):
        m.prepare(w, cfg)


def test_a_configuration_beyond_the_list_passes_the_contract():
    # cuBLASLt builds configurations its heuristic does not list (AlgoInit + attributes + AlgoCheck); prepare()
    # takes one it accepts, and the contract holds for it as for a listed one.
    from kernels.launch import cublaslt as L

    row = _row("pooler", 256)
    N, K = int(row["N"]), int(row["K"])
    problem = L.Problem("kn", 256, N, K)
    offered = [L.identity(a) for a, _ in problem.heuristic()]
    base = {"orient": "kn", "M": 256, **offered[0]}
    beyond = [c for c in problem.neighbours(base) if {k: c[k] for k in L.IDENTITY_KEYS} not in offered]
    assert beyond, "no configuration one attribute away from the heuristic's first is accepted"
    assert_contract("cublaslt", beyond[0], row, seed=256)
