"""Methods whose kernels are this repository's CUDA C++ (kernels/cuda/): `cluster_splitk` (split-K reduced through
cluster shared memory) and its variants, `cluster_wgmma` (TMA + wgmma, the token tile multicast across a cluster),
`streamk_wgmma`, and their router twins `router_hilo_wgmma` and `router_hilo_cluster`: Method records, shape checks
and tuning spaces only.

Torch-free: implementations are named by "module:attr" strings and imported on first use. They need a GPU host (nvcc
or a cached build); their shape checks check shapes only, so plans that use them still load and validate on a CPU
host, and prepare() says in one line what is missing on a host that cannot run them.
"""
from __future__ import annotations

from datasets.hardware import SMEM_PER_BLOCK_BYTES, SMEM_PER_SM_BYTES, SMEM_RESERVED_PER_BLOCK_BYTES
from kernels.method import BF16, BF16_X_FP32_W, Method, config_table

BF16_ONLY = (BF16,)

# ------------------------------------------------------------------------------------------ cluster_splitk

# The (RW, KW, NT, R, U) instantiations compiled in kernels/cuda/cluster_splitk.cu (its launch() switch; a test
# checks the two agree): RW x KW warps per block, R 16-row groups per warp (sharing its token fragments), so
# BN = 16 * R * RW weight rows and 8 * NT tokens per tile; U 32-wide K steps per register stage. BF16 for
# cluster_splitk, HILO (two weight parts per step) for router_hilo_cluster.
CLUSTER_COMPILED = ((1, 4, 1, 1, 4), (2, 4, 1, 1, 4), (1, 8, 1, 1, 4), (2, 8, 1, 1, 4),
                    (1, 4, 2, 2, 2), (2, 4, 2, 2, 2), (1, 8, 2, 2, 2), (2, 8, 2, 2, 2),
                    (1, 4, 4, 2, 1), (2, 4, 4, 2, 1), (1, 8, 4, 2, 1), (2, 8, 4, 2, 1),
                    # 3-4 row groups per warp at 16-32 tokens: a token fragment feeds 3-4 weight fragments (one
                    # block of 128 threads, or 64: 164-234 registers, no spills; at 256 threads the 128-register
                    # cap of two blocks per SM spills them)
                    (1, 4, 2, 3, 2), (1, 4, 2, 4, 2), (1, 4, 4, 3, 1), (1, 4, 4, 4, 1), (1, 2, 4, 4, 1))
CLUSTER_XS_COMPILED = ((4, 1, 2, 1, 4), (8, 1, 2, 1, 4), (4, 1, 4, 1, 4), (8, 1, 4, 1, 4), (4, 1, 4, 2, 2),
                      (8, 1, 2, 2, 2))   # cluster_splitk_xs: KW = 1, the token chunk staged in shared memory
# cluster_splitk_async: (RW, KW, NT, R, D) with D the depth of each lane's cp.async ring (any number of K steps)
CLUSTER_RING_COMPILED = ((1, 8, 1, 1, 8), (1, 4, 1, 1, 8), (1, 4, 1, 2, 16), (1, 4, 2, 2, 8), (1, 8, 2, 1, 8),
                         (1, 4, 2, 1, 8), (1, 4, 4, 2, 8), (1, 4, 4, 1, 8), (1, 8, 4, 1, 4))
CLUSTER_HILO_COMPILED = ((1, 4, 1, 1, 2), (1, 8, 1, 1, 2), (1, 4, 2, 1, 2), (1, 8, 2, 1, 2), (1, 4, 4, 1, 1),
                         (1, 8, 4, 1, 1))
CLUSTER_STEP = 32           # K per MMA step pair: 4 lanes x 8 BF16
CLUSTER_MAX_M = 64          # the token tiles (grid y) reach any M; the method targets skinny products
CLUSTER_SIZES = (1, 2, 4, 8)   # blocks per cluster (1: a plain launch; 8 is the portable maximum on sm_90)


