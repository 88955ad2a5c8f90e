"""Multi-token GEMV on the CUDA cores: y[M,N] = x[M,K] @ w[N,K]^T for a few tokens (M <= BM), one launch, no
split, no workspace.

The one-token GEMVs (kernels/triton/gemv.py, router.py's router_gemv_fp32_kernel) reach 88-95% of the measured
HBM read bandwidth because every weight load of a program is issued before the first multiply: K is a
compile-time constant and the K loop is unrolled, so a program has its whole BN x K weight slice in flight. The
tensor-core split-K routes at M = 2-16 are latency-bound instead (4 warps per SM, a few K steps per program).
This kernel keeps the GEMV's weight stream and multiplies each weight chunk by all BM token rows of x (re-read
from L2 by every program: N/BN x M x K x 2 bytes of L2 traffic), accumulating a [BM, BN, BK] FP32 product that
is summed over K once at the end. Each output element is computed by exactly one program: a direct store.

The weight may be BF16 or FP32 (muse's router: FP32 weights, FP32 output, products exact in FP32); x is BF16.
Rows of x past M are masked to zero and never stored.

In no plan: the broadcast product costs far more than the weight stream (docs/kernels/gemv_rows.md).
"""
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["M"])
def gemv_rows_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_wn, stride_ym,
                     K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, CACHE: tl.constexpr):
    """grid (cdiv(N, BN), cdiv(M, BM)): BN weight rows x BM tokens per program, K unrolled in BK chunks."""
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    rm = tl.program_id(1) * BM + tl.arange(0, BM)
    rk = tl.arange(0, BK)
    n_ok = rn < N
    m_ok = rm < M
    acc = tl.zeros((BM, BN, BK), dtype=tl.float32)
    for k0 in tl.static_range(0, K, BK):
        w_ptrs = w_ptr + rn[:, None] * stride_wn + (k0 + rk)[None, :]
        # Each weight byte is read once: ".cg" keeps it out of L1; "" keeps the default modifier with an
        # evict_first hint (as the one-token GEMVs).
        if CACHE == "":
            w = tl.load(w_ptrs, mask=n_ok[:, None], other=0.0, eviction_policy="evict_first")
        else:
            w = tl.load(w_ptrs, mask=n_ok[:, None], other=0.0, cache_modifier=CACHE)
        # x is re-read by every program: ask L2 to keep it.
        x = tl.load(x_ptr + rm[:, None] * stride_xm + (k0 + rk)[None, :], mask=m_ok[:, None], other=0.0,
                    eviction_policy="evict_last")
        acc += x.to(tl.float32)[:, None, :] * w.to(tl.float32)[None, :, :]
    y = tl.sum(acc, axis=2)
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :], y.to(y_ptr.dtype.element_ty),
             mask=m_ok[:, None] & n_ok[None, :])
