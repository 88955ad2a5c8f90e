"""Method records of this repository's Triton tiled GEMMs on the tensor cores (kernels/triton/): split-K with a
reduce launch, packed weight tiles, the single-launch split-K family (splitk_atomic, _v2, _kn, splitk_swap),
stream-K, and the M=1 GEMV. BF16 x, w and y, FP32 accumulation. Shape checks and tuning spaces only; what each
config row measured is in docs/kernels/<method>.md.

Torch-free: implementations are named by "module:attr" strings (kernels/launch/) and imported on first use.
"""
from __future__ import annotations

from kernels.method import BF16, TILE_KEYS, Method, config_table, smem_reason

BF16_ONLY = (BF16,)   # BF16 x, w and y (FP32 accumulation inside)

SPLITK_MAX_M = 32   # kernels/launch/splitk.py sizes the fused counters for this
PACKED_MAX_M = 64
# Workspace rows of the single-launch methods (FP32 [MAX_M, N], allocated at prepare): the scored M reach 256;
# stream-K also serves the nearby M up to 512 (16 MB of workspace at N=8192). Above, plans use the library.
SPLITK_ATOMIC_MAX_M = 256
STREAMK_MAX_M = 512
# splitk_atomic_v2, _kn and streamk_small serve the small-M shapes (splitk_atomic lost 2-6x above M = 32,
# docs/kernels/splitk_atomic.md): their workspace holds 32 rows.
SPLITK_ATOMIC2_MAX_M = 32
# splitk_swap puts the tokens in the MMA's N dimension (BM = 16..128 per tile): its workspace is [N, 256].
SPLITK_SWAP_MAX_M = 256


def _gemv_shape_check(M, N, K, config):
    return None if M == 1 else "gemv serves M=1 only"


def _splitk_shape_check(M, N, K, config):
    if not 1 <= M <= SPLITK_MAX_M:
        return f"split-K serves 1 <= M <= {SPLITK_MAX_M}"
    return smem_reason(config)


def _packed_shape_check(M, N, K, config):
    if not 1 <= M <= PACKED_MAX_M:
        return f"packed serves 1 <= M <= {PACKED_MAX_M}"
    if N % config["BN"] or K % config["BK"]:
        return f"packed needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']})"
    return smem_reason(config)


def _tiles_reason(N, K, config, k_unit: int) -> str | None:
    """The single-launch kernels leave N and K unmasked: whole BN tiles and whole K steps of k_unit."""
    if N % config["BN"] or K % k_unit:
        return (f"needs N % BN == 0 and K % {k_unit} == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']}"
                f"{', SPLIT=' + str(config['SPLIT']) if 'SPLIT' in config else ''})")
    return None


def _splitk_atomic_shape_check(M, N, K, config):
    if not 1 <= M <= SPLITK_ATOMIC_MAX_M:
        return f"splitk_atomic serves 1 <= M <= {SPLITK_ATOMIC_MAX_M} (its workspace rows)"
    return _tiles_reason(N, K, config, config["BK"] * config["SPLIT"]) or smem_reason(config)


def k_slices_reason(N, K, config, weight_rows_per_tile: int = 1) -> str | None:
    """The split-K kernels whose K slices need not divide the K steps (kernels/triton/splitk_atomic_v2.py k_slice):
    a K step per slice, whole BN tiles and BK steps, pipelined tiles that fit in shared memory."""
    if K % config["BK"] == 0 and K // config["BK"] < config["SPLIT"]:
        return f"needs K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']}): a slice per split"
    return _tiles_reason(N, K, config, config["BK"]) or smem_reason(config, weight_rows_per_tile)


def _splitk_atomic2_shape_check(M, N, K, config):
    if not 1 <= M <= SPLITK_ATOMIC2_MAX_M:
        return f"splitk_atomic_v2/_kn serve 1 <= M <= {SPLITK_ATOMIC2_MAX_M} (their workspace rows)"
    return k_slices_reason(N, K, config)


