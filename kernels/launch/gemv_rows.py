"""Launcher for kernels/triton/gemv_rows.py: `gemv_rows`, the multi-token CUDA-core GEMV (BF16 x; BF16 or FP32
weight, y in the weight's dtype). prepare() keeps the weight as it is; run() allocates y and launches once."""
from __future__ import annotations

import torch
import triton

from kernels.launch import check_input, check_out, impl, require
from kernels.methods_triton.gemv import GEMV_ROWS_MAX_M
from kernels.triton.gemv_rows import gemv_rows_kernel

WHAT = "gemv_rows"


def prepare(weight, config: dict) -> dict:
    require(weight.dtype in (torch.bfloat16, torch.float32) and weight.dim() == 2 and weight.stride(1) == 1, WHAT,
            f"weight must be a row-major bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    require(K % config["BK"] == 0, WHAT, f"needs K % BK == 0 (K={K}, BK={config['BK']})")
    return {"w": weight, "N": N, "K": K, "config": dict(config)}


def run(state: dict, x, out=None):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = check_input(x, K, torch.bfloat16, WHAT)
    require(1 <= M <= GEMV_ROWS_MAX_M, WHAT, f"serves 1 <= M <= {GEMV_ROWS_MAX_M}, got M={M}")
    y = check_out(out, M, N, w.dtype, x.device, WHAT)
    require(y.stride(1) == 1, WHAT, "out must be contiguous along N")
    grid = (triton.cdiv(N, cfg["BN"]), triton.cdiv(M, cfg["BM"]))
    gemv_rows_kernel[grid](x, w, y, M, N, x.stride(0), w.stride(0), y.stride(0), K=K, BM=cfg["BM"], BN=cfg["BN"],
                           BK=cfg["BK"], CACHE=cfg["cache"], num_warps=cfg["num_warps"])
    return y


GEMV_ROWS = impl(prepare, run)
