"""GPU: splitk_atomic_v2, splitk_atomic_kn, streamk_small, splitk_swap, router_hilo_swap and gemv_rows.

- Every config at every official and nearby shape its shape check admits, through the self-check sweep
  (kernels.selfcheck_configs.sweep: two fresh-input calls vs the FP64 product, workspace and counters zero after):
  one test per method, every failing (config, shape) named.
- The full contract (profiler.check.contract.check_candidate: poisoned outputs, fresh inputs, repeated calls, CUDA-graph
  replays with new inputs, inputs and weights unchanged) for every config at the first official shape it admits
  and for the default config at every official shape it admits.
- The BF16 split-K variants leave workspace and counters zero after eager calls and graph replays that mix M.
"""

import pytest

from kernels.registry import get_method
from tests.kernels.gpu_contract import assert_contract, assert_self_zeroing

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
    method = get_method(name)
    assert_self_zeroing(method, method.configs[config_index], (8, 16, 3, 32), (8, 16), 20)