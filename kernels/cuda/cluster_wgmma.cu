// Cluster wgmma for skinny-to-mid products y[M,N] = x[M,K] @ w[N,K]^T (BF16 x, w, y; FP32 accumulation) on
// Hopper's warpgroup MMA, fed by the tensor-memory accelerator (TMA), the token tile multicast across a
// thread-block cluster and the K-split partials summed through distributed shared memory in the same launch.
//
// Orientation. The weights are the MMA's 64-row A operand and the tokens its N: one CTA owns BW = 64*MI*NWG weight
// rows and BT tokens (wgmma m64nBTk16; each of the NWG consumer warpgroups issues MI of them per 16-wide K step).
// Both operands are K-major tiles of 64 K (128 bytes) per row in shared memory with the 128-byte swizzle, exactly
// as TMA writes them, so the MMAs read the ring directly (descriptors: leading offset unused, 1024-byte stride
// between 8-row groups, +32 bytes per K step). The weights are tile-packed at prepare ([N/BW, K/64, BW, 64]), so
// the weight box of one 64-wide K atom is one contiguous block; the tokens are read from x as they are. A ring stage
// holds KA consecutive atoms (1, 2 or 4: a weight box and a token box each; a template argument), one mbarrier
// cycle for all of them: a bulk-copy ring on one CTA per SM streams as many stages per second whatever their size
// up to 8 KB (tests/benchmarks/bench_tma_ring.py), so wider stages move more bytes per cycle.
//
// Grid and cluster. Grid (N/BW, CK, ceil(M/BT)); cluster (CN, CK, 1). The CK CTAs of a cluster column split K
// (contiguous ranges of whole stages); the CN CTAs of a cluster row hold CN neighbouring weight tiles of the same
// K range and need the same token tile: each loads BT/CN of its rows once and multicasts them to all CN (one L2
// read feeds CN SMs). Measured on the H200 the multicast configs never beat the unicast ones (CN = 1):
// docs/kernels/cluster_wgmma.md.
//
// Pipeline (warp specialization). Warpgroup 0 is the producer: its first warp waits until a ring slot is free in
// every CTA of its multicast group (the slot's `empty` mbarrier counts NWG arrivals from each of the CN CTAs), and
// its lane 0 arms the slot's `full` mbarrier with the whole stage's bytes (its W tile and all CN token slices) and
// issues the loads.
// Warpgroups 1..NWG are consumers: wait `full`, issue the stage's wgmmas asynchronously, and once the previous
// stage's MMAs completed (wgmma.wait_group 1) free that slot in every CTA of the group (remote mbarrier arrives).
// setmaxnreg moves registers from the producer to the consumers.
//
// Epilogue. Each CTA writes its FP32 partial tile into its own shared memory (over the drained ring); after a
// cluster barrier rank k of the K split sums rows [k*BW/CK, (k+1)*BW/CK) of the tile (integer bounds) over the
// CK peers' shared memory (DSMEM), converts to BF16 and writes y (consecutive threads on consecutive output
// columns). A second
// cluster barrier keeps every CTA resident while a peer still reads its memory. No global workspace, no second
// kernel, nothing to reset between graph replays.
//
// The router's variant (HILO, kernels/launch/cluster_wgmma.py prepare_router): the FP32 weights as interleaved
// hi/lo BF16 rows run through the same ring and MMAs; the epilogue adds each row pair and writes FP32 y.
#include <cooperative_groups.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace cg = cooperative_groups;

namespace projlab_cluster_wgmma {

constexpr int BK = 64;              // K per atom: one 128-byte swizzled row of BF16
constexpr int ROW_BYTES = BK * 2;
constexpr int BARRIER_BYTES = 1024; // the mbarriers, ahead of the 1024-byte aligned ring
constexpr int MAX_STAGES = 32;

template <int MI, int NWG, int BT>
struct Shape {
  static constexpr int BW = 64 * MI * NWG;          // weight rows per CTA
  static constexpr int THREADS = 128 * (NWG + 1);   // one producer warpgroup + NWG consumers
  static constexpr int W_BYTES = BW * ROW_BYTES;
  static constexpr int X_BYTES = BT * ROW_BYTES;
  static constexpr int STAGE_BYTES = W_BYTES + X_BYTES;
  static constexpr int PART_STRIDE = BT + 4;        // floats per partial row (the pad spreads banks)
  static constexpr int PART_BYTES = BW * PART_STRIDE * 4;
};

template <int MI, int NWG, int BT>
constexpr size_t smem_bytes(int stages, int ka) {
  using S = Shape<MI, NWG, BT>;
  const size_t ring = static_cast<size_t>(stages) * ka * S::STAGE_BYTES;
  return 1024 /* alignment slack */ + BARRIER_BYTES + (ring > S::PART_BYTES ? ring : S::PART_BYTES);
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// Arrive on the mbarrier at the same shared-memory offset in cluster CTA `rank` (this CTA included). The default
// (CTA-scope) release: the consumer's only accesses to the slot were its MMAs' reads, complete at wgmma.wait_group;
// a cluster-scope release adds a memory barrier per stage (measured on the H200 in warm graph replays, qkv_gate
// M=16, BT=16 CK=4: 24.9 us with it, 14.3 us without).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_u32(bar)),
      "r"(rank)
      : "memory");
}

