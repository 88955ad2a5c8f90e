// Cluster split-K for skinny products y[M,N] = x[M,K] @ w[N,K]^T on tensor cores, FP32 accumulation.
//   BF16:  x, w, y BF16.
//   HILO:  the router's FP32 weights as two BF16 parts H = bf16(W), L = bf16(W - H) (split at prepare), both
//          multiplied into one FP32 accumulator; FP32 y.
//
// Work split. A thread-block cluster of S blocks (S = 1: a plain launch) shares one tile of BN = 16*R*RW weight
// rows; block `rank` of the cluster owns the K slice [rank*K/S, (rank+1)*K/S). Inside a block RW x KW warps: warp
// (rw, kw) multiplies R 16-row groups of the tile (rows [16*R*rw, 16*R*(rw+1))) by the 8*NT tokens over its 1/KW of
// the block's slice (mma.sync m16n8k16: the weights as the 16-row A operand, the tokens as the 8-column B
// operand). R > 1 lets R groups share each token fragment a lane loads.
//
// Operands. The weights are tile-packed at prepare (kernels/launch/cluster_splitk.py `pack`): per 16-row group and
// 32-wide K step one contiguous block, 1 KB for BF16 (rows 0-7, then rows 8-15; lane l's 16 bytes at l*16 of each
// half) and 2 KB for HILO (H's two halves, then L's). Every weight load of a warp is therefore 512 contiguous bytes.
// Each lane's 16 bytes are 8 BF16 along K of one row and feed two MMAs: the fragment layout wants, per lane, K
// indices {2t, 2t+1, 2t+8, 2t+9} of a 16-wide step; a dot product does not care in which order K is visited, so the
// same permutation of K is applied to both operands (fragment k 2t,2t+1 <- memory k 8t,8t+1; 2t+8,2t+9 <- 8t+2,8t+3;
// the second MMA takes 8t+4..8t+7). The token rows are read from x as they are ([M, K], 16 bytes per lane).
//
// Pipeline. Register double buffering: a stage is U K steps of every operand a lane needs; the loads of stage
// i+1 are issued before the MMAs of stage i, so one stage of loads is always in flight behind the MMAs. Weights
// are read once (ld.global.cs, evict-first); tokens through the read-only path (re-read by every weight tile).
// PIPE picks how operands reach the MMAs: 0 these register stages; 1 (XS) the token chunk staged per block in a
// shared-memory ring, registers for the weights only; 2 lane rings, each lane's operands copied D steps ahead into
// its own shared-memory slots by cp.async (kernels/methods_library.py names the three methods).
//
// Reduction, in the same launch: the KW warp partials through the block's shared memory; with S > 1 each block
// then reads its 1/S share of the tile's outputs from every peer's shared memory (cluster.map_shared_rank), sums
// in FP32 and writes y. Two cluster barriers: partials complete before any peer reads them, and no block exits
// while a peer still reads its memory. No global workspace, no second kernel, nothing to reset between calls.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace cg = cooperative_groups;

namespace projlab_cluster_splitk {

constexpr int STEP = 32;   // K per step: 4 lanes x 8 BF16

__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One pipeline stage: U K steps of a lane's weight halves (2, or 4 with HILO) of R row groups, and token rows (NT).
template <int NT, int R, int U, bool HILO>
struct Stage {
  static constexpr int WH = HILO ? 4 : 2;
  uint4 w[U][R][WH];
  uint4 b[U][NT];
};

// wp: the lane's slot in its first group's block; group r's blocks are `gstride` uint4 further on.
template <int NT, int R, int U, bool HILO>
__device__ __forceinline__ void load_stage(Stage<NT, R, U, HILO>& s, const uint4* wp, size_t gstride,
                                           const uint4* const (&xr)[NT], const bool (&xv)[NT], int step) {
  constexpr int WB = HILO ? 128 : 64;   // uint4 per packed (16-row group, K step) block
#pragma unroll
  for (int u = 0; u < U; ++u) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint4* p = wp + r * gstride + static_cast<size_t>(step + u) * WB;
#pragma unroll
      for (int h = 0; h < Stage<NT, R, U, HILO>::WH; ++h) s.w[u][r][h] = __ldcs(p + 32 * h);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j)
      s.b[u][j] = xv[j] ? __ldg(xr[j] + (step + u) * (STEP / 8)) : make_uint4(0u, 0u, 0u, 0u);
  }
}

