// Cluster split-K for skinny products y[M,N] = x[M,K] @ w[N,K]^T (BF16 in and out, FP32 accumulation).
//
// A thread-block cluster of S blocks shares one BN-row tile of the weights; block `rank` of the cluster owns the
// K slice [rank*K/S, (rank+1)*K/S). Inside a block, RW x KW warps: warp (rw, kw) multiplies weight rows
// [16*rw, 16*rw+16) of the tile by the 8*NT tokens over its 1/KW of the block's slice, on tensor cores
// (mma.sync m16n8k16, the weights as the 16-row A operand, the tokens as the 8-column B operand). The partials
// are summed without a global workspace: the KW warp partials through the block's shared memory, then the S block
// partials through distributed shared memory (each block reads its 1/S share of the tile's outputs from every
// peer's shared memory with cluster.map_shared_rank, sums in FP32, writes BF16 y). Two cluster barriers: the
// partials are complete before any peer reads them, and no block exits while a peer still reads its memory.
//
// Operand loads: each lane loads 16 contiguous bytes (8 BF16 along K) of its weight rows and token row per
// 32-wide K step and feeds them to two mma.sync. The MMA's fragment layout wants, per lane, K indices
// {2t, 2t+1, 2t+8, 2t+9} of a 16-wide step; a dot product does not care in which order K is visited, so the
// same permutation of K is applied to both operands (fragment k 2t,2t+1 <- memory k 8t,8t+1; 2t+8,2t+9 <-
// 8t+2,8t+3; the second MMA takes 8t+4..8t+7). A and B see the same K index in every product term.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace cg = cooperative_groups;

namespace projlab_cluster_splitk {

constexpr int UNROLL = 4;   // 32-wide K steps loaded before their MMAs (16 B per lane per operand row each)

__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int RW, int KW, int NT>
__global__ void __launch_bounds__(RW * KW * 32)
cluster_splitk_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                      __nv_bfloat16* __restrict__ y, int M, int N, int K, int S) {
  constexpr int BN = 16 * RW;   // weight rows (outputs n) per tile
  constexpr int MT = 8 * NT;    // tokens per tile
  extern __shared__ float part[];   // [KW][MT][BN] warp partials; slot 0 ends as the block's partial
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int n0 = (blockIdx.x / S) * BN;
  const int m0 = blockIdx.y * MT;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rw = warp % RW, kw = warp / RW;
  const int g = lane >> 2, t = lane & 3;
  const int k_warp = K / S / KW;
  const int k_begin = rank * (K / S) + kw * k_warp + t * 8;

  const uint4* w0 = reinterpret_cast<const uint4*>(w + static_cast<size_t>(n0 + rw * 16 + g) * K + k_begin);
  const uint4* w1 = reinterpret_cast<const uint4*>(w + static_cast<size_t>(n0 + rw * 16 + g + 8) * K + k_begin);
  const uint4* xr[NT];
  bool xv[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int m = m0 + j * 8 + g;
    xv[j] = m < M;
    xr[j] = reinterpret_cast<const uint4*>(x + static_cast<size_t>(xv[j] ? m : 0) * K + k_begin);
  }
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  // One uint4 is 8 BF16: a 32-wide K step advances a row pointer by 4 uint4.
  for (int k = 0; k < k_warp; k += 32 * UNROLL) {
    const int q = k / 8;
    uint4 a_lo[UNROLL], a_hi[UNROLL], b[UNROLL][NT];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      a_lo[u] = __ldcs(w0 + q + 4 * u);   // weights are read once: evict-first
      a_hi[u] = __ldcs(w1 + q + 4 * u);
#pragma unroll
      for (int j = 0; j < NT; ++j) b[u][j] = xv[j] ? __ldg(xr[j] + q + 4 * u) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma_bf16_16816(acc[j], a_lo[u].x, a_hi[u].x, a_lo[u].y, a_hi[u].y, b[u][j].x, b[u][j].y);
        mma_bf16_16816(acc[j], a_lo[u].z, a_hi[u].z, a_lo[u].w, a_hi[u].w, b[u][j].z, b[u][j].w);
      }
    }
  }

  // Accumulator fragment: d0,d1 = (row g, tokens 2t, 2t+1), d2,d3 = (row g+8, same tokens).
  float* mine = part + kw * (MT * BN);
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int c = j * 8 + 2 * t, r = rw * 16 + g;
    mine[c * BN + r] = acc[j][0];
    mine[(c + 1) * BN + r] = acc[j][1];
    mine[c * BN + r + 8] = acc[j][2];
    mine[(c + 1) * BN + r + 8] = acc[j][3];
  }
  __syncthreads();
  if (KW > 1) {
    for (int i = threadIdx.x; i < MT * BN; i += blockDim.x) {
      float s = part[i];
#pragma unroll
      for (int v = 1; v < KW; ++v) s += part[v * (MT * BN) + i];
      part[i] = s;
    }
  }
  cluster.sync();   // every block's partial is complete and visible to its peers

  const int share = MT * BN / S;
  for (int i = rank * share + threadIdx.x; i < (rank + 1) * share; i += blockDim.x) {
    float s = 0.f;
    for (int p = 0; p < S; ++p) s += cluster.map_shared_rank(part, p)[i];
    const int m = m0 + i / BN, n = n0 + i % BN;
    if (m < M) y[static_cast<size_t>(m) * N + n] = __float2bfloat16(s);
  }
  cluster.sync();   // no block leaves while a peer still reads its shared memory
}

template <int RW, int KW, int NT>
cudaError_t launch_one(const void* x, const void* w, void* y, int M, int N, int K, int S, cudaStream_t stream) {
  constexpr int BN = 16 * RW, MT = 8 * NT;
  const size_t smem = sizeof(float) * KW * MT * BN;
  auto kernel = cluster_splitk_kernel<RW, KW, NT>;
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
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, static_cast<const __nv_bfloat16*>(x),
                            static_cast<const __nv_bfloat16*>(w), static_cast<__nv_bfloat16*>(y), M, N, K, S);
}

// The compiled (RW, KW, NT) set; kernels/methods_library.py lists the same values (a test checks both agree).
cudaError_t launch(const void* x, const void* w, void* y, int M, int N, int K, int S, int RW, int KW, int NT,
                   cudaStream_t stream) {
#define PROJLAB_CASE(rw, kw, nt) \
  if (RW == rw && KW == kw && NT == nt) return launch_one<rw, kw, nt>(x, w, y, M, N, K, S, stream);
  PROJLAB_CASE(2, 2, 1) PROJLAB_CASE(2, 2, 2) PROJLAB_CASE(2, 2, 4)
  PROJLAB_CASE(2, 4, 1) PROJLAB_CASE(2, 4, 2) PROJLAB_CASE(2, 4, 4)
  PROJLAB_CASE(4, 1, 1) PROJLAB_CASE(4, 1, 2) PROJLAB_CASE(4, 1, 4)
  PROJLAB_CASE(4, 2, 1) PROJLAB_CASE(4, 2, 2) PROJLAB_CASE(4, 2, 4)
#undef PROJLAB_CASE
  return cudaErrorInvalidValue;
}

}  // namespace projlab_cluster_splitk