def splitk_swap_shape_check(M, N, K, config, weight_rows_per_tile: int = 1, what: str = "splitk_swap"):
    if not 1 <= M <= SPLITK_SWAP_MAX_M:
        return f"{what} serves 1 <= M <= {SPLITK_SWAP_MAX_M} (its workspace columns)"
    return k_slices_reason(N, K, config, weight_rows_per_tile)


def _streamk_small_shape_check(M, N, K, config):
    if not 1 <= M <= SPLITK_ATOMIC2_MAX_M:
        return f"streamk_small serves 1 <= M <= {SPLITK_ATOMIC2_MAX_M} (the small-M screen)"
    return _tiles_reason(N, K, config, config["BK"]) or smem_reason(config)


def _streamk_shape_check(M, N, K, config):
    if not 1 <= M <= STREAMK_MAX_M:
        return f"streamk serves 1 <= M <= {STREAMK_MAX_M} (its workspace rows)"
    return _tiles_reason(N, K, config, config["BK"]) or smem_reason(config)


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
    # Narrow N tiles x deep splits: at N=1024 (unpooler M<=8) BN=64 x SPLIT=4 gives only 64 programs for 132 SMs,
    # BN=32 x SPLIT=16 gives 512.
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

# Single-launch split-K (kernels/triton/splitk_atomic.py): grid = N/BN x SPLIT x ceil(M/BM). Small-M rows only:
# large split tiles lose to their atomic traffic (docs/kernels/splitk_atomic.md). SPLIT=1 rows are the plain
# small-M tensor-core path (W read once, x rows on chip, M padded to BM; no workspace).
SPLITK_ATOMIC_CONFIGS = config_table(TILE_KEYS, [
    (16, 64, 64, 16, 4, 4),    # default: qkv_gate M <= 16 (576 programs of 8 K steps)
    (16, 64, 128, 8, 4, 4),    # unpooler N=1024 M <= 8 (128 programs of 4 K steps)
    (16, 32, 128, 8, 4, 4),
    (16, 32, 64, 16, 4, 4),    # unpooler N=1024: 512 programs
    (16, 64, 64, 32, 4, 4),    # qkv_gate: 1152 programs of 4 K steps
    (16, 64, 64, 16, 4, 3),
    (16, 128, 128, 4, 8, 4),   # pooler N=4096: 128 programs with 128-wide tiles
    (16, 64, 256, 4, 4, 3),
    (32, 64, 128, 8, 4, 4),    # M = 17..32 in one M tile
    (32, 64, 64, 16, 4, 4),
    (16, 64, 128, 1, 4, 4),    # no split: o (K=1024), 128 programs
    (16, 32, 128, 1, 4, 4),    # no split: o, 256 programs
])

STREAMK_KEYS = ("BM", "BN", "BK", "num_warps", "num_stages", "TMA")
# Stream-K (kernels/triton/streamk.py): one program per SM, for M = 64-512 where the tiles (e.g. 2 x 18 of
# 128 x 128 at qkv_gate M=256) are fewer than the 132 SMs. No plan takes it (docs/kernels/streamk.md); the rows
# stay in the table so the tuner keeps checking.
STREAMK_CONFIGS = config_table(STREAMK_KEYS, [
    (64, 64, 128, 4, 4, 1),    # default
    (64, 128, 64, 4, 4, 1),
    (128, 64, 64, 4, 4, 1),
    (128, 128, 64, 8, 4, 1),
])

