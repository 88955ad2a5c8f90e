"""Warp-specialized skinny GEMM on Hopper: y^T[N, M] = w[N, K] @ x^T[K, M] for few tokens M, in Gluon.

The write-up's 039 skinny-QKV design (its text: "a producer-side group and a consumer group. Thread zero issues the
TMA transfers. The consumer group waits for a stage to be full, issues the matrix work, waits for its required
completion, and has its warp leaders signal that the stage can be reused"; separate full and empty stage
barriers; eight stages; K split three ways at integer boundaries) written with Gluon's explicit pieces:

* a ring of STAGES shared-memory slots, each one [BN, BK] weight tile and one [BM, BK] token tile, with a
  `ready` and an `empty` mbarrier per slot;
* a 1-warp worker partition (the producer) that waits for a slot to be empty, arms its ready barrier with the
  slot's byte count and issues the two TMA copies (`cp.async.bulk.tensor`); token rows past M are zero-filled by
  the TMA unit (the descriptor's shape is [M, K]), so x needs no padding and no masks;
* the default partition (the consumer: num_warps warps, one or two warpgroups) that waits for a slot to be ready,
  issues the warpgroup MMA (`wgmma.mma_async`, weights as the 64-row A operand straight from shared memory, the
  BM tokens as the MMA's N dimension: the operands swapped, so M = 9..32 costs one 16/32-wide MMA instead of a
  64-row tile of mostly padding), keeps one MMA group in flight and releases the previous slot once it completed.

Measured on the H200: docs/kernels/skinny_ws.md.

Work split. The (weight tile, token tile, K step) space -- the token tiles of one weight tile adjacent, so runs
that read the same weight rows follow each other and find them in L2 -- is cut into equal contiguous runs of K
steps, one run per program: `SPLIT` runs per output tile (the split-K grid, grid = tiles x SPLIT; SPLIT need not
divide the K steps: runs of floor or ceil(T/SPLIT) steps, the write-up's 42/43/43 at T=128, SPLIT=3) or, with
STREAMK=S, S programs per SM, each one run over all tiles (stream-K: every program gets the same number of K steps
at any tile count; a run may end one tile and start the next). The launcher sizes the grid; the kernel only cuts
its equal share of the steps.

Reduction, one launch: a run that covers a whole tile stores y directly; otherwise the run adds its FP32 partial
into a persistent zeroed FP32 workspace [N, MAX_M] (token-contiguous, relaxed atomics), then adds its number of K
steps to the tile's arrival counter (acq_rel); the run that brings the counter to the tile's K-step count takes
the sum out with an atomic exchange (leaving zeros), writes y and resets the counter. Workspace and counters are
zero again after every call: no memset launch, CUDA-graph replay safe (the scheme of
kernels/triton/splitk_atomic.py, with K steps counted instead of arrivals so stream-K runs of any length add up).

skinny_fixup_kernel (the `skinny_ws_fixup` method) runs the same ring, producer and MMA loop with SPLIT runs per
output tile and another reduction, for 128-256 tokens where the atomics above cost more than the product: each run
stores its FP32 partial into its own workspace slot with plain stores, waits until the tile's SPLIT runs have all
arrived (the launcher keeps the grid to what is resident at once), sums its share of the tile across the slots and
writes y; the last run done reading zeroes the tile's two counters.

HILO=True is the router's hi/lo scheme (FP32 weight W = H + L, H = bf16(W), L = bf16(W - H), FP32 output): each
ring slot holds the H and the L tile of the K step, both multiplied into the one FP32 accumulator.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait


@gluon.constexpr_function
def mma_warps(BN, num_warps):
    """warps_per_cta of the accumulator: warpgroups stacked along the weight rows when BN has 64 rows per
    warpgroup, else side by side along the tokens."""
    groups = num_warps // 4
    if BN >= 64 * groups:
        return [num_warps, 1]
    return [4, groups]


@gluon.constexpr_function
def epilogue_layout(BM, num_warps):
    """The layout of the epilogue's atomics and stores: 4 consecutive tokens per thread, a warp's lanes across
    tokens first (a weight row's workspace row is token-contiguous: 4-float vector atomics, a quarter of the
    64-bit addresses the accumulator's own layout would hold), reached through one shared-memory conversion."""
    across = min(max(BM // 4, 1), 32)
    return gl.BlockedLayout([1, 4], [32 // across, across], [num_warps, 1], [1, 0])


@gluon.jit
def _run(pid, P, TOTAL):
    """[start, end) of this program's equal share of TOTAL K steps."""
    return pid * TOTAL // P, (pid + 1) * TOTAL // P


@gluon.jit
def _ring(w_desc, lo_desc, x_desc, STAGES: gl.constexpr, HILO: gl.constexpr):
    """The shared-memory ring: STAGES slots of one [BN, BK] weight tile (HILO: an H and an L tile) and one [BM, BK]
    token tile, with a ready and an empty mbarrier per slot (lo_bufs is w_bufs, never read, without HILO)."""
    BN: gl.constexpr = w_desc.block_type.shape[0]
    BK: gl.constexpr = w_desc.block_type.shape[1]
    BM: gl.constexpr = x_desc.block_type.shape[0]
    w_bufs = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
    if HILO:
        lo_bufs = gl.allocate_shared_memory(lo_desc.dtype, [STAGES, BN, BK], lo_desc.layout)
    else:
        lo_bufs = w_bufs
    x_bufs = gl.allocate_shared_memory(x_desc.dtype, [STAGES, BM, BK], x_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    return w_bufs, lo_bufs, x_bufs, ready, empty


@gluon.jit
def _load_partition(w_desc, lo_desc, x_desc, w_bufs, lo_bufs, x_bufs, ready, empty, start, end, M_TILES,
                    STEPS: gl.constexpr, STAGES: gl.constexpr, PACK: gl.constexpr, HILO: gl.constexpr):
    """The producer warp: one weight tile (HILO: the H and the L tile) and one token tile per K step of this
    program's run. PACK: the weight was re-laid at prepare as [N/BN, K/BK, BN, BK] (w_desc views it as
    [N/BN * K/BK * BN, BK] rows), so a K step's weight tile is one contiguous block."""
    BN: gl.constexpr = w_desc.block_type.shape[0]
    BK: gl.constexpr = w_desc.block_type.shape[1]
    BM: gl.constexpr = x_desc.block_type.shape[0]
    nbytes: gl.constexpr = w_desc.block_type.nbytes * (2 if HILO else 1) + x_desc.block_type.nbytes
    for g in range(start, end):
        i = g - start
        s = i % STAGES
        # A fresh mbarrier counts as having completed the phase before phase 0: the first pass does not wait.
        mbarrier.wait(empty.index(s), ((i // STAGES) & 1) ^ 1)
        tile = g // STEPS
        k = (g % STEPS) * BK
        mbarrier.expect(ready.index(s), nbytes)
        pid_n = tile // M_TILES
        if PACK:
            w_row = (pid_n * STEPS + g % STEPS) * BN
            w_col = 0
        else:
            w_row = pid_n * BN
            w_col = k
        tma.async_copy_global_to_shared(w_desc, [w_row, w_col], ready.index(s), w_bufs.index(s))
        if HILO:
            tma.async_copy_global_to_shared(lo_desc, [w_row, w_col], ready.index(s), lo_bufs.index(s))
        tma.async_copy_global_to_shared(x_desc, [(tile % M_TILES) * BM, k], ready.index(s), x_bufs.index(s))


@gluon.jit
def _finish_tile(acc, tile, n_steps, y_ptr, ws_ptr, cnt_ptr, M, stride_ym, M_TILES,
                 STEPS: gl.constexpr, MAX_M: gl.constexpr, BN: gl.constexpr,
                 BM: gl.constexpr, epi: gl.constexpr):
    """Store a whole tile's sum, or add a partial into the workspace and, if it completes the tile, write y."""
    v = gl.convert_layout(acc, epi)
    rn = (tile // M_TILES) * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, epi))
    rm = (tile % M_TILES) * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, epi))
    y_ptrs = y_ptr + rm[None, :] * stride_ym + rn[:, None]
    y_mask = (rm < M)[None, :] & (rn >= 0)[:, None]
    if n_steps == STEPS:
        gl.store(y_ptrs, v.to(y_ptr.dtype.element_ty), mask=y_mask)
    else:
        # Unmasked: whole BN tiles of N and whole BM tiles of tokens inside the MAX_M workspace columns (the
        # launcher checks both); padded tokens add the TMA's zeros to columns no output reads.
        ws_ptrs = ws_ptr + rn[:, None] * MAX_M + rm[None, :]
        gl.atomic_add(ws_ptrs, v, sem="relaxed")
        gl.thread_barrier()           # every thread's adds are issued before the counter's release
        before = gl.atomic_add(cnt_ptr + tile, n_steps, sem="acq_rel", scope="gpu")
        if before + n_steps == STEPS:
            bits = gl.atomic_xchg(ws_ptrs.to(gl.pointer_type(gl.int32)), gl.zeros([BN, BM], gl.int32, epi),
                                  sem="relaxed")
            gl.store(y_ptrs, bits.to(gl.float32, bitcast=True).to(y_ptr.dtype.element_ty), mask=y_mask)
            gl.atomic_xchg(cnt_ptr + tile, 0, sem="relaxed")


@gluon.jit
def _mma_step(acc, w_bufs, lo_bufs, x_bufs, ready, empty, i, use_acc, STAGES: gl.constexpr, HILO: gl.constexpr):
    """Step i of a run: wait for its slot, issue its async warpgroup MMA(s) (HILO: the H and the L product into the
    one FP32 accumulator), keep one MMA group in flight and hand the previous step's slot back to the producer."""
    s = i % STAGES
    mbarrier.wait(ready.index(s), (i // STAGES) & 1)
    xt = x_bufs.index(s).permute((1, 0))
    acc = warpgroup_mma(w_bufs.index(s), xt, acc, use_acc=use_acc, is_async=True)
    if HILO:
        acc = warpgroup_mma(lo_bufs.index(s), xt, acc, is_async=True)
    # At most one MMA group in flight (each warpgroup_mma commits one; they complete in order): the previous step's
    # are done, so its slot goes back to the producer.
    acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
    mbarrier.arrive(empty.index((i + STAGES - 1) % STAGES), pred=i > 0)
    return acc


@gluon.jit
def _mma_partition(w_bufs, lo_bufs, x_bufs, ready, empty, start, end, y_ptr, ws_ptr, cnt_ptr, M, stride_ym,
                   M_TILES, STEPS: gl.constexpr, MAX_M: gl.constexpr, STAGES: gl.constexpr, HILO: gl.constexpr,
                   num_warps: gl.constexpr):
    """The consumer warpgroup(s): one async warpgroup MMA per K step (HILO: the H and the L product into the one
    FP32 accumulator), one step in flight; a tile's epilogue where the run leaves it."""
    BN: gl.constexpr = w_bufs.type.shape[1]
    BM: gl.constexpr = x_bufs.type.shape[1]
    warps: gl.constexpr = mma_warps(BN, num_warps)
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=warps,
                                                     instr_shape=[16, BM // warps[1], 16])
    epi: gl.constexpr = epilogue_layout(BM, num_warps)
    acc = gl.zeros([BN, BM], gl.float32, layout)
    seg = start
    for g in range(start, end):
        acc = _mma_step(acc, w_bufs, lo_bufs, x_bufs, ready, empty, g - start, g != seg, STAGES, HILO)
        if ((g % STEPS) == STEPS - 1) | (g == end - 1):
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
            _finish_tile(acc, g // STEPS, g - seg + 1, y_ptr, ws_ptr, cnt_ptr, M, stride_ym, M_TILES, STEPS, MAX_M,
                         BN, BM, epi)
            seg = g + 1


@gluon.jit(do_not_specialize=["M", "M_TILES"])
def skinny_ws_kernel(w_desc, lo_desc, x_desc, y_ptr, ws_ptr, cnt_ptr, M, stride_ym, M_TILES,
                     N: gl.constexpr, K: gl.constexpr, MAX_M: gl.constexpr, STAGES: gl.constexpr,
                     PACK: gl.constexpr, HILO: gl.constexpr, num_warps: gl.constexpr):
    """y[M, N] = x[M, K] @ w[N, K]^T (HILO: @ (w + lo)^T, lo_desc has w_desc's layout; otherwise lo_desc is
    unused); grid (programs,), each an equal run of the M_TILES * N/BN * K/BK steps."""
    BN: gl.constexpr = w_desc.block_type.shape[0]
    BK: gl.constexpr = w_desc.block_type.shape[1]
    STEPS: gl.constexpr = K // BK
    N_TILES: gl.constexpr = N // BN
    start, end = _run(gl.program_id(0), gl.num_programs(0), M_TILES * N_TILES * STEPS)

    w_bufs, lo_bufs, x_bufs, ready, empty = _ring(w_desc, lo_desc, x_desc, STAGES, HILO)

    gl.warp_specialize([
        (_mma_partition, (w_bufs, lo_bufs, x_bufs, ready, empty, start, end, y_ptr, ws_ptr, cnt_ptr, M, stride_ym,
                          M_TILES, STEPS, MAX_M, STAGES, HILO, num_warps)),
        (_load_partition, (w_desc, lo_desc, x_desc, w_bufs, lo_bufs, x_bufs, ready, empty, start, end, M_TILES,
                           STEPS, STAGES, PACK, HILO)),
    ], [1], [40])


# ------------------------------------------------------------------------------------------------ skinny_ws_fixup

@gluon.constexpr_function
def fixup_layout(BN, num_warps):
    """The layout of the fixup's [FIX_ROWS, BN] chunks: 4 consecutive weight rows per thread, a warp's lanes along
    the weight rows (the token-major partials and y are both contiguous along N there)."""
    across = min(max(BN // 4, 1), 32)
    return gl.BlockedLayout([1, 4], [32 // across, across], [num_warps, 1], [1, 0])


# Token rows per fixup chunk: a [BM, BN] tile is BM / 8 chunks, shared out among its SPLIT runs.
FIX_ROWS = gl.constexpr(8)


@gluon.jit
def _mma_fixup_partition(w_bufs, lo_bufs, x_bufs, ready, empty, start, end, y_ptr, ws_ptr, cnt_ptr, M, stride_ym,
                         M_TILES, N_TILES, SPLIT, STEPS: gl.constexpr, STAGES: gl.constexpr, HILO: gl.constexpr,
                         num_warps: gl.constexpr):
    """The consumer of skinny_fixup_kernel: the same MMA loop over one run of one tile, then the tile's reduction
    without atomics on data: the run's FP32 partial is stored into its own workspace slot (token-major), the run
    arrives on the tile's counter and waits until all SPLIT runs have arrived (they are all resident: the launcher
    keeps the grid within one wave), then sums its share of the tile's chunks across the SPLIT slots and writes
    y. A second counter counts the runs that are done reading; the last one zeroes both counters."""
    BN: gl.constexpr = w_bufs.type.shape[1]
    BM: gl.constexpr = x_bufs.type.shape[1]
    warps: gl.constexpr = mma_warps(BN, num_warps)
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=warps,
                                                     instr_shape=[16, BM // warps[1], 16])
    acc = gl.zeros([BN, BM], gl.float32, layout)
    for g in range(start, end):
        acc = _mma_step(acc, w_bufs, lo_bufs, x_bufs, ready, empty, g - start, g != start, STAGES, HILO)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))

    tile = start // STEPS
    part = gl.program_id(0) % SPLIT
    # The partial, token-major [BM, BN] in slot (tile, part): a warp's store covers whole 32-byte sectors.
    rn = gl.arange(0, BN, layout=gl.SliceLayout(1, layout))
    rm = gl.arange(0, BM, layout=gl.SliceLayout(0, layout))
    slots = ws_ptr + tile.to(gl.int64) * (SPLIT * BM * BN)
    gl.store(slots + part * (BM * BN) + rm[None, :] * BN + rn[:, None], acc)
    gl.thread_barrier()              # every thread's stores are issued before the release
    gl.atomic_add(cnt_ptr + tile, 1, sem="release", scope="gpu")
    while gl.atomic_add(cnt_ptr + tile, 0, sem="acquire", scope="gpu") < SPLIT:
        pass
    gl.thread_barrier()              # no thread reads a slot before the acquire above

    fix: gl.constexpr = fixup_layout(BN, num_warps)
    cr = gl.arange(0, FIX_ROWS, layout=gl.SliceLayout(1, fix))
    cn = gl.arange(0, BN, layout=gl.SliceLayout(0, fix))
    n0 = (tile // M_TILES) * BN
    m0 = (tile % M_TILES) * BM
    for c in range(part, BM // FIX_ROWS, SPLIT):
        offs = (c * FIX_ROWS + cr)[:, None] * BN + cn[None, :]
        total = gl.zeros([FIX_ROWS, BN], gl.float32, fix)
        for q in range(0, SPLIT):
            total += gl.load(slots + q * (BM * BN) + offs, cache_modifier=".cg")
        rows = m0 + c * FIX_ROWS + cr
        gl.store(y_ptr + rows[:, None] * stride_ym + (n0 + cn)[None, :], total.to(y_ptr.dtype.element_ty),
                 mask=(rows < M)[:, None] & (cn >= 0)[None, :])
    gl.thread_barrier()              # every thread has read its chunks before the run counts as done
    done = gl.atomic_add(cnt_ptr + M_TILES * N_TILES + tile, 1, sem="acq_rel", scope="gpu")
    if done == SPLIT - 1:            # the last reader: no run of this call reads either counter again
        gl.atomic_xchg(cnt_ptr + tile, 0, sem="relaxed")
        gl.atomic_xchg(cnt_ptr + M_TILES * N_TILES + tile, 0, sem="relaxed")


@gluon.jit(do_not_specialize=["M", "M_TILES", "SPLIT"])
def skinny_fixup_kernel(w_desc, lo_desc, x_desc, y_ptr, ws_ptr, cnt_ptr, M, stride_ym, M_TILES, SPLIT,
                        N: gl.constexpr, K: gl.constexpr, STAGES: gl.constexpr, PACK: gl.constexpr,
                        HILO: gl.constexpr, num_warps: gl.constexpr):
    """y[M, N] = x[M, K] @ w[N, K]^T (HILO: @ (w + lo)^T); grid (M_TILES * N/BN * SPLIT,), SPLIT runs per output
    tile, the partials summed in the same launch by the tile's own runs (skinny_ws's load partition and MMA loop;
    only the reduction differs)."""
    BN: gl.constexpr = w_desc.block_type.shape[0]
    BK: gl.constexpr = w_desc.block_type.shape[1]
    STEPS: gl.constexpr = K // BK
    N_TILES: gl.constexpr = N // BN
    start, end = _run(gl.program_id(0), gl.num_programs(0), M_TILES * N_TILES * STEPS)

    w_bufs, lo_bufs, x_bufs, ready, empty = _ring(w_desc, lo_desc, x_desc, STAGES, HILO)

    gl.warp_specialize([
        (_mma_fixup_partition, (w_bufs, lo_bufs, x_bufs, ready, empty, start, end, y_ptr, ws_ptr, cnt_ptr, M,
                                stride_ym, M_TILES, N_TILES, SPLIT, STEPS, STAGES, HILO, num_warps)),
        (_load_partition, (w_desc, lo_desc, x_desc, w_bufs, lo_bufs, x_bufs, ready, empty, start, end, M_TILES,
                           STEPS, STAGES, PACK, HILO)),
    ], [1], [40])