def cluster_nt(M: int) -> int:
    """The token tile (n8 MMA columns) a skinny M uses: the smallest of 1, 2, 4 covering it (4 above 16)."""
    return 1 if M <= 8 else 2 if M <= 16 else 4


def _cluster_unroll(compiled, config) -> int | None:
    for rw, kw, nt, r, u in compiled:
        if (rw, kw, nt, r) == (config["RW"], config["KW"], config["NT"], config["R"]):
            return u
    return None


def _cluster_shape_check_for(name: str, compiled, ring: bool = False):
    def shape_check(M, N, K, config):
        if not 1 <= M <= CLUSTER_MAX_M:
            return f"{name} serves 1 <= M <= {CLUSTER_MAX_M}"
        if config["NT"] != cluster_nt(M):
            return f"{name} at M={M} uses NT={cluster_nt(M)} (token tile {8 * cluster_nt(M)}), not {config['NT']}"
        u = _cluster_unroll(compiled, config)
        if u is None:
            return (f"{name} has no compiled instance RW={config['RW']} KW={config['KW']} NT={config['NT']} "
                    f"R={config['R']}")
        u = 1 if ring else u   # a lane ring takes any number of K steps
        bn, step = 16 * config["RW"] * config["R"], config["S"] * config["KW"] * CLUSTER_STEP * u
        if N % bn or K % step:
            return (f"{name} needs N % {bn} == 0 and K % {step} == 0 (S * KW * {CLUSTER_STEP} * U, U={u}); "
                    f"N={N}, K={K}")
        return None
    return shape_check


_cluster_shape_check = _cluster_shape_check_for("cluster_splitk", CLUSTER_COMPILED)
_router_cluster_shape_check = _cluster_shape_check_for("router_hilo_cluster", CLUSTER_HILO_COMPILED)
_xs_cluster_shape_check = _cluster_shape_check_for("cluster_splitk_xs", CLUSTER_XS_COMPILED)
_ring_cluster_shape_check = _cluster_shape_check_for("cluster_splitk_async", CLUSTER_RING_COMPILED, ring=True)

def _cluster_configs(compiled) -> tuple[dict, ...]:
    """Every compiled (RW, KW, NT, R) instance at every cluster size S."""
    return config_table(("RW", "KW", "NT", "R", "S"), [(rw, kw, nt, r, s) for rw, kw, nt, r, _ in compiled
                                                       for s in CLUSTER_SIZES])


CLUSTER_CONFIGS = _cluster_configs(CLUSTER_COMPILED)
XS_CLUSTER_CONFIGS = _cluster_configs(CLUSTER_XS_COMPILED)
RING_CLUSTER_CONFIGS = _cluster_configs(CLUSTER_RING_COMPILED)
ROUTER_CLUSTER_CONFIGS = _cluster_configs(CLUSTER_HILO_COMPILED)

# ------------------------------------------------------------------------------------------ cluster_wgmma

# The (MI, NWG, BT) instances compiled in kernels/cuda/cluster_wgmma.cu (PROJLAB_WGMMA_CASES; a test checks the
# two agree): NWG consumer warpgroups each issue MI wgmma m64nBTk16 per 16-wide K step, so one CTA owns
# BW = 64 * MI * NWG weight rows and BT tokens.
WGMMA_COMPILED = ((1, 2, 16), (1, 2, 32), (1, 2, 64), (1, 2, 128), (1, 2, 256), (2, 2, 128), (1, 1, 16),
                  (1, 1, 32), (1, 1, 64), (1, 1, 128), (1, 1, 256))
WGMMA_BK = 64                  # K per atom (one 128-byte swizzled row of BF16); a ring stage holds KA atoms
WGMMA_ATOMS = (1, 2, 4)        # KA: K atoms per ring stage
WGMMA_MAX_STAGES = 32          # the kernel's mbarrier slots
WGMMA_SMEM_BYTES = SMEM_PER_BLOCK_BYTES  # the most shared memory one block may opt into (datasets.hardware)
WGMMA_CLUSTER_MAX = 16         # CTAs per cluster: 8 is portable, 16 the non-portable maximum on H100/H200
# (CN, CK): CN weight tiles share one multicast token tile, CK CTAs split K
# (at most 8 CTAs: the H200 holds 7 clusters of 16 at once, 112 CTAs, and 15 of 8, 120;
# docs/kernels/cluster_wgmma.md)
WGMMA_CLUSTERS = ((1, 1), (1, 2), (1, 3), (1, 4), (1, 6), (2, 1), (2, 2), (2, 3), (2, 4), (3, 1), (3, 2), (4, 1),
                  (4, 2))


