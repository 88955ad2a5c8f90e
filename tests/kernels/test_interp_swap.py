"""Kernel logic of splitk_swap / router_hilo_swap (kernels/triton/splitk_swap.py) under the Triton interpreter
(CPU), through the launcher: even and uneven K slices, token tiles with padded tokens, N tiles, the HILO pair
(both products in one accumulator), no split; every call leaves the workspace and counters zero."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tests.kernels.interp_run import interp_results  # noqa: E402

WORKER = "interp_worker_swap.py"


@pytest.fixture(scope="module")
def results():
    return interp_results(WORKER)


def test_every_case_ran(results):
    assert {r["hilo"] for r in results} == {False, True}
    assert {r["config"]["SPLIT"] for r in results} == {1, 3, 4, 8}
    assert len(results) == 4 * 2 * 3


def test_fp32_matches_fp64(results):
    for r in results:
        # fp32 operands and accumulation: every K step (and, with HILO, both halves) added exactly once
        assert r["rel"] < 1e-5, r


def test_workspace_and_counters_zero(results):
    for r in results:
        assert r["workspace_zero"], r