// TMA: box at (k, row) of a 2-D tensor map into this CTA's shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, int k, int row, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(smem_u32(bar))
      : "memory");
}

// The same box written to the same offset of every CTA in `mask` (cluster ranks), each completing on its own
// mbarrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_multicast(void* dst, const CUtensorMap* map, int k, int row,
                                                   uint64_t* bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(smem_u32(bar)), "h"(mask)
      : "memory");
}

// wgmma shared-memory descriptor: K-major, 128-byte swizzle, 1024 bytes between 8-row groups.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return (static_cast<uint64_t>((addr & 0x3FFFF) >> 4)) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <int R>
__device__ __forceinline__ void acc_fence(float (&d)[R]) {   // keep the accumulators live across the async MMAs
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D[64 x N] (+)= A[64 x 16] * B[N x 16]^T, A and B from shared memory (descriptors), FP32 D in registers; with
// `accumulate` 0 the MMA overwrites D (the scale-d operand), so a new tile starts without writing the accumulator
// registers while an earlier MMA may still be in flight (ptxas serializes every wgmma of a kernel that does). One
// specialization per N below: they differ only in N and in the N/2 accumulator operands, which inline PTX must
// list one by one.
template <int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], uint64_t a, uint64_t b, int accumulate);

template <>
__device__ __forceinline__ void wgmma<16>(float (&d)[8], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7"
      "}, %8, %9, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma<32>(float (&d)[16], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
      "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma<64>(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma<128>(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma<256>(float (&d)[128], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      :
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a), "l"(b), "r"(accumulate));
}

// One ring stage's MMAs for consumer warpgroup `cw`: over the stage's ATOMS K atoms (each a W_BYTES weight box and
// an X_BYTES token box, STAGE_BYTES apart), its MI 64-row weight blocks against the BT token rows, the four 16-wide
// K steps per atom issued asynchronously and committed as one group (`accumulate` 0: the stage's first MMA
// overwrites the accumulators instead of adding to them). ATOMS is a compile-time count: over a runtime count ptxas
// fences the accumulators inside the loop (C7519).
template <int MI, int NWG, int BT, int ATOMS>
__device__ __forceinline__ void stage_mmas(float (&acc)[MI][BT / 2], uint32_t stage, int cw, int accumulate) {
  using S = Shape<MI, NWG, BT>;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) acc_fence(acc[mi]);
  wgmma_fence();
#pragma unroll
  for (int a = 0; a < ATOMS; ++a) {
    const uint32_t atom = stage + a * S::STAGE_BYTES;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const uint64_t b = sw128_desc(atom + S::W_BYTES + kk * 32);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
        wgmma<BT>(acc[mi], sw128_desc(atom + (cw * MI + mi) * 64 * ROW_BYTES + kk * 32), b,
                  a == 0 && kk == 0 ? accumulate : 1);
    }
  }
  wgmma_commit();
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) acc_fence(acc[mi]);
}

template <uint32_t R>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R)); }
template <uint32_t R>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R)); }

// Per-thread registers after setmaxnreg with two consumer warpgroups: 128 * (40 + 2 * 232) <= 64K. With one
// consumer (256 threads) the entry cap already leaves every thread what it needs, so the kernel keeps it.
template <int NWG>
struct Registers { static constexpr uint32_t producer = 40, consumer = 232; };