def wgmma_smem_bytes(MI: int, NWG: int, BT: int, stages: int, KA: int = 1) -> int:
    """The kernel's dynamic shared memory (kernels/cuda/cluster_wgmma.cu smem_bytes): alignment slack, the
    mbarriers, then the larger of the ring (STAGES stages of KA atoms) and the FP32 partial tile that reuses it."""
    bw = 64 * MI * NWG
    return 1024 + 1024 + max(stages * KA * (bw + BT) * WGMMA_BK * 2, bw * (BT + 4) * 4)


def wgmma_max_stages(MI: int, NWG: int, BT: int, cap: int = 8, KA: int = 1, per_sm: int = 1) -> int:
    """The most ring stages (at most `cap`, at least 2) that let `per_sm` CTAs share one SM's shared memory (each
    CTA also takes 1 KB the driver reserves)."""
    limit = WGMMA_SMEM_BYTES if per_sm == 1 else WGMMA_SMEM_BYTES // per_sm - SMEM_RESERVED_PER_BLOCK_BYTES
    stages = cap
    while stages > 2 and wgmma_smem_bytes(MI, NWG, BT, stages, KA) > limit:
        stages -= 1
    return stages


def wgmma_token_range(BT: int) -> tuple[int, int]:
    """The token counts a BT-token tile serves: more than half a tile, at most two tiles."""
    return BT // 2 + 1, 2 * BT


def _wgmma_reason(name: str, compiled, atoms, M: int, rows: int, rows_name: str, K: int, config) -> str | None:
    """Why the cluster kernel cannot run `config` at M tokens, `rows` weight rows (named `rows_name` in the
    message) and K, or None."""
    mi, nwg, bt, cn, ck, stages, ka = (config[k] for k in ("MI", "NWG", "BT", "CN", "CK", "STAGES", "KA"))
    if (mi, nwg, bt) not in compiled:
        return f"{name} has no compiled instance MI={mi} NWG={nwg} BT={bt}"
    if ka not in atoms:
        return f"{name} holds {', '.join(map(str, atoms))} K atoms per ring stage, not KA={ka}"
    low, high = wgmma_token_range(bt)
    if not low <= M <= high:
        return f"{name}: BT={bt} serves M from {low} to {high}, not M={M}"
    bw = 64 * mi * nwg
    if rows % (bw * cn):
        return f"{name} needs {rows_name} % (BW * CN) == 0 (BW={bw}, CN={cn}, {rows_name}={rows})"
    if K % (WGMMA_BK * ka) or K // (WGMMA_BK * ka) < ck:
        return (f"{name} needs K % (64 * KA) == 0 and K / (64 * KA) >= CK: whole stages of KA 64-wide atoms "
                f"for each of the CK ranks (K={K}, KA={ka}, CK={ck})")
    if bt % (8 * cn):
        return f"{name} multicasts BT / CN token rows per CTA, a multiple of 8 (BT={bt}, CN={cn})"
    if cn * ck > WGMMA_CLUSTER_MAX:
        return f"{name}: a cluster holds at most {WGMMA_CLUSTER_MAX} CTAs (CN * CK = {cn * ck})"
    if not 2 <= stages <= WGMMA_MAX_STAGES:
        return f"{name} needs 2 <= STAGES <= {WGMMA_MAX_STAGES} (STAGES={stages})"
    smem = wgmma_smem_bytes(mi, nwg, bt, stages, ka)
    if smem > WGMMA_SMEM_BYTES:
        return (f"{name} needs {smem} bytes of shared memory at STAGES={stages} KA={ka} (the limit is "
                f"{WGMMA_SMEM_BYTES})")
    return None


