"""Kernel logic of gemv_rows (kernels/triton/gemv_rows.py) under the Triton interpreter (CPU), through the
launcher: token tiles with padded rows, N tails, K in unrolled chunks, BF16 and FP32 weights."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tests.kernels.interp_run import interp_results  # noqa: E402

WORKER = "interp_worker_gemv_rows.py"


@pytest.fixture(scope="module")
def results():
    return interp_results(WORKER)


def test_every_case_ran(results):
    assert len(results) == 3 * 2 * 3
    assert {(r["w_dtype"], r["y_dtype"]) for r in results} == {("torch.bfloat16", "torch.bfloat16"),
                                                               ("torch.float32", "torch.float32")}


def test_matches_fp64(results):
    for r in results:
        assert r["shape_ok"], r
        # against the exact product converted to y's dtype as the interpreter converts: FP32 summation order is all
        # that differs (it can flip a BF16 truncation now and then: one flip is 2^-7 of one element)
        assert r["rel"] < (1e-6 if r["w_dtype"] == "torch.float32" else 1e-3), r
