"""Cluster split-K (CUDA C++, kernels/cuda/cluster_splitk.cu): register-pipelined tensor-core products for skinny
M, the K-split partials summed in the same launch (warps through shared memory, the blocks of a thread-block
cluster through distributed shared memory), no global workspace, no second kernel.

Four methods share the kernel: `cluster_splitk` (BF16), `cluster_splitk_xs` (BF16, the token chunk staged in
shared memory, every warp of a block on the same K range), `cluster_splitk_async` (BF16, each lane's operands
copied ahead into its own shared-memory ring) and `router_hilo_cluster` (BF16 x, FP32 w and y: the
weights split at prepare into H = bf16(W) and L = bf16(W - H), both multiplied into one FP32 accumulator).

Built on first use by kernels/cuda/build.py (once per source hash, cached); a host without nvcc and without a
cached build gets one line saying so at prepare(), never at import. The weight re-layout (`pack`) is pure torch
and runs anywhere.
"""
from __future__ import annotations

import torch

from kernels.cuda.build import Extension, load_extension
from kernels.launch import check_input, impl, require
from kernels.launch.router import split_hilo

EXTENSION = Extension(
    name="projlab_cluster_splitk",
    sources=("cluster_splitk.cu", "cluster_splitk_torch.cu"),
    declarations="torch::Tensor cluster_splitk(torch::Tensor x, torch::Tensor wpk, int64_t N, int64_t S, "
                 "int64_t RW, int64_t KW, int64_t NT, int64_t R, int64_t pipe, bool hilo);",
    functions=("cluster_splitk",),
)

GROUP_ROWS = 16   # weight rows per packed group (the MMA's A operand)
STEP_K = 32       # K per packed step (4 lanes x 8 BF16)


def pack(*parts):
    """The kernel's weight layout: per 16-row group and 32-wide K step one contiguous block holding, for each part
    in order (W; or H then L), rows 0-7 then rows 8-15, lane l = 4*row + k//8 at 16-byte slot l. A pure
    permutation of the parts' elements (`unpack` inverts it); every weight load of a warp is 512 contiguous
    bytes."""
    N, K = parts[0].shape
    require(N % GROUP_ROWS == 0 and K % STEP_K == 0, "cluster_splitk",
            f"needs N % {GROUP_ROWS} == 0 and K % {STEP_K} == 0 (N={N}, K={K})")
    # [P, N/16, 2 halves, 8 rows, K/32 steps, 4 lanes, 8 values] -> [N/16, K/32, P, 2, 8, 4, 8]
    w = torch.stack(parts).reshape(len(parts), N // 16, 2, 8, K // 32, 4, 8)
    return w.permute(1, 4, 0, 2, 3, 5, 6).contiguous().reshape(-1)


def unpack(flat, N: int, K: int, n_parts: int = 1):
    """The parts `pack` was given, from its flat result."""
    w = flat.reshape(N // 16, K // 32, n_parts, 2, 8, 4, 8).permute(2, 0, 3, 4, 1, 5, 6)
    return tuple(w.reshape(n_parts, N, K).unbind(0))


def unavailable_reason(name: str = "cluster_splitk") -> str | None:
    """None when this host can run the kernel (an sm_90 GPU), else why not, for method `name`. The build is
    checked at prepare."""
    if not torch.cuda.is_available():
        return f"{name} needs a CUDA GPU (torch.cuda.is_available() is False)"
    if torch.cuda.get_device_capability() != (9, 0):
        return (f"{name} is built for sm_90a (Hopper), this GPU is sm_"
                f"{''.join(map(str, torch.cuda.get_device_capability()))}")
    return None


def _args(config: dict) -> tuple[int, int, int, int, int]:
    return int(config["S"]), int(config["RW"]), int(config["KW"]), int(config["NT"]), int(config["R"])


PIPE_REGISTERS, PIPE_BLOCK_RING, PIPE_LANE_RINGS = 0, 1, 2   # the kernel's PIPE modes


def prepare(weight, config: dict, pipe: int = PIPE_REGISTERS) -> dict:
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    module = load_extension(EXTENSION)
    N, K = weight.shape
    return {"w": pack(weight.contiguous()), "N": int(N), "K": int(K), "module": module,
            "args": _args(config), "pipe": pipe, "hilo": False}


def prepare_xs(weight, config: dict) -> dict:
    return prepare(weight, config, pipe=PIPE_BLOCK_RING)


def prepare_async(weight, config: dict) -> dict:
    return prepare(weight, config, pipe=PIPE_LANE_RINGS)


def prepare_hilo(weight, config: dict) -> dict:
    reason = unavailable_reason("router_hilo_cluster")
    if reason:
        raise RuntimeError(reason)
    if weight.dtype != torch.float32 or weight.dim() != 2:
        raise ValueError(f"router_hilo_cluster: weight must be a float32 [N, K], got {weight.dtype}")
    module = load_extension(EXTENSION)
    N, K = weight.shape
    return {"w": pack(*split_hilo(weight.contiguous())), "N": int(N), "K": int(K),
            "module": module, "args": _args(config), "pipe": PIPE_REGISTERS, "hilo": True}


def run(state: dict, x):
    what = "router_hilo_cluster" if state["hilo"] else "cluster_splitk"
    check_input(x, state["K"], torch.bfloat16, what)
    x = x.contiguous()
    if x.data_ptr() % 16:   # the kernel loads 16-byte vectors of token rows
        x = x.clone()
    return state["module"].cluster_splitk(x, state["w"], state["N"], *state["args"], state["pipe"],
                                          state["hilo"])


CLUSTER_SPLITK = impl(prepare, run)
CLUSTER_SPLITK_XS = impl(prepare_xs, run)
CLUSTER_SPLITK_ASYNC = impl(prepare_async, run)
ROUTER_HILO_CLUSTER = impl(prepare_hilo, run)
