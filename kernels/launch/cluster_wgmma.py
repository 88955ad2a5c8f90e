"""Cluster wgmma (CUDA C++, kernels/cuda/cluster_wgmma.cu): warp-specialized TMA + warpgroup-MMA products, the
token tile multicast across the CN weight tiles of a thread-block cluster and the CK-way K split summed through
distributed shared memory, in one launch with no global workspace (`cluster_wgmma`); the same pipeline on PER_SM
CTAs per SM over equal runs of tile K blocks, split tiles summed by their last finisher through a self-zeroing
FP32 workspace (`streamk_wgmma`); the cluster kernel for the router's FP32 weights as hi/lo BF16 rows with FP32 y
(`router_hilo_wgmma`).

The weights are tile-packed at prepare (`pack`: each BW x 64 weight box one contiguous block); the launcher checks
x and passes both to the extension, which encodes the two tensor maps per call. Built on first use by
kernels/cuda/build.py (once per source hash, cached); a host without nvcc and without a cached build gets one line
saying so at prepare(), never at import.
"""
from __future__ import annotations

import torch

from kernels.cuda.build import Extension, load_extension
from kernels.launch import check_input, impl
from kernels.launch.cluster_splitk import unavailable_reason
from kernels.launch.router import interleave_rows, split_hilo
from kernels.methods_cuda import (WGMMA_BK as BK, router_wgmma_shape_check, streamk_wgmma_shape_check,
                                  wgmma_shape_check, wgmma_token_range)

EXTENSION = Extension(
    name="projlab_cluster_wgmma",
    sources=("cluster_wgmma.cu", "cluster_wgmma_torch.cu"),
    declarations="torch::Tensor cluster_wgmma(torch::Tensor x, torch::Tensor w, int64_t N, int64_t MI, "
                 "int64_t NWG, int64_t BT, int64_t CN, int64_t CK, int64_t stages, int64_t KA);\n"
                 "int64_t cluster_wgmma_max_clusters(int64_t N, int64_t M, int64_t MI, int64_t NWG, int64_t BT, "
                 "int64_t CN, int64_t CK, int64_t stages, int64_t KA);\n"
                 "torch::Tensor streamk_wgmma(torch::Tensor x, torch::Tensor w, torch::Tensor ws, "
                 "torch::Tensor counts, int64_t N, int64_t MI, int64_t NWG, int64_t BT, int64_t P, int64_t stages);\n"
                 "torch::Tensor router_hilo_wgmma(torch::Tensor x, torch::Tensor w, int64_t N2, int64_t MI, "
                 "int64_t NWG, int64_t BT, int64_t CN, int64_t CK, int64_t stages, int64_t KA);\n"
                 "int64_t router_hilo_wgmma_max_clusters(int64_t N2, int64_t M, int64_t MI, int64_t NWG, int64_t BT, "
                 "int64_t CN, int64_t CK, int64_t stages, int64_t KA);",
    functions=("cluster_wgmma", "cluster_wgmma_max_clusters", "streamk_wgmma", "router_hilo_wgmma",
               "router_hilo_wgmma_max_clusters"),
)

KEYS = ("MI", "NWG", "BT", "CN", "CK", "STAGES", "KA")


