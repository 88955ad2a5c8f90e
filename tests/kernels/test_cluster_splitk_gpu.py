"""GPU: cluster_splitk and router_hilo_cluster (CUDA C++, register-pipelined mma.sync, shared / distributed shared
memory reduction) pass the full contract with every config at one shape of each method, the first admitted config
at every official shape of the families they serve (M <= 64) and the nearby M, and match an FP32 product on an
odd M (masked token rows)."""
import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract, assert_matches_fp32

pytestmark = pytest.mark.gpu

METHODS = {"cluster_splitk": ("qkv_gate", "o", "pooler", "unpooler"),
           "cluster_splitk_xs": ("qkv_gate", "o", "pooler", "unpooler"),
           "cluster_splitk_async": ("qkv_gate", "o", "pooler", "unpooler"), "router_hilo_cluster": ("router",)}
EVERY_CONFIG_AT = {"cluster_splitk": ("qkv_gate", 16), "cluster_splitk_xs": ("qkv_gate", 32),
                   "cluster_splitk_async": ("qkv_gate", 8),
                   "router_hilo_cluster": ("router", 8)}


def _rows():
    from datasets import load_workload

    wl = load_workload()
    rows = [r._asdict() for r in wl.shapes.itertuples(index=False)]
    for fam in ("qkv_gate", "router"):   # the nearby M the plans dispatch to these methods' range
        base = next(r for r in rows if r["family"] == fam)
        for M in (9, 24, 64):
            rows.append(dict(base, M=M, load="nearby"))
    return rows


def _cases():
    out = []
    for name, families in METHODS.items():
        m = get_method(name)
        for row in _rows():
            if row["family"] not in families:
                continue
            admitted = [i for i, cfg in enumerate(m.configs)
                        if m.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), cfg) is None]
            if (row["family"], row["M"]) != EVERY_CONFIG_AT[name]:
                admitted = admitted[:1]
            out += [pytest.param(name, i, row, id=f"{name}-c{i}-{row['family']}-M{row['M']}") for i in admitted]
    return out


@pytest.mark.parametrize("name,config_index,row", _cases())
def test_contract(name, config_index, row):
    assert_contract(name, get_method(name).configs[config_index], row, seed=int(row["M"]))


@pytest.mark.parametrize("name,cfg,M", [("cluster_splitk", {"RW": 2, "KW": 4, "NT": 2, "R": 2, "S": 4}, 13),
                                        ("cluster_splitk", {"RW": 1, "KW": 8, "NT": 2, "R": 2, "S": 1}, 13),
                                        ("cluster_splitk", {"RW": 1, "KW": 4, "NT": 2, "R": 3, "S": 2}, 13),
                                        ("cluster_splitk", {"RW": 1, "KW": 4, "NT": 4, "R": 4, "S": 4}, 29),
                                        ("cluster_splitk", {"RW": 1, "KW": 2, "NT": 4, "R": 4, "S": 8}, 29),
                                        ("cluster_splitk_xs", {"RW": 8, "KW": 1, "NT": 2, "R": 1, "S": 2}, 13),
                                        ("cluster_splitk_async", {"RW": 1, "KW": 4, "NT": 2, "R": 2, "S": 2}, 13)])
def test_odd_m_matches_fp32(name, cfg, M):
    assert_matches_fp32(name, cfg, M)


def test_router_hilo_matches_fp64_to_the_router_tolerance():
    import torch

    m = get_method("router_hilo_cluster")
    w = torch.randn(256, 8192, device="cuda") * 8192 ** -0.5
    x = torch.randn(5, 8192, device="cuda").to(torch.bfloat16)
    y = m.run(m.prepare(w, {"RW": 1, "KW": 8, "NT": 1, "R": 1, "S": 8}), x)
    ref = x.double() @ w.double().t()
    rel = ((y.double() - ref).norm() / ref.norm()).item()
    assert y.shape == (5, 256) and y.dtype == torch.float32 and rel < 1e-5, rel
