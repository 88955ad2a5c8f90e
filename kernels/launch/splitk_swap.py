"""Launchers for kernels/triton/splitk_swap.py: `splitk_swap` (BF16 families) and `router_hilo_swap` (BF16 x,
FP32 weight and output: the hi/lo pair made at prepare).

prepare() makes the FP32 workspace [N, MAX_M] and one int32 arrival counter per output tile, both zero (every
call leaves them zero again), and for the router the hi/lo pair; run() allocates only y and launches once, so it
can be captured in a CUDA graph and replayed. Calls with one prepared state must stay on one stream (they share
the workspace).
"""
from __future__ import annotations

import torch
import triton

from kernels.launch import check_input, check_out, impl, require
from kernels.launch.router import split_hilo
# MAX_M: the shape check's bound; it sizes the workspace
from kernels.methods_triton.dense import SPLITK_SWAP_MAX_M as MAX_M
from kernels.triton.splitk_swap import splitk_swap_kernel


def check_tiling(N: int, K: int, config: dict, what: str) -> None:
    """What the kernel leaves unmasked: whole BN tiles of N, whole BK steps of K, at least one step per slice."""
    require(N % config["BN"] == 0, what, f"needs N % BN == 0 (N={N}, BN={config['BN']})")
    require(MAX_M % config["BM"] == 0, what, f"needs BM to divide {MAX_M}, the workspace columns (BM={config['BM']})")
    require(K % config["BK"] == 0 and K // config["BK"] >= config["SPLIT"], what,
            f"needs K % BK == 0 and K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})")


def _workspace(N: int, config: dict, device):
    """(FP32 workspace [N, MAX_M], int32 counters [tiles]) -- zero; 1-element tensors when SPLIT == 1 (unused)."""
    if config["SPLIT"] == 1:
        return (torch.zeros(1, dtype=torch.float32, device=device), torch.zeros(1, dtype=torch.int32, device=device))
    tiles = triton.cdiv(MAX_M, config["BM"]) * (N // config["BN"])
    return (torch.zeros((N, MAX_M), dtype=torch.float32, device=device),
            torch.zeros(tiles, dtype=torch.int32, device=device))


def _state(w, lo, N: int, K: int, config: dict, what: str) -> dict:
    check_tiling(N, K, config, what)
    ws, cnt = _workspace(N, config, w.device)
    return {"w": w, "lo": lo, "N": N, "K": K, "config": dict(config), "ws": ws, "cnt": cnt, "what": what}


def prepare(weight, config: dict) -> dict:
    what = "splitk_swap"
    # fp32 is accepted too so the kernel logic can be tested under the Triton interpreter (bf16 tl.dot is wrong
    # there; tests/kernels/test_interpreter.py).
    require(weight.dtype in (torch.bfloat16, torch.float32) and weight.dim() == 2 and weight.stride(1) == 1, what,
            f"weight must be a row-major bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    return _state(weight, None, N, K, config, what)


def prepare_hilo(weight, config: dict) -> dict:
    what = "router_hilo_swap"
    require(weight.dtype == torch.float32 and weight.dim() == 2 and weight.stride(1) == 1, what,
            f"weight must be a row-major float32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    hi, lo = split_hilo(weight)
    return _state(hi, lo, N, K, config, what)


def run(state: dict, x, out=None):
    w, lo, N, K, cfg, what = state["w"], state["lo"], state["N"], state["K"], state["config"], state["what"]
    hilo = lo is not None
    # x comes in the (hi) weight's dtype: bf16 (fp32 in the interpreter's tests); the router writes FP32 y, the
    # BF16 families y in the weight's dtype.
    M = check_input(x, K, w.dtype, what)
    require(1 <= M <= MAX_M, what, f"serves 1 <= M <= {MAX_M} (its workspace columns), got M={M}")
    y = check_out(out, M, N, torch.float32 if hilo else w.dtype, x.device, what)
    require(y.stride(1) == 1, what, "out must be contiguous along N")
    grid = (N // cfg["BN"], cfg["SPLIT"], triton.cdiv(M, cfg["BM"]))
    splitk_swap_kernel[grid](x, w, lo if hilo else w, y, state["ws"], state["cnt"], M, N, x.stride(0), w.stride(0),
                             y.stride(0), state["ws"].stride(0), K=K, BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"],
                             SPLIT=cfg["SPLIT"], HILO=hilo, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
    return y


SPLITK_SWAP = impl(prepare, run)
ROUTER_HILO_SWAP = impl(prepare_hilo, run)
