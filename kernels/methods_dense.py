"""The dense BF16 methods (and the baseline, which also serves the router): Method records and guards only.

Torch-free: implementations are named by "module:attr" strings and imported on first use.
"""
from __future__ import annotations

from kernels.method import TILE_KEYS, Method, config_table, smem_reason

BF16_FAMILIES = ("qkv_gate", "o", "pooler", "unpooler")
ALL_FAMILIES = (*BF16_FAMILIES, "router")

SPLITK_MAX_M = 32   # kernels/launch/splitk.py sizes the fused counters for this
PACKED_MAX_M = 64


def _gemv_guard(family, M, N, K, config):
    return None if M == 1 else "gemv serves M=1 only"


def _splitk_guard(family, M, N, K, config):
    if not 1 <= M <= SPLITK_MAX_M:
        return f"split-K serves 1 <= M <= {SPLITK_MAX_M}"
    return smem_reason(config)


def _packed_guard(family, M, N, K, config):
    if not 1 <= M <= PACKED_MAX_M:
        return f"packed serves 1 <= M <= {PACKED_MAX_M}"
    if N % config["BN"] or K % config["BK"]:
        return f"packed needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']})"
    return smem_reason(config)


GEMV_CONFIGS = config_table(("BN", "num_warps", "cache"), [
    (1, 16, ".cg"),  # the seed's 036 choice for QKV and pooler at M=1 (default)
    (1, 16, ""), (1, 8, ".cg"), (1, 32, ".cg"),
    (2, 8, ".cg"), (2, 16, ".cg"),
    # more rows per program for short K (o: K=1024, N=8192), where one row per program is too little work
    (4, 4, ".cg"), (4, 8, ".cg"), (8, 4, ".cg"), (8, 8, ".cg"), (8, 4, ""), (4, 4, ""),
])

SPLITK_CONFIGS = config_table(TILE_KEYS, [
    (16, 64, 128, 4, 4, 3),  # default
    (16, 64, 128, 8, 4, 3),
    (16, 32, 256, 4, 4, 3),
    (16, 128, 128, 8, 4, 3),
    (16, 64, 256, 2, 4, 3),
    (16, 128, 64, 16, 4, 4),
    (16, 64, 128, 1, 4, 4),  # no split: enough tiles when N is wide and K short (o)
    (16, 32, 128, 2, 4, 4),
    (32, 64, 128, 4, 8, 3),
    (32, 64, 128, 8, 8, 3),
    (32, 128, 128, 4, 8, 3),
    (32, 32, 256, 4, 4, 3),
    # Narrow N tiles x deep splits: at N=1024 (unpooler M<=8) BN=64 x SPLIT=4 gives only 64 programs for 132 SMs;
    # BN=32 x SPLIT=16 gives 512 (H200 r2 run: verify 1/unpooler at 46% SOL with the configs above).
    (16, 32, 128, 16, 4, 3),
    (16, 32, 256, 8, 4, 3),
    (16, 64, 128, 16, 4, 3),
    (16, 32, 64, 16, 4, 4),
])

PACKED_CONFIGS = config_table(TILE_KEYS, [
    (16, 32, 512, 2, 4, 3),  # the seed's pooler tiles: 32 output features x K tiles of 512 (default)
    (16, 32, 512, 1, 4, 3),
    (16, 32, 512, 4, 4, 3),
    (16, 32, 512, 8, 4, 2),
    (16, 32, 256, 2, 4, 4),
    (16, 64, 256, 2, 4, 3),
    (16, 64, 512, 1, 8, 2),
    (32, 32, 512, 2, 4, 2),
    (32, 32, 256, 2, 8, 3),
    (32, 64, 256, 1, 8, 3),
])

_TILE_PARAMS = {"BM": (16, 32), "BN": (32, 64, 128), "BK": (64, 128, 256, 512), "SPLIT": (1, 2, 4, 8, 16),
                "num_warps": (4, 8), "num_stages": (2, 3, 4)}

DENSE_METHODS: tuple[Method, ...] = (
    Method(
        name="torch_linear",
        families=ALL_FAMILIES,
        impl="kernels.launch.torch_linear:TORCH_LINEAR",
        description="baseline: F.linear(x, w) (cuBLAS); router: F.linear(x.float(), w_fp32), TF32 off, FP32 out",
    ),
    Method(
        name="gemv",
        families=BF16_FAMILIES,
        impl="kernels.launch.gemv:GEMV",
        description="Triton GEMV for M=1: BN output rows per program, whole K (or a K loop), streaming weight loads",
        params={"BN": (1, 2, 4, 8), "num_warps": (4, 8, 16, 32), "cache": ("", ".cg")},
        configs=GEMV_CONFIGS,
        guard=_gemv_guard,
    ),
    Method(
        name="splitk",
        families=BF16_FAMILIES,
        impl="kernels.launch.splitk:SPLITK",
        description="Triton tiled tl.dot GEMM, K split in SPLIT chunks -> fp32 partials, then a reduce kernel (bf16)",
        params=_TILE_PARAMS,
        configs=SPLITK_CONFIGS,
        guard=_splitk_guard,
    ),
    Method(
        name="splitk_fused",
        families=BF16_FAMILIES,
        impl="kernels.launch.splitk:SPLITK_FUSED",
        description="split-K without a reduce launch: the last block to arrive at a tile (atomic counter) sums it",
        params=_TILE_PARAMS,
        configs=SPLITK_CONFIGS,
        guard=_splitk_guard,
    ),
    Method(
        name="packed",
        families=BF16_FAMILIES,
        impl="kernels.launch.packed:PACKED",
        description="weights re-laid as contiguous BN x BK tiles at prepare; Triton tl.dot kernel (+ reduce if SPLIT>1)",
        params=_TILE_PARAMS,
        configs=PACKED_CONFIGS,
        guard=_packed_guard,
    ),
    Method(
        name="mm_wt",
        families=BF16_FAMILIES,
        impl="kernels.launch.mm_orient:MM_WT",
        description="pre-transposed weights wT[K,N] (made at prepare), torch.mm(x, wT)",
    ),
    Method(
        name="mm_swapped",
        families=BF16_FAMILIES,
        impl="kernels.launch.mm_orient:MM_SWAPPED",
        description="Y^T = W X^T via torch.mm(w, x.T), returned as the .T view; F.linear when M % 8 != 0",
    ),
)
