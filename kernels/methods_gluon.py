"""Methods whose kernels are this repository's Gluon (kernels/gluon/), Hopper-specific: Method records, shape
checks and tuning spaces only.

Torch-free: implementations are named by "module:attr" strings and imported on first use.
"""
from __future__ import annotations

from kernels import device_limits
from kernels.method import BF16, BF16_X_FP32_W, SMEM_BYTES, Method, config_table

# skinny_ws's workspace is [N, 256] FP32 (token-contiguous, allocated at prepare): the scored M reach 256.
SKINNY_MAX_M = 256
SKINNY_KEYS = ("BM", "BN", "BK", "SPLIT", "STAGES", "STREAMK", "PACK", "num_warps")


def skinny_smem_bytes(config: dict, weight_tiles: int = 1) -> int:
    """Shared memory of one skinny_ws block: STAGES ring slots of weight_tiles [BN, BK] weight tiles (2: the
    router's hi/lo pair) and a [BM, BK] token tile (bf16), the epilogue's layout-conversion scratch (the [BN, BM]
    FP32 accumulator) and the 2 x STAGES mbarriers (the compiler's figure for the compile test's configs)."""
    ring = config["STAGES"] * (weight_tiles * config["BN"] + config["BM"]) * config["BK"] * 2
    return ring + config["BN"] * config["BM"] * 4 + 16 * config["STAGES"] + 64


def skinny_shape_check(M, N, K, config, weight_tiles: int = 1, what: str = "skinny_ws"):
    if not 1 <= M <= SKINNY_MAX_M:
        return f"{what} serves 1 <= M <= {SKINNY_MAX_M} (its workspace columns)"
    if N % config["BN"] or K % config["BK"]:
        return f"{what} needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']})"
    if K // config["BK"] < config["SPLIT"]:
        return f"{what} needs K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']}): a K step per run"
    if config["STREAMK"] and config["SPLIT"] != 1:
        return f"{what}: STREAMK={config['STREAMK']} sizes the grid itself; SPLIT must be 1, got {config['SPLIT']}"
    need = skinny_smem_bytes(config, weight_tiles)
    if need > SMEM_BYTES:
        return f"{what}: {need} B of shared memory (ring + epilogue scratch) exceed {SMEM_BYTES} B"
    return None


def _hilo_shape_check(M, N, K, config):
    return skinny_shape_check(M, N, K, config, 2, "router_hilo_ws")


# qkv_gate (N=2304, K=8192): 36 weight tiles of 64 rows (18 of 128, 9 of 256) x 128 K steps of 64. The write-up's
# 039 picks (three K runs of 42/43/43 steps per tile, eight stages, 16- and 32-token tiles: 108 programs) head the
# table; then the same on tile-packed weights (PACK=1: one contiguous 8 KB block per TMA box instead of 64 rows of
# 128 B); grids that fill the 132 SMs: 11 runs per 64-row tile (396 programs, 3 per SM), 7 per 128-row tile (126),
# stream-K (1-3 programs per SM, equal K-step runs across tiles); then 128/256-row tiles for M = 33..256, where the
# token tile is re-read from L2 once per weight tile (the first screen, datasets/runs/
# 2026-12-02_nvidia-h200_screen-skinny-ws.json.gz: 64-row tiles at M = 128 moved 113 MB through L2 in 24 us).
SKINNY_CONFIGS = config_table(SKINNY_KEYS, [
    (16, 64, 64, 3, 8, 0, 0, 4),      # default: the write-up's 039 configuration at M = 9..16
    (32, 64, 64, 3, 8, 0, 0, 4),      # the write-up's 039 configuration at M = 17..32
    (16, 64, 64, 3, 8, 0, 1, 4),
    (32, 64, 64, 3, 8, 0, 1, 4),
    # deeper rings on the 108-program grid, one program per SM (cuBLAS's kernels here hold 180-225 KB of shared
    # memory per block: datasets/runs/2026-12-02_nvidia-h200_explain-skinny-ws.json)
    (16, 64, 64, 3, 16, 0, 1, 4),
    (16, 64, 64, 3, 20, 0, 1, 4),
    (16, 64, 128, 3, 8, 0, 1, 4),
    (32, 64, 64, 3, 16, 0, 1, 4),
    (32, 64, 128, 3, 8, 0, 1, 4),
    (16, 64, 64, 11, 6, 0, 1, 4),     # 396 programs, 3 per SM by shared memory
    (16, 64, 64, 1, 16, 1, 1, 4),     # stream-K, one program per SM: equal K-step runs across tiles
    (16, 64, 64, 1, 6, 3, 1, 4),      # stream-K, three programs per SM
    (16, 128, 64, 7, 8, 0, 1, 4),     # 128 weight rows (two m64 MMAs per K step), 126 programs
    (16, 128, 64, 1, 8, 1, 1, 4),
    (32, 128, 64, 1, 6, 1, 1, 4),
    (64, 128, 64, 1, 5, 1, 1, 8),     # M = 33..256: two consumer warpgroups of 64 weight rows
    (128, 128, 64, 1, 4, 1, 1, 8),    # (a 256-token tile of 128 weight rows spills: 128 accumulator
                                      # registers per thread)
])

