"""Launcher for kernels/gluon/skinny_ws.py: `skinny_ws`, the warp-specialized TMA/WGMMA skinny GEMM (BF16), and
`router_hilo_ws`, the same kernel on the router's hi/lo pair (BF16 x, FP32 weight split at prepare, FP32 y).

prepare() checks the tiling, builds the weight's TMA descriptor ([BN, BK] boxes of the row-major [N, K] weight,
128-byte swizzle; PACK=1: of the weight re-laid as [N/BN, K/BK, BN, BK], one contiguous block per box), and makes
the FP32 workspace [N, MAX_M] and one int32 K-step counter per output tile, both zero (every call leaves them zero
again); run() builds the activation's descriptor ([BM, BK] boxes of x[M, K]: the
TMA unit zero-fills the token rows past M), allocates y and launches once, so it can be captured in a CUDA graph
and replayed (the descriptors are kernel parameters, captured by value with the graph). Calls with one prepared
state must stay on one stream (they share the workspace).
"""
from __future__ import annotations

import torch
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from datasets.hardware import REGISTERS_PER_SM, SMEM_PER_SM_BYTES, SMEM_RESERVED_PER_BLOCK_BYTES
from kernels.gluon.skinny_ws import skinny_fixup_kernel, skinny_ws_kernel
from kernels.launch import check_input, check_out, impl, require
from kernels.launch.packed import pack
from kernels.launch.router import split_hilo
from kernels.methods_gluon import SKINNY_MAX_M as MAX_M  # the shape check's bound; sizes the workspace
from kernels.methods_gluon import fixup_programs, fixup_smem_bytes, skinny_smem_bytes

# Shared memory and registers per SM, and the 1 KB each resident block reserves (datasets.hardware).
SM_SMEM_BYTES = SMEM_PER_SM_BYTES
SM_REGISTERS = REGISTERS_PER_SM


