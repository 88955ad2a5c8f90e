"""GPU: streamk_wgmma (cluster_wgmma's TMA + wgmma pipeline on one or two CTAs per SM over equal runs of tile K
blocks, split tiles summed by their last finisher through a self-zeroing workspace) passes the full contract with
every config at qkv_gate M=16 and M=128 and the first admitted config at every official shape it admits, matches an
FP32 product at token counts that leave a partial token tile, and leaves its counters zero through eager calls and
alternating graph replays at two token counts."""
import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract, assert_matches_fp32, assert_self_zeroing, official_cases

pytestmark = pytest.mark.gpu

NAME = "streamk_wgmma"
EVERY_CONFIG_AT = (("qkv_gate", 16), ("qkv_gate", 128))


@pytest.mark.parametrize("config_index,row", official_cases(NAME, EVERY_CONFIG_AT))
def test_contract(config_index, row):
    assert_contract(NAME, get_method(NAME).configs[config_index], row, seed=int(row["M"]))


@pytest.mark.parametrize("cfg,M", [({"MI": 1, "NWG": 1, "BT": 16, "PER_SM": 2, "STAGES": 8}, 13),
                                   ({"MI": 1, "NWG": 2, "BT": 32, "PER_SM": 1, "STAGES": 8}, 29),
                                   ({"MI": 1, "NWG": 1, "BT": 128, "PER_SM": 1, "STAGES": 8}, 100),
                                   ({"MI": 1, "NWG": 2, "BT": 128, "PER_SM": 1, "STAGES": 7}, 200),
                                   ({"MI": 2, "NWG": 2, "BT": 128, "PER_SM": 1, "STAGES": 4}, 250),
                                   ({"MI": 1, "NWG": 2, "BT": 256, "PER_SM": 1, "STAGES": 4}, 200)])
def test_partial_token_tiles_match_fp32(cfg, M):
    assert_matches_fp32(NAME, cfg, M)


@pytest.mark.parametrize("cfg,eager_m,graph_m", [
    ({"MI": 1, "NWG": 1, "BT": 16, "PER_SM": 1, "STAGES": 8}, (16, 9, 32), (16, 11)),
    ({"MI": 1, "NWG": 2, "BT": 128, "PER_SM": 1, "STAGES": 7}, (128, 65, 256), (256, 100)),
])
def test_counters_come_back_to_zero(cfg, eager_m, graph_m):
    assert_self_zeroing(get_method(NAME), cfg, eager_m, graph_m, replays=20, zero=("counts",))
