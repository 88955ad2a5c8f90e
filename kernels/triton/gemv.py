"""GEMV for one token row: y[1,N] = x[1,K] @ w[N,K]^T, BN output rows per program."""
import triton
import triton.language as tl


@triton.jit
def gemv_kernel(x_ptr, w_ptr, y_ptr, N, K, stride_wn,
                BN: tl.constexpr, BK: tl.constexpr, CACHE: tl.constexpr):
    """y[1,N] = x[1,K] @ w[N,K]^T; program p owns rows p*BN..p*BN+BN-1 and walks K in BK steps (fp32 accumulate)."""
    rows = tl.program_id(0) * BN + tl.arange(0, BN)
    cols = tl.arange(0, BK)
    row_ok = rows < N
    acc = tl.zeros((BN, BK), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + cols
        k_ok = k < K
        w_ptrs = w_ptr + rows[:, None] * stride_wn + k[None, :]
        mask = row_ok[:, None] & k_ok[None, :]
        # Every weight byte is read exactly once: keep it out of the caches it would only pollute.
        # CACHE=".cg" caches in L2 only (bypasses L1) -- the seed's 036 choice for QKV/pooler at M=1;
        # CACHE="" uses the default modifier with an evict_first hint instead.
        if CACHE == "":
            w = tl.load(w_ptrs, mask=mask, other=0.0, eviction_policy="evict_first")
        else:
            w = tl.load(w_ptrs, mask=mask, other=0.0, cache_modifier=CACHE)
        # The input vector is re-read by every program: ask the cache to keep it (evict_last).
        x = tl.load(x_ptr + k, mask=k_ok, other=0.0, eviction_policy="evict_last")
        acc += w.to(tl.float32) * x.to(tl.float32)[None, :]
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + rows, y.to(y_ptr.dtype.element_ty), mask=row_ok)
