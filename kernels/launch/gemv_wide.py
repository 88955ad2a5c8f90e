"""Launcher for kernels/triton/gemv_wide.py: one-token GEMV with many whole rows per program (o-projection M=1)."""
from __future__ import annotations

import torch

from kernels.launch import check_input, check_out, impl
from kernels.triton.gemv_wide import gemv_wide_kernel


def prepare(weight, config: dict) -> dict:
    if weight.dtype != torch.bfloat16 or weight.dim() != 2 or weight.stride(1) != 1:
        raise ValueError(f"gemv_wide: weight must be a row-major bf16 [N, K], got {weight.dtype} "
                         f"{tuple(weight.shape)}")
    N, K = weight.shape
    if N % config["BN"] or K % config["BK"]:
        raise ValueError(f"gemv_wide needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, config={config})")
    return {"w": weight, "N": N, "K": K, "config": dict(config)}


def run(state: dict, x, out=None):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = check_input(x, K, w.dtype, "gemv_wide")
    if M != 1:
        raise ValueError(f"gemv_wide serves M=1 only, got M={M}")
    y = check_out(out, 1, N, w.dtype, x.device, "gemv_wide")
    gemv_wide_kernel[(N // cfg["BN"],)](x, w, y, w.stride(0), K=K, BN=cfg["BN"], BK=cfg["BK"],
                                         CACHE=cfg["cache"], num_warps=cfg["num_warps"])
    return y


GEMV_WIDE = impl(prepare, run)
