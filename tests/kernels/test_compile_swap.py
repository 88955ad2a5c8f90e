"""Every config of splitk_swap and router_hilo_swap compiles for sm_90 (H200) on this CPU machine without spills,
on the warpgroup MMA (wgmma: the point of swapping the operands), with a pipelined weight stream and the
single-launch reduction; every config of gemv_rows compiles without spills on the CUDA cores. Skips where
triton's ptxas is missing."""
import re

import pytest

triton = pytest.importorskip("triton")

from kernels.methods_triton.dense import SPLITK_SWAP_CONFIGS  # noqa: E402
from kernels.methods_triton.gemv import GEMV_ROWS_CONFIGS  # noqa: E402
from kernels.methods_triton.router import HILO_SWAP_CONFIGS  # noqa: E402
from tests.kernels.test_compile_sm90 import PTXAS, _check_single_launch, _compile  # noqa: E402

pytestmark = pytest.mark.skipif(not __import__("os").path.exists(PTXAS), reason="triton's bundled ptxas not found")

SIG = {"x_ptr": "*bf16", "w_ptr": "*bf16", "lo_ptr": "*bf16", "y_ptr": "*bf16", "ws_ptr": "*fp32",
       "cnt_ptr": "*i32", "M": "i32", "N": "i32", "stride_xm": "i32", "stride_w": "i32", "stride_ym": "i32",
       "stride_ws": "i32", "K": "constexpr", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
       "SPLIT": "constexpr", "HILO": "constexpr"}
CASES = [(False, c, K) for c in SPLITK_SWAP_CONFIGS for K in (8192, 4096, 1024) if K // c["BK"] >= c["SPLIT"]]
CASES += [(True, c, 8192) for c in HILO_SWAP_CONFIGS]


@pytest.mark.parametrize("hilo,cfg,K", CASES, ids=str)
def test_splitk_swap_compiles_to_wgmma_without_spills(hilo, cfg, K):
    from kernels.triton.splitk_swap import splitk_swap_kernel

    sig = dict(SIG, y_ptr="*fp32") if hilo else SIG
    consts = {k: cfg[k] for k in ("BM", "BN", "BK", "SPLIT")}
    k, spills = _compile(splitk_swap_kernel, sig, {**consts, "K": K, "HILO": hilo}, cfg["num_warps"],
                         cfg["num_stages"])
    ptx = k.asm["ptx"]
    assert spills == 0
    assert "wgmma.mma_async" in ptx and "mma.sync" not in ptx
    n = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16", ptx)
    assert n and {int(v) for v in n} <= {cfg["BM"], cfg["BM"] // 2, cfg["BM"] // 4}, n   # tokens = the MMA's N
    _check_single_launch(k, cfg["SPLIT"])
    if cfg["SPLIT"] > 1:
        # the partials are added 4 floats per atomic (no runtime-M mask on the token-contiguous workspace)
        assert "atom.global.gpu.relaxed.add.v4.f32" in ptx and "atom.global.gpu.relaxed.add.f32" not in ptx
    if (K // cfg["BK"]) // cfg["SPLIT"] > 1:
        assert "cp.async" in ptx                      # the weight stream is software-pipelined


ROWS_SIG = {"x_ptr": "*bf16", "w_ptr": "*bf16", "y_ptr": "*bf16", "M": "i32", "N": "i32", "stride_xm": "i32",
            "stride_wn": "i32", "stride_ym": "i32", "K": "constexpr", "BM": "constexpr", "BN": "constexpr",
            "BK": "constexpr", "CACHE": "constexpr"}
# gemv_rows at the workload's K for BF16 weights, and the rows written for the router (FP32 weights, K=8192;
# the config table marks them): no spills, every weight chunk loaded with the cache choice of the config.
ROWS_CASES = [("bf16", c, K) for c in GEMV_ROWS_CONFIGS for K in (8192, 4096, 1024) if K % c["BK"] == 0]
ROWS_CASES += [("fp32", c, 8192) for c in GEMV_ROWS_CONFIGS if c["cache"] == ""]


@pytest.mark.parametrize("w_dtype,cfg,K", ROWS_CASES, ids=str)
def test_gemv_rows_compiles_without_spills(w_dtype, cfg, K):
    from kernels.triton.gemv_rows import gemv_rows_kernel

    sig = dict(ROWS_SIG, w_ptr=f"*{w_dtype}", y_ptr=f"*{w_dtype}")
    consts = {"K": K, **{k: cfg[k] for k in ("BM", "BN", "BK")}, "CACHE": cfg["cache"]}
    k, spills = _compile(gemv_rows_kernel, sig, consts, cfg["num_warps"])
    ptx = k.asm["ptx"]
    assert spills == 0
    assert "mma" not in ptx                                   # CUDA-core FMAs, no tensor-core path
    assert ("ld.global.cg" in ptx) == (cfg["cache"] == ".cg")