template <int NT, int R, int U, bool HILO>
__device__ __forceinline__ void mma_stage(float (&acc)[R][NT][4], const Stage<NT, R, U, HILO>& s) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int p = 0; p < Stage<NT, R, U, HILO>::WH; p += 2) {   // p = 0: W (or H); p = 2: L
          const uint4& lo = s.w[u][r][p];       // rows g
          const uint4& hi = s.w[u][r][p + 1];   // rows g + 8
          mma_bf16_16816(acc[r][j], lo.x, hi.x, lo.y, hi.y, s.b[u][j].x, s.b[u][j].y);
          mma_bf16_16816(acc[r][j], lo.z, hi.z, lo.w, hi.w, s.b[u][j].z, s.b[u][j].w);
        }
      }
    }
  }
}

template <bool HILO>
__device__ __forceinline__ void store_y(void* y, size_t i, float v) {
  if constexpr (HILO) {
    static_cast<float*>(y)[i] = v;
  } else {
    static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16(v);
  }
}

// cp.async: 16 bytes global -> shared, zero-filled past `bytes` (0: a token row past M reads as zeros).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// XS: the token tile staged in shared memory. All warps of a block walk the same K range (KW = 1); per stage of U
// steps the block copies the MT x 32U token chunk into a ring of XSTAGES slots (cp.async, rows padded by 16 bytes
// so a fragment read is conflict-free), and each warp reads its token fragments from there: the registers hold
// only weights in flight, and a token byte crosses L2 once per block instead of once per warp.
constexpr int XSTAGES = 4;

template <int NT, int R, int U>
struct WStage {
  uint4 w[U][R][2];
};

template <int NT, int R, int U>
__device__ __forceinline__ void load_w(WStage<NT, R, U>& s, const uint4* wp, size_t gstride, int step) {
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint4* p = wp + r * gstride + static_cast<size_t>(step + u) * 64;
      s.w[u][r][0] = __ldcs(p);
      s.w[u][r][1] = __ldcs(p + 32);
    }
}

template <int NT, int R, int U>
__device__ __forceinline__ void mma_xs(float (&acc)[R][NT][4], const WStage<NT, R, U>& s,
                                       const __nv_bfloat16* slot, int g, int t) {
  constexpr int XROW = STEP * U + 8;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    uint4 b[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j)
      b[j] = *reinterpret_cast<const uint4*>(slot + (j * 8 + g) * XROW + u * STEP + t * 8);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const uint4& lo = s.w[u][r][0];
        const uint4& hi = s.w[u][r][1];
        mma_bf16_16816(acc[r][j], lo.x, hi.x, lo.y, hi.y, b[j].x, b[j].y);
        mma_bf16_16816(acc[r][j], lo.z, hi.z, lo.w, hi.w, b[j].z, b[j].w);
      }
  }
}

