"""@triton.jit kernels for the router (N=256, K=8192, FP32 weights, FP32 output).

Two numeric routes (launchers in kernels/launch/router.py):
- direct FP32: one-token GEMV over the FP32 weight (`router_gemv_fp32_kernel`);
- hi/lo BF16 (the write-up's permitted scheme): W ~ H + L with H = bf16(W), L = bf16(W - fp32(H)), products on
  the tensor cores with FP32 accumulation. Split-K with FP32 partials + a sum kernel (`router_hilo_splitk_kernel`,
  `splitk_sum_kernel`), or atomic adds into a zero-filled FP32 output with interleaved hi/lo rows
  (`router_hilo_atomic_kernel`, optionally behind programmatic dependent launch after `zero_fill_pdl_kernel`),
  or one launch whose first program per output tile zeroes it and hands the adding programs a token count
  (`router_hilo_flag_kernel`);
- direct FP32 for a few tokens: the same one-launch scheme with FP32 FMAs on the CUDA cores, each weight element
  used for every token of its tile (`router_fma_flag_kernel`).

M is a runtime argument that Triton does not specialise on (do_not_specialize), so one compile of a config
serves every token count. K is a compile-time constant (the router has one K): the trip count of each split's
loop is then known to the compiler (and the Triton interpreter can run the loops).
"""
import triton
import triton.language as tl

from kernels.triton.splitk_atomic_v2 import k_slice


@triton.jit
def router_gemv_fp32_kernel(x_ptr, w_ptr, y_ptr, N, stride_wn,
                            K: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, CACHE: tl.constexpr):
    """y[1,N] = x[1,K] @ w[N,K]^T with x bf16, w fp32, y fp32; BN rows per program, K unrolled in BK steps."""
    rows = tl.program_id(0) * BN + tl.arange(0, BN)
    cols = tl.arange(0, BK)
    row_ok = rows < N
    acc = tl.zeros((BN, BK), dtype=tl.float32)
    # K is a compile-time constant and the loop is unrolled, so every weight load of the program can be
    # issued before the first multiply: up to BN*K*4 bytes in flight per program (the whole point at M=1).
    for k0 in tl.static_range(0, K, BK):
        w_ptrs = w_ptr + rows[:, None] * stride_wn + (k0 + cols)[None, :]
        # Each weight byte is read once: ".cg" keeps it out of L1 (the seed's 036 one-token choice);
        # "" keeps the default modifier with an evict_first hint.
        if CACHE == "":
            w = tl.load(w_ptrs, mask=row_ok[:, None], other=0.0, eviction_policy="evict_first")
        else:
            w = tl.load(w_ptrs, mask=row_ok[:, None], other=0.0, cache_modifier=CACHE)
        # The 16 KB input row is re-read by every program: ask L2 to keep it.
        x = tl.load(x_ptr + (k0 + cols)[None, :], eviction_policy="evict_last")   # [1, BK]: same layout as w
        acc += w.to(tl.float32) * x.to(tl.float32)
    tl.store(y_ptr + rows, tl.sum(acc, axis=1), mask=row_ok)


@triton.jit(do_not_specialize=["M"])
def router_hilo_splitk_kernel(x_ptr, hi_ptr, lo_ptr, part_ptr, M, N,
                              stride_xm, stride_wn,
                              K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    """part[s,M,N] = x[M,Ks] @ (hi[N,Ks] + lo[N,Ks])^T over split s's contiguous K slice Ks (FP32 accumulate)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_s = tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_ok = rm < M
    n_ok = rn < N
    # Split-K: the router has only N/BN output tiles per token tile, far fewer than 132 SMs at small M, so K is
    # cut into SPLIT contiguous slices to expose SPLIT times more programs (the seed's 002 used 16 at small M).
    k_per_split: tl.constexpr = K // SPLIT
    k0 = pid_s * k_per_split
    x_ptrs = x_ptr + rm[:, None] * stride_xm + (k0 + rk)[None, :]
    w_off = rn[None, :] * stride_wn + (k0 + rk)[:, None]          # [BK, BN] view of w^T
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, k_per_split, BK):
        x = tl.load(x_ptrs, mask=m_ok[:, None], other=0.0)
        hi = tl.load(hi_ptr + w_off, mask=n_ok[None, :], other=0.0)
        lo = tl.load(lo_ptr + w_off, mask=n_ok[None, :], other=0.0)
        acc = tl.dot(x, hi, acc)        # FP32 accumulator: x*hi and x*lo summed in FP32
        acc = tl.dot(x, lo, acc)
        x_ptrs += BK
        w_off += BK
    p_ptrs = part_ptr + pid_s * M * N + rm[:, None] * N + rn[None, :]
    tl.store(p_ptrs, acc, mask=m_ok[:, None] & n_ok[None, :])


@triton.jit(do_not_specialize=["MN"])
def splitk_sum_kernel(part_ptr, y_ptr, MN, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    """y[MN] = sum_s part[s, MN] in FP32 (the split-K combine; y is the contiguous [M,N] output)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT):
        acc += tl.load(part_ptr + s * MN + offs, mask=ok, other=0.0)
    tl.store(y_ptr + offs, acc, mask=ok)