def pack(weight, BW: int):
    """The kernel's weight layout: [N/BW, K/64, BW, 64], so the BW x 64 box of one weight tile and K block is one
    contiguous block (a pure permutation; `unpack` inverts it)."""
    N, K = weight.shape
    return weight.reshape(N // BW, BW, K // BK, BK).permute(0, 2, 1, 3).contiguous()


def unpack(packed, N: int, K: int):
    """The [N, K] weight `pack` was given."""
    return packed.permute(0, 2, 1, 3).reshape(N, K)


def _checked(name: str, weight, config: dict, shape_check, dtype: str = "bfloat16") -> tuple[int, int, object]:
    """(N, K, the extension module) once the weight (a `dtype` [N, K]), the config's shape check (with the token
    tile's own M) and the host admit it. The kernels trust their geometry (multicast slices, cluster ranks, tiles, shared
    memory), so a config the registry would refuse never launches."""
    if weight.dtype != getattr(torch, dtype) or weight.dim() != 2:
        raise ValueError(f"{name}: weight must be a {dtype} [N, K], got {weight.dtype} {tuple(weight.shape)}")
    N, K = (int(v) for v in weight.shape)
    why = shape_check(int(config["BT"]), N, K, config)
    if why:
        raise ValueError(why)
    reason = unavailable_reason(name)
    if reason:
        raise RuntimeError(reason)
    return N, K, load_extension(EXTENSION)


def _tokens(name: str, state: dict, x):
    """x as the kernels' TMA reads it (contiguous, 16-byte aligned), once its token count is in the config's tile
    range."""
    M = check_input(x, state["K"], torch.bfloat16, name)
    bt = state["args"][2]
    low, high = wgmma_token_range(bt)
    if not low <= M <= high:
        raise ValueError(f"{name}: config BT={bt} serves M from {low} to {high}, got M={M}")
    x = x.contiguous()
    return x.clone() if x.data_ptr() % 16 else x


def prepare(weight, config: dict) -> dict:
    N, K, module = _checked("cluster_wgmma", weight, config, wgmma_shape_check)
    bw = 64 * int(config["MI"]) * int(config["NWG"])
    return {"w": pack(weight.contiguous(), bw), "N": N, "K": K, "module": module,
            "args": tuple(int(config[k]) for k in KEYS)}


def run(state: dict, x):
    x = _tokens("cluster_wgmma", state, x)
    return state["module"].cluster_wgmma(x, state["w"], state["N"], *state["args"])


CLUSTER_WGMMA = impl(prepare, run)


def prepare_router(weight, config: dict) -> dict:
    """The router's FP32 weight [N, K] as the kernel's hi/lo rows: H = bf16(W), L = bf16(W - H) interleaved
    (row 2j = H[j], row 2j+1 = L[j]; kernels/launch/router.py), tile-packed like cluster_wgmma's weights."""
    N, K, module = _checked("router_hilo_wgmma", weight, config, router_wgmma_shape_check, "float32")
    bw = 64 * int(config["MI"]) * int(config["NWG"])
    hi, lo = split_hilo(weight.contiguous())
    return {"w": pack(interleave_rows(hi, lo), bw), "N": 2 * N, "K": K, "module": module,
            "args": tuple(int(config[k]) for k in KEYS)}


def run_router(state: dict, x):
    x = _tokens("router_hilo_wgmma", state, x)
    return state["module"].router_hilo_wgmma(x, state["w"], state["N"], *state["args"])


def router_resident_clusters(state: dict, M: int) -> int:
    """How many of this router config's clusters the GPU holds at once (cudaOccupancyMaxActiveClusters)."""
    return int(state["module"].router_hilo_wgmma_max_clusters(state["N"], M, *state["args"]))


ROUTER_HILO_WGMMA = impl(prepare_router, run_router)


def streamk_ctas(device, per_sm: int) -> int:
    """The grid: PER_SM CTAs on every SM of the device."""
    return per_sm * int(torch.cuda.get_device_properties(device).multi_processor_count)


def prepare_streamk(weight, config: dict) -> dict:
    """Packs the weights; allocates the workspace (two FP32 BW x BT slots per CTA) and the per-tile counters (zero,
    sized for the most token tiles BT serves; every launch leaves them zero). Same-state calls must stay on one
    stream: they share the workspace."""
    N, K, module = _checked("streamk_wgmma", weight, config, streamk_wgmma_shape_check)
    mi, nwg, bt = int(config["MI"]), int(config["NWG"]), int(config["BT"])
    bw = 64 * mi * nwg
    ctas = streamk_ctas(weight.device, int(config["PER_SM"]))
    max_token_tiles = -(-wgmma_token_range(bt)[1] // bt)
    return {"w": pack(weight.contiguous(), bw), "N": N, "K": K, "module": module,
            "ws": torch.empty(2 * ctas * bw * bt, device=weight.device, dtype=torch.float32),
            "counts": torch.zeros(N // bw * max_token_tiles, device=weight.device, dtype=torch.int32),
            "args": (mi, nwg, bt, ctas, int(config["STAGES"]))}


def run_streamk(state: dict, x):
    x = _tokens("streamk_wgmma", state, x)
    return state["module"].streamk_wgmma(x, state["w"], state["ws"], state["counts"], state["N"], *state["args"])


STREAMK_WGMMA = impl(prepare_streamk, run_streamk)
