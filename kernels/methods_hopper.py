"""The Hopper-specific methods written in Gluon (kernels/gluon/): Method records, guards and tuning spaces only.

Torch-free: implementations are named by "module:attr" strings and imported on first use.
"""
from __future__ import annotations

from kernels.method import BF16, SMEM_BYTES, Method, config_table

# skinny_ws's workspace is [N, 256] FP32 (token-contiguous, allocated at prepare): the scored M reach 256.
SKINNY_MAX_M = 256
SKINNY_KEYS = ("BM", "BN", "BK", "SPLIT", "STAGES", "STREAMK", "num_warps")


def skinny_smem_bytes(config: dict) -> int:
    """Shared memory of one skinny_ws block: STAGES ring slots of a [BN, BK] weight tile and a [BM, BK] token tile
    (bf16), the epilogue's layout-conversion scratch (the [BN, BM] FP32 accumulator) and the 2 x STAGES mbarriers
    (the compiler's figure for the compile test's configs)."""
    ring = config["STAGES"] * (config["BN"] + config["BM"]) * config["BK"] * 2
    return ring + config["BN"] * config["BM"] * 4 + 16 * config["STAGES"] + 64


def _skinny_guard(M, N, K, config):
    if not 1 <= M <= SKINNY_MAX_M:
        return f"skinny_ws serves 1 <= M <= {SKINNY_MAX_M} (its workspace columns)"
    if N % config["BN"] or K % config["BK"]:
        return (f"skinny_ws needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, "
                f"BK={config['BK']})")
    if K // config["BK"] < config["SPLIT"]:
        return f"skinny_ws needs K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']}): a K step per run"
    if config["STREAMK"] and config["SPLIT"] != 1:
        return f"skinny_ws: STREAMK={config['STREAMK']} sizes the grid itself; SPLIT must be 1, got {config['SPLIT']}"
    need = skinny_smem_bytes(config)
    if need > SMEM_BYTES:
        return f"skinny_ws: {need} B of shared memory (ring + epilogue scratch) exceed {SMEM_BYTES} B"
    return None


# qkv_gate (N=2304, K=8192): 36 weight tiles of 64 rows x 128 K steps of 64. The write-up's 039 picks (three K
# runs of 42/43/43 steps per tile, eight stages, 16- and 32-token tiles: 108 programs) head the table; then grids
# that fill the 132 SMs: 11 runs per tile (396 programs, 3 per SM) and stream-K (1-3 programs per SM, equal K-step
# runs across tiles); then one token tile of 64/128/256 for M up to 256 (the weight read once).
SKINNY_CONFIGS = config_table(SKINNY_KEYS, [
    (16, 64, 64, 3, 8, 0, 4),      # default: the write-up's 039 configuration at M = 9..16
    (32, 64, 64, 3, 8, 0, 4),      # the write-up's 039 configuration at M = 17..32
    (16, 64, 64, 11, 6, 0, 4),     # 396 programs, 3 per SM by shared memory
    (32, 64, 64, 11, 5, 0, 4),
    (16, 64, 128, 1, 8, 1, 4),     # stream-K, one program per SM, 8 x 20 KB in flight
    (16, 64, 64, 1, 6, 3, 4),      # stream-K, three programs per SM
    (32, 64, 128, 1, 6, 1, 4),
    (32, 64, 64, 1, 6, 2, 4),
    (64, 64, 64, 1, 6, 2, 4),      # M = 33..64 (and 65..128 in two token tiles)
    (64, 64, 128, 1, 4, 1, 4),
    (128, 64, 64, 1, 4, 1, 4),     # M = 65..128: the weight read once
    (128, 64, 128, 1, 3, 1, 8),    # two consumer warpgroups side by side over the tokens
    (256, 64, 64, 1, 3, 1, 8),     # M = 129..256
])

HOPPER_METHODS: tuple[Method, ...] = (
    Method(
        name="skinny_ws",
        dtypes=(BF16,),
        impl="kernels.launch.gluon_skinny:SKINNY_WS",
        description="Gluon warp-specialized skinny GEMM (sm_90): a producer warp issues TMA loads into a STAGES-slot "
                    "mbarrier ring, the consumer warpgroup(s) run wgmma with the tokens as the MMA's N (y^T = w x^T); "
                    "split-K or stream-K runs reduced in one launch through a self-zeroing FP32 workspace",
        params={"BM": (16, 32, 64, 128, 256), "BN": (64, 128), "BK": (64, 128), "SPLIT": (1, 2, 3, 4, 6, 8, 11, 22),
                "STAGES": (2, 3, 4, 5, 6, 8, 10), "STREAMK": (0, 1, 2, 3), "num_warps": (4, 8)},
        configs=SKINNY_CONFIGS,
        guard=_skinny_guard,
    ),
)