@triton.jit(do_not_specialize=["M"])
def router_hilo_atomic_kernel(x_ptr, w2_ptr, y_ptr, M, N,
                              stride_xm, stride_wn, stride_ym,
                              K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr,
                              USE_PDL: tl.constexpr):
    """y[M,N] += x[M,Ks] @ (w2[2n,Ks] + w2[2n+1,Ks])^T per split; w2 = hi/lo rows interleaved [2N,K]; FP32 atomics."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_s = tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)                 # logical outputs
    r2 = pid_n * (2 * BN) + tl.arange(0, 2 * BN)       # interleaved weight rows: 2n = hi[n], 2n+1 = lo[n]
    rk = tl.arange(0, BK)
    m_ok = rm < M
    r2_ok = r2 < 2 * N
    k_per_split: tl.constexpr = K // SPLIT
    k0 = pid_s * k_per_split
    x_ptrs = x_ptr + rm[:, None] * stride_xm + (k0 + rk)[None, :]
    w_off = r2[None, :] * stride_wn + (k0 + rk)[:, None]           # [BK, 2BN] view of w2^T
    acc = tl.zeros((BM, 2 * BN), dtype=tl.float32)
    # Nothing before the atomics reads y, so with PDL all of this overlaps the zero-fill kernel.
    for _ in range(0, k_per_split, BK):
        x = tl.load(x_ptrs, mask=m_ok[:, None], other=0.0)
        w = tl.load(w2_ptr + w_off, mask=r2_ok[None, :], other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BK
        w_off += BK
    # Columns 2j and 2j+1 of the accumulator are output j's hi and lo contributions: add each pair in FP32.
    pair = tl.sum(tl.reshape(acc, (BM, BN, 2)), axis=2)
    if USE_PDL:
        # The zero-fill (the preceding grid) must be complete and visible before any add lands in y.
        tl.extra.cuda.gdc_wait()
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :]
    # relaxed: the adds only need atomicity; ordering with the zero-fill comes from stream order / gdc_wait.
    tl.atomic_add(y_ptrs, pair, mask=m_ok[:, None] & (rn < N)[None, :], sem="relaxed")


@triton.jit(do_not_specialize=["NUMEL"])
def zero_fill_pdl_kernel(y_ptr, NUMEL, BLOCK: tl.constexpr):
    """y[NUMEL] = 0 (fp32), first letting the next PDL-launched grid start (griddepcontrol.launch_dependents)."""
    # Signal first: the dependent router GEMM only needs y at its gdc_wait, which waits for this whole grid
    # to finish and its stores to be visible, so letting it launch now is safe.
    tl.extra.cuda.gdc_launch_dependents()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < NUMEL)


@triton.jit
def zero_tile_and_hand_out_tokens(flag, y_ptrs, y_mask, TM: tl.constexpr, TN: tl.constexpr, SPLIT: tl.constexpr):
    """The zeroing program of a flag kernel's output tile: zero y's [TM, TN] tile, then add SPLIT tokens (release)."""
    tl.store(y_ptrs, tl.zeros((TM, TN), dtype=tl.float32), mask=y_mask)
    tl.debug_barrier()       # every thread's zeros are issued before the release
    tl.atomic_add(flag, SPLIT, sem="release", scope="gpu")


@triton.jit
def take_token_and_add(flag, y_ptrs, y_mask, part):
    """A K-slice program of a flag kernel: take one token (acq_rel), wait only if none was left (the zeroing not yet
    seen), then add `part` into y with FP32 atomics."""
    left = tl.atomic_add(flag, -1, sem="acq_rel", scope="gpu")
    if left <= 0:
        # The zeroing has not been seen yet: this program's token is owed; wait for the +SPLIT.
        while tl.atomic_add(flag, 0, sem="acquire", scope="gpu") < 0:
            pass
    tl.debug_barrier()       # no thread adds before the acquire above
    tl.atomic_add(y_ptrs, part, mask=y_mask, sem="relaxed")


@triton.jit(do_not_specialize=["M"])
def router_hilo_flag_kernel(x_ptr, w2_ptr, w_desc, y_ptr, flag_ptr, M, N, stride_xm, stride_wn, stride_ym,
                            K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                            SPLIT: tl.constexpr, W_LOAD: tl.constexpr, SWAP: tl.constexpr,
                            FLAG_STRIDE: tl.constexpr):
    """y[M,N] = x[M,K] @ (w2[2n,K] + w2[2n+1,K])^T in one launch, grid (SPLIT + 1, N/BN, cdiv(M, BM)).

    Program 0 of an output tile zeroes the tile and then adds SPLIT to the tile's flag (release). Programs
    1..SPLIT each multiply one K slice and, before adding into y, take one token: flag -= 1 (acq_rel). A program
    that finds a positive count saw the zeroing (its acquire orders the zeros before its adds); one that finds
    none spins until the count is back at >= 0, which only the zeroing's +SPLIT can do once it has decremented.
    Each call adds SPLIT and takes SPLIT, so the flag is 0 again when the grid ends: nothing to reset, graph
    replays need no memset. The zeroing program has the tile's lowest block index, so it is dispatched before
    the programs that wait for it; it waits for nothing itself. Slice s covers K steps [s*T/SPLIT, (s+1)*T/SPLIT)
    of T = K/BK, so SPLIT + 1 programs per tile can be fitted to the 132 SMs (a grid one SM too large waits a
    whole extra wave for its last programs).

    Each tile's flag sits FLAG_STRIDE int32 apart (its own 128-byte line), so the tiles' tokens, all taken at about
    the same moment, do not queue on one line, and the zeroing program runs the same code with an empty K loop
    rather than a branch around the loop. Together these two measured the same as one packed line and the branch
    (docs/kernels/router_hilo_flag.md): the token's cost is the round trip itself.

    W_LOAD: "cp" (pointer loads, cp.async in the software pipeline) or "tma" (w_desc, a [2BN, BK] tensor
    descriptor); "pack" / "pack_tma" the same from w2 re-laid at prepare as [2N/2BN, K/BK, 2BN, BK], so each K
    step's weight tile is one contiguous block rather than 2BN runs of BK*2 bytes a weight row apart.
    SWAP: the weight tile is the MMA's row operand (acc^T[2BN, BM] = w x^T) instead of x.
    """
    pid_s = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_m = tl.program_id(2)
    flag = flag_ptr + (pid_m * tl.num_programs(1) + pid_n) * FLAG_STRIDE
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    m_ok = rm < M
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :]
    y_mask = m_ok[:, None] & (rn < N)[None, :]
    k_lo, n_steps = k_slice(tl.maximum(pid_s - 1, 0), K // BK, SPLIT)   # SPLIT need not divide the K steps
    n_steps = tl.where(pid_s == 0, 0, n_steps)                           # the zeroing program: no K steps
    k0 = k_lo * BK
    rk = tl.arange(0, BK)
    r2 = pid_n * (2 * BN) + tl.arange(0, 2 * BN)       # interleaved weight rows: 2n = hi[n], 2n+1 = lo[n]
    x_ptrs = x_ptr + tl.where(m_ok, rm, 0)[:, None] * stride_xm + (k0 + rk)[None, :]   # rows past M: row 0
    PACKED: tl.constexpr = W_LOAD == "pack" or W_LOAD == "pack_tma"
    if PACKED:
        # w2 packed [2N/2BN, K/BK, 2BN, BK]: the tile of K step t starts at row (pid_n * K/BK + t) * 2BN of the
        # [rows, BK] view, and one K step is 2BN*BK contiguous elements.
        prow = (pid_n * (K // BK) + k_lo) * (2 * BN) + tl.arange(0, 2 * BN)
        w_row_ptr = w2_ptr + prow * BK
        w_step = 2 * BN * BK
    else:
        w_row_ptr = w2_ptr + r2 * stride_wn + k0
        w_step = BK
    if SWAP:
        w_ptrs = w_row_ptr[:, None] + rk[None, :]      # [2BN, BK]
        acc = tl.zeros((2 * BN, BM), dtype=tl.float32)
    else:
        w_ptrs = w_row_ptr[None, :] + rk[:, None]      # [BK, 2BN] view of w2^T
        acc = tl.zeros((BM, 2 * BN), dtype=tl.float32)
    for i in range(0, n_steps):
        x = tl.load(x_ptrs)
        if W_LOAD == "tma" or W_LOAD == "pack_tma":
            if W_LOAD == "tma":
                w = w_desc.load([pid_n * 2 * BN, k0 + i * BK])                 # [2BN, BK]
            else:
                w = w_desc.load([(pid_n * (K // BK) + k_lo + i) * (2 * BN), 0])
            if not SWAP:
                w = w.T
        else:
            w = tl.load(w_ptrs)
        if SWAP:
            acc = tl.dot(w, x.T, acc)
        else:
            acc = tl.dot(x, w, acc)
        x_ptrs += BK
        w_ptrs += w_step
    if pid_s == 0:
        zero_tile_and_hand_out_tokens(flag, y_ptrs, y_mask, BM, BN, SPLIT)
    else:
        # Accumulator rows/columns 2j and 2j+1 are output j's hi and lo contributions: add each pair in FP32.
        if SWAP:
            pair = tl.sum(tl.reshape(acc, (BN, 2, BM)), axis=1).T
        else:
            pair = tl.sum(tl.reshape(acc, (BM, BN, 2)), axis=2)
        take_token_and_add(flag, y_ptrs, y_mask, pair)


@triton.jit(do_not_specialize=["M"])
def router_fma_flag_kernel(x_ptr, w_ptr, y_ptr, flag_ptr, M, N, stride_xm, stride_wn, stride_ym,
                           K: tl.constexpr, MT: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                           SPLIT: tl.constexpr, STAGES: tl.constexpr, FLAG_STRIDE: tl.constexpr):
    """y[M,N] = x[M,K] @ w[N,K]^T with x bf16, w fp32 read directly, y fp32, in one launch, grid
    (SPLIT + 1, N/BN, cdiv(M, MT)); FP32 FMAs on the CUDA cores, no tensor cores and no hi/lo split.

    router_gemv_fp32's structure extended to a token tile: each K-slice program reads its [BN, K/SPLIT] piece of
    the weight once and uses every element for all MT tokens of its tile, accumulating x[m,k] * w[n,k] in an
    [MT, BN, BK] FP32 register accumulator that is reduced over BK once, after the K loop.

    The zeroing program and token counts are router_hilo_flag_kernel's: program 0 of an output tile zeroes y's
    tile and adds SPLIT to the tile's flag (release); programs 1..SPLIT multiply one K slice, take one token
    (flag -= 1, acq_rel), spin only if none was left, then add their partial into y with FP32 atomics. Each call
    adds and takes SPLIT tokens per tile, so the flags are 0 again when the grid ends. Slice s covers K steps
    [s*T/SPLIT, (s+1)*T/SPLIT) of T = K/BK (k_slice), so SPLIT need not divide the K steps.

    STAGES > 1 asks for the runtime K loop to be software-pipelined (cp.async copies through shared memory, which
    Triton does for a loop without tl.dot only when tl.range names num_stages); STAGES = 1 leaves plain loads.
    """
    pid_s = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_m = tl.program_id(2)
    flag = flag_ptr + (pid_m * tl.num_programs(1) + pid_n) * FLAG_STRIDE
    rm = pid_m * MT + tl.arange(0, MT)
    rn = pid_n * BN + tl.arange(0, BN)
    m_ok = rm < M
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :]
    y_mask = m_ok[:, None] & (rn < N)[None, :]
    k_lo, n_steps = k_slice(tl.maximum(pid_s - 1, 0), K // BK, SPLIT)
    n_steps = tl.where(pid_s == 0, 0, n_steps)                           # the zeroing program: no K steps
    k0 = k_lo * BK
    rk = tl.arange(0, BK)
    # Both tiles are loaded as 3-D blocks ([MT, 1, BK] and [1, BN, BK]) so the loads get layouts of the
    # accumulator's rank, distributed along K, and broadcast into the product without a shared-memory exchange.
    # x's K offsets are declared contiguous in runs of 4 only (4 bf16, an 8-byte load) so that its load layout is
    # the weight's (4 fp32, 16 bytes per thread): the product then needs no layout conversion in the loop.
    rk_x = tl.max_contiguous(k0 + rk, 4)
    x_ptrs = x_ptr + tl.where(m_ok, rm, 0)[:, None, None] * stride_xm + rk_x[None, None, :]   # rows past M: row 0
    w_ptrs = w_ptr + rn[None, :, None] * stride_wn + (k0 + rk)[None, None, :]
    acc = tl.zeros((MT, BN, BK), dtype=tl.float32)
    for i in tl.range(0, n_steps, num_stages=STAGES):
        # Each weight byte is read once (evict_first); x is re-read by every program of its token tile (evict_last).
        w = tl.load(w_ptrs, eviction_policy="evict_first")
        x = tl.load(x_ptrs, eviction_policy="evict_last").to(tl.float32)
        acc += x * w
        x_ptrs += BK
        w_ptrs += BK
    if pid_s == 0:
        zero_tile_and_hand_out_tokens(flag, y_ptrs, y_mask, MT, BN, SPLIT)
    else:
        take_token_and_add(flag, y_ptrs, y_mask, tl.sum(acc, axis=2))
