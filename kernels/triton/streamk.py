"""Stream-K GEMM: y[M,N] = x[M,K] @ w[N,K]^T with the tile x K-step work divided evenly over a persistent grid.

The output is cut into BM x BN tiles, each needing K/BK steps; the tiles' steps, laid end to end (M tiles of one
N column next to each other, so neighbouring work shares weight columns), are split into one contiguous run per
program (grid = the SM count, or fewer when there is less work). A program walks its run tile by tile: a tile it
covers whole is stored directly; a tile it covers in part is added into a persistent FP32 workspace with atomic
adds, and its arrival counter grows by the steps done. Whoever completes a tile's steps takes the sum out of
the workspace with an atomic exchange (leaving zeros), writes y and resets the counter -- one launch, no
memset, safe to replay. So every SM gets the same amount of work whatever the tile count (cuBLAS ran 96
programs on 132 SMs for M=256, N=2304, K=8192 under Nsight Compute).

TMA=True loads both operands through host-built tensor descriptors (Hopper's bulk tensor copy; rows of x past
M arrive as zeros); TMA=False uses pointer loads with rows past M clamped to row 0 (never stored).
"""
import triton
import triton.language as tl

from kernels.triton.splitk_atomic import _take_and_zero


@triton.jit(do_not_specialize=["M"])
def streamk_kernel(x_ptr, w_ptr, x_desc, w_desc, y_ptr, ws_ptr, cnt_ptr, M, N, stride_xm, stride_wn, stride_ym,
                   K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TMA: tl.constexpr):
    """y[M,N] = x[M,K] @ w[N,K]^T; program p owns K steps [p*T/G, (p+1)*T/G) of T = tiles * K/BK; grid (G,)."""
    pid = tl.program_id(0)
    grid = tl.num_programs(0)
    STEPS: tl.constexpr = K // BK                    # K steps per tile
    tiles_m = tl.cdiv(M, BM)
    total = tiles_m * (N // BN) * STEPS
    start = pid * total // grid
    end = (pid + 1) * total // grid
    for tile in range(start // STEPS, (end - 1) // STEPS + 1):
        k_lo = tl.maximum(start - tile * STEPS, 0)
        k_hi = tl.minimum(end - tile * STEPS, STEPS)
        pid_m = tile % tiles_m
        pid_n = tile // tiles_m
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        row_ok = rm < M
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        if TMA:
            for ks in range(k_lo, k_hi):
                x = x_desc.load([pid_m * BM, ks * BK])
                w = w_desc.load([pid_n * BN, ks * BK])
                acc = tl.dot(x, w.T, acc)
        else:
            rk = tl.arange(0, BK)
            rm_load = tl.where(row_ok, rm, 0)
            x_ptrs = x_ptr + rm_load[:, None] * stride_xm + (k_lo * BK + rk)[None, :]
            w_ptrs = w_ptr + rn[None, :] * stride_wn + (k_lo * BK + rk)[:, None]    # [BK, BN] view of w^T
            for ks in range(k_lo, k_hi):
                x = tl.load(x_ptrs)
                w = tl.load(w_ptrs, cache_modifier=".cg")
                acc = tl.dot(x, w, acc)
                x_ptrs += BK
                w_ptrs += BK
        mask = row_ok[:, None] & (rn < N)[None, :]
        y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :]
        if k_hi - k_lo == STEPS:
            tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
        else:
            ws_ptrs = ws_ptr + rm[:, None] * N + rn[None, :]
            tl.atomic_add(ws_ptrs, acc, mask=mask, sem="relaxed")
            tl.debug_barrier()   # every thread's adds are issued before the counter's release
            tile_id = pid_m * (N // BN) + pid_n
            done = tl.atomic_add(cnt_ptr + tile_id, k_hi - k_lo, sem="acq_rel", scope="gpu") + (k_hi - k_lo)
            if done == STEPS:
                total_acc = _take_and_zero(ws_ptrs, mask, BM, BN)
                tl.store(y_ptrs, total_acc.to(y_ptr.dtype.element_ty), mask=mask)
                tl.atomic_xchg(cnt_ptr + tile_id, 0, sem="relaxed")