SPLITK_ATOMIC2_KEYS = (*TILE_KEYS, "W_LOAD")
# splitk_atomic_v2 (kernels/triton/splitk_atomic_v2.py): the single-launch split-K with knobs, each row changing one
# thing against the control row (16, 64, 64, 16, 4, 4, "cg") = splitk_atomic's default. W_LOAD "tma" (bulk
# tensor copies) against pipelined pointer loads (cp.async.cg: a cache modifier or evict_first on tl.load
# compiles to the same PTX once pipelined, tests/kernels/test_compile_splitk2.py, so it is no knob); BM=32 is the
# M = 17-32 tile; SPLIT=11 and 33 make N/BN * SPLIT a multiple of the 132 SMs (qkv_gate: 36 tiles x 11 =
# 3 x 132; pooler 64 and the unpooler's N=1024 slice 16 tiles x 33 = 16 / 4 x 132) where SPLIT=16 leaves
# 576 = 4.36 x 132 programs. What each knob measured: docs/kernels/splitk_atomic_v2.md.
SPLITK_ATOMIC_V2_CONFIGS = config_table(SPLITK_ATOMIC2_KEYS, [
    (16, 64, 64, 16, 4, 4, "cg"),               # default: splitk_atomic's config in the shipped plan
    (16, 64, 64, 11, 4, 4, "cg"),               # qkv_gate: 396 programs = 3 per SM, 11-12 K steps each
    (16, 64, 64, 11, 4, 6, "cg"),               # the same with a deeper pipeline for the longer slices
    (16, 64, 64, 22, 4, 4, "cg"),               # qkv_gate: 792 programs = 6 per SM
    (16, 64, 128, 8, 4, 4, "cg"),               # the quick kernel's qkv_gate tile
    (16, 64, 64, 33, 4, 4, "cg"),               # pooler 2112 = 16 per SM, unpooler N=1024 528 = 4 per SM
    (32, 64, 64, 16, 4, 4, "cg"),               # M = 17..32 in one M tile
    (16, 64, 64, 16, 4, 4, "tma"),
    (16, 64, 64, 11, 4, 4, "tma"),
    # The weight tile-packed at prepare ([N/BN, K/BK, BN, BK], W_LOAD "pack" / "pack_tma"): every K step one
    # contiguous block; SPLIT=1 strips of 32 rows x 512 need no workspace, counter or reduce launch.
    (16, 64, 64, 11, 4, 4, "pack"),             # qkv_gate M <= 16: the shipped tiles and grid, packed
    (16, 64, 64, 11, 4, 4, "pack_tma"),
    (16, 32, 512, 1, 4, 3, "pack"),             # pooler M = 8-16: 128 programs of one 32-row strip each
    (16, 32, 512, 1, 4, 4, "pack"),
    (32, 32, 512, 1, 4, 3, "pack"),             # pooler M = 17-32
    (16, 64, 128, 1, 4, 4, "pack"),             # o (N=8192, K=1024): 128 tiles, direct store (ties F.linear)
])
# The same kernel on the weight stored [K, N] (a [BK, BN] tile is BK runs of BN contiguous elements instead of
# the transposed view of [N, K]).
SPLITK_ATOMIC_KN_CONFIGS = config_table(SPLITK_ATOMIC2_KEYS, [
    (16, 64, 64, 16, 4, 4, "cg"),               # default: as splitk_atomic_v2's default
    (16, 64, 64, 11, 4, 4, "cg"),
    (16, 64, 128, 8, 4, 4, "cg"),
])
# Stream-K (kernels/triton/streamk.py) on 16-row tiles: one program per SM over equal runs of tile K steps, so
# the 132 SMs get the same number of weight bytes at any N (the split-K grids above only divide evenly at
# chosen SPLIT). One program per SM has to keep enough weight bytes in flight alone: 16-32 KB per stage and
# 3-5 stages ahead.
STREAMK_SMALL_CONFIGS = config_table(STREAMK_KEYS, [
    (16, 64, 128, 4, 6, 0),     # default
    (16, 128, 128, 4, 4, 1),
])

