"""Launcher for kernels/triton/streamk.py: `streamk` (BF16 families; M up to STREAMK_MAX_M).

prepare() allocates the FP32 workspace [MAX_M, N] and per-tile arrival counters (zero; every call leaves them
zero) and, with TMA, the weight's tensor descriptor. run() builds the input's descriptor on the host (no device
allocation, so a CUDA graph captures it as a kernel argument) and launches one program per SM, or fewer when
there are fewer K steps than SMs. Same-state calls must stay on one stream (they share the workspace).
"""
from __future__ import annotations

import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.launch import check_input, check_out, impl, require
from kernels.launch.splitk_atomic import workspace
from kernels.methods_triton.dense import STREAMK_MAX_M as MAX_M
from kernels.triton.streamk import streamk_kernel

WHAT = "streamk"
# Programs when the device has no SM count (the Triton interpreter on CPU): a small number that does not
# divide the work evenly, so tests cover tiles split between programs.
CPU_PROGRAMS = 5


def programs_for(device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    return CPU_PROGRAMS


def prepare(weight, config: dict) -> dict:
    require(weight.dtype in (torch.bfloat16, torch.float32) and weight.dim() == 2 and weight.stride(1) == 1, WHAT,
            f"weight must be a row-major bf16/fp32 [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = weight.shape
    require(N % config["BN"] == 0 and K % config["BK"] == 0, WHAT,
            f"needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']})")
    ws, cnt = workspace(MAX_M, N, {**config, "SPLIT": 2}, weight.device)   # always sized: any tile may split
    state = {"w": weight, "N": N, "K": K, "config": dict(config), "ws": ws, "cnt": cnt,
             "programs": programs_for(weight.device), "w_desc": None}
    if config["TMA"]:
        state["w_desc"] = TensorDescriptor.from_tensor(weight, [config["BN"], config["BK"]])
    return state


def run(state: dict, x, out=None):
    w, N, K, cfg = state["w"], state["N"], state["K"], state["config"]
    M = check_input(x, K, w.dtype, WHAT)
    require(1 <= M <= MAX_M, WHAT, f"serves 1 <= M <= {MAX_M} (its workspace rows), got M={M}")
    y = check_out(out, M, N, w.dtype, x.device, WHAT)
    require(y.stride(1) == 1, WHAT, "out must be contiguous along N")
    x_desc = None
    if cfg["TMA"]:
        # TMA needs a 16-byte aligned base and row stride (TensorDescriptor checks and raises otherwise).
        x_desc = TensorDescriptor.from_tensor(x, [cfg["BM"], cfg["BK"]])
    steps = -(-M // cfg["BM"]) * (N // cfg["BN"]) * (K // cfg["BK"])
    grid = (min(state["programs"], steps),)   # every program gets at least one K step
    streamk_kernel[grid](x, w, x_desc, state["w_desc"], y, state["ws"], state["cnt"], M, N, x.stride(0),
                         w.stride(0), y.stride(0), K=K, BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"], TMA=cfg["TMA"],
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return y


STREAMK = impl(prepare, run)
