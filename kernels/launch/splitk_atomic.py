"""Launcher for kernels/triton/splitk_atomic.py, BF16 families: `splitk_atomic` (one launch, no memset).

prepare() allocates the kernel's FP32 workspace [MAX_M, N] and one int32 arrival counter per output tile, both
zero; every call leaves them zero again (the last arriver of a tile restores them), so run() allocates only y
and can be captured in a CUDA graph and replayed. Calls must not run concurrently on two streams with the same
prepared state (they would share the workspace); the profiler runs everything on one stream.
"""
from __future__ import annotations

import torch
import triton

from kernels.launch import check_input, check_out, impl, require
# MAX_M: the shape check's bound; it sizes the workspace
from kernels.methods_triton.dense import SPLITK_ATOMIC_MAX_M as MAX_M
from kernels.triton.splitk_atomic import splitk_atomic_kernel

WHAT = "splitk_atomic"


def workspace(max_m: int, N: int, config: dict, device):
    """(FP32 workspace [max_m, N], int32 counters [tiles]) -- zero; a 1-element pair when SPLIT == 1 (unused)."""
    if config["SPLIT"] == 1:
        return (torch.zeros(1, dtype=torch.float32, device=device), torch.zeros(1, dtype=torch.int32, device=device))
    tiles = triton.cdiv(max_m, config["BM"]) * (N // config["BN"])
    return (torch.zeros((max_m, N), dtype=torch.float32, device=device),
            torch.zeros(tiles, dtype=torch.int32, device=device))


def check_tiling(N: int, K: int, config: dict, what: str) -> None:
    """What the kernel leaves unmasked: whole BN tiles of N and whole BK steps in every K slice."""
    require(N % config["BN"] == 0, what, f"needs N % BN == 0 (N={N}, BN={config['BN']})")
    require(K % (config["BK"] * config["SPLIT"]) == 0, what,
            f"needs K % (BK*SPLIT) == 0 (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})")


def prepare(weight, config: dict) -> dict:
    # fp32 is accepted too so the kernel logic can be tested under the Triton interpreter (bf16 tl.dot is wrong
    # there; tests/kernels/test_interpreter.py).
    require(weight.dtype in (torch.bfloat16, torch.float32) and weight.dim() == 2 and weight.stride(1) == 1, WHAT,
            f"weight must be a row-major bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    check_tiling(N, K, config, WHAT)
    ws, cnt = workspace(MAX_M, N, config, weight.device)
    return {"w": weight, "N": N, "K": K, "config": dict(config), "ws": ws, "cnt": cnt}


def run(state: dict, x, out=None):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = check_input(x, K, w.dtype, WHAT)
    require(1 <= M <= MAX_M, WHAT, f"serves 1 <= M <= {MAX_M} (its workspace rows), got M={M}")
    y = check_out(out, M, N, w.dtype, x.device, WHAT)
    require(y.stride(1) == 1, WHAT, "out must be contiguous along N")
    grid = (N // cfg["BN"], cfg["SPLIT"], triton.cdiv(M, cfg["BM"]))
    splitk_atomic_kernel[grid](x, w, y, state["ws"], state["cnt"], M, N, x.stride(0), w.stride(0), y.stride(0),
                               K=K, BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], SPLIT=cfg["SPLIT"], HILO=False,
                               num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return y


SPLITK_ATOMIC = impl(prepare, run)
