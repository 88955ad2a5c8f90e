"""Launchers for the router methods (kernels/triton/router.py): FP32 weights [N,K], BF16 x [M,K], FP32 y [M,N].

prepare() only transforms weights: the hi/lo split (H = bf16(W), L = bf16(W - fp32(H))), the interleaved
[2N,K] layout (row 2n = H[n], row 2n+1 = L[n]), its tile-packed permutation (router_hilo_flag's "pack" loads)
and the stacked [H; L] layout; router_gemv_fp32 and router_fma_flag take the FP32 weight as it is. run() never
syncs with the host and allocates only through torch, so every call can be captured in a CUDA graph and replayed with new inputs.
"""
from __future__ import annotations

import torch
import triton

from kernels.launch import check_input, impl, require
from kernels.launch import splitk_atomic, splitk_atomic_v2
from kernels.launch.packed import row_stride, weight_for_load
from kernels.methods_triton.router import FMA_FLAG_MAX_M, HILO_FLAG_MAX_M, HILO_FUSED_MAX_M
from kernels.triton.router import (router_fma_flag_kernel, router_gemv_fp32_kernel, router_hilo_atomic_kernel,
                                   router_hilo_flag_kernel, router_hilo_splitk_kernel, splitk_sum_kernel,
                                   zero_fill_pdl_kernel)
from kernels.triton.splitk_atomic import splitk_atomic_kernel

SUM_BLOCK = 1024       # elements per program of the split-K sum kernel
ZERO_BLOCK = 1024      # elements per program of the PDL zero-fill kernel
FLAG_STRIDE = 32       # int32 per router_hilo_flag token count: one 128-byte line per output tile


# ---------------------------------------------------------------- weight layouts (prepare-time, pure torch)

def split_hilo(w32):
    """(H, L) with H = bf16(W) and L = bf16(W - fp32(H)); H + L reproduces W to about 2^-16 relative."""
    if w32.dtype != torch.float32:
        raise ValueError(f"router: weight must be float32, got {w32.dtype}")
    hi = w32.to(torch.bfloat16)
    lo = (w32 - hi.to(torch.float32)).to(torch.bfloat16)
    return hi.contiguous(), lo.contiguous()


def interleave_rows(hi, lo):
    """[2N,K] with row 2n = hi[n] and row 2n+1 = lo[n] (a lossless permutation of the stacked rows)."""
    return torch.stack((hi, lo), dim=1).reshape(2 * hi.shape[0], hi.shape[1]).contiguous()


def stack_rows(hi, lo):
    """[2N,K] = [hi; lo]: one library product gives both contributions."""
    return torch.cat((hi, lo), dim=0).contiguous()


def _check_weight(weight, what: str):
    if weight.dtype != torch.float32 or weight.dim() != 2 or weight.stride(1) != 1:
        raise ValueError(f"{what}: weight must be a row-major float32 [N, K], got {weight.dtype} "
                         f"{tuple(weight.shape)}")
    return weight.shape


def _check_x(state: dict, x, what: str) -> int:
    return check_input(x, state["K"], torch.bfloat16, what)


def _dot_meta(cfg: dict) -> dict:
    return dict(BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], SPLIT=cfg["SPLIT"],
                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


# ---------------------------------------------------------------- router_gemv_fp32 (M = 1, direct FP32)

def _check_k_steps(K: int, config: dict, what: str) -> None:
    """router_gemv_fp32's K loop is unrolled and unmasked: whole BK steps only."""
    require(K % config["BK"] == 0, what, f"needs K % BK == 0 (K={K}, BK={config['BK']})")


def _check_k_slices(K: int, config: dict, what: str) -> None:
    """The hi/lo split-K kernels' K slices are unmasked: K // SPLIT must be whole BK steps."""
    require(K % (config["BK"] * config["SPLIT"]) == 0, what,
            f"needs K % (BK*SPLIT) == 0 (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})")


def prepare_gemv_fp32(weight, config: dict) -> dict:
    N, K = _check_weight(weight, "router_gemv_fp32")
    _check_k_steps(K, config, "router_gemv_fp32")
    return {"w": weight.contiguous(), "N": N, "K": K, "config": dict(config)}


