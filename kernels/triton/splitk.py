"""Split-K tiled GEMM for small M: y[M,N] = x[M,K] @ w[N,K]^T with K cut into SPLIT contiguous chunks."""
import triton
import triton.language as tl


@triton.jit
def _partial_tile(x_ptr, w_ptr, M, N, K, stride_xm, stride_wn, pid_m, pid_n, pid_s,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    """acc[BM,BN] = x[rows, Ks] @ w[cols, Ks]^T over split pid_s's contiguous run of K tiles (fp32)."""
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    k_tiles = tl.cdiv(K, BK)
    per_split = tl.cdiv(k_tiles, SPLIT)
    t0 = pid_s * per_split
    t1 = tl.minimum(t0 + per_split, k_tiles)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for t in range(t0, t1):
        k = t * BK + rk
        x = tl.load(x_ptr + rm[:, None] * stride_xm + k[None, :],
                    mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        # Weights are streamed once per M tile: L2-only (.cg) keeps them from evicting x out of L1.
        w = tl.load(w_ptr + rn[None, :] * stride_wn + k[:, None],
                    mask=(rn[None, :] < N) & (k[:, None] < K), other=0.0, cache_modifier=".cg")
        acc = tl.dot(x, w, acc)
    return acc


@triton.jit
def splitk_partial_kernel(x_ptr, w_ptr, out_ptr, M, N, K, stride_xm, stride_wn, stride_os, stride_om, stride_on,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    """out[s,M,N] = x[M,Ks] @ w[N,Ks]^T per split s (fp32 partials); with SPLIT=1 out is y itself (cast on store)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_s = tl.program_id(2)
    acc = _partial_tile(x_ptr, w_ptr, M, N, K, stride_xm, stride_wn, pid_m, pid_n, pid_s, BM, BN, BK, SPLIT)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    ptrs = out_ptr + pid_s * stride_os + rm[:, None] * stride_om + rn[None, :] * stride_on
    tl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def splitk_reduce_kernel(p_ptr, y_ptr, M, N, stride_ps, stride_ym, stride_yn,
                         SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    """y[M,N] = sum_s p[s,M,N] (p contiguous per split, fp32), cast to y's dtype."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < M * N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT):
        acc += tl.load(p_ptr + s * stride_ps + offs, mask=ok, other=0.0)
    m = offs // N
    n = offs % N
    tl.store(y_ptr + m * stride_ym + n * stride_yn, acc.to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def splitk_fused_kernel(x_ptr, w_ptr, p_ptr, y_ptr, cnt_ptr, M, N, K, stride_xm, stride_wn, stride_ps, stride_pm,
                        stride_ym, stride_yn,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    """y[M,N] = x[M,K] @ w[N,K]^T: each split writes an fp32 partial; the last block to arrive at a tile sums them.

    Ordering: the CTA barrier puts every thread's partial store before thread 0's acq_rel (gpu scope) counter
    increment; the last arriver's acquire makes the other splits' partials visible; it resets the counter to 0
    so the next launch (or CUDA-graph replay) starts clean.
    """
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_s = tl.program_id(2)
    acc = _partial_tile(x_ptr, w_ptr, M, N, K, stride_xm, stride_wn, pid_m, pid_n, pid_s, BM, BN, BK, SPLIT)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn
    if SPLIT == 1:
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        tile = pid_m * tl.num_programs(1) + pid_n
        p_tile = p_ptr + rm[:, None] * stride_pm + rn[None, :]
        tl.store(p_tile + pid_s * stride_ps, acc, mask=mask)
        tl.debug_barrier()
        arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT - 1:
            for s in range(SPLIT):
                # .cg: read the other splits' partials from L2 (where their stores landed), never a stale L1 line.
                other = tl.load(p_tile + s * stride_ps, mask=mask & (s != pid_s), other=0.0, cache_modifier=".cg")
                acc += other
            tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
            tl.atomic_xchg(cnt_ptr + tile, 0, sem="relaxed", scope="gpu")