// HILO: the router's FP32 weights as two BF16 parts on interleaved weight rows (row 2j = bf16(W[j]), row 2j + 1 =
// bf16(W[j] - bf16(W[j]))), N counting those rows; the epilogue adds each pair in FP32 and writes FP32 y [M, N/2].
// Otherwise y is BF16 [M, N].
template <int MI, int NWG, int BT, int KA, bool HILO>
__global__ void __launch_bounds__(Shape<MI, NWG, BT>::THREADS, 1)
    cluster_wgmma_kernel(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
                         void* __restrict__ y, int M, int N, int K, int CN, int CK, int stages) {
  using S = Shape<MI, NWG, BT>;
  extern __shared__ uint8_t smem_raw[];
  // The same aligned offset in every CTA of the cluster (multicast and the remote arrives address by offset).
  uint8_t* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + MAX_STAGES;
  uint8_t* ring = smem + BARRIER_BYTES;

  cg::cluster_group cluster = cg::this_cluster();
  const uint32_t rank = cluster.block_rank();
  const int cn = static_cast<int>(rank) % CN, ck = static_cast<int>(rank) / CN;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  // K in ring stages of KA 64-wide atoms (K % (64 * KA) == 0, host-checked); rank ck of the split owns stages
  // [st0, st0 + nst).
  const int kb_total = K / BK, st_total = kb_total / KA;
  const int st0 = ck * st_total / CK, nst = (ck + 1) * st_total / CK - st0;
  constexpr uint32_t stage_bytes = static_cast<uint32_t>(KA) * S::STAGE_BYTES;
  const int w_row0 = blockIdx.x * S::BW, t0 = blockIdx.z * BT;

  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, NWG * CN);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster.sync();   // every peer's barriers exist before the first multicast or remote arrive

  if (wg == 0) {
    if constexpr (NWG > 1) setmaxnreg_dec<Registers<NWG>::producer>();
    if (tid < 32) {   // the whole first warp walks the ring (a converged warp); its lane 0 issues the loads
      const int slice = BT / CN;
      const uint16_t group = static_cast<uint16_t>(((1u << CN) - 1u) << (ck * CN));
      for (int i = 0; i < nst; ++i) {
        const int s = i % stages;
        if (i >= stages) mbar_wait(empty + s, ((i / stages) - 1) & 1);
        if (tid == 0) {
          uint8_t* stage = ring + static_cast<size_t>(s) * stage_bytes;
          mbar_arrive_expect_tx(full + s, stage_bytes);
#pragma unroll
          for (int a = 0; a < KA; ++a) {
            const int kb = (st0 + i) * KA + a;
            uint8_t* atom = stage + a * S::STAGE_BYTES;
            tma_load(atom, &wmap, 0, (blockIdx.x * kb_total + kb) * S::BW, full + s);
            uint8_t* xdst = atom + S::W_BYTES + cn * slice * ROW_BYTES;
            if (CN == 1)
              tma_load(xdst, &xmap, kb * BK, t0, full + s);
            else
              tma_load_multicast(xdst, &xmap, kb * BK, t0 + cn * slice, full + s, group);
          }
        }
        __syncwarp();
      }
    }
  } else {
    if constexpr (NWG > 1) setmaxnreg_inc<Registers<NWG>::consumer>();
    const int cw = wg - 1;
    float acc[MI][BT / 2];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int j = 0; j < BT / 2; ++j) acc[mi][j] = 0.f;
    for (int i = 0; i < nst; ++i) {
      const int s = i % stages;
      mbar_wait(full + s, (i / stages) & 1);
      const uint32_t stage = smem_u32(ring + static_cast<size_t>(s) * stage_bytes);
      stage_mmas<MI, NWG, BT, KA>(acc, stage, cw, 1);
      if (i > 0) {   // the previous stage's MMAs are done: free its slot in every CTA of the multicast group
        wgmma_wait<1>();
        if (tid < CN) mbar_arrive_cluster(empty + (i - 1) % stages, ck * CN + tid);
      }
    }
    wgmma_wait<0>();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) acc_fence(acc[mi]);
    // Every consumer has drained the ring before any partial overwrites it.
    asm volatile("bar.sync 1, %0;\n" ::"n"(NWG * 128) : "memory");
    float* part = reinterpret_cast<float*>(ring);
    const int warp = tid / 32, lane = tid % 32;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int r = (cw * MI + mi) * 64 + 16 * warp + lane / 4;
