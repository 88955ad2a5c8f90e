"""GPU: cluster_wgmma (CUDA C++ TMA + wgmma, the token tile multicast across a cluster, the K split summed through
distributed shared memory) passes the full contract with every config at qkv_gate M=16 and M=128 and the first admitted
config at every official shape it admits, and matches an FP32 product at token counts that leave a partial token
tile (rows past M zero-filled by TMA, masked in the epilogue)."""
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