template <int RW, int KW, int NT, int R, int U, bool HILO, int PIPE>
__global__ void __launch_bounds__(RW * KW * 32, (RW * KW * 32 <= 256) ? 2 : 1)
cluster_splitk_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ wpk,
                      void* __restrict__ y, int M, int N, int K, int S) {
  constexpr int BN = 16 * R * RW;   // weight rows (outputs n) per tile
  constexpr int MT = 8 * NT;        // tokens per tile
  constexpr int WB = HILO ? 128 : 64;
  extern __shared__ float part[];   // [KW][MT][BN] warp partials; slot 0 ends as the block's partial
  const int rank = S > 1 ? static_cast<int>(cg::this_cluster().block_rank()) : 0;
  const int tile = blockIdx.x / S;
  const int n0 = tile * BN;
  const int m0 = blockIdx.y * MT;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rw = warp % RW, kw = warp / RW;
  const int g = lane >> 2, t = lane & 3;
  const int k_warp = K / S / KW;                      // K of one warp
  const int step0 = (rank * (K / S) + kw * k_warp) / STEP;
  const int steps = k_warp / STEP;
  const int group = (tile * RW + rw) * R;             // the warp's first 16-row group of the packed weights
  const size_t gstride = static_cast<size_t>(K / STEP) * WB;

  const uint4* wp = reinterpret_cast<const uint4*>(wpk) + group * gstride + static_cast<size_t>(step0) * WB + lane;
  const uint4* xr[NT];
  bool xv[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int m = m0 + j * 8 + g;
    xv[j] = m < M;
    xr[j] = reinterpret_cast<const uint4*>(x + static_cast<size_t>(xv[j] ? m : 0) * K + step0 * STEP + t * 8);
  }
  float acc[R][NT][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[r][j][0] = acc[r][j][1] = acc[r][j][2] = acc[r][j][3] = 0.f;

  // Two register stages, each U steps; the launcher's guard makes `steps` a multiple of U.
  const int iters = steps / U;
  if constexpr (PIPE == 1) {
    static_assert(KW == 1 && !HILO, "XS: every warp of the block walks the same K range");
    constexpr int XCH = STEP * U, XROW = XCH + 8;
    __nv_bfloat16* xs = reinterpret_cast<__nv_bfloat16*>(part + MT * BN);
    const int kb = step0 * STEP;   // the block's K origin (KW = 1)
    auto issue = [&](int c) {       // chunk c of the block's K range into its ring slot; always one commit group
      if (c < iters) {
        __nv_bfloat16* slot = xs + (c % XSTAGES) * (MT * XROW);
        for (int i = threadIdx.x; i < MT * (XCH / 8); i += blockDim.x) {
          const int row = i / (XCH / 8), col = (i % (XCH / 8)) * 8, m = m0 + row;
          cp_async16(slot + row * XROW + col, x + static_cast<size_t>(m < M ? m : 0) * K + kb + c * XCH + col,
                     m < M ? 16 : 0);
        }
      }
      cp_async_commit();
    };
    auto ready = [&](int c) {       // chunk c landed for every thread; chunk c-1's slot free for reuse
      cp_async_wait<XSTAGES - 2>();
      __syncthreads();
      issue(c + XSTAGES - 1);
      return xs + (c % XSTAGES) * (MT * XROW);
    };
#pragma unroll
    for (int c = 0; c < XSTAGES - 1; ++c) issue(c);
    WStage<NT, R, U> sa, sb;
    load_w(sa, wp, gstride, 0);
    int it = 0;
    for (; it + 2 <= iters; it += 2) {
      const __nv_bfloat16* s0 = ready(it);
      load_w(sb, wp, gstride, (it + 1) * U);
      mma_xs(acc, sa, s0, g, t);
      const __nv_bfloat16* s1 = ready(it + 1);
      if (it + 2 < iters) load_w(sa, wp, gstride, (it + 2) * U);
      mma_xs(acc, sb, s1, g, t);
    }
    if (it < iters) mma_xs(acc, sa, ready(it), g, t);
    cp_async_wait<0>();
  } else if constexpr (PIPE == 2) {
    // Lane rings: each lane copies the operands it will itself read U = D steps ahead into its own shared-memory
    // slots (cp.async, lane-interleaved: conflict-free), so no barrier or warp shuffle is needed and the bytes in
    // flight are set by the ring depth, not by the registers.
    constexpr int WH = HILO ? 4 : 2, PER = R * WH + NT, D = U;
    uint4* ring = reinterpret_cast<uint4*>(part + KW * MT * BN) + static_cast<size_t>(warp) * (D * 32 * PER) + lane;
    auto issue = [&](int st) {
      if (st < steps) {
        uint4* slot = ring + (st % D) * (32 * PER);
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int h = 0; h < WH; ++h)
            cp_async16(slot + (r * WH + h) * 32, wp + r * gstride + static_cast<size_t>(st) * WB + 32 * h, 16);
#pragma unroll
        for (int j = 0; j < NT; ++j)
          cp_async16(slot + (R * WH + j) * 32, xr[j] + st * (STEP / 8), xv[j] ? 16 : 0);
      }
      cp_async_commit();
    };
#pragma unroll
    for (int st = 0; st < D - 1; ++st) issue(st);
    for (int st = 0; st < steps; ++st) {
      cp_async_wait<D - 2>();   // step st has landed (this lane's own copies)
      issue(st + D - 1);         // into the slot read at st - 1, whose MMAs have issued
      const uint4* slot = ring + (st % D) * (32 * PER);
      uint4 b[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) b[j] = slot[(R * WH + j) * 32];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        uint4 wv[WH];
#pragma unroll
        for (int h = 0; h < WH; ++h) wv[h] = slot[(r * WH + h) * 32];
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int q = 0; q < WH; q += 2) {
            mma_bf16_16816(acc[r][j], wv[q].x, wv[q + 1].x, wv[q].y, wv[q + 1].y, b[j].x, b[j].y);
            mma_bf16_16816(acc[r][j], wv[q].z, wv[q + 1].z, wv[q].w, wv[q + 1].w, b[j].z, b[j].w);
          }
      }
    }
    cp_async_wait<0>();
  } else {
    Stage<NT, R, U, HILO> sa, sb;
    load_stage(sa, wp, gstride, xr, xv, 0);
    int it = 0;
    for (; it + 2 <= iters; it += 2) {
      load_stage(sb, wp, gstride, xr, xv, (it + 1) * U);
      mma_stage(acc, sa);
      if (it + 2 < iters) load_stage(sa, wp, gstride, xr, xv, (it + 2) * U);
      mma_stage(acc, sb);
    }
    if (it < iters) mma_stage(acc, sa);
  }

  // Accumulator fragment: d0,d1 = (row g, tokens 2t, 2t+1), d2,d3 = (row g+8, same tokens).
  float* mine = part + kw * (MT * BN);
