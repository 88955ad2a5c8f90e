"""Launcher for kernels/triton/packed.py: weights re-laid at prepare so each BN x BK output tile is contiguous."""
from __future__ import annotations

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.launch import check_input, check_out, impl
from kernels.methods_triton.dense import PACKED_MAX_M as MAX_M  # the shape check's bound
from kernels.triton.packed import packed_kernel
from kernels.triton.splitk import splitk_reduce_kernel

REDUCE_BLOCK = 1024  # elements per program of the split reduce kernel


def pack(weight, BN: int, BK: int):
    """w[N, K] -> wp[N/BN, K/BK, BN, BK] contiguous (a pure permutation of the same values)."""
    N, K = weight.shape
    if N % BN or K % BK:
        raise ValueError(f"packed: N={N} must divide by BN={BN} and K={K} by BK={BK}")
    return weight.reshape(N // BN, BN, K // BK, BK).permute(0, 2, 1, 3).contiguous()


def unpack(wp):
    """Inverse of pack: wp[N/BN, K/BK, BN, BK] -> w[N, K]."""
    nt, kt, BN, BK = wp.shape
    return wp.permute(0, 2, 1, 3).reshape(nt * BN, kt * BK)


def weight_for_load(weight, w_load: str, rows: int, BK: int, tma_block=None):
    """The weight as a single-launch kernel's W_LOAD reads it, and its tensor descriptor (None unless TMA).

    "pack" / "pack_tma": tile-packed [N/rows, K/BK, rows, BK] (`pack`), and for "pack_tma" a descriptor over its
    [N/rows * K/BK * rows, BK] row view with one [rows, BK] box per K step; "tma": a descriptor over `weight` with
    `tma_block` boxes; anything else: `weight` as given. Shared by splitk_atomic_v2 and router_hilo_flag."""
    packed = w_load in ("pack", "pack_tma")
    w = pack(weight, rows, BK) if packed else weight
    desc = None
    if w_load in ("tma", "pack_tma"):
        desc = TensorDescriptor.from_tensor(w.reshape(-1, BK) if packed else w,
                                            [rows, BK] if packed else list(tma_block))
    return w, desc


def row_stride(w) -> int:
    """The weight-row stride a kernel is passed: 0 for the packed 4-d layout (its tile offsets are constexpr)."""
    return w.stride(0) if w.dim() == 2 else 0


def prepare(weight, config: dict) -> dict:
    # fp32 is accepted too so the kernel logic can be tested under the Triton interpreter (with triton 3.6
    # the interpreter's tl.dot on bf16 operands is wrong; on fp32 it is right).
    if weight.dtype not in (torch.bfloat16, torch.float32) or weight.dim() != 2:
        raise ValueError(f"packed: weight must be a bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    return {"wp": pack(weight, config["BN"], config["BK"]), "N": N, "K": K, "config": dict(config)}


def run(state: dict, x, out=None):
    wp, N, K, cfg = state["wp"], state["N"], state["K"], state["config"]
    M = check_input(x, K, wp.dtype, "packed")
    if not 1 <= M <= MAX_M:
        raise ValueError(f"packed serves 1 <= M <= {MAX_M}, got M={M}")
    y = check_out(out, M, N, wp.dtype, x.device, "packed")
    split = cfg["SPLIT"]
    grid = (triton.cdiv(M, cfg["BM"]), N // cfg["BN"], split)
    meta = dict(BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], SPLIT=split,
                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    if split == 1:
        packed_kernel[grid](x, wp, y, M, N, K, x.stride(0), 0, y.stride(0), y.stride(1), **meta)
        return y
    partials = torch.empty((split, M, N), dtype=torch.float32, device=x.device)
    packed_kernel[grid](x, wp, partials, M, N, K, x.stride(0), partials.stride(0), partials.stride(1), 1, **meta)
    splitk_reduce_kernel[(triton.cdiv(M * N, REDUCE_BLOCK),)](
        partials, y, M, N, partials.stride(0), y.stride(0), y.stride(1),
        SPLIT=split, BLOCK=REDUCE_BLOCK, num_warps=4)
    return y


PACKED = impl(prepare, run)