def blocks_per_sm(config: dict, weight_tiles: int = 1, smem=skinny_smem_bytes) -> int:
    """How many blocks of this config fit on one SM by shared memory (weight_tiles: 2 for the hi/lo pair; smem:
    the kernel's shared-memory figure, skinny_ws's or skinny_ws_fixup's)."""
    return max(1, SM_SMEM_BYTES // (smem(config, weight_tiles) + SMEM_RESERVED_PER_BLOCK_BYTES))


def maxnreg(config: dict, weight_tiles: int = 1, smem=skinny_smem_bytes) -> int | None:
    """The per-thread register cap: as many blocks resident by registers as fit by shared memory, as far as the
    consumer's accumulator leaves room (a warp-specialized kernel otherwise sizes every warp for 256 registers
    and holds one block per SM). The block has num_warps + 4 warps: the 1-warp producer takes a whole
    warpgroup's register allocation. None: no cap (one block per SM)."""
    threads = (config["num_warps"] + 4) * 32
    acc_regs = config["BN"] * config["BM"] // (config["num_warps"] * 32)
    for blocks in range(blocks_per_sm(config, weight_tiles, smem), 1, -1):
        cap = min(SM_REGISTERS // (threads * blocks) // 8 * 8, 248)
        # ptxas needs about twice the accumulator plus addressing (the compile test's configs: BM=16-32 fit in
        # 80, BM=128 x BN=64 in 128, BM=256 not in 128).
        if 2 * acc_regs + 48 <= cap:
            return cap
    return None


def programs(config: dict, N: int, K: int, M: int, sm_count: int) -> int:
    """Grid size: SPLIT runs per output tile (split-K), or STREAMK blocks per SM (stream-K), never more runs
    than K steps."""
    steps = triton_cdiv(M, config["BM"]) * (N // config["BN"]) * (K // config["BK"])
    if config["STREAMK"]:
        return min(steps, config["STREAMK"] * sm_count)
    return triton_cdiv(M, config["BM"]) * (N // config["BN"]) * config["SPLIT"]


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def check_tiling(N: int, K: int, config: dict, what: str) -> None:
    """What the kernel leaves unmasked: whole BN tiles of N, whole BK steps of K, a K step per split, token
    tiles that divide the workspace columns."""
    require(N % config["BN"] == 0, what, f"needs N % BN == 0 (N={N}, BN={config['BN']})")
    require(MAX_M % config["BM"] == 0, what, f"needs BM to divide {MAX_M}, the workspace columns (BM={config['BM']})")
    require(K % config["BK"] == 0 and K // config["BK"] >= config["SPLIT"], what,
            f"needs K % BK == 0 and K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})")


def _descriptor(w, config: dict):
    """The TMA descriptor of a bf16 [N, K] weight (PACK: of its tile-packed copy) and the tensor it views."""
    if config["PACK"]:
        # [N/BN, K/BK, BN, BK] viewed as rows of BK: every K step's weight tile is one contiguous block
        w = pack(w, config["BN"], config["BK"]).reshape(-1, config["BK"])
    layout = gl.NVMMASharedLayout.get_default_for([config["BN"], config["BK"]], gl.bfloat16)
    return TensorDescriptor(w, list(w.shape), [w.stride(0), 1], [config["BN"], config["BK"]], layout), w


def _state(hi, lo, config: dict, what: str, y_dtype, fixup: bool) -> dict:
    """What a call needs: the weight descriptor(s), the activation's shared layout, and the reduction's memory.
    skinny_ws: a zeroed FP32 workspace [N, MAX_M] and one K-step counter per output tile. skinny_ws_fixup: SPLIT
    partial slots per output tile of the largest M served ([MAX_M/BM * N/BN, SPLIT, BM, BN] FP32, never read
    before written in a call), two counters per tile (arrived, done reading) and how many blocks are resident at
    once. Every call leaves the counters (and skinny_ws's workspace) zero."""
    require(hi.stride(0) * 2 % 16 == 0 and hi.data_ptr() % 16 == 0, what,
            "weight rows must start at 16-byte boundaries (a TMA descriptor's rule)")
    N, K = hi.shape
    check_tiling(N, K, config, what)
    w_desc, w_load = _descriptor(hi, config)
    lo_desc, lo_load = _descriptor(lo, config) if lo is not None else (w_desc, None)
    tiles = (MAX_M // config["BM"]) * (N // config["BN"])
    sm_count = torch.cuda.get_device_properties(hi.device).multi_processor_count
    state = {"w": w_load, "lo": lo_load, "w_desc": w_desc, "lo_desc": lo_desc, "hilo": lo is not None,
             "x_layout": gl.NVMMASharedLayout.get_default_for([config["BM"], config["BK"]], gl.bfloat16),
             "N": N, "K": K, "config": dict(config), "y_dtype": y_dtype, "sm_count": sm_count, "what": what}
    if fixup:
        slots = tiles * config["SPLIT"] * config["BM"] * config["BN"]
        per_sm = blocks_per_sm(config, 2 if lo is not None else 1, fixup_smem_bytes)
        state |= {"ws": torch.empty(slots, dtype=torch.float32, device=hi.device),
                  "cnt": torch.zeros(2 * tiles, dtype=torch.int32, device=hi.device), "resident": sm_count * per_sm}
    else:
        state |= {"ws": torch.zeros((N, MAX_M), dtype=torch.float32, device=hi.device),
                  "cnt": torch.zeros(tiles, dtype=torch.int32, device=hi.device)}
    return state


def _require_hopper(weight, what: str) -> None:
    require(weight.is_cuda and torch.cuda.get_device_capability(weight.device)[0] == 9, what,
            "needs an sm_90 (Hopper) GPU: its TMA copies and warpgroup MMAs are sm_90a instructions")


def _prepare(weight, config: dict, what: str, hilo: bool, fixup: bool) -> dict:
    """BF16 weights as they are; the router's FP32 weight as its hi/lo pair (H = bf16(W), L = bf16(W - H))."""
    _require_hopper(weight, what)
    want = torch.float32 if hilo else torch.bfloat16
    require(weight.dtype == want and weight.dim() == 2 and weight.stride(1) == 1, what,
            f"weight must be a row-major {str(want).removeprefix('torch.')} [N, K], got {weight.dtype} "
            f"{tuple(weight.shape)}")
    if not hilo:
        return _state(weight, None, config, what, torch.bfloat16, fixup)
    hi, lo = split_hilo(weight)
    return _state(hi, lo, config, what, torch.float32, fixup)


def prepare(weight, config: dict) -> dict:
    return _prepare(weight, config, "skinny_ws", hilo=False, fixup=False)


def prepare_hilo(weight, config: dict) -> dict:
    return _prepare(weight, config, "router_hilo_ws", hilo=True, fixup=False)


def prepare_fixup(weight, config: dict) -> dict:
    return _prepare(weight, config, "skinny_ws_fixup", hilo=False, fixup=True)


def prepare_hilo_fixup(weight, config: dict) -> dict:
    return _prepare(weight, config, "router_hilo_ws_fixup", hilo=True, fixup=True)


def _operands(state: dict, x, out):
    """(M, x's TMA descriptor, y) of a call, after the checks both kernels need."""
    N, K, cfg, what = state["N"], state["K"], state["config"], state["what"]
    M = check_input(x, K, torch.bfloat16, what)
    require(1 <= M <= MAX_M, what, f"serves 1 <= M <= {MAX_M} (its workspace), got M={M}")
    require(x.stride(0) * 2 % 16 == 0 and x.data_ptr() % 16 == 0, what,
            "x rows must start at 16-byte boundaries (a TMA descriptor's rule)")
    y = check_out(out, M, N, state["y_dtype"], x.device, what)
    require(y.stride(1) == 1, what, "out must be contiguous along N")
    return M, TensorDescriptor(x, [M, K], [x.stride(0), 1], [cfg["BM"], cfg["BK"]], state["x_layout"]), y


def run(state: dict, x, out=None):
    N, K, cfg = state["N"], state["K"], state["config"]
    M, x_desc, y = _operands(state, x, out)
    grid = (programs(cfg, N, K, M, state["sm_count"]),)
    skinny_ws_kernel[grid](state["w_desc"], state["lo_desc"], x_desc, y, state["ws"], state["cnt"], M, y.stride(0),
                           triton_cdiv(M, cfg["BM"]), N=N, K=K, MAX_M=MAX_M, STAGES=cfg["STAGES"],
                           PACK=bool(cfg["PACK"]), HILO=state["hilo"], num_warps=cfg["num_warps"],
                           maxnreg=maxnreg(cfg, 2 if state["hilo"] else 1))
    return y


def run_fixup(state: dict, x, out=None):
    N, K, cfg, what = state["N"], state["K"], state["config"], state["what"]
    M, x_desc, y = _operands(state, x, out)
    grid = fixup_programs(M, N, cfg)
    # The runs of a tile wait for each other: a grid larger than what is resident at once could wait forever.
    require(grid <= state["resident"], what,
            f"{grid} programs at M={M} exceed the {state['resident']} resident at once on this GPU")
    skinny_fixup_kernel[(grid,)](state["w_desc"], state["lo_desc"], x_desc, y, state["ws"], state["cnt"], M,
                                 y.stride(0), triton_cdiv(M, cfg["BM"]), cfg["SPLIT"], N=N, K=K,
                                 STAGES=cfg["STAGES"], PACK=bool(cfg["PACK"]), HILO=state["hilo"],
                                 num_warps=cfg["num_warps"], maxnreg=fixup_maxnreg(cfg, 2 if state["hilo"] else 1))
    return y


def fixup_maxnreg(config: dict, weight_tiles: int = 1) -> int | None:
    """The register cap of skinny_ws_fixup: as for skinny_ws, with its shared-memory figure (no scratch)."""
    return maxnreg(config, weight_tiles, fixup_smem_bytes)


SKINNY_WS = impl(prepare, run)
SKINNY_WS_FIXUP = impl(prepare_fixup, run_fixup)
ROUTER_HILO_WS_FIXUP = impl(prepare_hilo_fixup, run_fixup)
ROUTER_HILO_WS = impl(prepare_hilo, run)