#pragma unroll
  for (int q = 0; q < R; ++q)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int c = j * 8 + 2 * t, r = (rw * R + q) * 16 + g;
      mine[c * BN + r] = acc[q][j][0];
      mine[(c + 1) * BN + r] = acc[q][j][1];
      mine[c * BN + r + 8] = acc[q][j][2];
      mine[(c + 1) * BN + r + 8] = acc[q][j][3];
    }
  __syncthreads();
  if (S == 1) {   // no peers: the block's sum is the output
    for (int i = threadIdx.x; i < MT * BN; i += blockDim.x) {
      float s = part[i];
#pragma unroll
      for (int v = 1; v < KW; ++v) s += part[v * (MT * BN) + i];
      const int m = m0 + i / BN;
      if (m < M) store_y<HILO>(y, static_cast<size_t>(m) * N + n0 + i % BN, s);
    }
    return;
  }
  if (KW > 1) {
    for (int i = threadIdx.x; i < MT * BN; i += blockDim.x) {
      float s = part[i];
#pragma unroll
      for (int v = 1; v < KW; ++v) s += part[v * (MT * BN) + i];
      part[i] = s;
    }
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();   // every block's partial is complete and visible to its peers

  const int share = MT * BN / S;
  for (int i = rank * share + threadIdx.x; i < (rank + 1) * share; i += blockDim.x) {
    float s = 0.f;
    for (int p = 0; p < S; ++p) s += cluster.map_shared_rank(part, p)[i];
    const int m = m0 + i / BN;
    if (m < M) store_y<HILO>(y, static_cast<size_t>(m) * N + n0 + i % BN, s);
  }
  cluster.sync();   // no block leaves while a peer still reads its shared memory
}

template <int RW, int KW, int NT, int R, int U, bool HILO, int PIPE = 0>
cudaError_t launch_one(const void* x, const void* w, void* y, int M, int N, int K, int S, cudaStream_t stream) {
  constexpr int BN = 16 * R * RW, MT = 8 * NT;
  const size_t smem = sizeof(float) * KW * MT * BN +
                      (PIPE == 1 ? sizeof(__nv_bfloat16) * XSTAGES * MT * (STEP * U + 8) : 0) +
                      (PIPE == 2 ? sizeof(uint4) * RW * KW * U * 32 * (R * (HILO ? 4 : 2) + NT) : 0);
  auto kernel = cluster_splitk_kernel<RW, KW, NT, R, U, HILO, PIPE>;
  // Once per instantiation (the first, eager call): a CUDA graph capture then sees only the launch.
  static cudaError_t attr_err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (attr_err != cudaSuccess) return attr_err;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(N / BN * S), static_cast<unsigned>((M + MT - 1) / MT), 1);
  config.blockDim = dim3(RW * KW * 32, 1, 1);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(S);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = S > 1 ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, static_cast<const __nv_bfloat16*>(x),
                            static_cast<const __nv_bfloat16*>(w), y, M, N, K, S);
}

