"""Methods whose kernels are this repository's Triton (kernels/triton/): Method records, shape checks and tuning
spaces only. Three sections: the BF16 tiled GEMMs (split-K, packed, single-launch split-K, stream-K) and the M=1
GEMV; the GEMVs on the CUDA cores that also serve FP32 weights (`gemv_wide`, `gemv_rows`); and the router methods --
BF16 x with FP32 weights and FP32 output (muse's router).

Torch-free: implementations are named by "module:attr" strings (kernels/launch/) and imported on first use.

Router numerics: `router_gemv_fp32` reads the FP32 weight directly. The `router_hilo_*` methods use the write-up's
permitted scheme, W ~ H + L with H = bf16(W), L = bf16(W - fp32(H)), BF16 products accumulated in FP32
(H + L reproduces W to ~2^-17 relative, far inside the router's 1e-4 rel-L2 and 1e-3 sparse-probe bounds).
"""
from __future__ import annotations

from kernels.method import BF16, BF16_X_FP32_W, SMEM_BYTES, TILE_KEYS, Method, config_table, smem_reason

BF16_ONLY = (BF16,)   # the Triton dense methods: BF16 x, w and y (FP32 accumulation inside)


# ---------------------------------------------------------------------------------- BF16 tiled GEMMs and the M=1 GEMV

SPLITK_MAX_M = 32   # kernels/launch/splitk.py sizes the fused counters for this
PACKED_MAX_M = 64
# Workspace rows of the single-launch methods (FP32 [MAX_M, N], allocated at prepare): the scored M reach 256;
# stream-K also serves the nearby M up to 512 (16 MB of workspace at N=8192). Above, plans use the library.
SPLITK_ATOMIC_MAX_M = 256
STREAMK_MAX_M = 512
# splitk_atomic_v2, _kn and streamk_small target the small-M shapes where splitk_atomic won (M = 4-16) and the
# M = 32 neighbour; above, splitk_atomic lost 2-6x
# (datasets/runs/2026-12-01_nvidia-h200_screen-single-launch-r2.json.gz), so their workspace holds 32 rows.
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
    # Narrow N tiles x deep splits: at N=1024 (unpooler M<=8) BN=64 x SPLIT=4 gives only 64 programs for 132 SMs;
    # BN=32 x SPLIT=16 gives 512 (verify 1/unpooler at 46% SOL with the configs above in the paired sweep
    # datasets/runs/2026-11-30_nvidia-h200_baseline-seed036-best-r2.json).
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

# Single-launch split-K (kernels/triton/splitk_atomic.py). Grid = N/BN x SPLIT x ceil(M/BM). Screened on the H200
# (datasets/runs/2026-12-01_nvidia-h200_screen-single-launch-r2.json.gz, cold, overhead subtracted): BM=16 with
# BK=64 x SPLIT=16 won at qkv_gate M=4-16 (12.85-13.14 us vs F.linear 13.98-14.42, vs the splitk plan entry
# 13.09-13.20) and at the unpooler's M=8, N=1024 slice (5.55 vs 6.93); it tied or lost at M=32 and lost 2-6x at
# M >= 64 (an earlier screen of 64- and 128-row tiles lost 1.3-3.7x there: the atomic traffic of large split
# tiles), so the rows are small-M shapes. SPLIT=1 rows are the plain small-M tensor-core path (W read once, x
# rows on chip, M padded to BM; no workspace): o (K=1024) tied F.linear at M=12 (6.30 vs 6.30).
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
# 128 x 128 at qkv_gate M=256) are fewer than the 132 SMs. Screened on the H200 (same run file): never faster
# than F.linear -- at best 0.93-0.95x (qkv_gate/pooler M=64), 0.42-0.77x at M=128 and 0.39-0.65x at M=256 --
# the split tiles' FP32 atomic traffic and per-segment pipeline restarts cost more than the idle SMs they fill.
# The four best rows of the first screen are kept so the tuner keeps checking; the library route stays the
# plans' choice there.
STREAMK_CONFIGS = config_table(STREAMK_KEYS, [
    (64, 64, 128, 4, 4, 1),    # default
    (64, 128, 64, 4, 4, 1),
    (128, 64, 64, 4, 4, 1),
    (128, 128, 64, 8, 4, 1),
])

