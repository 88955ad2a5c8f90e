"""GPU: cluster_wgmma (CUDA C++ TMA + wgmma, the token tile multicast across a cluster, the K split summed through
distributed shared memory) passes the full contract with every config at qkv_gate M=16 and M=128 and the first admitted
config at every official shape it admits, and matches an FP32 product at token counts that leave a partial token
tile (rows past M zero-filled by TMA, masked in the epilogue). Its router twin, router_hilo_wgmma, passes the contract
with every config at router M=128 and M=256 (the first admitted at M=32) and matches an FP64 product to well inside
the router's 1e-4 tolerance at partial token tiles."""
import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract, assert_matches_fp32, official_cases

pytestmark = pytest.mark.gpu

NAME = "cluster_wgmma"
EVERY_CONFIG_AT = (("qkv_gate", 16), ("qkv_gate", 128))


@pytest.mark.parametrize("config_index,row", official_cases(NAME, EVERY_CONFIG_AT))
def test_contract(config_index, row):
    assert_contract(NAME, get_method(NAME).configs[config_index], row, seed=int(row["M"]))


@pytest.mark.parametrize("cfg,M", [({"MI": 1, "NWG": 2, "BT": 16, "CN": 2, "CK": 4, "STAGES": 8, "KA": 1}, 13),
                                   ({"MI": 1, "NWG": 1, "BT": 32, "CN": 1, "CK": 3, "STAGES": 8, "KA": 1}, 29),
                                   ({"MI": 1, "NWG": 1, "BT": 16, "CN": 1, "CK": 7, "STAGES": 8, "KA": 2}, 13),
                                   ({"MI": 1, "NWG": 1, "BT": 32, "CN": 1, "CK": 3, "STAGES": 4, "KA": 4}, 29),
                                   ({"MI": 1, "NWG": 2, "BT": 128, "CN": 1, "CK": 7, "STAGES": 3, "KA": 2}, 100),
                                   ({"MI": 1, "NWG": 2, "BT": 128, "CN": 2, "CK": 4, "STAGES": 7, "KA": 1}, 100),
                                   ({"MI": 1, "NWG": 2, "BT": 128, "CN": 2, "CK": 3, "STAGES": 7, "KA": 1}, 200),
                                   ({"MI": 1, "NWG": 2, "BT": 256, "CN": 2, "CK": 2, "STAGES": 4, "KA": 1}, 200)])
def test_partial_token_tiles_match_fp32(cfg, M):
    assert_matches_fp32(NAME, cfg, M)


ROUTER = "router_hilo_wgmma"


@pytest.mark.parametrize("config_index,row", official_cases(ROUTER, (("router", 128), ("router", 256))))
def test_router_contract(config_index, row):
    assert_contract(ROUTER, get_method(ROUTER).configs[config_index], row, seed=int(row["M"]))


@pytest.mark.parametrize("cfg,M", [({"MI": 1, "NWG": 1, "BT": 32, "CN": 1, "CK": 8, "STAGES": 8, "KA": 2}, 21),
                                   ({"MI": 1, "NWG": 2, "BT": 64, "CN": 2, "CK": 7, "STAGES": 8, "KA": 1}, 40),
                                   ({"MI": 1, "NWG": 1, "BT": 128, "CN": 1, "CK": 14, "STAGES": 8, "KA": 1}, 100),
                                   ({"MI": 1, "NWG": 2, "BT": 128, "CN": 2, "CK": 8, "STAGES": 6, "KA": 1}, 200),
                                   ({"MI": 1, "NWG": 1, "BT": 256, "CN": 1, "CK": 16, "STAGES": 5, "KA": 1}, 300)])
def test_router_partial_token_tiles_match_fp64(cfg, M):
    import torch

    m = get_method(ROUTER)
    w = torch.randn(256, 8192, device="cuda") * 8192 ** -0.5
    x = torch.randn(M, 8192, device="cuda").to(torch.bfloat16)
    y = m.run(m.prepare(w, cfg), x)
    ref = x.double() @ w.double().t()
    rel = ((y.double() - ref).norm() / ref.norm()).item()
    assert y.shape == (M, 256) and y.dtype == torch.float32 and rel < 1e-5, (cfg, M, rel)