# The router (N=256, K=8192, FP32 weight as its bf16 hi/lo pair: 2 x 4 MB): 4 weight tiles of 64 rows x 128 K
# steps. Short runs fill the SMs: 32 runs per tile (128 programs of 4 K steps), stream-K over 132; one token tile
# up to M = 128 (its x is re-read by only 4 weight tiles).
HILO_WS_CONFIGS = config_table(SKINNY_KEYS, [
    (16, 64, 64, 32, 4, 0, 1, 4),     # default
    (16, 64, 64, 1, 4, 1, 1, 4),
    (32, 64, 64, 32, 4, 0, 1, 4),
    (32, 64, 64, 1, 4, 1, 1, 4),
    (64, 64, 64, 32, 4, 0, 1, 4),
    (128, 64, 64, 32, 3, 0, 1, 4),
    (128, 64, 64, 1, 3, 1, 1, 4),
])

SKINNY_PARAMS = {"BM": (16, 32, 64, 128, 256), "BN": (64, 128, 256), "BK": (64, 128),
                 "SPLIT": (1, 2, 3, 4, 6, 7, 8, 11, 14, 16, 22, 32), "STAGES": (2, 3, 4, 5, 6, 8, 10, 12, 16, 20),
                 "STREAMK": (0, 1, 2, 3), "PACK": (0, 1), "num_warps": (4, 8)}

# skinny_ws_fixup: the same pipeline with SPLIT runs per output tile, the partials stored into workspace slots and
# summed by the tile's own runs (no data atomics). Every run of a tile waits for the others, so the grid must be
# resident at once: one block per SM by shared memory, so at most one program per SM of the device this process runs
# on (kernels.device_limits, read from the device; without one the launcher checks, asking the device itself).
FIXUP_KEYS = ("BM", "BN", "BK", "SPLIT", "STAGES", "PACK", "num_warps")


def fixup_smem_bytes(config: dict, weight_tiles: int = 1) -> int:
    """Shared memory of one skinny_ws_fixup block: the ring and its 2 x STAGES mbarriers (no epilogue scratch: the
    partial is stored from the accumulator's own layout)."""
    ring = config["STAGES"] * (weight_tiles * config["BN"] + config["BM"]) * config["BK"] * 2
    return ring + 16 * config["STAGES"] + 64