SPLITK_ATOMIC2_KEYS = (*TILE_KEYS, "W_LOAD")
# Second round of the single-launch split-K (kernels/triton/splitk_atomic_v2.py), for the gap at qkv_gate M = 8-16:
# splitk_atomic measured 13.07-13.28 us there (datasets/runs/2026-12-01_nvidia-h200_tune-r4.json.gz) against a
# floor (weight bytes / measured HBM read bandwidth) of ~9.3-9.7 us. Each row changes one thing against the
# control row (16, 64, 64, 16, 4, 4, "cg") = splitk_atomic's default through the new kernel:
# PREFETCH=1 put the tile's workspace lines and counter in L2 at program start (cold mode evicts them, so the
# tail's atomics and acq_rel counter would otherwise wait on HBM; measured slower, now gone); W_LOAD "tma" (bulk
# tensor copies) against the pipelined pointer loads (cp.async.cg: a cache modifier or evict_first on tl.load
# compiles to the same PTX once pipelined, tests/kernels/test_compile_splitk2.py, so it is no knob); BM=32 is the
# M = 17-32 tile;
# SPLIT=11 and 33 make N/BN * SPLIT a multiple of the 132 SMs (qkv_gate: 36 tiles x 11 = 3 x 132; pooler 64 and
# the unpooler's N=1024 slice 16 tiles x 33 = 16 / 4 x 132) where SPLIT=16 leaves 576 = 4.36 x 132 programs;
# BK=128 x SPLIT=8 is the tile of an earlier quick kernel that measured 11.76 us at qkv_gate M=8 in another harness.
SPLITK_ATOMIC_V2_CONFIGS = config_table(SPLITK_ATOMIC2_KEYS, [
    # The first screen of these knobs (datasets/runs/2026-12-01_nvidia-h200_screen-splitk-v2.json.gz) ran every knob
    # with the L2 prefetch on, which cost 2.6-3.2 us at qkv_gate M=8-16 (15.52/16.43 us against 12.90/13.20
    # without); there the balanced SPLIT=11 (14.19/14.86) and BK=128 x SPLIT=8 (14.80/15.10) beat the prefetching
    # control by 1.3-1.6 us. So every knob was tried again without the prefetch, which stayed 1-3 us slower at
    # every shape of every later screen and tune that kept a PREFETCH=1 row; zero adds that warm the same lines
    # (`red`, PREFETCH=2, commit 6b47ca0) measured 1.3-1.8 us slower than the same tiles without (qkv_gate
    # M = 8-16 12.40-12.99 against 14.08-14.82 us, the unpooler's M=8 slice 5.60 against 7.14;
    # datasets/runs/2026-12-01_nvidia-h200_screen-bigm-warm-r26.json.gz).
    # Both are gone, and so is their PREFETCH key (kernels/plans.py drops PREFETCH=0 from old plans as they load).
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
    # contiguous block. The pooler's `packed` route (that layout, a separate reduce launch at SPLIT=2) streams its
    # weights at 95% of the probe's bandwidth under Nsight Compute, this kernel on the [N, K] layout at 69-78%
    # (datasets/runs/2026-12-01_nvidia-h200_explain-baseline-best-r17.json). Screened in
    # ..._screen-pack-r18.json.gz and ..._screen-nosplit-r19.json.gz (21 packed rows); kept are the rows that were
    # fastest somewhere. The layout alone moved qkv_gate M = 4-16 by at most 0.1-0.2 us (ties with "cg"/"tma");
    # the pooler gained up to 1.1 us from SPLIT=1 strips of 32 rows x 512 (128 programs: no workspace, no
    # counter, no reduce launch). Never fastest and dropped: SPLIT=1 tiles of 16 weight rows (144-256 programs;
    # 1.04-4.2x the fastest route at M = 1-32) and the other packed split-K tiles (BK=128/256 at SPLIT 2-11,
    # BN=128 at SPLIT=22, BM=32 at SPLIT 2-11: at best 1.5-10% behind the fastest route).
    (16, 64, 64, 11, 4, 4, "pack"),             # qkv_gate M <= 16: the shipped tiles and grid, packed
    (16, 64, 64, 11, 4, 4, "pack_tma"),
    (16, 32, 512, 1, 4, 3, "pack"),             # pooler M = 8-16: 128 programs of one 32-row strip each
    (16, 32, 512, 1, 4, 4, "pack"),
    (32, 32, 512, 1, 4, 3, "pack"),             # pooler M = 17-32: 18.99 us against mm_wt's 19.58 (nosplit screen)
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
# its N dimension. The cuBLAS kernels it competes with at qkv_gate M = 16-32 run 108 programs of 64 weight rows x
# 16/32 tokens plus a separate splitKreduce launch (2.0-2.1 us under Nsight Compute, datasets/runs/
# 2026-12-01_nvidia-h200_explain-baseline-best-r5.json). Grids here are multiples of the 132 SMs where the tile
# counts allow: qkv_gate N=2304 = 36 x 64 = 18 x 128 (x 11 / 22 = 396 programs), pooler N=4096 and o N=8192 (x 33),
# the unpooler's N=1024 slice 16 x 64 (x 33 = 528).
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


# --------------------------------------------------------------------- GEMVs on the CUDA cores (BF16 or FP32 weights)

GEMV_MAX_ELEMS_PER_THREAD = 64  # fp32 accumulator values per thread before the wide GEMVs start to spill
# gemv_wide serves any BF16 shape at M=1 its shape check admits (it was written and measured for muse's o, K=1024). It
# unrolls its K steps at compile time; the bound is muse's largest K (8192) -- longer unrolls were never compiled
# or measured, so a K above it is refused by the shape check, whatever the family.
GEMV_WIDE_MAX_K = 8192
# ... and BN whole rows per program: BN*K above 131072 elements (256 KB of BF16 per program) spilled registers when
# compiled for sm_90 (BN=32 at K=8192; tests/kernels/test_compile_sm90.py compiles every admitted config).
GEMV_WIDE_MAX_ROW_ELEMS = 131072
# gemv_rows re-reads x from L2 in every program and multiplies on the CUDA cores (M*N*K FP32 FMAs): a few-token
# method. Above 32 tokens the FMAs alone (2304*8192*32 at qkv_gate) outlast the weight stream.
GEMV_ROWS_MAX_M = 32


def accumulator_reason(what: str, config) -> str | None:
    """BN x BK fp32 accumulator spread over num_warps x 32 threads: None if it fits the per-thread budget."""
    threads = 32 * config["num_warps"]
    if config["BN"] * config["BK"] > GEMV_MAX_ELEMS_PER_THREAD * threads:
        return (f"{what}: BN*BK accumulator too large for the warps (would spill): BN={config['BN']} "
                f"BK={config['BK']} num_warps={config['num_warps']} -> {config['BN'] * config['BK'] / threads:g} > "
                f"{GEMV_MAX_ELEMS_PER_THREAD} values per thread")
    return None


def _gemv_rows_shape_check(M, N, K, config):
    if not 1 <= M <= GEMV_ROWS_MAX_M:
        return f"gemv_rows serves 1 <= M <= {GEMV_ROWS_MAX_M}"
    if K % config["BK"]:
        return f"gemv_rows needs K % BK == 0 (K={K}, BK={config['BK']})"
    if K > GEMV_WIDE_MAX_K:
        return f"gemv_rows unrolls K: K={K} > {GEMV_WIDE_MAX_K}"
    threads = 32 * config["num_warps"]
    product = config["BM"] * config["BN"] * config["BK"]
    if product > GEMV_MAX_ELEMS_PER_THREAD * threads:
        return (f"gemv_rows: BM*BN*BK product too large for the warps (would spill): BM={config['BM']} "
                f"BN={config['BN']} BK={config['BK']} num_warps={config['num_warps']} -> {product / threads:g} > "
                f"{GEMV_MAX_ELEMS_PER_THREAD} values per thread")
    return None


def _gemv_wide_shape_check(M, N, K, config):
    if M != 1:
        return "gemv_wide serves M=1 only"
    if N % config["BN"] or K % config["BK"]:
        return f"gemv_wide needs N % BN == 0 and K % BK == 0 (N={N}, K={K}, BN={config['BN']}, BK={config['BK']})"
    if K > GEMV_WIDE_MAX_K:
        return f"gemv_wide unrolls K: K={K} > {GEMV_WIDE_MAX_K}"
    if config["BN"] * K > GEMV_WIDE_MAX_ROW_ELEMS:
        return (f"gemv_wide unrolls BN whole rows: BN*K = {config['BN'] * K} > {GEMV_WIDE_MAX_ROW_ELEMS} "
                f"(BN={config['BN']}, K={K}) would spill")
    return accumulator_reason("gemv_wide", config)


# gemv_rows: grid = N/BN x ceil(M/BM); each program streams BN whole weight rows (all K chunks unrolled) and
# multiplies them by BM tokens. Rows aim at the few-token shapes where the tensor-core split-K routes are
# latency-bound: the router (N=256: BN=2 -> 128 programs) and the unpooler's N=1024 slice (BN=8 -> 128). The
# first four rows are the router's (FP32 weights, evict_first loads), the others the BF16 families' (".cg").
GEMV_ROWS_KEYS = ("BM", "BN", "BK", "num_warps", "cache")
GEMV_ROWS_CONFIGS = config_table(GEMV_ROWS_KEYS, [
    (8, 2, 1024, 16, ""),      # default: router M <= 8, 128 programs of 2 FP32 rows (64 KB)
    (8, 4, 512, 16, ""),       # router: 64 programs of 4 rows, half the x re-reads
    (16, 2, 512, 16, ""),      # router M = 9..16
    (16, 1, 512, 16, ""),      # router M = 9..16, 256 programs of one row
    (8, 8, 512, 16, ".cg"),    # unpooler N=1024 slice M <= 8: 128 programs of 8 BF16 rows (64 KB)
    (8, 4, 1024, 16, ".cg"),   # the same in 256 programs
    (4, 8, 1024, 16, ".cg"),   # M <= 4
    (8, 16, 256, 16, ".cg"),   # qkv_gate M <= 8: 144 programs
])

GEMV_WIDE_KEYS = ("BN", "BK", "num_warps", "cache")
# Measured (same run): BN=4 BK=1024 4 warps .cg 5.34 us vs torch_linear 6.14 us at o M=1; BN >= 16 lost.
GEMV_WIDE_CONFIGS = config_table(GEMV_WIDE_KEYS, [
    (4, 1024, 4, ".cg"),    # default: 4 rows x 1024 bf16 = 8 KB per program, 2048 programs at N=8192
    (8, 1024, 4, ".cg"),
    (8, 1024, 4, ""),
    (4, 1024, 8, ".cg"),
    (16, 1024, 8, ".cg"),
    (16, 512, 4, ".cg"),    # 16 rows x 512 per step: 64 accumulator values per thread
    (32, 512, 8, ".cg"),
    (4, 1024, 2, ".cg"),
    # Long rows in router_gemv_fp32's geometry (16-32 KB per program in one unrolled step, 16 warps, evict_first;
    # it reads the router's 8.4 MB in 3.1-3.2 us). Screened at M=1 (datasets/runs/
    # 2026-12-01_nvidia-h200_screen-gemv-long-rows-r15.json.gz): qkv_gate 9.66, pooler 15.95, unpooler 3.31 us against
    # 10.51, 16.91, 3.79 for the plan's picks then (gemv_wide BN=8 BK=1024, gemv, gemv).
    (4, 4096, 16, ""),      # K=4096 (unpooler M=1): 256 programs
    (2, 4096, 16, ""),      # K=4096: 512 programs of 16 KB
    (2, 8192, 16, ""),      # K=8192 (qkv_gate, pooler M=1)
    (1, 8192, 16, ""),      # K=8192: one row per program
])


GEMV_METHODS: tuple[Method, ...] = (
    Method(
        name="gemv_rows", dtypes=(BF16, BF16_X_FP32_W), impl="kernels.launch.gemv_rows:GEMV_ROWS",
        description="multi-token GEMV on the CUDA cores: BN whole weight rows per program (K unrolled, every "
                    "weight load in flight at once) times BM tokens; BF16 or FP32 weights, one launch, no split",
        params={"BM": (2, 4, 8, 16, 32), "BN": (1, 2, 4, 8, 16, 32), "BK": (128, 256, 512, 1024),
                "num_warps": (4, 8, 16), "cache": ("", ".cg")},
        configs=GEMV_ROWS_CONFIGS, shape_check=_gemv_rows_shape_check),
    Method(
        name="gemv_wide", dtypes=(BF16,), impl="kernels.launch.gemv_wide:GEMV_WIDE",
        description="one-token GEMV: BN whole rows per program held in registers, K unrolled (short rows for "
                    "the o-projection, long rows in router_gemv_fp32's geometry for K = 4096-8192)",
        params={"BN": (1, 2, 4, 8, 16, 32), "BK": (256, 512, 1024, 4096, 8192), "num_warps": (2, 4, 8, 16),
                "cache": ("", ".cg")},
        configs=GEMV_WIDE_CONFIGS, shape_check=_gemv_wide_shape_check),
)


# ------------------------------------------------------------------------------- router: BF16 x, FP32 weights, FP32 y

# The router methods read FP32 weights (directly, or as a hi/lo BF16 pair made at prepare) and write FP32 output
# from BF16 activations: muse's router family, and any workload family with those dtypes.
FP32_WEIGHTS = (BF16_X_FP32_W,)
# Workspace rows of router_hilo_fused (FP32 [MAX_M, 256] = 4 MB at prepare): serves every M a plan dispatches
# to a Triton route at the router's N.
HILO_FUSED_MAX_M = 4096
# router_hilo_flag keeps one token count per output tile on its own 128-byte line (512 KB at BM=16, N/BN=16).
HILO_FLAG_MAX_M = 4096
# router_fma_flag does MT x BN x K FP32 FMAs per weight tile on the CUDA cores: a method for small M (its token
# counts are sized for this many tokens).
FMA_FLAG_MAX_M = 64
# router_fma_flag's [MT, BN, BK] FP32 accumulator, per thread (the brief's bound, as accumulator_reason's).
FMA_FLAG_MAX_ACC_PER_THREAD = 128


# ------------------------------------------------------------------------------------------ router: shape checks

def _gemv_fp32_shape_check(M, N, K, config):
    if M != 1:
        return "router_gemv_fp32 serves M=1 only"
    if K % config["BK"]:
        return f"router_gemv_fp32 needs K % BK == 0 (K={K}, BK={config['BK']})"
    return accumulator_reason("router_gemv_fp32", config)


def _tile_shape_check(weight_rows_per_tile):
    """Shape check for the hi/lo tensor-core methods: K slices must tile exactly; pipelined tiles must fit in smem."""
    def shape_check(M, N, K, config):
        if M < 1:
            return "M must be >= 1"
        if K % (config["BK"] * config["SPLIT"]):
            return f"needs K % (BK*SPLIT) == 0 (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})"
        return smem_reason(config, weight_rows_per_tile)
    return shape_check


def _hilo_fused_shape_check(M, N, K, config):
    if not 1 <= M <= HILO_FUSED_MAX_M:
        return f"router_hilo_fused serves 1 <= M <= {HILO_FUSED_MAX_M} (its workspace rows)"
    if N % config["BN"]:
        return f"router_hilo_fused needs N % BN == 0 (N={N}, BN={config['BN']})"
    return _tile_shape_check(2)(M, N, K, config)


def _hilo_flag_shape_check(M, N, K, config):
    if not 1 <= M <= HILO_FLAG_MAX_M:
        return f"router_hilo_flag serves 1 <= M <= {HILO_FLAG_MAX_M} (its token counts)"
    return k_slices_reason(N, K, config, 2)


def _fma_flag_shape_check(M, N, K, config):
    if not 1 <= M <= FMA_FLAG_MAX_M:
        return f"router_fma_flag serves 1 <= M <= {FMA_FLAG_MAX_M} (a small-M method; its token counts)"
    if N % config["BN"]:
        return f"router_fma_flag needs N % BN == 0 (N={N}, BN={config['BN']})"
    if K % config["BK"]:
        return f"router_fma_flag needs K % BK == 0 (K={K}, BK={config['BK']})"
    if K // config["BK"] < config["SPLIT"]:
        return f"router_fma_flag needs K / BK >= SPLIT (K={K}, BK={config['BK']}, SPLIT={config['SPLIT']})"
    threads = 32 * config["num_warps"]
    acc = config["MT"] * config["BN"] * config["BK"] / threads
    if acc > FMA_FLAG_MAX_ACC_PER_THREAD:
        return (f"router_fma_flag: MT*BN*BK accumulator too large for the warps (would spill): MT={config['MT']} "
                f"BN={config['BN']} BK={config['BK']} num_warps={config['num_warps']} -> {acc:g} > "
                f"{FMA_FLAG_MAX_ACC_PER_THREAD} values per thread")
    # num_stages > 1: the K loop is software-pipelined through shared memory (cp.async), one FP32 weight tile and
    # one BF16 x tile per stage.
    if config["num_stages"] > 1:
        smem = config["num_stages"] * (config["BN"] * 4 + config["MT"] * 2) * config["BK"]
        if smem > SMEM_BYTES:
            return f"router_fma_flag: {smem} bytes of pipelined tiles exceed {SMEM_BYTES} bytes of shared memory"
    return None


def _hilo_swap_shape_check(M, N, K, config):
    return splitk_swap_shape_check(M, N, K, config, 2, "router_hilo_swap")


# ------------------------------------------------------------------------------------------ router: configs

GEMV_FP32_KEYS = ("BN", "BK", "num_warps", "cache")
# Measured (same run): (1, 8192, 16, "") 3.58 us, the ".cg" twin 3.78 us, torch_linear 10.03 us at M=1.
GEMV_FP32_CONFIGS = config_table(GEMV_FP32_KEYS, [
    (1, 8192, 16, ""),      # default: one row (32 KB) per program, 16 warps, evict_first weight loads
    (1, 8192, 16, ".cg"),   # L2-only loads (036's one-token style)
    (1, 4096, 8, ".cg"),
    (2, 4096, 16, ".cg"),
    (1, 2048, 4, ".cg"),
])

TILE_PARAMS = {"BM": (16, 32, 64, 128), "BN": (16, 32, 64, 128), "BK": (32, 64, 128, 256),
               "SPLIT": (1, 2, 4, 8, 16, 32, 64), "num_warps": (4, 8), "num_stages": (2, 3, 4, 5)}

# grid = ceil(M/BM) x (256/BN) x SPLIT; small-M rows want >= ~128 programs, large-M rows bigger token tiles.
HILO_SPLITK_CONFIGS = config_table(TILE_KEYS, [
    (16, 64, 64, 16, 4, 3),    # default: the seed's 002 small-M setting (BK=64, SPLIT=16)
    (16, 32, 128, 16, 4, 3),
    (16, 64, 64, 32, 4, 3),
    (32, 64, 64, 16, 4, 3),
    (64, 64, 64, 8, 4, 3),
    (64, 64, 128, 4, 8, 3),
    (128, 64, 64, 4, 8, 3),
])

# Measured on the H200 (2026-11-30, a tune of router and o, cold; its log was not kept as a run file): SPLIT=32 with
# BM=16 won at M = 8..32 (~5.4-6.2 us), BM=64 BN=64 BK=128 SPLIT=8 8 warps at M = 128, 256 (~8.1-8.8 us); BM=128
# and SPLIT=4 were 2x slower. The two rows after them extend around those winners. The last gives M = 129-256 one
# 128-token tile per weight tile, so each weight tile is read by one program of its K slice instead of M/64 (the
# BM=128 row above ran 16-32 programs there): 128 programs at M=256 (SPLIT=16). Under Nsight Compute the BM=64
# picks kept neither DRAM (30% of peak) nor the SMs (15-25%) busy at M = 128-256
# (datasets/runs/2026-12-01_nvidia-h200_explain-baseline-best-r25.json). Screened with the PDL launch
# (datasets/runs/2026-12-01_nvidia-h200_screen-bigm-warm-r26.json.gz): fastest at M=200 (8.29 against 8.48 us for
# the BM=64 SPLIT=8 pick), 8.43 against 8.35 at M=256, 7.97 against 6.72 at M=128; its SPLIT=32 twin (2 K steps
# per program at M=128) was never fastest (7.55 us there) and is not kept.
HILO_ATOMIC_CONFIGS = config_table(TILE_KEYS, [
    (16, 64, 64, 16, 4, 3),    # default (hi/lo interleaved: the weight tile is 2*BN rows)
    (16, 32, 128, 16, 4, 3),
    (16, 32, 64, 32, 4, 3),
    (16, 64, 128, 32, 4, 3),
    (32, 64, 64, 16, 4, 3),
    (64, 64, 64, 8, 4, 3),
    (64, 64, 128, 8, 8, 3),
    (128, 64, 64, 4, 8, 3),
    (32, 64, 128, 16, 4, 3),
    (64, 64, 128, 16, 8, 3),
    (128, 64, 128, 16, 8, 3),
])

# The PDL variant runs the same kernel: the same space minus the config that lost by 2x at every M.
HILO_ATOMIC_PDL_CONFIGS = tuple(c for c in HILO_ATOMIC_CONFIGS if (c["BM"], c["SPLIT"]) != (128, 4))

# router_hilo_fused: grid = 256/BN x SPLIT x ceil(M/BM). Screened on the H200
# (datasets/runs/2026-12-01_nvidia-h200_screen-single-launch-r2.json.gz) against router_hilo_atomic_pdl (zero-fill +
# PDL + atomics into y): 5.58 vs 5.20 us at M=16, 9.84 vs 6.72 at M=128, 10.58 vs 8.26 at M=256 -- the last
# arriver's extra L2 round trips (release/acquire on the tile counter, then the exchange) cost more than the
# zero-fill launch that PDL overlaps. The six best rows of the first screen are kept for the tuner.
HILO_FUSED_CONFIGS = config_table(TILE_KEYS, [
    (16, 32, 128, 16, 4, 3),   # default
    (16, 32, 64, 32, 4, 3),
    (16, 16, 128, 32, 4, 3),   # 512 programs at M <= 16
    (16, 64, 128, 16, 4, 4),
    (64, 64, 128, 8, 8, 3),
    (128, 64, 64, 8, 8, 3),    # M >= 256
])

# router_hilo_flag: grid = (SPLIT + 1) x 256/BN x ceil(M/BM). Screened on the H200
# (datasets/runs/2026-12-01_nvidia-h200_screen-router-flag-r11.json.gz, against router_hilo_atomic_pdl, the same
# split-K behind a zero-fill launch): 0.3-0.8 us faster at M = 4..64 (4.94 vs 5.34 us at M=16, 5.44 vs 6.08 at
# M=32), slower at M >= 128 where its grids were 136-144 programs: one more wave than the 132 SMs (7.58 vs 5.76 us
# for the same tiles at M=128 and M=64). The M >= 128 rows below keep the grid at 128-132 programs; SPLIT need not
# divide the 64 K steps of BK=128.
HILO_FLAG_KEYS = (*TILE_KEYS, "W_LOAD", "SWAP")
HILO_FLAG_CONFIGS = config_table(HILO_FLAG_KEYS, [
    (16, 64, 128, 32, 4, 3, "cp", 0),     # default: router_hilo_atomic_pdl's pick at M = 8..16
    (16, 64, 128, 32, 4, 3, "tma", 1),    # M = 4, 8: 4.90, 4.99 us
    (32, 64, 128, 16, 4, 4, "tma", 1),    # M = 24, 32: 5.41, 5.44 us (68 programs)
    (64, 64, 128, 16, 8, 4, "tma", 0),    # M = 64: 5.76 us (68 programs)
    (64, 64, 128, 15, 8, 4, "tma", 0),    # M = 128: 8 tiles x 16 = 128 programs
    (128, 64, 128, 32, 8, 3, "tma", 0),   # M = 128: 4 tiles x 33 = 132 programs
    (64, 64, 128, 7, 8, 3, "cp", 0),      # M = 256: 16 tiles x 8 = 128 programs
    (128, 64, 128, 15, 8, 3, "tma", 0),   # M = 256: 8 tiles x 16 = 128 programs
    # The same tiles from the interleaved weight tile-packed at prepare ([2N/2BN, K/BK, 2BN, BK]): each K step one
    # contiguous block instead of 2BN runs of BK*2 bytes a weight row apart. This kernel streamed the router's
    # 8.7 MB at 58% of the probe's bandwidth under Nsight Compute at M = 8-32
    # (datasets/runs/2026-12-01_nvidia-h200_explain-baseline-best-r17.json). Screen
    # ..._screen-pack-r18.json.gz: packed rows fastest at M = 4-32, 0.1-0.4 us ahead of the same tiles unpacked
    # (M=16: 4.53 against 4.77 us for the fastest unpacked row); at M = 128-256 the packed rows gained
    # 0.1-0.25 us and still lost 1.0-1.3 us to router_hilo_atomic_pdl, so they are not kept, nor the three rows
    # that were never fastest. The unpacked twins of the kept rows (16/32/128 SWAP 0, 16/32/64 SWAP 1, 32/64/128
    # SPLIT=32 SWAP 1, each tied or behind its packed row at every M <= 32) and the TMA twin of the M=256 "cp" row
    # (9.65 against 9.07 us) were dropped to keep the table at 12 rows.
    (16, 32, 128, 32, 4, 4, "pack_tma", 0),
    (16, 32, 64, 32, 4, 3, "pack_tma", 1),
    (16, 32, 64, 32, 4, 3, "pack", 1),
    (32, 64, 128, 32, 4, 3, "pack_tma", 1),
    # Deeper weight streams per program at M = 8-32. The rows above run 264 programs of 2 K steps (16 KB of weight
    # in flight per program, two programs per SM: 32 KB per SM), while router_gemv_fp32, at 92% of the floor for
    # M = 1, has 64 KB of loads in flight per SM. These run 128 programs (one per SM, SPLIT + 1 = 16 or 8 per
    # output tile) with 40-64 KB of weight in flight each: 4 stages of 16 KB, 2 x 32 KB steps, 5 stages of 8 KB.
    # Screened (datasets/runs/2026-12-03_nvidia-h200_screen-router-deep-deep.json.gz): 0.3-0.4 us behind the
    # 264-program rows at M <= 16; the BM=32 BK=128 row fastest at M = 24-32 (4.93, 5.04 us against 5.04, 5.34).
    (16, 32, 128, 15, 4, 4, "pack_tma", 1),
    (16, 32, 128, 15, 8, 4, "pack_tma", 1),
    (16, 32, 256, 15, 4, 3, "pack_tma", 1),
    (16, 16, 256, 7, 4, 4, "pack_tma", 1),
    (16, 16, 128, 7, 4, 5, "pack_tma", 1),
    (32, 32, 128, 15, 4, 4, "pack_tma", 1),
    (32, 32, 256, 15, 4, 3, "pack_tma", 1),
])

# router_hilo_swap: the splitk_swap kernel with HILO (both weight halves per K step, one accumulator); grid =
# 256/BN x SPLIT x ceil(M/BM). router_hilo_atomic_pdl, today's pick at M >= 8, runs 256 programs of 4 K steps
# at 7-10% SM throughput under Nsight Compute (datasets/runs/2026-12-01_nvidia-h200_explain-baseline-best-r5.json).
HILO_SWAP_CONFIGS = config_table(TILE_KEYS, [
    (16, 64, 64, 33, 4, 4),    # default: 4 tiles x 33 = 132 programs, 3-4 K steps of H and L each
    (16, 64, 64, 16, 4, 4),    # 64 programs of 8 steps
    (16, 64, 64, 66, 4, 3),    # 264 programs of ~2 steps
    (32, 64, 64, 33, 4, 4),
    (64, 64, 64, 33, 4, 4),
    (128, 64, 64, 33, 4, 3),
    (256, 64, 64, 33, 8, 2),
    (128, 128, 64, 66, 8, 2),
])

# router_fma_flag: grid = (SPLIT + 1) x 256/BN x ceil(M/MT); a K-slice program streams BN*K/SPLIT*4 bytes of
# the FP32 weight (32 KiB * BN/SPLIT at K=8192) and does MT*BN*K/SPLIT FMAs. Every row holds
# MT*BN*BK/(32*num_warps) = 128 accumulator values per thread; the K loop is pipelined through shared memory
# (num_stages 3) except in the one num_stages=1 row. Screened on the H200
# (datasets/runs/2026-12-03_nvidia-h200_screen-router-deep-deep.json.gz): 1.3-1.6x router_hilo_flag's pick at
# M = 1-16, 2.3-3.6x at M = 24-64 (fastest row 6.05 us at M=1, 7.20 at M=16, 12.30 at M=32); in no plan. Per row: programs at
# M = 8 / 16 / 32, KiB of weight per K-slice program (the mean: uneven slices differ by one K step).
FMA_FLAG_KEYS = ("MT", "BN", "BK", "SPLIT", "num_warps", "num_stages")
FMA_FLAG_CONFIGS = config_table(FMA_FLAG_KEYS, [
    (8, 16, 128, 15, 4, 3),    # default: 256 / 512 / 1024 programs, 34 KiB
    (8, 16, 128, 7, 4, 3),     # 128 / 256 / 512, 73 KiB
    (8, 16, 256, 15, 8, 3),    # 256 / 512 / 1024, 34 KiB
    (8, 8, 256, 7, 4, 3),      # 256 / 512 / 1024, 37 KiB
    (8, 8, 256, 3, 4, 3),      # 128 / 256 / 512, 85 KiB
    (8, 4, 512, 3, 4, 1),      # 256 / 512 / 1024, 43 KiB; plain loads (no pipeline), no layout change in the loop
    (16, 8, 128, 7, 4, 3),     # 256 / 256 / 512, 37 KiB
    (16, 8, 128, 3, 4, 3),     # 128 / 128 / 256, 85 KiB
    (16, 8, 256, 3, 8, 3),     # 128 / 128 / 256, 85 KiB
    (16, 4, 256, 3, 4, 3),     # 256 / 256 / 512, 43 KiB
    (32, 4, 128, 3, 4, 3),     # 256 / 256 / 256, 43 KiB
    (32, 4, 256, 1, 8, 3),     # 128 / 128 / 128, 128 KiB
])


ROUTER_METHODS: tuple[Method, ...] = (
    Method(
        name="router_gemv_fp32", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_GEMV_FP32",
        description="one-token GEMV reading the FP32 router weight directly (BN rows per program, K unrolled)",
        params={"BN": (1, 2, 4), "BK": (1024, 2048, 4096, 8192), "num_warps": (4, 8, 16),
                "cache": ("", ".cg")},
        configs=GEMV_FP32_CONFIGS, shape_check=_gemv_fp32_shape_check),
    Method(
        name="router_hilo_splitk", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_HILO_SPLITK",
        description="hi/lo BF16 split-K: FP32 partials per K slice + a sum kernel (seed 002)",
        params=TILE_PARAMS, configs=HILO_SPLITK_CONFIGS, shape_check=_tile_shape_check(2)),
    Method(
        name="router_hilo_atomic", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_HILO_ATOMIC",
        description="hi/lo rows interleaved, split-K with FP32 atomic adds into a zero-filled output (seed 030)",
        params=TILE_PARAMS, configs=HILO_ATOMIC_CONFIGS, shape_check=_tile_shape_check(2)),
    Method(
        name="router_hilo_atomic_pdl", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_HILO_ATOMIC_PDL",
        description="router_hilo_atomic after a Triton zero-fill, with programmatic dependent launch "
                    "(the GEMM's loads and products overlap the fill; gdc_wait before the atomics; seed 039)",
        params=TILE_PARAMS, configs=HILO_ATOMIC_PDL_CONFIGS, shape_check=_tile_shape_check(2)),
    Method(
        name="router_hilo_packed_mm", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_HILO_PACKED_MM",
        description="one cuBLAS product x @ [H; L]^T with FP32 output (torch.mm out_dtype), then y = left + right "
                    "(seed 009)",
        params={}, configs=({},), shape_check=None),
    Method(
        name="router_hilo_fused", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_HILO_FUSED",
        description="hi/lo rows interleaved, single-launch split-K: FP32 atomic adds into a zeroed workspace, the "
                    "last split of a tile copies it to y and re-zeroes it (no zero-fill launch)",
        params=TILE_PARAMS, configs=HILO_FUSED_CONFIGS, shape_check=_hilo_fused_shape_check),
    Method(
        name="router_hilo_flag", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_HILO_FLAG",
        description="hi/lo rows interleaved, single-launch split-K: per output tile one program zeroes y and "
                    "hands out SPLIT tokens, the K-slice programs add into y with FP32 atomics after taking one "
                    "(no zero-fill launch, no last-arriver pass)",
        params={**TILE_PARAMS, "SPLIT": (1, 2, 4, 7, 8, 15, 16, 31, 32, 64),
                "W_LOAD": ("cp", "tma", "pack", "pack_tma"), "SWAP": (0, 1)},
        configs=HILO_FLAG_CONFIGS,
        shape_check=_hilo_flag_shape_check),
    Method(
        name="router_hilo_swap", dtypes=FP32_WEIGHTS, impl="kernels.launch.splitk_swap:ROUTER_HILO_SWAP",
        description="hi/lo split-K with the operands swapped (y^T = H x^T + L x^T on the warpgroup MMA), one "
                    "launch: the self-zeroing workspace reduction of splitk_swap",
        params={**TILE_PARAMS, "BM": (16, 32, 64, 128, 256), "BN": (64, 128), "SPLIT": (1, 2, 4, 8, 11, 16, 22, 32,
                                                                                       33, 66)},
        configs=HILO_SWAP_CONFIGS, shape_check=_hilo_swap_shape_check),
    Method(
        name="router_fma_flag", dtypes=FP32_WEIGHTS, impl="kernels.launch.router:ROUTER_FMA_FLAG",
        description="small-M direct FP32 split-K on the CUDA cores: each weight element read once and used for "
                    "the MT tokens of its tile by FP32 FMAs; router_hilo_flag's zeroing program and token counts",
        # No 16 warps: 512 threads leave 128 registers per thread, and a trial sm_90 compile of a 128-value
        # accumulator at 16 warps spilled ~2.8 KB.
        params={"MT": (1, 2, 4, 8, 16, 32), "BN": (1, 2, 4, 8, 16), "BK": (64, 128, 256, 512, 1024),
                "SPLIT": (1, 2, 3, 4, 7, 8, 15, 16, 31, 32), "num_warps": (4, 8), "num_stages": (1, 2, 3, 4)},
        configs=FMA_FLAG_CONFIGS, shape_check=_fma_flag_shape_check),
)


TRITON_METHODS: tuple[Method, ...] = (*DENSE_METHODS, *GEMV_METHODS, *ROUTER_METHODS)
