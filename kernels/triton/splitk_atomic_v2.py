"""Single-launch split-K, second design round: the `splitk_atomic` kernel with the weight stream and the tail as
knobs, for y[M,N] = x[M,K] @ w^T.

Same reduction as kernels/triton/splitk_atomic.py (FP32 atomic adds into a persistent zeroed workspace, an
acq_rel arrival counter per output tile, the last arriver takes the sum out with an atomic exchange, writes y
and resets the counter: one launch, no memset, graph-replay safe). What differs, each a constexpr:

- W_KN: the weight is stored [K, N] row-major (made once at prepare), so a [BK, BN] tile is BK rows of BN
  contiguous elements; W_KN=False reads the [N, K] weight as a transposed [BK, BN] view, as splitk_atomic does.
- W_LOAD: how the weight tile is fetched -- "cg" (pointer loads that Triton's software pipeliner turns into
  16-byte cp.async copies into shared memory) or "tma" (a host-built tensor descriptor: Hopper's bulk tensor copy,
  one instruction per tile); "pack" and "pack_tma" do the same from the weight re-laid at prepare as
  [N/BN, K/BK, BN, BK] (kernels/launch/packed.py `pack`), so each K step's tile is one contiguous BN*BK*2-byte
  block and a program's whole K slice one contiguous run, where the [N, K] layout gives BN runs of BK*2 bytes
  (128 bytes at BK=64) spaced a weight row apart. The pipelined pointer load is cp.async.cg whatever cache
  modifier or eviction policy tl.load is given (sm_90 PTX of "", ".cg" and evict_first compared identical,
  triton 3.6), so those are not knobs here.
- No L2 prefetch of the tile's workspace lines and counter at program start: both ways of doing it
  (`prefetch.global.L2` hints, zero adds by `red`) measured slower at every shape (docs/kernels/splitk_atomic_v2.md).
- SPLIT need not divide the K steps: slice s covers K steps [s*T/SPLIT, (s+1)*T/SPLIT) of T = K/BK, so the
  program count N/BN * SPLIT can be a multiple of the 132 SMs (e.g. 36 tiles x 11 = 3 x 132 at qkv_gate).
  When it divides, the trip count is a compile-time constant, as in splitk_atomic.
"""
import triton
import triton.language as tl

from kernels.triton.splitk_atomic import add_and_finish

@triton.jit
def k_slice(pid_s, STEPS: tl.constexpr, SPLIT: tl.constexpr):
    """(first K step, number of K steps) of slice pid_s of STEPS steps cut into SPLIT slices: [s*T/SPLIT,
    (s+1)*T/SPLIT), T/SPLIT rounded down or up; a compile-time trip count when SPLIT divides T."""
    if STEPS % SPLIT == 0:
        return pid_s * (STEPS // SPLIT), STEPS // SPLIT
    else:
        k_lo = pid_s * STEPS // SPLIT
        return k_lo, (pid_s + 1) * STEPS // SPLIT - k_lo


@triton.jit
def _load_w(w_ptrs, w_desc, pid_n, ks, BN: tl.constexpr, BK: tl.constexpr, W_KN: tl.constexpr,
            W_LOAD: tl.constexpr, STEPS: tl.constexpr):
    """The [BK, BN] tile of w^T at K step ks."""
    if W_LOAD == "pack_tma":
        # w_desc views the packed [N/BN, STEPS, BN, BK] weight as [N/BN * STEPS * BN, BK] rows.
        w = w_desc.load([(pid_n * STEPS + ks) * BN, 0]).T
    elif W_LOAD == "tma":
        if W_KN:
            w = w_desc.load([ks * BK, pid_n * BN])
        else:
            w = w_desc.load([pid_n * BN, ks * BK]).T
    else:
        # Each weight byte is read once: ".cg" keeps it in L2 only (what an unpipelined load would honour).
        w = tl.load(w_ptrs, cache_modifier=".cg")
    return w


@triton.jit(do_not_specialize=["M"])
def splitk_atomic2_kernel(x_ptr, w_ptr, w_desc, y_ptr, ws_ptr, cnt_ptr, M, N, stride_xm, stride_w, stride_ym,
                          K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          SPLIT: tl.constexpr, W_KN: tl.constexpr, W_LOAD: tl.constexpr):
    """y[M,N] = x[M,K] @ w^T with w [N,K] (W_KN=False) or w^T stored [K,N] (W_KN=True);
    grid (N/BN, SPLIT, cdiv(M, BM))."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    pid_m = tl.program_id(2)
    k_lo, n_steps = k_slice(pid_s, K // BK, SPLIT)
    rm = pid_m * BM + tl.arange(0, BM)
    row_ok = rm < M
    rm_load = tl.where(row_ok, rm, 0)                   # padded rows re-read row 0; their outputs are dropped
    rn = pid_n * BN + tl.arange(0, BN)
    tile = pid_m * tl.num_programs(0) + pid_n
    rk = k_lo * BK + tl.arange(0, BK)
    x_ptrs = x_ptr + rm_load[:, None] * stride_xm + rk[None, :]
    if W_LOAD == "pack" or W_LOAD == "pack_tma":
        # Packed [N/BN, STEPS, BN, BK]: tile (pid_n, step) starts at ((pid_n * STEPS + step) * BN) * BK.
        rows = (pid_n * (K // BK) + k_lo) * BN + tl.arange(0, BN)
        w_ptrs = w_ptr + rows[None, :] * BK + tl.arange(0, BK)[:, None]   # [BK, BN] view of the packed tile
        w_step = BN * BK
    elif W_KN:
        w_ptrs = w_ptr + rk[:, None] * stride_w + rn[None, :]     # [BK, BN] rows of wT, contiguous along N
        w_step = BK * stride_w
    else:
        w_ptrs = w_ptr + rn[None, :] * stride_w + rk[:, None]     # [BK, BN] view of w^T
        w_step = BK
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for i in range(0, n_steps):
        x = tl.load(x_ptrs)
        w = _load_w(w_ptrs, w_desc, pid_n, k_lo + i, BN, BK, W_KN, W_LOAD, K // BK)
        acc = tl.dot(x, w, acc)
        x_ptrs += BK
        w_ptrs += w_step
    mask = row_ok[:, None] & (rn < N)[None, :]
    y_ptrs = y_ptr + rm[:, None] * stride_ym + rn[None, :]
    if SPLIT == 1:
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        add_and_finish(acc, ws_ptr + rm[:, None] * N + rn[None, :], mask, y_ptrs, mask, cnt_ptr, tile, SPLIT, BM, BN)
