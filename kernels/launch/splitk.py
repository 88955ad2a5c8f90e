"""Launchers for kernels/triton/splitk.py: `splitk` (partials + reduce kernel) and `splitk_fused` (last block reduces)."""
from __future__ import annotations

import torch
import triton

from kernels.launch import check_input, check_out, impl
# MAX_M: the shape check's bound; it sizes the fused tile counters
from kernels.methods_triton.dense import SPLITK_MAX_M as MAX_M
from kernels.triton.splitk import splitk_fused_kernel, splitk_partial_kernel, splitk_reduce_kernel

REDUCE_BLOCK = 1024  # elements per program of the reduce kernel


def prepare(weight, config: dict) -> dict:
    # fp32 is accepted too so the kernel logic can be tested under the Triton interpreter (with triton 3.6
    # the interpreter's tl.dot on bf16 operands is wrong; on fp32 it is right).
    if weight.dtype not in (torch.bfloat16, torch.float32) or weight.dim() != 2 or weight.stride(1) != 1:
        raise ValueError(f"splitk: weight must be a row-major bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    return {"w": weight, "N": N, "K": K, "config": dict(config)}


def prepare_fused(weight, config: dict) -> dict:
    state = prepare(weight, config)
    tiles = triton.cdiv(MAX_M, config["BM"]) * triton.cdiv(state["N"], config["BN"])
    # One arrival counter per output tile; zero now, and the kernel's last arriver puts it back to zero.
    state["counters"] = torch.zeros(tiles, dtype=torch.int32, device=weight.device)
    return state


def _grid(M: int, N: int, cfg: dict):
    return (triton.cdiv(M, cfg["BM"]), triton.cdiv(N, cfg["BN"]), cfg["SPLIT"])


def _check(state: dict, x, what: str) -> int:
    M = check_input(x, state["K"], state["w"].dtype, what)
    if not 1 <= M <= MAX_M:
        raise ValueError(f"{what} serves 1 <= M <= {MAX_M}, got M={M}")
    return M


def run(state: dict, x, out=None):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = _check(state, x, "splitk")
    y = check_out(out, M, N, w.dtype, x.device, "splitk")
    meta = dict(BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], SPLIT=cfg["SPLIT"],
                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    if cfg["SPLIT"] == 1:
        splitk_partial_kernel[_grid(M, N, cfg)](x, w, y, M, N, K, x.stride(0), w.stride(0),
                                                0, y.stride(0), y.stride(1), **meta)
        return y
    partials = torch.empty((cfg["SPLIT"], M, N), dtype=torch.float32, device=x.device)
    splitk_partial_kernel[_grid(M, N, cfg)](x, w, partials, M, N, K, x.stride(0), w.stride(0),
                                            partials.stride(0), partials.stride(1), 1, **meta)
    splitk_reduce_kernel[(triton.cdiv(M * N, REDUCE_BLOCK),)](
        partials, y, M, N, partials.stride(0), y.stride(0), y.stride(1),
        SPLIT=cfg["SPLIT"], BLOCK=REDUCE_BLOCK, num_warps=4)
    return y


def run_fused(state: dict, x, out=None):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = _check(state, x, "splitk_fused")
    y = check_out(out, M, N, w.dtype, x.device, "splitk_fused")
    split = cfg["SPLIT"]
    # SPLIT=1 stores straight to y; the kernel still takes a partials pointer, so give it a 1-deep buffer.
    partials = torch.empty((split, M, N), dtype=torch.float32, device=x.device)
    splitk_fused_kernel[_grid(M, N, cfg)](
        x, w, partials, y, state["counters"], M, N, K, x.stride(0), w.stride(0),
        partials.stride(0), partials.stride(1), y.stride(0), y.stride(1),
        BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], SPLIT=split,
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return y


SPLITK = impl(prepare, run)
SPLITK_FUSED = impl(prepare_fused, run_fused)