#pragma unroll
      for (int j = 0; j < BT / 8; ++j) {
        const int c = 8 * j + 2 * (lane % 4);
        *reinterpret_cast<float2*>(part + r * S::PART_STRIDE + c) = make_float2(acc[mi][4 * j], acc[mi][4 * j + 1]);
        *reinterpret_cast<float2*>(part + (r + 8) * S::PART_STRIDE + c) =
            make_float2(acc[mi][4 * j + 2], acc[mi][4 * j + 3]);
      }
    }
  }
  cluster.sync();   // every partial of the cluster is in shared memory

  if (wg > 0 && HILO) {
    // rank ck sums whole (hi, lo) row pairs [p0, p0 + pairs) of the tile over the CK peers, both rows of a pair
    // into one FP32 sum: output column (w_row0 / 2 + pair) of y.
    const int p0 = ck * (S::BW / 2) / CK, pairs = (ck + 1) * (S::BW / 2) / CK - p0;
    const float* part = reinterpret_cast<const float*>(ring);
    float* yf = static_cast<float*>(y);
    const int t = threadIdx.x - 128, n_out = N / 2, j0 = w_row0 / 2;
    for (int idx = t; idx < pairs * (BT / 4); idx += NWG * 128) {
      const int pr = p0 + idx % pairs, c = (idx / pairs) * 4, r = 2 * pr;
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int p = 0; p < CK; ++p) {
        const unsigned peer = static_cast<unsigned>(cn + p * CN);
        const float4 h = *reinterpret_cast<const float4*>(cluster.map_shared_rank(part + r * S::PART_STRIDE + c, peer));
        const float4 l =
            *reinterpret_cast<const float4*>(cluster.map_shared_rank(part + (r + 1) * S::PART_STRIDE + c, peer));
        sum.x += h.x + l.x; sum.y += h.y + l.y; sum.z += h.z + l.z; sum.w += h.w + l.w;
      }
      const float vals[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (t0 + c + q < M) yf[static_cast<size_t>(t0 + c + q) * n_out + j0 + pr] = vals[q];
    }
  } else if (wg > 0) {
    const int row0 = ck * S::BW / CK, rows = (ck + 1) * S::BW / CK - row0;
    const float* part = reinterpret_cast<const float*>(ring);
    __nv_bfloat16* yb = static_cast<__nv_bfloat16*>(y);
    const int t = threadIdx.x - 128;
    for (int idx = t; idx < rows * (BT / 4); idx += NWG * 128) {
      const int r = row0 + idx % rows, c = (idx / rows) * 4;
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int p = 0; p < CK; ++p) {
        const float4 v = *reinterpret_cast<const float4*>(
            cluster.map_shared_rank(part + r * S::PART_STRIDE + c, static_cast<unsigned>(cn + p * CN)));
        sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
      }
      const float vals[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (t0 + c + q < M) yb[static_cast<size_t>(t0 + c + q) * N + w_row0 + r] = __float2bfloat16(vals[q]);
    }
  }
  cluster.sync();   // no CTA leaves while a peer still reads its shared memory
}

// ------------------------------------------------------------------------------------------------ stream-K
// streamk_wgmma: the same producer / consumer pipeline on P CTAs (one per SM) over equal runs of the work units
// (weight tile, token tile, 64-wide K block), taken tile after tile, each tile in K order. The ring flows across
// tile boundaries (no pipeline restart), and P need not divide the tiles: every CTA streams the same number of
// weight blocks at any N. A CTA that covers a whole tile writes y from its registers. A tile split between CTAs
// (at most the first and the last tile of each CTA's run) is summed by its last finisher: each part stores its
// FP32 partial into its own workspace slot (2p for CTA p's first tile, 2p + 1 for its last), fences, and counts
// itself in the tile's counter; the part that counts last adds the others' slots to its registers, writes y and
// sets the counter back to zero, so nothing needs resetting between launches or graph replays.

__device__ __forceinline__ void mbar_arrive_local(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}

// CTA p's run of work units is [run_start(p), run_start(p + 1)); run_owner(u) is the CTA whose run holds unit u.
__device__ __forceinline__ int run_start(int p, int P, int U) {
  return static_cast<int>(static_cast<long long>(p) * U / P);
}
__device__ __forceinline__ int run_owner(int u, int P, int U) {
  return static_cast<int>(((static_cast<long long>(u) + 1) * P - 1) / U);
}

template <int MI, int NWG, int BT>
constexpr size_t streamk_smem_bytes(int stages) {
  return 1024 /* alignment slack */ + BARRIER_BYTES + static_cast<size_t>(stages) * Shape<MI, NWG, BT>::STAGE_BYTES;
}

