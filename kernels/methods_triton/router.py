"""Method records of the router family: BF16 x, FP32 weights, FP32 y (muse's router, and any workload family with
those dtypes). Shape checks and tuning spaces only; what each config row measured is in docs/kernels/router_*.md.

Numerics: `router_gemv_fp32` and `router_fma_flag` read the FP32 weight directly. The `router_hilo_*` methods use
the write-up's permitted scheme, W ~ H + L with H = bf16(W), L = bf16(W - fp32(H)), BF16 products accumulated in
FP32 (H + L reproduces W to ~2^-17 relative, far inside the router's 1e-4 rel-L2 and 1e-3 sparse-probe bounds).
"""
from __future__ import annotations

from kernels.method import BF16_X_FP32_W, SMEM_BYTES, TILE_KEYS, Method, config_table, smem_reason
from kernels.methods_triton.dense import k_slices_reason, splitk_swap_shape_check
from kernels.methods_triton.gemv import accumulator_reason

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
# One-token rows: whole FP32 weight rows per program (docs/kernels/router_gemv_fp32.md).
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

# The small-M rows (BM=16, SPLIT 16-32) and the BM=64 large-M rows bracket the tune's winners; the last gives
# M = 129-256 one 128-token tile per weight tile, so each weight tile is read by one program of its K slice
# instead of M/64: 128 programs at M=256 (SPLIT=16). Why each row: docs/kernels/router_hilo_atomic_pdl.md.
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

# router_hilo_fused: grid = 256/BN x SPLIT x ceil(M/BM). In no plan (docs/kernels/router_hilo_fused.md); the
# rows stay so the tuner keeps checking.
HILO_FUSED_CONFIGS = config_table(TILE_KEYS, [
    (16, 32, 128, 16, 4, 3),   # default
    (16, 32, 64, 32, 4, 3),
    (16, 16, 128, 32, 4, 3),   # 512 programs at M <= 16
    (16, 64, 128, 16, 4, 4),
    (64, 64, 128, 8, 8, 3),
    (128, 64, 64, 8, 8, 3),    # M >= 256
])

# router_hilo_flag: grid = (SPLIT + 1) x 256/BN x ceil(M/BM). The M >= 128 rows keep the grid at 128-132
# programs (one wave of the 132 SMs); SPLIT need not divide the 64 K steps of BK=128. Why each row:
# docs/kernels/router_hilo_flag.md.
HILO_FLAG_KEYS = (*TILE_KEYS, "W_LOAD", "SWAP")
HILO_FLAG_CONFIGS = config_table(HILO_FLAG_KEYS, [
    (16, 64, 128, 32, 4, 3, "cp", 0),     # default: router_hilo_atomic_pdl's pick at M = 8..16
    (16, 64, 128, 32, 4, 3, "tma", 1),    # M = 4, 8
    (32, 64, 128, 16, 4, 4, "tma", 1),    # M = 24, 32 (68 programs)
    (64, 64, 128, 16, 8, 4, "tma", 0),    # M = 64 (68 programs)
    (64, 64, 128, 15, 8, 4, "tma", 0),    # M = 128: 8 tiles x 16 = 128 programs
    (128, 64, 128, 32, 8, 3, "tma", 0),   # M = 128: 4 tiles x 33 = 132 programs
    (64, 64, 128, 7, 8, 3, "cp", 0),      # M = 256: 16 tiles x 8 = 128 programs
    (128, 64, 128, 15, 8, 3, "tma", 0),   # M = 256: 8 tiles x 16 = 128 programs
    # The same tiles from the interleaved weight tile-packed at prepare ([2N/2BN, K/BK, 2BN, BK]): each K step one
    # contiguous block instead of 2BN runs of BK*2 bytes a weight row apart.
    (16, 32, 128, 32, 4, 4, "pack_tma", 0),
    (16, 32, 64, 32, 4, 3, "pack_tma", 1),
    (16, 32, 64, 32, 4, 3, "pack", 1),
    (32, 64, 128, 32, 4, 3, "pack_tma", 1),
    # Deeper weight streams per program at M = 8-32: 128 programs (one per SM, SPLIT + 1 = 16 or 8 per output
    # tile) with 40-64 KB of weight in flight each (4 stages of 16 KB, 2 x 32 KB steps, 5 stages of 8 KB), where the
    # rows above run 264 programs with 16 KB in flight each.
    (16, 32, 128, 15, 4, 4, "pack_tma", 1),
    (16, 32, 128, 15, 8, 4, "pack_tma", 1),
    (16, 32, 256, 15, 4, 3, "pack_tma", 1),
    (16, 16, 256, 7, 4, 4, "pack_tma", 1),
    (16, 16, 128, 7, 4, 5, "pack_tma", 1),
    (32, 32, 128, 15, 4, 4, "pack_tma", 1),
    (32, 32, 256, 15, 4, 3, "pack_tma", 1),
])

# router_hilo_swap: the splitk_swap kernel with HILO (both weight halves per K step, one accumulator); grid =
# 256/BN x SPLIT x ceil(M/BM), 132-264 programs at small M (docs/kernels/splitk_swap.md).
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
# (num_stages 3) except in the one num_stages=1 row. In no plan (docs/kernels/router_fma_flag.md). Per row: programs
# at M = 8 / 16 / 32, KiB of weight per K-slice program (the mean: uneven slices differ by one K step).
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
