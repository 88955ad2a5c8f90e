"""GPU: skinny_ws, router_hilo_ws, skinny_ws_fixup and router_hilo_ws_fixup (the Gluon warp-specialized TMA/WGMMA
kernel: BF16 and the router's hi/lo pair, with atomics or with the partials summed by each tile's own runs) pass the
full contract (profiler.check.contract.check_candidate: poisoned outputs, fresh inputs, repeated calls, CUDA-graph
replays with new inputs, inputs and weights unchanged) with every config at their main shape (qkv_gate M=16,
router M=16, qkv_gate M=128, router M=128), and with the default config at every official shape of every family of
their dtypes the shape check admits and at the main family's nearby M; split-K, stream-K and multi-token-tile configs
leave workspace and counters zero (skinny_ws_fixup: its counters) after eager calls and graph replays that mix M."""

import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract, assert_self_zeroing

pytestmark = pytest.mark.gpu

NAME = "skinny_ws"
MAIN_SHAPE = {"skinny_ws": ("qkv_gate", 16), "router_hilo_ws": ("router", 16), "skinny_ws_fixup": ("qkv_gate", 128),
              "router_hilo_ws_fixup": ("router", 128)}


def _rows():
    from datasets import load_workload

    wl = load_workload()
    return [r._asdict() for df in (wl.shapes, wl.nearby) for r in df.itertuples(index=False)]


def _cases():
    out = []
    for name, (main, main_m) in MAIN_SHAPE.items():
        m = get_method(name)
        for row in _rows():
            at_main = row["family"] == main and int(row["M"]) == main_m
            default_here = row["load"] != "nearby" or row["family"] == main
            for i, cfg in enumerate(m.configs):
                if not (at_main or (i == 0 and default_here)):
                    continue
                if m.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), cfg) is None:
                    out.append(pytest.param(name, i, row, id=f"{name}-c{i}-{row['family']}-M{row['M']}-{row['load']}"))
    return out


@pytest.mark.parametrize("name,config_index,row", _cases())
def test_contract(name, config_index, row):
    assert_contract(name, get_method(name).configs[config_index], row, seed=int(row["M"]))


def _index(**want) -> int:
    return next(i for i, c in enumerate(get_method(NAME).configs) if all(c[k] == v for k, v in want.items()))


@pytest.mark.parametrize("config_index", [_index(SPLIT=3, STREAMK=0), _index(STREAMK=1, BN=64),
                                          _index(BM=64, STREAMK=1)])
def test_workspace_zero_after_calls_and_replays_of_mixed_m(config_index):
    """Eager calls at M = 8, 16, 3, 32, 100 then graphs captured at two M replayed alternately with new inputs: every
    output right, and the workspace and counters all zero at the end (qkv_gate, N=2304, K=8192)."""
    assert_self_zeroing(get_method(NAME), get_method(NAME).configs[config_index], (8, 16, 3, 32, 100), (8, 40), 12)


@pytest.mark.parametrize("config_index", [0, 6, 8])
def test_fixup_counters_zero_after_calls_and_replays_of_mixed_m(config_index):
    """skinny_ws_fixup at M = 128, 100, 3, 77, 128 eagerly, then graphs at M = 128 and 97 replayed alternately:
    every output right and both counters of every tile zero at the end (its workspace slots are overwritten, not
    re-zeroed)."""
    m = get_method("skinny_ws_fixup")
    assert_self_zeroing(m, m.configs[config_index], (128, 100, 3, 77, 128), (128, 97), 12, zero=("cnt",))