template <int MI, int NWG, int BT>
__global__ void __launch_bounds__(Shape<MI, NWG, BT>::THREADS, 1)
    streamk_wgmma_kernel(const __grid_constant__ CUtensorMap wmap, const __grid_constant__ CUtensorMap xmap,
                         __nv_bfloat16* __restrict__ y, float* __restrict__ ws, int* __restrict__ counts, int M,
                         int N, int K, int stages) {
  using S = Shape<MI, NWG, BT>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + MAX_STAGES;
  volatile int* last_flag = reinterpret_cast<volatile int*>(empty + MAX_STAGES);   // inside BARRIER_BYTES
  uint8_t* ring = smem + BARRIER_BYTES;

  const int P = gridDim.x, p = blockIdx.x;
  const int kb_total = K / BK, tiles_n = N / S::BW;
  const int U = tiles_n * ((M + BT - 1) / BT) * kb_total;   // < 2^31 for any N, K the launcher admits
  const int u0 = run_start(p, P, U), n_units = run_start(p + 1, P, U) - u0;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, NWG);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    if constexpr (NWG > 1) setmaxnreg_dec<Registers<NWG>::producer>();
    if (tid < 32) {   // as in the cluster kernel: the first warp walks the ring, its lane 0 issues the loads
      int kb = u0 % kb_total, tile = u0 / kb_total;   // the unit's K block and tile, stepped along the run
      for (int i = 0; i < n_units; ++i, kb = kb + 1 == kb_total ? 0 : kb + 1, tile += kb == 0) {
        const int s = i % stages;
        if (i >= stages) mbar_wait(empty + s, ((i / stages) - 1) & 1);
        if (tid == 0) {
          uint8_t* stage = ring + static_cast<size_t>(s) * S::STAGE_BYTES;
          mbar_arrive_expect_tx(full + s, S::STAGE_BYTES);
          tma_load(stage, &wmap, 0, ((tile % tiles_n) * kb_total + kb) * S::BW, full + s);
          tma_load(stage + S::W_BYTES, &xmap, kb * BK, (tile / tiles_n) * BT, full + s);
        }
        __syncwarp();
      }
    }
    return;
  }

  if constexpr (NWG > 1) setmaxnreg_inc<Registers<NWG>::consumer>();
  const int cw = wg - 1, warp = tid / 32, lane = tid % 32;
  float acc[MI][BT / 2];
  int pending = -1;          // the stage whose MMAs may still be in flight, not yet given back to the producer
  int seg_kb = u0 % kb_total;   // the K block the current tile segment started at
  int next_kb = seg_kb, next_tile = u0 / kb_total;
  for (int i = 0; i < n_units; ++i) {
    const int kb = next_kb, tile = next_tile;
    next_kb = kb + 1 == kb_total ? 0 : kb + 1;
    next_tile += next_kb == 0;
    const bool fresh = kb == seg_kb;   // a segment's first K block: its first MMA overwrites the accumulators
    const int s = i % stages;
    mbar_wait(full + s, (i / stages) & 1);
    stage_mmas<MI, NWG, BT, 1>(acc, smem_u32(ring + static_cast<size_t>(s) * S::STAGE_BYTES), cw, fresh ? 0 : 1);
    if (pending >= 0) {
      wgmma_wait<1>();
      if (tid == 0) mbar_arrive_local(empty + pending % stages);
    }
    pending = i;
    if (kb != kb_total - 1 && i != n_units - 1) continue;

    // ---- the end of a tile segment (its K blocks seg_kb..kb of tile)
    wgmma_wait<0>();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) acc_fence(acc[mi]);
    if (tid == 0) mbar_arrive_local(empty + s);
    pending = -1;
    const int tn = tile % tiles_n, t0 = (tile / tiles_n) * BT;
    const bool first_tile = tile == u0 / kb_total;   // the run's first tile (its slot 2p; the last tile's: 2p + 1)
    const bool whole = seg_kb == 0 && kb == kb_total - 1;
    seg_kb = 0;                                       // every later segment starts at its tile's first K block
    if (!whole) {
      float* slot = ws + (2 * static_cast<size_t>(p) + (first_tile ? 0 : 1)) * S::BW * BT;
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const int r = (cw * MI + mi) * 64 + 16 * warp + lane / 4;
#pragma unroll
        for (int j = 0; j < BT / 8; ++j) {
          const int c = 8 * j + 2 * (lane % 4);
          __stcg(reinterpret_cast<float2*>(slot + r * BT + c), make_float2(acc[mi][4 * j], acc[mi][4 * j + 1]));
          __stcg(reinterpret_cast<float2*>(slot + (r + 8) * BT + c),
                 make_float2(acc[mi][4 * j + 2], acc[mi][4 * j + 3]));
        }
      }
      __threadfence();
      asm volatile("bar.sync 1, %0;\n" ::"n"(NWG * 128) : "memory");
      const int first = run_owner(tile * kb_total, P, U), last = run_owner(tile * kb_total + kb_total - 1, P, U);
      if (threadIdx.x == 128) {
        __threadfence();
        const bool done = atomicAdd(counts + tile, 1) == last - first;
        if (done) counts[tile] = 0;   // every part has counted: no one touches it again in this launch
        *last_flag = done;
      }
      asm volatile("bar.sync 1, %0;\n" ::"n"(NWG * 128) : "memory");
      const bool done = *last_flag;
      asm volatile("bar.sync 1, %0;\n" ::"n"(NWG * 128) : "memory");   // the flag is read before it is rewritten
      if (!done) continue;
      __threadfence();
      for (int q = first; q <= last; ++q) {
        if (q == p) continue;
        // tile is CTA q's first tile when q's run starts inside it, else its last
        const bool q_first = run_start(q, P, U) / kb_total == tile;
        const float* other = ws + (2 * static_cast<size_t>(q) + (q_first ? 0 : 1)) * S::BW * BT;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          const int r = (cw * MI + mi) * 64 + 16 * warp + lane / 4;
#pragma unroll
          for (int j = 0; j < BT / 8; ++j) {
            const int c = 8 * j + 2 * (lane % 4);
            const float2 a = __ldcg(reinterpret_cast<const float2*>(other + r * BT + c));
            const float2 b = __ldcg(reinterpret_cast<const float2*>(other + (r + 8) * BT + c));
            acc[mi][4 * j] += a.x; acc[mi][4 * j + 1] += a.y;
            acc[mi][4 * j + 2] += b.x; acc[mi][4 * j + 3] += b.y;
          }
        }
      }
    }
    // ---- y for the whole tile (rows: weights, columns: tokens)
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const int n = tn * S::BW + (cw * MI + mi) * 64 + 16 * warp + lane / 4;
#pragma unroll
      for (int j = 0; j < BT / 8; ++j) {
        const int t = t0 + 8 * j + 2 * (lane % 4);
        if (t < M) {
          y[static_cast<size_t>(t) * N + n] = __float2bfloat16(acc[mi][4 * j]);
          y[static_cast<size_t>(t) * N + n + 8] = __float2bfloat16(acc[mi][4 * j + 2]);
        }
        if (t + 1 < M) {
          y[static_cast<size_t>(t + 1) * N + n] = __float2bfloat16(acc[mi][4 * j + 1]);
          y[static_cast<size_t>(t + 1) * N + n + 8] = __float2bfloat16(acc[mi][4 * j + 3]);
        }
      }
    }
  }
  // Every path out of the loop passed a segment end (wgmma_wait<0>), but ptxas cannot see that: without this wait
  // it guards the exit itself and serializes every wgmma of the kernel (ptxas C7518).
  wgmma_wait<0>();
}

