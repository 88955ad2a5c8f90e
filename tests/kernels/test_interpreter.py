"""Kernel logic of gemv / splitk / splitk_fused / packed / splitk_atomic / streamk under the Triton interpreter
(CPU), through the launchers.

The interpreter runs in a subprocess (TRITON_INTERPRET=1 must be set before triton is imported, and must not
leak into other tests). With triton 3.6, tl.dot on bf16 operands is wrong in the interpreter, so the tl.dot kernels
run fp32 operands (same code path otherwise); gemv has no tl.dot and runs bf16.
"""
import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tests.kernels.interp_run import interp_results  # noqa: E402

WORKER = "interp_worker.py"


@pytest.fixture(scope="module")
def results():
    return interp_results(WORKER)


def test_every_case_ran(results):
    methods = {r["method"] for r in results}
    assert methods == {"gemv", "splitk", "splitk_fused", "packed", "splitk_atomic", "streamk"}


def test_gemv_bf16_matches_fp64(results):
    for r in (r for r in results if r["method"] == "gemv"):
        # bf16 output rounding alone is ~2^-9 relative; fp32 accumulation keeps the rest far below 1%.
        assert r["rel"] < 6e-3, r


@pytest.mark.parametrize("method", ["splitk", "splitk_fused", "packed", "splitk_atomic", "streamk"])
def test_dot_kernels_fp32_match_fp64(results, method):
    rows = [r for r in results if r["method"] == method]
    assert rows
    for r in rows:
        assert r["rel"] < 1e-5, r  # fp32 operands, fp32 accumulation: covers every K term exactly once


def test_fused_counters_reset_after_every_call(results):
    rows = [r for r in results if r["method"] == "splitk_fused"]
    assert rows and all(r["counters_zero"] for r in rows)


@pytest.mark.parametrize("method", ["splitk_atomic", "streamk"])
def test_single_launch_methods_leave_workspace_and_counters_zero(results, method):
    """Three calls on fresh inputs with one prepared state: the last arriver of every split tile took the sum out
    and zeroed it, so the next call (or graph replay) starts clean -- no memset launch needed."""
    rows = [r for r in results if r["method"] == method]
    assert len(rows) >= 9 and all(r["workspace_zero"] for r in rows)

