"""Launcher for kernels/triton/gemv.py (M = 1)."""
from __future__ import annotations

import torch
import triton

from kernels.launch import check_input, check_out, impl, next_pow2
from kernels.triton.gemv import gemv_kernel

# Per-thread budget of fp32 weight elements held per K step (accumulator + loaded tile): 32 keeps the
# 16-warp whole-K case of the seed (BN=1, K=8192 -> 16 values/thread) in one step without spilling.
ELEMS_PER_THREAD = 32


def block_k(K: int, BN: int, num_warps: int) -> int:
    """K step: the whole K (next pow2, masked) when BN rows fit the register budget, else a K loop."""
    budget = next_pow2(max(64, ELEMS_PER_THREAD * 32 * num_warps // BN))
    return min(next_pow2(K), budget)


def prepare(weight, config: dict) -> dict:
    # fp32 is accepted too so the kernel logic can be tested under the Triton interpreter (with triton 3.6
    # the interpreter's tl.dot on bf16 operands is wrong; on fp32 it is right).
    if weight.dtype not in (torch.bfloat16, torch.float32) or weight.dim() != 2 or weight.stride(1) != 1:
        raise ValueError(f"gemv: weight must be a row-major bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    return {"w": weight, "N": N, "K": K, "config": dict(config),
            "BK": block_k(K, config["BN"], config["num_warps"])}


def run(state: dict, x, out=None):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = check_input(x, K, w.dtype, "gemv")
    if M != 1:
        raise ValueError(f"gemv serves M=1 only, got M={M}")
    y = check_out(out, 1, N, w.dtype, x.device, "gemv")
    if y.stride(1) != 1:
        raise ValueError("gemv: out must be contiguous")
    grid = (triton.cdiv(N, cfg["BN"]),)
    gemv_kernel[grid](x, w, y, N, K, w.stride(0),
                      BN=cfg["BN"], BK=state["BK"], CACHE=cfg["cache"], num_warps=cfg["num_warps"])
    return y


GEMV = impl(prepare, run)