// ------------------------------------------------------------------------------------------------ host

inline PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
            cudaSuccess && q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// A row-major BF16 [rows, K] tensor as TMA boxes of 64 K x box_rows rows, 128-byte swizzle, zero fill past the end.
inline bool make_map(CUtensorMap* map, const void* base, int rows, int K, int box_rows) {
  auto fn = encode_fn();
  if (!fn) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(K), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(K) * 2};
  const cuuint32_t box[2] = {BK, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, elem,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The running device's opt-in shared memory per block (cudaDevAttrMaxSharedMemoryPerBlockOptin), asked at every
// launch: a launch needing more is refused with cudaErrorInvalidValue before it is configured.
inline bool fits_device(size_t smem) {
  int dev = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
    return false;
  return smem <= static_cast<size_t>(optin);
}

// The kernel's launch: its shared-memory opt-ins, grid, block and cluster shape (`attr` must outlive `cfg`).
template <int MI, int NWG, int BT, int KA, bool HILO>
cudaError_t launch_config(int N, int M, int CN, int CK, int stages, cudaStream_t stream, cudaLaunchAttribute& attr,
                          cudaLaunchConfig_t& cfg) {
  using S = Shape<MI, NWG, BT>;
  auto kernel = cluster_wgmma_kernel<MI, NWG, BT, KA, HILO>;
  const size_t smem = smem_bytes<MI, NWG, BT>(stages, KA);
  if (!fits_device(smem)) return cudaErrorInvalidValue;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err == cudaSuccess && CN * CK > 8)
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cfg = {};
  cfg.gridDim = dim3(N / S::BW, CK, (M + BT - 1) / BT);
  cfg.blockDim = dim3(S::THREADS, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = CN;
  attr.val.clusterDim.y = CK;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return err;
}

template <int MI, int NWG, int BT, int KA, bool HILO>
cudaError_t launch_one(const void* x, const void* w, void* y, int M, int N, int K, int CN, int CK, int stages,
                       cudaStream_t stream) {
  using S = Shape<MI, NWG, BT>;
  // whole stages of KA atoms for every rank of the K split (the kernel's stage count rounds down otherwise)
  if (K % (BK * KA) || K / (BK * KA) < CK) return cudaErrorInvalidValue;
  CUtensorMap wmap, xmap;
  // w is tile-packed (kernels/launch/cluster_wgmma.py pack): [N/BW, K/64, BW, 64], so each atom's weight box is
  // one contiguous BW * 128 bytes; its map is that array as rows of 64.
  if (!make_map(&wmap, w, N / 64 * (K / 64) * 64, BK, S::BW) || !make_map(&xmap, x, M, K, BT / CN))
    return cudaErrorInvalidValue;
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t cfg;
  const cudaError_t err = launch_config<MI, NWG, BT, KA, HILO>(N, M, CN, CK, stages, stream, attr, cfg);
  if (err != cudaSuccess) return err;
  return cudaLaunchKernelEx(&cfg, cluster_wgmma_kernel<MI, NWG, BT, KA, HILO>, wmap, xmap, y, M, N, K, CN, CK,
                            stages);
}

// How many clusters of this configuration the device holds at once (cudaOccupancyMaxActiveClusters; 0: none fits).
template <int MI, int NWG, int BT, int KA, bool HILO>
int max_clusters_one(int N, int M, int CN, int CK, int stages) {
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t cfg;
  if (launch_config<MI, NWG, BT, KA, HILO>(N, M, CN, CK, stages, nullptr, attr, cfg) != cudaSuccess) return -1;
  int count = 0;
  return cudaOccupancyMaxActiveClusters(&count, cluster_wgmma_kernel<MI, NWG, BT, KA, HILO>, &cfg) == cudaSuccess
             ? count
             : -1;
}

// KA atoms per stage is a template argument of the kernel: one instance per (MI, NWG, BT, KA), KA = 4 only where two
// such stages fit in shared memory (the registry's configs never ask for more). Measured on the H200, the kernel
// with a runtime atom count (its producer's loop and the consumer's choice among three MMA blocks) ran the same KA = 1
// configs up to 1.5x slower than the single-atom kernel before it (docs/kernels/cluster_wgmma.md).
// Which KA = 4 instances are compiled at all: the most shared memory a block may opt into on sm_90 (CUDA C
// Programming Guide, compute capability 9.0; datasets/devices.py SM90). The device's own limit is asked at every
// launch (fits_device), so a device with less never gets a ring it cannot hold.
constexpr size_t SM90_SMEM_PER_BLOCK_OPTIN = 227 * 1024;

template <int MI, int NWG, int BT>
constexpr bool fits_ka4() { return smem_bytes<MI, NWG, BT>(2, 4) <= SM90_SMEM_PER_BLOCK_OPTIN; }


template <int MI, int NWG, int BT>
cudaError_t launch_ka(const void* x, const void* w, void* y, int M, int N, int K, int CN, int CK, int stages, int ka,
                      cudaStream_t stream) {
  if (ka == 1) return launch_one<MI, NWG, BT, 1, false>(x, w, y, M, N, K, CN, CK, stages, stream);
  if (ka == 2) return launch_one<MI, NWG, BT, 2, false>(x, w, y, M, N, K, CN, CK, stages, stream);
  if constexpr (fits_ka4<MI, NWG, BT>())
    if (ka == 4) return launch_one<MI, NWG, BT, 4, false>(x, w, y, M, N, K, CN, CK, stages, stream);
  return cudaErrorInvalidValue;
}

template <int MI, int NWG, int BT>
int max_clusters_ka(int N, int M, int CN, int CK, int stages, int ka) {
  if (ka == 1) return max_clusters_one<MI, NWG, BT, 1, false>(N, M, CN, CK, stages);
  if (ka == 2) return max_clusters_one<MI, NWG, BT, 2, false>(N, M, CN, CK, stages);
  if constexpr (fits_ka4<MI, NWG, BT>())
    if (ka == 4) return max_clusters_one<MI, NWG, BT, 4, false>(N, M, CN, CK, stages);
  return -1;
}

// streamk_wgmma on P CTAs: ws holds 2 * P * BW * BT floats, counts one int per (weight tile, token tile), zero
// before the first launch (every launch leaves them zero).
template <int MI, int NWG, int BT>
cudaError_t launch_streamk_one(const void* x, const void* w, void* y, float* ws, int* counts, int M, int N, int K,
                               int P, int stages, cudaStream_t stream) {
  using S = Shape<MI, NWG, BT>;
  CUtensorMap wmap, xmap;
  if (!make_map(&wmap, w, N / 64 * (K / 64) * 64, BK, S::BW) || !make_map(&xmap, x, M, K, BT))
    return cudaErrorInvalidValue;
  auto kernel = streamk_wgmma_kernel<MI, NWG, BT>;
  const size_t smem = streamk_smem_bytes<MI, NWG, BT>(stages);
  if (!fits_device(smem)) return cudaErrorInvalidValue;
  const cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  kernel<<<P, S::THREADS, smem, stream>>>(wmap, xmap, static_cast<__nv_bfloat16*>(y), ws, counts, M, N, K, stages);
  return cudaGetLastError();
}

// The compiled (MI, NWG, BT) instances; kernels/methods_library.py WGMMA_COMPILED lists the same (a test checks).
#define PROJLAB_WGMMA_CASES(X) \
  X(1, 2, 16)                  \
  X(1, 2, 32)                  \
  X(1, 2, 64)                  \
  X(1, 2, 128)                 \
  X(1, 2, 256)                 \
  X(2, 2, 128)                 \
  X(1, 1, 16)                  \
  X(1, 1, 32)                  \
  X(1, 1, 64)                  \
  X(1, 1, 128)                 \
  X(1, 1, 256)

inline cudaError_t launch(const void* x, const void* w, void* y, int M, int N, int K, int MI, int NWG, int BT,
                          int CN, int CK, int stages, int ka, cudaStream_t stream) {
#define PROJLAB_CASE(mi, nwg, bt) \
  if (MI == mi && NWG == nwg && BT == bt)  \
    return launch_ka<mi, nwg, bt>(x, w, y, M, N, K, CN, CK, stages, ka, stream);
  PROJLAB_WGMMA_CASES(PROJLAB_CASE)
#undef PROJLAB_CASE
  return cudaErrorInvalidValue;
}

inline cudaError_t launch_streamk(const void* x, const void* w, void* y, float* ws, int* counts, int M, int N,
                                  int K, int MI, int NWG, int BT, int P, int stages, cudaStream_t stream) {
#define PROJLAB_CASE(mi, nwg, bt) \
  if (MI == mi && NWG == nwg && BT == bt)  \
    return launch_streamk_one<mi, nwg, bt>(x, w, y, ws, counts, M, N, K, P, stages, stream);
  PROJLAB_WGMMA_CASES(PROJLAB_CASE)
#undef PROJLAB_CASE
  return cudaErrorInvalidValue;
}

inline int max_clusters(int N, int M, int MI, int NWG, int BT, int CN, int CK, int stages, int ka) {
#define PROJLAB_CASE(mi, nwg, bt) \
  if (MI == mi && NWG == nwg && BT == bt) return max_clusters_ka<mi, nwg, bt>(N, M, CN, CK, stages, ka);
  PROJLAB_WGMMA_CASES(PROJLAB_CASE)
#undef PROJLAB_CASE
  return -1;
}

// The router's hi/lo instances (HILO: FP32 y from interleaved hi/lo weight rows), one or two atoms a stage;
// kernels/methods_library.py WGMMA_HILO_COMPILED lists the same (a test checks).
#define PROJLAB_WGMMA_HILO_CASES(X) \
  X(1, 1, 32)                       \
  X(1, 1, 64)                       \
  X(1, 1, 128)                      \
  X(1, 1, 256)                      \
  X(1, 2, 64)                       \
  X(1, 2, 128)

inline cudaError_t launch_hilo(const void* x, const void* w, float* y, int M, int N, int K, int MI, int NWG, int BT,
                               int CN, int CK, int stages, int ka, cudaStream_t stream) {
#define PROJLAB_CASE(mi, nwg, bt)                                                                        \
  if (MI == mi && NWG == nwg && BT == bt) {                                                             \
    if (ka == 1) return launch_one<mi, nwg, bt, 1, true>(x, w, y, M, N, K, CN, CK, stages, stream);    \
    if (ka == 2) return launch_one<mi, nwg, bt, 2, true>(x, w, y, M, N, K, CN, CK, stages, stream);    \
  }
  PROJLAB_WGMMA_HILO_CASES(PROJLAB_CASE)
#undef PROJLAB_CASE
  return cudaErrorInvalidValue;
}

inline int max_clusters_hilo(int N, int M, int MI, int NWG, int BT, int CN, int CK, int stages, int ka) {
#define PROJLAB_CASE(mi, nwg, bt)                                                              \
  if (MI == mi && NWG == nwg && BT == bt) {                                                   \
    if (ka == 1) return max_clusters_one<mi, nwg, bt, 1, true>(N, M, CN, CK, stages);        \
    if (ka == 2) return max_clusters_one<mi, nwg, bt, 2, true>(N, M, CN, CK, stages);        \
  }
  PROJLAB_WGMMA_HILO_CASES(PROJLAB_CASE)
#undef PROJLAB_CASE
  return -1;
}

}  // namespace projlab_cluster_wgmma
