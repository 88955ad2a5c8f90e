"""Launchers for kernels/triton/splitk_atomic_v2.py, BF16 families: `splitk_atomic_v2` (weight kept [N, K]) and
`splitk_atomic_kn` (weight stored [K, N] at prepare).

prepare() makes the kernel's weight (a contiguous transpose for `_kn`, the tile-packed permutation
[N/BN, K/BK, BN, BK] for W_LOAD "pack"/"pack_tma": a one-time copy, the only extra memory besides the
workspace), the FP32 workspace [MAX_M, N] and one int32 arrival counter per output tile (zero; every
call leaves them zero again, as in kernels/launch/splitk_atomic.py) and, for W_LOAD="tma", the weight's tensor
descriptor. run() allocates only y and launches once, so it can be captured in a CUDA graph and replayed. Calls
with one prepared state must stay on one stream (they share the workspace).
"""
from __future__ import annotations

import torch
import triton

from kernels.launch import check_input, check_out, impl, require
from kernels.launch.packed import row_stride, weight_for_load
from kernels.launch.splitk_atomic import workspace
# MAX_M: the shape check's bound; it sizes the workspace
from kernels.methods_triton.dense import SPLITK_ATOMIC2_MAX_M as MAX_M
from kernels.triton.splitk_atomic_v2 import splitk_atomic2_kernel


def check_tiling(N: int, K: int, config: dict, what: str) -> None:
    """What the kernel leaves unmasked: whole BN tiles of N, whole BK steps of K, at least one step per slice."""
    require(N % config["BN"] == 0, what, f"needs N % BN == 0 (N={N}, BN={config['BN']})")
    require(K % config["BK"] == 0 and K // config["BK"] >= config["SPLIT"], what,
            f"needs K % BK == 0 and K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})")


def _prepare(weight, config: dict, w_kn: bool, what: str) -> dict:
    # fp32 is accepted too so the kernel logic can be tested under the Triton interpreter (bf16 tl.dot is wrong
    # there; tests/kernels/test_interpreter.py).
    require(weight.dtype in (torch.bfloat16, torch.float32) and weight.dim() == 2 and weight.stride(1) == 1, what,
            f"weight must be a row-major bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    check_tiling(N, K, config, what)
    w_load, BN, BK = config["W_LOAD"], config["BN"], config["BK"]
    require(not (w_load.startswith("pack") and w_kn), what,
            f"W_LOAD={w_load!r} packs the [N, K] weight; not with [K, N]")
    w, w_desc = weight_for_load(weight.t().contiguous() if w_kn else weight, w_load, BN, BK,
                                [BK, BN] if w_kn else [BN, BK])
    ws, cnt = workspace(MAX_M, N, config, weight.device)
    return {"w": w, "w_kn": w_kn, "w_desc": w_desc, "N": N, "K": K, "config": dict(config), "ws": ws, "cnt": cnt,
            "what": what}


def run(state: dict, x, out=None):
    w, N, K, cfg, what = state["w"], state["N"], state["K"], state["config"], state["what"]
    M = check_input(x, K, w.dtype, what)
    require(1 <= M <= MAX_M, what, f"serves 1 <= M <= {MAX_M} (its workspace rows), got M={M}")
    y = check_out(out, M, N, w.dtype, x.device, what)
    require(y.stride(1) == 1, what, "out must be contiguous along N")
    grid = (N // cfg["BN"], cfg["SPLIT"], triton.cdiv(M, cfg["BM"]))
    splitk_atomic2_kernel[grid](x, w, state["w_desc"], y, state["ws"], state["cnt"], M, N, x.stride(0),
                                row_stride(w), y.stride(0), K=K, BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"],
                                SPLIT=cfg["SPLIT"], W_KN=state["w_kn"], W_LOAD=cfg["W_LOAD"],
                                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return y


def prepare_nk(weight, config: dict) -> dict:
    return _prepare(weight, config, False, "splitk_atomic_v2")


def prepare_kn(weight, config: dict) -> dict:
    return _prepare(weight, config, True, "splitk_atomic_kn")


SPLITK_ATOMIC_V2 = impl(prepare_nk, run)
SPLITK_ATOMIC_KN = impl(prepare_kn, run)