def run_gemv_fp32(state: dict, x):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = _check_x(state, x, "router_gemv_fp32")
    require(M == 1, "router_gemv_fp32", f"serves M=1 only, got M={M}")
    _check_k_steps(K, cfg, "router_gemv_fp32")
    y = torch.empty((1, N), dtype=torch.float32, device=x.device)
    router_gemv_fp32_kernel[(triton.cdiv(N, cfg["BN"]),)](
        x, w, y, N, w.stride(0), K=K, BN=cfg["BN"], BK=cfg["BK"], CACHE=cfg["cache"],
        num_warps=cfg["num_warps"])
    return y


# ---------------------------------------------------------------- router_hilo_splitk (partials + sum kernel)

def prepare_hilo_splitk(weight, config: dict) -> dict:
    N, K = _check_weight(weight, "router_hilo_splitk")
    _check_k_slices(K, config, "router_hilo_splitk")
    hi, lo = split_hilo(weight)
    return {"hi": hi, "lo": lo, "N": N, "K": K, "config": dict(config)}


def run_hilo_splitk(state: dict, x):
    hi, lo, N, K, cfg = state["hi"], state["lo"], state["N"], state["K"], state["config"]
    M = _check_x(state, x, "router_hilo_splitk")
    _check_k_slices(K, cfg, "router_hilo_splitk")
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    split = cfg["SPLIT"]
    # Every partial is written by its owner before the sum reads it, so the scratch needs no zero-fill.
    part = y if split == 1 else torch.empty((split, M, N), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(M, cfg["BM"]), triton.cdiv(N, cfg["BN"]), split)
    router_hilo_splitk_kernel[grid](x, hi, lo, part, M, N, x.stride(0), hi.stride(0), K=K, **_dot_meta(cfg))
    if split > 1:
        splitk_sum_kernel[(triton.cdiv(M * N, SUM_BLOCK),)](part, y, M * N, SPLIT=split, BLOCK=SUM_BLOCK,
                                                            num_warps=4)
    return y


# ---------------------------------------------------------------- router_hilo_atomic (+ the PDL variant)

def prepare_hilo_atomic(weight, config: dict) -> dict:
    N, K = _check_weight(weight, "router_hilo_atomic")
    _check_k_slices(K, config, "router_hilo_atomic")
    hi, lo = split_hilo(weight)
    return {"w2": interleave_rows(hi, lo), "N": N, "K": K, "config": dict(config)}


def run_hilo_atomic(state: dict, x):
    w2, N, K, cfg = state["w2"], state["N"], state["K"], state["config"]
    M = _check_x(state, x, "router_hilo_atomic")
    _check_k_slices(K, cfg, "router_hilo_atomic")
    # The atomic adds accumulate into y, so its zero-fill is part of every call (and of its timing).
    y = torch.zeros((M, N), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(M, cfg["BM"]), triton.cdiv(N, cfg["BN"]), cfg["SPLIT"])
    router_hilo_atomic_kernel[grid](x, w2, y, M, N, x.stride(0), w2.stride(0), y.stride(0),
                                    K=K, USE_PDL=False, **_dot_meta(cfg))
    return y


def run_hilo_atomic_pdl(state: dict, x):
    w2, N, K, cfg = state["w2"], state["N"], state["K"], state["config"]
    M = _check_x(state, x, "router_hilo_atomic_pdl")
    _check_k_slices(K, cfg, "router_hilo_atomic_pdl")
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    # Producer: a Triton zero-fill that calls griddepcontrol.launch_dependents first. It is launched normally
    # (stream order keeps it after whatever wrote x and last used y's memory).
    zero_fill_pdl_kernel[(triton.cdiv(M * N, ZERO_BLOCK),)](y, M * N, BLOCK=ZERO_BLOCK, num_warps=4)
    # Consumer: launched with programmatic stream serialization, so its loads and products may start before
    # the zero-fill finishes; it runs griddepcontrol.wait before its atomic adds. Without overlap it is simply
    # an ordinary stream-ordered launch, and the wait returns at once.
    grid = (triton.cdiv(M, cfg["BM"]), triton.cdiv(N, cfg["BN"]), cfg["SPLIT"])
    router_hilo_atomic_kernel[grid](x, w2, y, M, N, x.stride(0), w2.stride(0), y.stride(0),
                                    K=K, USE_PDL=True, launch_pdl=True, **_dot_meta(cfg))
    return y