def wgmma_shape_check(M, N, K, config):
    return _wgmma_reason("cluster_wgmma", WGMMA_COMPILED, WGMMA_ATOMS, M, N, "N", K, config)


# Deep rings: token tiles of at most 64 leave room for more than 8 stages (up to 22 at BT=16); unicast clusters
# (CN = 1) only. Within 1 % of the 8-stage configs where screened (docs/kernels/cluster_wgmma.md).
WGMMA_DEEP_MAX_BT = 64
WGMMA_DEEP_CK = (1, 2, 3, 4, 6)
# Wide stages: KA = 2 or 4 atoms per stage (one mbarrier cycle per 2 or 4 weight boxes) at the most stages that fit,
# at most 8. A bulk-copy ring's rate is set by stages per second per CTA, not by bytes in flight
# (tests/benchmarks/bench_tma_ring.py), so a stage of one 8 KB weight box caps the kernel below the HBM rate.
# Unicast, K split 1 to 7 (7 x 18 tiles of 128 rows fill 126 SMs). What they gained: docs/kernels/cluster_wgmma.md.
WGMMA_WIDE_CK = (1, 2, 3, 4, 6, 7)
# Two CTAs per SM: at N = 2304 the 36 weight tiles of 64 rows fill 108 or 144 SMs with a uniform K split, never
# 132, and a CTA with a 32-40 KB stage holds the SM's shared memory alone. Wide stages on rings short enough that two
# CTAs share an SM (one consumer warpgroup: 256 threads of about 90 registers each), K split 4-8 ways: 144-288 CTAs
# of the one-warpgroup token tiles up to 64, resident at once (docs/kernels/cluster_wgmma.md).
WGMMA_FILL_INSTANCES = ((1, 1, 16), (1, 1, 32), (1, 1, 64))
WGMMA_FILL_CK = (4, 6, 8)
WGMMA_CONFIGS = config_table(("MI", "NWG", "BT", "CN", "CK", "STAGES", "KA"),
                             [(mi, nwg, bt, cn, ck, wgmma_max_stages(mi, nwg, bt), 1)
                              for mi, nwg, bt in WGMMA_COMPILED for cn, ck in WGMMA_CLUSTERS
                              if bt % (8 * cn) == 0]
                             + [(mi, nwg, bt, 1, ck, wgmma_max_stages(mi, nwg, bt, cap=WGMMA_MAX_STAGES), 1)
                                for mi, nwg, bt in WGMMA_COMPILED if bt <= WGMMA_DEEP_MAX_BT
                                for ck in WGMMA_DEEP_CK]
                             + [(mi, nwg, bt, 1, ck, wgmma_max_stages(mi, nwg, bt, KA=ka), ka)
                                for ka in WGMMA_ATOMS[1:] for mi, nwg, bt in WGMMA_COMPILED
                                if wgmma_smem_bytes(mi, nwg, bt, 2, ka) <= WGMMA_SMEM_BYTES
                                for ck in WGMMA_WIDE_CK]
                             + [(mi, nwg, bt, 1, ck, wgmma_max_stages(mi, nwg, bt, KA=ka, per_sm=2), ka)
                                for ka in WGMMA_ATOMS[1:] for mi, nwg, bt in WGMMA_FILL_INSTANCES
                                if wgmma_smem_bytes(mi, nwg, bt, 2, ka) <= WGMMA_SMEM_BYTES // 2 - SMEM_RESERVED_PER_BLOCK_BYTES
                                for ck in WGMMA_FILL_CK])

# ------------------------------------------------------------------------------------------ router_hilo_wgmma

