"""Single-launch split-K with the operands swapped: y^T[N, M] = w[N, K] @ x^T[K, M], for small M.

The `splitk_atomic` kernels put the few token rows of x in the MMA's M dimension (padded to 16 or 32 rows) and
feed the weight as the second operand, which on sm_90 keeps them on the warp-level `mma.sync` path: every
weight tile goes shared memory -> registers (ldmatrix) before each MMA. Here the weight tile [BN, BK] is the
first operand, so its rows fill the 64-row dimension that Hopper's warpgroup MMA (wgmma) needs, and the tokens
are the MMA's N dimension (BM = 16, 32, 64 or 128): both operands are read from shared memory by the tensor
cores, asynchronously, and M = 17-32 costs one tile instead of two. (cuBLAS picks the same orientation for
these shapes: its kernels here are named `..._tst_64x16_...`, 64 weight rows by 16 tokens.)

The K slices and the reduction are those of kernels/triton/splitk_atomic_v2.py: slice s covers K steps
[s*T/SPLIT, (s+1)*T/SPLIT) of T = K/BK (a compile-time trip count when SPLIT divides T), each split adds its
FP32 partial into a persistent zeroed FP32 workspace, bumps an acq_rel arrival counter per output tile, and the
last arriver takes the sum out with an atomic exchange (leaving zeros), writes y and resets the counter: one
launch, no memset, graph-replay safe. The workspace is stored [N, MAX_M] (token-contiguous), the orientation
of the accumulator, so a thread's adjacent accumulator values are adjacent addresses.

HILO=True is the router's hi/lo scheme (FP32 weight W = H + L, H = bf16(W), L = bf16(W - H)): the second
weight pointer holds L with H's strides; both products go into the one FP32 accumulator.

In no plan: never ahead of splitk_atomic_v2 or F.linear, far behind at M >= 128, where every weight tile re-reads x
from L2 (docs/kernels/splitk_swap.md).
"""
import triton
import triton.language as tl

from kernels.triton.splitk_atomic import add_and_finish
from kernels.triton.splitk_atomic_v2 import k_slice


@triton.jit(do_not_specialize=["M"])
def splitk_swap_kernel(x_ptr, w_ptr, lo_ptr, y_ptr, ws_ptr, cnt_ptr, M, N, stride_xm, stride_w, stride_ym,
                       stride_ws, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                       SPLIT: tl.constexpr, HILO: tl.constexpr):
    """y[M,N] = x[M,K] @ w[N,K]^T (HILO: @ (w + lo)^T); grid (N/BN, SPLIT, cdiv(M, BM)); BM = tokens per tile."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    pid_m = tl.program_id(2)
    k_lo, n_steps = k_slice(pid_s, K // BK, SPLIT)
    rm = pid_m * BM + tl.arange(0, BM)
    row_ok = rm < M
    rm_load = tl.where(row_ok, rm, 0)                   # padded tokens re-read row 0; their outputs are dropped
    rn = pid_n * BN + tl.arange(0, BN)
    rk = k_lo * BK + tl.arange(0, BK)
    w_off = rn[:, None] * stride_w + rk[None, :]                  # [BN, BK] tile of w, K contiguous
    xt_ptrs = x_ptr + rm_load[None, :] * stride_xm + rk[:, None]  # [BK, BM] view of x^T
    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for i in range(0, n_steps):
        xt = tl.load(xt_ptrs)
        # Each weight byte is read once: ".cg" keeps it in L2 only, out of the L1 that holds x.
        acc = tl.dot(tl.load(w_ptr + w_off, cache_modifier=".cg"), xt, acc)
        if HILO:
            acc = tl.dot(tl.load(lo_ptr + w_off, cache_modifier=".cg"), xt, acc)
        xt_ptrs += BK
        w_off += BK
    mask = (rn < N)[:, None] & row_ok[None, :]
    y_ptrs = y_ptr + rm[None, :] * stride_ym + rn[:, None]
    if SPLIT == 1:
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        ws_ptrs = ws_ptr + rn[:, None] * stride_ws + rm[None, :]
        # No mask on the workspace: whole BN tiles of N (the launcher checks N % BN == 0) and whole BM tiles of
        # tokens, which stay inside its MAX_M columns (BM divides MAX_M), so the padded tokens' partials land in
        # columns no output reads and are zeroed with the rest. A mask on M (a runtime value) would stop the adds
        # from being vectorised along the token-contiguous workspace rows (one atomic per element instead of
        # one per 4: tests/kernels/test_compile_swap.py).
        add_and_finish(acc, ws_ptrs, None, y_ptrs, mask, cnt_ptr, pid_m * tl.num_programs(0) + pid_n, SPLIT, BN, BM)
