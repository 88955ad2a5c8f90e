"""@triton.jit kernel for a one-token GEMV over short rows (the o-projection: K=1024, N=8192, 16 MB of BF16).

Where a K-looping GEMV with one row per program loses to cuBLAS (each program has only 2 KB to read), this
kernel gives each program many rows and keeps whole rows in registers: K is a compile-time constant, the K steps
are unrolled and unmasked, so a program issues BN*K*2 bytes of 16-byte loads before its first multiply.
"""
import triton
import triton.language as tl


@triton.jit
def gemv_wide_kernel(x_ptr, w_ptr, y_ptr, stride_wn,
                     K: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, CACHE: tl.constexpr):
    """y[1,N] = x[1,K] @ w[N,K]^T; program p owns rows p*BN..p*BN+BN-1 (N % BN == 0, K % BK == 0), fp32 accumulate."""
    rows = tl.program_id(0) * BN + tl.arange(0, BN)
    cols = tl.arange(0, BK)
    acc = tl.zeros((BN, BK), dtype=tl.float32)
    for k0 in tl.static_range(0, K, BK):
        w_ptrs = w_ptr + rows[:, None] * stride_wn + (k0 + cols)[None, :]
        # Streamed once: ".cg" skips L1; "" uses the default path with an evict_first hint.
        if CACHE == "":
            w = tl.load(w_ptrs, eviction_policy="evict_first")
        else:
            w = tl.load(w_ptrs, cache_modifier=CACHE)
        # The 2 KB input row is read by every program: keep it (evict_last).
        x = tl.load(x_ptr + (k0 + cols)[None, :], eviction_policy="evict_last")   # [1, BK]: same layout as w
        acc += w.to(tl.float32) * x.to(tl.float32)
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + rows, y.to(y_ptr.dtype.element_ty))