# cluster_wgmma's kernel for the router (BF16 x, FP32 weights and y): the FP32 weights split at prepare into
# H = bf16(W) and L = bf16(W - H) on interleaved weight rows (2N of them: row 2j = H[j], row 2j+1 = L[j]), both
# products in the one FP32 accumulator tile, each (H, L) row pair added in the epilogue's DSMEM sum: FP32 y [M, N].
# The whole K of an output tile is summed inside one cluster (no atomics, no zero-fill launch), so the grid is
# (2N / BW) x CK x ceil(M / BT) CTAs in clusters of CN x CK; the router's N = 256 gives 8 weight tiles of 64 rows
# or 4 of 128, and 112-128 CTAs need clusters of 7-16 along K. Instances (kernels/cuda/cluster_wgmma.cu
# PROJLAB_WGMMA_HILO_CASES; a test checks the two agree) for token tiles of 32-256, one or two atoms a stage.
# The GPU holds 7 clusters of 14-16 at once, so 64-CTA grids in clusters of 8 are the fastest of these
# (docs/kernels/cluster_wgmma.md).
WGMMA_HILO_COMPILED = ((1, 1, 32), (1, 1, 64), (1, 1, 128), (1, 1, 256), (1, 2, 64), (1, 2, 128))
WGMMA_HILO_ATOMS = (1, 2)
# (CN, CK): K split 4-16 ways, and the token tile multicast over two weight tiles at K splits of 4-8.
ROUTER_WGMMA_CLUSTERS = ((1, 4), (1, 7), (1, 8), (1, 14), (1, 16), (2, 4), (2, 7), (2, 8))


def router_wgmma_shape_check(M, N, K, config):
    return _wgmma_reason("router_hilo_wgmma", WGMMA_HILO_COMPILED, WGMMA_HILO_ATOMS, M, 2 * N, "2N", K, config)


# One atom a stage, and two where one atom's boxes hold less than 16 KB (64 weight rows + 32 tokens: 12 KB; a TMA
# ring streams stages per second, not bytes, docs/kernels/cluster_wgmma.md); the most stages that fit, at most 8.
ROUTER_WGMMA_CONFIGS = config_table(("MI", "NWG", "BT", "CN", "CK", "STAGES", "KA"),
                                    [(mi, nwg, bt, cn, ck, wgmma_max_stages(mi, nwg, bt, KA=ka), ka)
                                     for mi, nwg, bt in WGMMA_HILO_COMPILED
                                     for ka in WGMMA_HILO_ATOMS if ka == 1 or (64 * mi * nwg + bt) * 128 < 16384
                                     for cn, ck in ROUTER_WGMMA_CLUSTERS if bt % (8 * cn) == 0])

# ------------------------------------------------------------------------------------------ streamk_wgmma

# The same compiled (MI, NWG, BT) instances on one CTA per SM (kernels/cuda/cluster_wgmma.cu streamk_wgmma_kernel):
# no cluster, the ring only (no partial tile in shared memory), split tiles summed through a global workspace.
STREAMK_WGMMA_CTAS_PER_SM = (1, 2)
SM_SMEM_BYTES = SMEM_PER_SM_BYTES    # shared memory per SM, of which the system keeps 1 KB per resident CTA
CTA_RESERVED_SMEM = SMEM_RESERVED_PER_BLOCK_BYTES


def streamk_wgmma_smem_bytes(MI: int, NWG: int, BT: int, stages: int) -> int:
    """kernels/cuda/cluster_wgmma.cu streamk_smem_bytes: alignment slack, the mbarriers, the ring."""
    return 1024 + 1024 + stages * (64 * MI * NWG + BT) * WGMMA_BK * 2


