"""Tile-packed weights: y[M,N] = x[M,K] @ w[N,K]^T where w is stored as wp[N/BN, K/BK, BN, BK] (each tile contiguous)."""
import triton
import triton.language as tl


@triton.jit
def packed_kernel(x_ptr, wp_ptr, out_ptr, M, N, K, stride_xm, stride_os, stride_om, stride_on,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr):
    """out[s,M,N] = x[M,Ks] @ w[N,Ks]^T reading contiguous BNxBK weight tiles; SPLIT=1: out is y (cast on store)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_s = tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    k_tiles = K // BK
    per_split = tl.cdiv(k_tiles, SPLIT)
    t0 = pid_s * per_split
    t1 = tl.minimum(t0 + per_split, k_tiles)
    # Tile (pid_n, t) starts at ((pid_n * k_tiles) + t) * BN * BK; inside it, feature n's K run is BK long.
    w_tile = wp_ptr + pid_n.to(tl.int64) * k_tiles * BN * BK + rn[None, :] * BK + rk[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for t in range(t0, t1):
        k = t * BK + rk
        x = tl.load(x_ptr + rm[:, None] * stride_xm + k[None, :], mask=rm[:, None] < M, other=0.0)
        # One contiguous BN*BK*2-byte block per step, read once: L2-only (.cg).
        w = tl.load(w_tile + t * BN * BK, cache_modifier=".cg")
        acc = tl.dot(x, w, acc)
    cols = pid_n * BN + rn
    ptrs = out_ptr + pid_s * stride_os + rm[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (cols[None, :] < N))