# splitk_swap (kernels/triton/splitk_swap.py): the weight tile is the MMA's 64/128-row first operand and BM tokens
# its N dimension, as in the cuBLAS kernels it competes with at qkv_gate M = 16-32 (108 programs of 64 weight
# rows x 16/32 tokens plus a separate splitKreduce launch). Grids here are multiples of the 132 SMs where the
# tile counts allow: qkv_gate N=2304 = 36 x 64 = 18 x 128 (x 11 / 22 = 396 programs), pooler N=4096 and o
# N=8192 (x 33), the unpooler's N=1024 slice 16 x 64 (x 33 = 528).
SPLITK_SWAP_CONFIGS = config_table(TILE_KEYS, [
    (16, 64, 64, 11, 4, 4),     # default: qkv_gate M <= 16, 396 programs = 3 per SM, 11-12 K steps each
    (16, 64, 128, 11, 4, 4),    # the same slices in half as many, twice as large steps
    (16, 128, 64, 22, 4, 4),
    (32, 64, 64, 11, 4, 4),     # M = 17..32 in one token tile
    (32, 128, 64, 22, 4, 4),
    (64, 64, 64, 11, 4, 4),     # M = 33..64
    (16, 64, 64, 33, 4, 4),     # pooler, o, the unpooler's N=1024 slice
    (32, 64, 64, 33, 4, 4),
    (16, 128, 64, 33, 4, 3),    # pooler: 32 tiles x 33 = 1056 programs = 8 per SM
    (32, 128, 64, 33, 4, 3),
    (128, 64, 64, 11, 4, 3),    # M = 128: one token tile, x re-read from L2 by every weight tile
    (128, 128, 64, 22, 8, 3),
])

_TILE_PARAMS = {"BM": (16, 32), "BN": (32, 64, 128), "BK": (64, 128, 256, 512), "SPLIT": (1, 2, 4, 8, 16),
                "num_warps": (4, 8), "num_stages": (2, 3, 4)}

# splitk_atomic_v2 and splitk_atomic_kn: one kernel (kernels/triton/splitk_atomic_v2.py), one config space.
_SPLITK_ATOMIC2_PARAMS = {**_TILE_PARAMS, "SPLIT": (1, 2, 4, 8, 11, 16, 22, 32, 33),
                          "num_stages": (2, 3, 4, 5, 6), "num_warps": (2, 4, 8), "W_LOAD": ("cg", "tma")}
# Only splitk_atomic_v2 packs its weight ([N, K] tiles); splitk_atomic_kn's [K, N] layout is its own.
_SPLITK_ATOMIC_V2_PARAMS = {**_SPLITK_ATOMIC2_PARAMS, "W_LOAD": ("cg", "tma", "pack", "pack_tma")}