def streamk_wgmma_shape_check(M, N, K, config):
    mi, nwg, bt, per_sm, stages = (config[k] for k in ("MI", "NWG", "BT", "PER_SM", "STAGES"))
    if (mi, nwg, bt) not in WGMMA_COMPILED:
        return f"streamk_wgmma has no compiled instance MI={mi} NWG={nwg} BT={bt}"
    low, high = wgmma_token_range(bt)
    if not low <= M <= high:
        return f"streamk_wgmma: BT={bt} serves M from {low} to {high}, not M={M}"
    bw = 64 * mi * nwg
    if N % bw or K % WGMMA_BK:
        return f"streamk_wgmma needs N % BW == 0 and K % {WGMMA_BK} == 0 (BW={bw}, N={N}, K={K})"
    if per_sm not in STREAMK_WGMMA_CTAS_PER_SM:
        return f"streamk_wgmma runs {' or '.join(map(str, STREAMK_WGMMA_CTAS_PER_SM))} CTAs per SM, not PER_SM={per_sm}"
    if not 2 <= stages <= WGMMA_MAX_STAGES:
        return f"streamk_wgmma needs 2 <= STAGES <= {WGMMA_MAX_STAGES} (STAGES={stages})"
    smem = streamk_wgmma_smem_bytes(mi, nwg, bt, stages)
    if smem > WGMMA_SMEM_BYTES or per_sm * (smem + CTA_RESERVED_SMEM) > SM_SMEM_BYTES:
        return (f"streamk_wgmma needs {smem} bytes of shared memory per CTA at STAGES={stages}, {per_sm} CTA(s) "
                f"per SM (the limits: {WGMMA_SMEM_BYTES} per CTA, {SM_SMEM_BYTES} per SM with "
                f"{CTA_RESERVED_SMEM} reserved per CTA)")
    return None


def _streamk_wgmma_stages(mi: int, nwg: int, bt: int, per_sm: int, cap: int = 8) -> int:
    stages = cap
    while stages > 2 and streamk_wgmma_shape_check(bt, 64 * mi * nwg, WGMMA_BK,
                                              {"MI": mi, "NWG": nwg, "BT": bt, "PER_SM": per_sm, "STAGES": stages}):
        stages -= 1
    return stages


# One CTA per SM at the deepest ring that fits (at most 8; uncapped too for BT <= 64), and two per SM where two rings
# of 4 or more fit and the consumer's accumulators leave registers for a second CTA (BT <= 64, one consumer
# warpgroup).
STREAMK_WGMMA_CONFIGS = config_table(
    ("MI", "NWG", "BT", "PER_SM", "STAGES"),
    [(mi, nwg, bt, 1, _streamk_wgmma_stages(mi, nwg, bt, 1)) for mi, nwg, bt in WGMMA_COMPILED]
    + [(mi, nwg, bt, 2, _streamk_wgmma_stages(mi, nwg, bt, 2)) for mi, nwg, bt in WGMMA_COMPILED
       if nwg == 1 and bt <= 64 and _streamk_wgmma_stages(mi, nwg, bt, 2) >= 4]
    + [(mi, nwg, bt, 1, _streamk_wgmma_stages(mi, nwg, bt, 1, cap=WGMMA_MAX_STAGES)) for mi, nwg, bt in WGMMA_COMPILED
       if bt <= WGMMA_DEEP_MAX_BT])


