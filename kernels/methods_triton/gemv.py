"""Method records of the GEMVs on the CUDA cores (kernels/triton/gemv_wide.py, gemv_rows.py): whole weight rows
per program, K unrolled; `gemv_rows` also serves FP32 weights. Shape checks and tuning spaces only; what each config
row measured is in docs/kernels/gemv_wide.md and gemv_rows.md.
"""
from __future__ import annotations

from kernels.method import BF16, BF16_X_FP32_W, Method, config_table

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
# Short rows for muse's o (K=1024, N=8192) first, then long rows for K = 4096-8192 (docs/kernels/gemv_wide.md).
GEMV_WIDE_CONFIGS = config_table(GEMV_WIDE_KEYS, [
    (4, 1024, 4, ".cg"),    # default: 4 rows x 1024 bf16 = 8 KB per program, 2048 programs at N=8192
    (8, 1024, 4, ".cg"),
    (8, 1024, 4, ""),
    (4, 1024, 8, ".cg"),
    (16, 1024, 8, ".cg"),
    (16, 512, 4, ".cg"),    # 16 rows x 512 per step: 64 accumulator values per thread
    (32, 512, 8, ".cg"),
    (4, 1024, 2, ".cg"),
    # Long rows in router_gemv_fp32's geometry: 16-32 KB per program in one unrolled step, 16 warps, evict_first.
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