DENSE_METHODS: tuple[Method, ...] = (
    Method(
        name="gemv",
        dtypes=BF16_ONLY,
        impl="kernels.launch.gemv:GEMV",
        description="Triton GEMV for M=1: BN output rows per program, whole K (or a K loop), streaming weight loads",
        params={"BN": (1, 2, 4, 8), "num_warps": (4, 8, 16, 32), "cache": ("", ".cg")},
        configs=GEMV_CONFIGS,
        shape_check=_gemv_shape_check,
    ),
    Method(
        name="splitk",
        dtypes=BF16_ONLY,
        impl="kernels.launch.splitk:SPLITK",
        description="Triton tiled tl.dot GEMM, K split in SPLIT chunks -> fp32 partials, then a reduce kernel (bf16)",
        params=_TILE_PARAMS,
        configs=SPLITK_CONFIGS,
        shape_check=_splitk_shape_check,
    ),
    Method(
        name="splitk_fused",
        dtypes=BF16_ONLY,
        impl="kernels.launch.splitk:SPLITK_FUSED",
        description="split-K without a reduce launch: the last block to arrive at a tile (atomic counter) sums it",
        params=_TILE_PARAMS,
        configs=SPLITK_CONFIGS,
        shape_check=_splitk_shape_check,
    ),
    Method(
        name="packed",
        dtypes=BF16_ONLY,
        impl="kernels.launch.packed:PACKED",
        description="weights re-laid as contiguous BN x BK tiles at prepare; Triton tl.dot kernel (+ reduce if SPLIT>1)",
        params=_TILE_PARAMS,
        configs=PACKED_CONFIGS,
        shape_check=_packed_shape_check,
    ),
    Method(
        name="splitk_atomic",
        dtypes=BF16_ONLY,
        impl="kernels.launch.splitk_atomic:SPLITK_ATOMIC",
        description="single-launch split-K: tl.dot tiles (M padded to BM), FP32 atomic adds into a zeroed workspace, "
                    "the last split of a tile writes y and re-zeroes it (K constexpr, unmasked K loads; SPLIT=1: "
                    "direct store)",
        params={**_TILE_PARAMS, "BM": (16, 32, 64, 128), "SPLIT": (1, 2, 4, 8, 16, 32)},
        configs=SPLITK_ATOMIC_CONFIGS,
        shape_check=_splitk_atomic_shape_check,
    ),
    Method(
        name="splitk_atomic_v2",
        dtypes=BF16_ONLY,
        impl="kernels.launch.splitk_atomic_v2:SPLITK_ATOMIC_V2",
        description="splitk_atomic with knobs: weight tiles by pointer loads or TMA, from [N, K] or tile-packed at "
                    "prepare, SPLIT that need not divide the K steps (balanced grids)",
        params=_SPLITK_ATOMIC_V2_PARAMS,
        configs=SPLITK_ATOMIC_V2_CONFIGS,
        shape_check=_splitk_atomic2_shape_check,
    ),
    Method(
        name="splitk_atomic_kn",
        dtypes=BF16_ONLY,
        impl="kernels.launch.splitk_atomic_v2:SPLITK_ATOMIC_KN",
        description="splitk_atomic_v2 on the weight stored [K, N] at prepare: [BK, BN] tiles contiguous along N",
        params=_SPLITK_ATOMIC2_PARAMS,
        configs=SPLITK_ATOMIC_KN_CONFIGS,
        shape_check=_splitk_atomic2_shape_check,
    ),
    Method(
        name="splitk_swap",
        dtypes=BF16_ONLY,
        impl="kernels.launch.splitk_swap:SPLITK_SWAP",
        description="single-launch split-K with the operands swapped (y^T = w x^T): 64/128 weight rows x BM tokens "
                    "per tile on the warpgroup MMA; the self-zeroing workspace reduction of splitk_atomic_v2",
        params={**_TILE_PARAMS, "BM": (16, 32, 64, 128), "BN": (64, 128), "SPLIT": (1, 2, 4, 8, 11, 16, 22, 32, 33),
                "num_stages": (2, 3, 4, 5, 6)},
        configs=SPLITK_SWAP_CONFIGS,
        shape_check=splitk_swap_shape_check,
    ),
    Method(
        name="streamk_small",
        dtypes=BF16_ONLY,
        impl="kernels.launch.streamk:STREAMK",
        description="the streamk kernel on 16/32-row tiles for M <= 32: one program per SM, equal runs of K steps",
        params={"BM": (16, 32), "BN": (64, 128), "BK": (64, 128), "num_warps": (4, 8),
                "num_stages": (3, 4, 5, 6), "TMA": (0, 1)},
        configs=STREAMK_SMALL_CONFIGS,
        shape_check=_streamk_small_shape_check,
    ),
    Method(
        name="streamk",
        dtypes=BF16_ONLY,
        impl="kernels.launch.streamk:STREAMK",
        description="stream-K GEMM on one program per SM: equal runs of tile K steps, split tiles summed with FP32 "
                    "atomics in a workspace the finishing program converts and re-zeroes (TMA or pointer loads)",
        params={"BM": (64, 128, 256), "BN": (64, 128, 256), "BK": (64, 128), "num_warps": (4, 8),
                "num_stages": (2, 3, 4), "TMA": (0, 1)},
        configs=STREAMK_CONFIGS,
        shape_check=_streamk_shape_check,
    ),
)