CUDA_METHODS: tuple[Method, ...] = (
    Method(
        name="cluster_splitk",
        dtypes=BF16_ONLY,
        impl="kernels.launch.cluster_splitk:CLUSTER_SPLITK",
        description="CUDA C++ split-K over a thread-block cluster of S blocks (mma.sync BF16, tokens as the MMA's "
                    "N, tile-packed weights, register double buffering); partials summed through shared and "
                    "distributed shared memory in the same launch",
        params={"RW": (1, 2), "KW": (2, 4, 8), "NT": (1, 2, 4), "R": (1, 2, 3, 4), "S": CLUSTER_SIZES},
        configs=CLUSTER_CONFIGS,
        shape_check=_cluster_shape_check,
    ),
    Method(
        name="cluster_splitk_xs",
        dtypes=BF16_ONLY,
        impl="kernels.launch.cluster_splitk:CLUSTER_SPLITK_XS",
        description="cluster_splitk with every warp of a block on the same K range and the token chunk staged in "
                    "a 4-slot shared-memory ring (cp.async): registers hold only weights in flight, a token byte "
                    "crosses L2 once per block",
        params={"RW": (4, 8), "KW": (1,), "NT": (2, 4), "R": (1, 2), "S": CLUSTER_SIZES},
        configs=XS_CLUSTER_CONFIGS,
        shape_check=_xs_cluster_shape_check,
    ),
    Method(
        name="cluster_splitk_async",
        dtypes=BF16_ONLY,
        impl="kernels.launch.cluster_splitk:CLUSTER_SPLITK_ASYNC",
        description="cluster_splitk with each lane copying its own operands D K steps ahead into private "
                    "shared-memory slots (cp.async lane rings, no barriers): the bytes in flight set by the ring "
                    "depth, not by the registers",
        params={"RW": (1,), "KW": (4, 8), "NT": (1, 2, 4), "R": (1, 2), "S": CLUSTER_SIZES},
        configs=RING_CLUSTER_CONFIGS,
        shape_check=_ring_cluster_shape_check,
    ),
    Method(
        name="cluster_wgmma",
        dtypes=BF16_ONLY,
        impl="kernels.launch.cluster_wgmma:CLUSTER_WGMMA",
        description="CUDA C++ warp-specialized TMA + wgmma (a producer warpgroup, an mbarrier ring, NWG consumer "
                    "warpgroups; weights as the 64-row operand, tokens as N): the token tile multicast across "
                    "the CN weight tiles of a cluster, the CK-way K split summed through distributed shared "
                    "memory in the same launch",
        params={"MI": (1, 2), "NWG": (1, 2), "BT": (16, 32, 64, 128, 256), "CN": tuple(range(1, 9)),
                "CK": tuple(range(1, WGMMA_CLUSTER_MAX + 1)), "STAGES": tuple(range(2, WGMMA_MAX_STAGES + 1)),
                "KA": WGMMA_ATOMS},
        configs=WGMMA_CONFIGS,
        shape_check=wgmma_shape_check,
    ),
    Method(
        name="streamk_wgmma",
        dtypes=BF16_ONLY,
        impl="kernels.launch.cluster_wgmma:STREAMK_WGMMA",
        description="cluster_wgmma's warp-specialized TMA + wgmma pipeline on PER_SM CTAs per SM over equal runs "
                    "of (weight tile, token tile, K block) units, the ring flowing across tile boundaries; a tile "
                    "split between CTAs is summed by its last finisher through a self-zeroing FP32 workspace",
        params={"MI": (1, 2), "NWG": (1, 2), "BT": (16, 32, 64, 128, 256), "PER_SM": STREAMK_WGMMA_CTAS_PER_SM,
                "STAGES": tuple(range(2, WGMMA_MAX_STAGES + 1))},
        configs=STREAMK_WGMMA_CONFIGS,
        shape_check=streamk_wgmma_shape_check,
    ),
    Method(
        name="router_hilo_wgmma",
        dtypes=(BF16_X_FP32_W,),
        impl="kernels.launch.cluster_wgmma:ROUTER_HILO_WGMMA",
        description="cluster_wgmma's TMA + wgmma kernel with the FP32 weights split at prepare into H = bf16(W) "
                    "and L = bf16(W - H) on interleaved weight rows, both products in one FP32 accumulator, the "
                    "whole K split of an output tile and each (H, L) row pair summed through distributed shared "
                    "memory in the same launch, FP32 y",
        params={"MI": (1,), "NWG": (1, 2), "BT": (32, 64, 128, 256), "CN": (1, 2),
                "CK": tuple(range(1, WGMMA_CLUSTER_MAX + 1)), "STAGES": tuple(range(2, WGMMA_MAX_STAGES + 1)),
                "KA": WGMMA_HILO_ATOMS},
        configs=ROUTER_WGMMA_CONFIGS,
        shape_check=router_wgmma_shape_check,
    ),
    Method(
        name="router_hilo_cluster",
        dtypes=(BF16_X_FP32_W,),
        impl="kernels.launch.cluster_splitk:ROUTER_HILO_CLUSTER",
        description="cluster_splitk's kernel with the FP32 weights split at prepare into H = bf16(W) and "
                    "L = bf16(W - H), both products in one FP32 accumulator, FP32 y",
        params={"RW": (1,), "KW": (4, 8), "NT": (1, 2, 4), "R": (1,), "S": CLUSTER_SIZES},
        configs=ROUTER_CLUSTER_CONFIGS,
        shape_check=_router_cluster_shape_check,
    ),
)