// The compiled (RW, KW, NT, R, U) sets, BF16, BF16 with XS, BF16 with lane rings (U = ring depth D) and HILO; kernels/methods_library.py lists the same values (a test
// checks both agree). R and U chosen so two stages and the accumulators stay in registers (no spills, -Xptxas -v).
cudaError_t launch(const void* x, const void* w, void* y, int M, int N, int K, int S, int RW, int KW, int NT, int R,
                   int pipe, bool hilo, cudaStream_t stream) {
#define PROJLAB_CASE(rw, kw, nt, r, u)                                \
  if (!hilo && pipe == 0 && RW == rw && KW == kw && NT == nt && R == r)     \
    return launch_one<rw, kw, nt, r, u, false>(x, w, y, M, N, K, S, stream);
#define PROJLAB_XS_CASE(rw, kw, nt, r, u)                             \
  if (!hilo && pipe == 1 && RW == rw && KW == kw && NT == nt && R == r)      \
    return launch_one<rw, kw, nt, r, u, false, 1>(x, w, y, M, N, K, S, stream);
#define PROJLAB_RING_CASE(rw, kw, nt, r, d)                           \
  if (!hilo && pipe == 2 && RW == rw && KW == kw && NT == nt && R == r) \
    return launch_one<rw, kw, nt, r, d, false, 2>(x, w, y, M, N, K, S, stream);
#define PROJLAB_HILO_CASE(rw, kw, nt, r, u)                           \
  if (hilo && pipe == 0 && RW == rw && KW == kw && NT == nt && R == r)      \
    return launch_one<rw, kw, nt, r, u, true>(x, w, y, M, N, K, S, stream);
  PROJLAB_CASE(1, 4, 1, 1, 4) PROJLAB_CASE(2, 4, 1, 1, 4) PROJLAB_CASE(1, 8, 1, 1, 4) PROJLAB_CASE(2, 8, 1, 1, 4)
  PROJLAB_CASE(1, 4, 2, 2, 2) PROJLAB_CASE(2, 4, 2, 2, 2) PROJLAB_CASE(1, 8, 2, 2, 2) PROJLAB_CASE(2, 8, 2, 2, 2)
  PROJLAB_CASE(1, 4, 4, 2, 1) PROJLAB_CASE(2, 4, 4, 2, 1) PROJLAB_CASE(1, 8, 4, 2, 1) PROJLAB_CASE(2, 8, 4, 2, 1)
  PROJLAB_CASE(1, 4, 2, 3, 2) PROJLAB_CASE(1, 4, 2, 4, 2) PROJLAB_CASE(1, 4, 4, 3, 1) PROJLAB_CASE(1, 4, 4, 4, 1)
  PROJLAB_CASE(1, 2, 4, 4, 1)
  PROJLAB_XS_CASE(4, 1, 2, 1, 4) PROJLAB_XS_CASE(8, 1, 2, 1, 4) PROJLAB_XS_CASE(4, 1, 4, 1, 4)
  PROJLAB_XS_CASE(8, 1, 4, 1, 4) PROJLAB_XS_CASE(4, 1, 4, 2, 2) PROJLAB_XS_CASE(8, 1, 2, 2, 2)
  PROJLAB_RING_CASE(1, 8, 1, 1, 8) PROJLAB_RING_CASE(1, 4, 1, 1, 8) PROJLAB_RING_CASE(1, 4, 1, 2, 16)
  PROJLAB_RING_CASE(1, 4, 2, 2, 8) PROJLAB_RING_CASE(1, 8, 2, 1, 8) PROJLAB_RING_CASE(1, 4, 2, 1, 8)
  PROJLAB_RING_CASE(1, 4, 4, 2, 8) PROJLAB_RING_CASE(1, 4, 4, 1, 8) PROJLAB_RING_CASE(1, 8, 4, 1, 4)
  PROJLAB_HILO_CASE(1, 4, 1, 1, 2) PROJLAB_HILO_CASE(1, 8, 1, 1, 2) PROJLAB_HILO_CASE(1, 4, 2, 1, 2)
  PROJLAB_HILO_CASE(1, 8, 2, 1, 2) PROJLAB_HILO_CASE(1, 4, 4, 1, 1) PROJLAB_HILO_CASE(1, 8, 4, 1, 1)
#undef PROJLAB_CASE
#undef PROJLAB_XS_CASE
#undef PROJLAB_RING_CASE
#undef PROJLAB_HILO_CASE
  return cudaErrorInvalidValue;
}

}  // namespace projlab_cluster_splitk
