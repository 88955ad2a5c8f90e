"""Kernel logic of splitk_atomic_v2 / splitk_atomic_kn (kernels/triton/splitk_atomic_v2.py) under the Triton
interpreter (CPU), through the launchers: the [N, K], [K, N] and tile-packed weight layouts, pointer and TMA
loads, even and uneven K slices, M tiles with padded rows; every call leaves the workspace and counters zero."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tests.kernels.interp_run import interp_results  # noqa: E402

WORKER = "interp_worker_splitk2.py"


@pytest.fixture(scope="module")
def results():
    return interp_results(WORKER)


def test_every_case_ran(results):
    assert {r["method"] for r in results} == {"splitk_atomic_v2", "splitk_atomic_kn"}
    loads = {(r["method"], r["config"]["W_LOAD"]) for r in results}
    assert loads == {("splitk_atomic_v2", w) for w in ("cg", "tma", "pack", "pack_tma")} | {
        ("splitk_atomic_kn", w) for w in ("cg", "tma")}
    assert {r["config"]["SPLIT"] for r in results} == {1, 3, 4, 8}
    assert len(results) == (4 + 2) * 4 * 3


def test_fp32_matches_fp64(results):
    for r in results:
        assert r["rel"] < 1e-5, r   # fp32 operands and accumulation: every K step added exactly once


def test_workspace_and_counters_zero_and_weight_kept(results):
    for r in results:
        assert r["workspace_zero"] and r["w_unchanged"], r