# ---------------------------------------------------------------- router_hilo_fused (one launch, no zero-fill)

def prepare_hilo_fused(weight, config: dict) -> dict:
    N, K = _check_weight(weight, "router_hilo_fused")
    splitk_atomic.check_tiling(N, K, config, "router_hilo_fused")
    hi, lo = split_hilo(weight)
    ws, cnt = splitk_atomic.workspace(HILO_FUSED_MAX_M, N, config, weight.device)
    return {"w2": interleave_rows(hi, lo), "N": N, "K": K, "config": dict(config), "ws": ws, "cnt": cnt}


def run_hilo_fused(state: dict, x):
    """The dense single-launch split-K kernel with HILO=True: FP32 partials added into a persistent workspace,
    the last split of a tile copies it to y and re-zeroes it (no zero-fill launch, no PDL)."""
    w2, N, K, cfg = state["w2"], state["N"], state["K"], state["config"]
    M = _check_x(state, x, "router_hilo_fused")
    require(1 <= M <= HILO_FUSED_MAX_M, "router_hilo_fused",
            f"serves 1 <= M <= {HILO_FUSED_MAX_M} (its workspace rows), got M={M}")
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    grid = (N // cfg["BN"], cfg["SPLIT"], triton.cdiv(M, cfg["BM"]))
    splitk_atomic_kernel[grid](x, w2, y, state["ws"], state["cnt"], M, N, x.stride(0), w2.stride(0), y.stride(0),
                               K=K, HILO=True, **_dot_meta(cfg))
    return y


# ---------------------------------------------------------------- router_hilo_flag (one launch, zeroing program)

def _token_counts(max_m: int, tile_m: int, N: int, tile_n: int, device):
    """The flag kernels' token counts: one per output tile of the largest M served, each on its own 128-byte line;
    every call leaves each count at 0 again."""
    tiles = triton.cdiv(max_m, tile_m) * (N // tile_n)
    return torch.zeros(tiles * FLAG_STRIDE, dtype=torch.int32, device=device)


def prepare_hilo_flag(weight, config: dict) -> dict:
    N, K = _check_weight(weight, "router_hilo_flag")
    splitk_atomic_v2.check_tiling(N, K, config, "router_hilo_flag")      # the same uneven K slices (k_slice)
    hi, lo = split_hilo(weight)
    w2 = interleave_rows(hi, lo)
    flags = _token_counts(HILO_FLAG_MAX_M, config["BM"], N, config["BN"], weight.device)
    # "pack": [2N/2BN, K/BK, 2BN, BK], one block per K step; "tma": [2BN, BK] boxes of the interleaved rows.
    w2, w_desc = weight_for_load(w2, config["W_LOAD"], 2 * config["BN"], config["BK"],
                                 [2 * config["BN"], config["BK"]])
    return {"w2": w2, "w_desc": w_desc, "flags": flags, "N": N, "K": K, "config": dict(config)}


def run_hilo_flag(state: dict, x):
    """One launch: per output tile, program 0 zeroes y's tile and hands out SPLIT tokens; programs 1..SPLIT
    multiply their K slice and add into y after taking a token (kernels/triton/router.py)."""
    w2, N, K, cfg = state["w2"], state["N"], state["K"], state["config"]
    M = _check_x(state, x, "router_hilo_flag")
    require(1 <= M <= HILO_FLAG_MAX_M, "router_hilo_flag",
            f"serves 1 <= M <= {HILO_FLAG_MAX_M} (its token counts), got M={M}")
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    grid = (cfg["SPLIT"] + 1, N // cfg["BN"], triton.cdiv(M, cfg["BM"]))
    router_hilo_flag_kernel[grid](x, w2, state["w_desc"], y, state["flags"], M, N, x.stride(0), row_stride(w2),
                                  y.stride(0), K=K, W_LOAD=cfg["W_LOAD"], SWAP=cfg["SWAP"], FLAG_STRIDE=FLAG_STRIDE,
                                  **_dot_meta(cfg))
    return y


# ---------------------------------------------------------------- router_fma_flag (direct FP32, small M, one launch)

def _check_fma_tiling(N: int, K: int, config: dict, what: str) -> None:
    """router_fma_flag's tiles are unmasked along N and K: whole BN tiles, whole BK steps, a K step per slice."""
    require(N % config["BN"] == 0 and K % config["BK"] == 0, what,
            f"needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']})")
    require(K // config["BK"] >= config["SPLIT"], what,
            f"needs K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})")


def prepare_fma_flag(weight, config: dict) -> dict:
    N, K = _check_weight(weight, "router_fma_flag")
    _check_fma_tiling(N, K, config, "router_fma_flag")
    flags = _token_counts(FMA_FLAG_MAX_M, config["MT"], N, config["BN"], weight.device)
    return {"w": weight.contiguous(), "flags": flags, "N": N, "K": K, "config": dict(config)}


def run_fma_flag(state: dict, x):
    """One launch: per output tile, program 0 zeroes y's tile and hands out SPLIT tokens; programs 1..SPLIT
    multiply their K slice of the FP32 weight with FP32 FMAs and add into y after taking a token."""
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = _check_x(state, x, "router_fma_flag")
    require(1 <= M <= FMA_FLAG_MAX_M, "router_fma_flag",
            f"serves 1 <= M <= {FMA_FLAG_MAX_M} (its token counts), got M={M}")
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    grid = (cfg["SPLIT"] + 1, N // cfg["BN"], triton.cdiv(M, cfg["MT"]))
    router_fma_flag_kernel[grid](x, w, y, state["flags"], M, N, x.stride(0), w.stride(0), y.stride(0), K=K,
                                 MT=cfg["MT"], BN=cfg["BN"], BK=cfg["BK"], SPLIT=cfg["SPLIT"],
                                 STAGES=cfg["num_stages"], FLAG_STRIDE=FLAG_STRIDE, num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"])
    return y


# ---------------------------------------------------------------- router_hilo_packed_mm (one library call)

def prepare_hilo_packed_mm(weight, config: dict) -> dict:
    N, K = _check_weight(weight, "router_hilo_packed_mm")
    hi, lo = split_hilo(weight)
    w2 = stack_rows(hi, lo)
    return {"w2t": w2.t(), "N": N, "K": K, "config": dict(config)}


def run_hilo_packed_mm(state: dict, x):
    N = state["N"]
    _check_x(state, x, "router_hilo_packed_mm")
    # One cuBLAS product with BF16 operands and an FP32 output (FP32 accumulate): [M, 2N] = x @ [H; L]^T.
    both = torch.mm(x, state["w2t"], out_dtype=torch.float32)
    return both[:, :N] + both[:, N:]


ROUTER_GEMV_FP32 = impl(prepare_gemv_fp32, run_gemv_fp32)
ROUTER_HILO_SPLITK = impl(prepare_hilo_splitk, run_hilo_splitk)
ROUTER_HILO_ATOMIC = impl(prepare_hilo_atomic, run_hilo_atomic)
ROUTER_HILO_ATOMIC_PDL = impl(prepare_hilo_atomic, run_hilo_atomic_pdl)
ROUTER_HILO_PACKED_MM = impl(prepare_hilo_packed_mm, run_hilo_packed_mm)
ROUTER_HILO_FUSED = impl(prepare_hilo_fused, run_hilo_fused)
ROUTER_HILO_FLAG = impl(prepare_hilo_flag, run_hilo_flag)
ROUTER_FMA_FLAG = impl(prepare_fma_flag, run_fma_flag)