def fixup_programs(M: int, N: int, config: dict) -> int:
    return -(-M // config["BM"]) * (N // config["BN"]) * config["SPLIT"]


def fixup_shape_check(M, N, K, config, weight_tiles: int = 1, what: str = "skinny_ws_fixup"):
    if not 1 <= M <= SKINNY_MAX_M:
        return f"{what} serves 1 <= M <= {SKINNY_MAX_M} (its workspace slots)"
    if N % config["BN"] or K % config["BK"]:
        return f"{what} needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']})"
    if K // config["BK"] < config["SPLIT"]:
        return f"{what} needs K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']}): a K step per run"
    need = fixup_smem_bytes(config, weight_tiles)
    if need > SMEM_BYTES:
        return f"{what}: {need} B of shared memory (ring + barriers) exceed {SMEM_BYTES} B"
    grid = fixup_programs(M, N, config)
    sms = device_limits.sm_count()
    if sms is not None and grid > sms:
        return (f"{what}: {grid} programs at M={M} (ceil(M/BM) * N/BN * SPLIT) exceed one wave of {sms} SMs; "
                f"the runs of a tile wait for each other, so all must be resident")
    return None


# Sized for M = 128-256 (every scored family at verify 16 and 32): 128-token tiles of 128 weight rows (two consumer
# warpgroups, m64n128 each) so a token tile is re-read by N/128 weight tiles only, SPLIT runs per tile to fill the
# SMs in one wave: qkv_gate 18 tiles x 7 = 126 programs at M=128, pooler 32 x 4, o and unpooler 64 x 2; at M=256
# two token tiles (qkv_gate x 3, pooler x 2, o and unpooler x 1) or one 256-token tile (m64n256, 128 accumulator
# registers per thread). Screened on the H200 (datasets/runs/2026-12-02_nvidia-h200_screen-skinny-ws-fixup.json.gz):
# behind the library at every M = 128/256 shape, so in no plan (docs/kernels/skinny_ws.md says what bounds it).
FIXUP_CONFIGS = config_table(FIXUP_KEYS, [
    (128, 128, 64, 7, 6, 1, 8),       # default: qkv_gate M = 128
    (128, 128, 128, 7, 3, 1, 8),
    (128, 128, 64, 4, 6, 1, 8),       # pooler M = 128
    (128, 128, 64, 3, 6, 1, 8),       # qkv_gate M = 256
    (128, 128, 64, 2, 6, 1, 8),       # o, unpooler M = 128; pooler M = 256
    (128, 128, 64, 1, 6, 1, 8),       # o, unpooler M = 256
    (256, 128, 64, 7, 4, 1, 8),       # qkv_gate M = 256, one token tile
    (128, 64, 64, 3, 8, 1, 4),        # one warpgroup, 108 programs at qkv_gate M = 128
    (128, 256, 64, 14, 4, 1, 8),      # 256 weight rows: qkv_gate M = 128, 9 tiles x 14
    (128, 256, 64, 8, 4, 1, 8),       # pooler M = 128
    (128, 256, 64, 7, 4, 1, 8),       # qkv_gate M = 256
    (128, 256, 64, 4, 4, 1, 8),       # o, unpooler M = 128; pooler M = 256
    (128, 256, 64, 2, 4, 1, 8),       # o, unpooler M = 256
])

def _hilo_fixup_shape_check(M, N, K, config):
    return fixup_shape_check(M, N, K, config, 2, "router_hilo_ws_fixup")


# The router (N=256, K=8192, its hi/lo pair: 2 x 4 MB) at M = 16-256: 4 tiles of 64 weight rows, runs of 2-4 K steps
# (SPLIT 32-64) so 128-132 programs fill the SMs; one 128- or 256-token tile reads each weight tile once. Screened
# (datasets/runs/2026-12-02_nvidia-h200_screen-router-hilo-ws-fixup.json.gz): behind best at every router M.
HILO_FIXUP_CONFIGS = config_table(FIXUP_KEYS, [
    (128, 64, 64, 32, 4, 1, 4),       # default: M = 128, 128 programs of 4 K steps
    (128, 64, 64, 33, 4, 1, 4),       # 132 programs
    (128, 64, 128, 32, 2, 1, 4),      # 128 programs of 2 K steps of 128
    (128, 64, 64, 16, 4, 1, 4),       # M = 256: two token tiles x 4 x 16
    (256, 64, 64, 32, 3, 1, 4),       # M = 256: one token tile, m64n256
    (256, 64, 64, 33, 3, 1, 4),
    (32, 64, 64, 32, 4, 1, 4),        # M = 17-32
])

GLUON_METHODS: tuple[Method, ...] = (
    Method(
        name="skinny_ws",
        dtypes=(BF16,),
        impl="kernels.launch.gluon_skinny:SKINNY_WS",
        description="Gluon warp-specialized skinny GEMM (sm_90): a producer warp issues TMA loads into a STAGES-slot "
                    "mbarrier ring, the consumer warpgroup(s) run wgmma with the tokens as the MMA's N (y^T = w x^T); "
                    "split-K or stream-K runs reduced in one launch through a self-zeroing FP32 workspace",
        params=SKINNY_PARAMS,
        configs=SKINNY_CONFIGS,
        shape_check=skinny_shape_check,
    ),
    Method(
        name="router_hilo_ws",
        dtypes=(BF16_X_FP32_W,),
        impl="kernels.launch.gluon_skinny:ROUTER_HILO_WS",
        description="skinny_ws on the router's hi/lo pair (H = bf16(W), L = bf16(W - H) at prepare): each ring slot "
                    "holds both tiles of a K step, both products go into one FP32 accumulator, FP32 y; one launch",
        params=SKINNY_PARAMS,
        configs=HILO_WS_CONFIGS,
        shape_check=_hilo_shape_check,
    ),
    Method(
        name="skinny_ws_fixup",
        dtypes=(BF16,),
        impl="kernels.launch.gluon_skinny:SKINNY_WS_FIXUP",
        description="skinny_ws's TMA ring and warp-specialized wgmma with SPLIT runs per output tile; each run "
                    "stores its FP32 partial into its own workspace slot, waits for the tile's other runs (one "
                    "wave: all resident) and sums its share of the tile's chunks into y; no data atomics",
        params={k: SKINNY_PARAMS[k] for k in FIXUP_KEYS},
        configs=FIXUP_CONFIGS,
        shape_check=fixup_shape_check,
    ),
    Method(
        name="router_hilo_ws_fixup",
        dtypes=(BF16_X_FP32_W,),
        impl="kernels.launch.gluon_skinny:ROUTER_HILO_WS_FIXUP",
        description="skinny_ws_fixup on the router's hi/lo pair (H = bf16(W), L = bf16(W - H) at prepare): both "
                    "tiles of a K step in one ring slot, both products into one FP32 accumulator; partials summed "
                    "by the tile's own runs, FP32 y",
        params={k: SKINNY_PARAMS[k] for k in FIXUP_KEYS} | {"SPLIT": (*SKINNY_PARAMS["SPLIT"], 33, 64)},
        configs=HILO_FIXUP_CONFIGS,
        shape_check=_hilo_fixup_shape_check,
    ),
)
