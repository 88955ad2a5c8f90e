"""TMA ring benchmark (a script, not a test; GPU hosts with nvcc): what one bulk-copy ring per CTA streams from HBM.

    python3 tests/benchmarks/bench_tma_ring.py [--quick]

A kernel of 64 threads per CTA: lane 0 of the first warp arms a stage's mbarrier and issues its bulk copies
(cp.async.bulk, global to shared), the second warp waits for the stage, touches it and frees it; no compute. The
knobs: CTAs (1, 2 or 3 per SM), bytes per stage (4 to 32 KB), stages in flight (2 to 24), copies per stage, work
assignment (a contiguous range per CTA, or stages interleaved across CTAs) and an L2 evict_first hint. Each row is
timed beside the lab's HBM read probes of the same bytes (profiler.measure.probes.read_fns) by the lab's stream-mode
timer (profiler.measure.timing.StreamTimer): six buffer copies, more than L2 holds, back to back in one CUDA graph,
per call, replay overhead subtracted. Figures for comparing designs, not the lab's cold timings and not a run file.

What it printed on the H200 (2026-12-02, at commit 355ff55, when it timed with its own graph-replay loop, the
graph's launch gap included; 37.7 MB, read probe 3.60 TB/s): on one CTA per SM,
stages of 4, 8, 16 and 32 KB streamed 1.16-1.27, 2.07-2.50, 2.98-3.30 and 3.30-3.35 TB/s over depths of 2 to 24
stages; 16 KB as two 8 KB copies 3.26, as one 3.26; 8 KB stages on two or three CTAs per SM 2.98-3.26 and 3.17-3.29.
On 67.1 MB (probe 3.93 TB/s) 16 KB stages four deep reached 3.76. The stream is bounded by stages per second per CTA,
not by bytes in flight: kernels/cuda/cluster_wgmma.cu's KA atoms per stage follow from it.
Its timing has since moved to the lab's StreamTimer (the same rotation, the overhead subtracted); not yet re-run.
"""
import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from datasets.hardware import SMEM_PER_BLOCK_BYTES, SMEM_RESERVED_PER_BLOCK_BYTES  # noqa: E402
COPIES = 6
CU = r"""
#include <cuda_runtime.h>
#include <cstdint>
#include <torch/extension.h>
__device__ __forceinline__ uint32_t su(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void wait(uint64_t* b, uint32_t par) {
  asm volatile("{\n.reg .pred d;\nW_%=:\nmbarrier.try_wait.parity.shared::cta.b64 d, [%0], %1;\n@!d bra W_%=;\n}\n"
               :: "r"(su(b)), "r"(par) : "memory"); }
__global__ void __launch_bounds__(64, 1) ring(const uint8_t* __restrict__ src, long long nchunks, int chunk,
                                              int stages, int subs, int inter, int hint, int* sink) {
  extern __shared__ __align__(1024) uint8_t sm[];
  uint64_t* full = reinterpret_cast<uint64_t*>(sm);
  uint64_t* empty = full + 32;
  uint8_t* ringp = sm + 1024;
  const long long G = gridDim.x, b = blockIdx.x;
  long long c0, cnt, step;
  if (inter) { c0 = b; step = G; cnt = (nchunks - b + G - 1) / G; }
  else { c0 = b * nchunks / G; cnt = (b + 1) * nchunks / G - c0; step = 1; }
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(su(full + s)));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" :: "r"(su(empty + s)));
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  const int sub = chunk / subs;
  if (threadIdx.x < 32) {
    for (long long i = 0; i < cnt; ++i) {
      const int s = i % stages;
      if (i >= stages) wait(empty + s, ((i / stages) - 1) & 1);
      if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(su(full + s)), "r"(chunk) : "memory");
        const uint8_t* g = src + (c0 + i * step) * (long long)chunk;
        for (int j = 0; j < subs; ++j) {
          uint32_t dst = su(ringp + (size_t)s * chunk + j * sub);
          if (hint)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n"
                         :: "r"(dst), "l"(g + j * sub), "r"(sub), "r"(su(full + s)), "l"(pol) : "memory");
          else
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                         :: "r"(dst), "l"(g + j * sub), "r"(sub), "r"(su(full + s)) : "memory");
        }
      }
      __syncwarp();
    }
  } else {
    int acc = 0;
    for (long long i = 0; i < cnt; ++i) {
      const int s = i % stages;
      wait(full + s, (i / stages) & 1);
      acc += reinterpret_cast<const int*>(ringp + (size_t)s * chunk)[threadIdx.x - 32];
      __syncwarp();
      if (threadIdx.x == 32) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(su(empty + s)) : "memory");
    }
    if (acc == 0x7fffffff) sink[b] = acc;
  }
}
void run_ring(torch::Tensor src, int64_t nbytes, int64_t chunk, int64_t stages, int64_t subs, int64_t inter,
              int64_t hint, int64_t ctas, torch::Tensor sink) {
  const int smem = 1024 + stages * chunk;
  static int set = 0;
  if (!set) { cudaFuncSetAttribute(ring, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_PER_BLOCK_BYTES); set = 1; }
  ring<<<ctas, 64, smem, at::cuda::getCurrentCUDAStream()>>>(src.data_ptr<uint8_t>(), nbytes / chunk, chunk, stages,
      subs, inter, hint, sink.data_ptr<int>());
}
"""
DECL = ("void run_ring(torch::Tensor src, int64_t nbytes, int64_t chunk, int64_t stages, int64_t subs, "
        "int64_t inter, int64_t hint, int64_t ctas, torch::Tensor sink);")


def build():
    from torch.utils.cpp_extension import load_inline

    out = ROOT / "artifacts" / "bench_tma_ring"
    out.mkdir(parents=True, exist_ok=True)
    return load_inline(name="bench_tma_ring", cpp_sources=DECL,
                       cuda_sources=("#include <ATen/cuda/CUDAContext.h>\n"
                                     + CU.replace("SMEM_PER_BLOCK_BYTES", str(SMEM_PER_BLOCK_BYTES))), functions=["run_ring"],
                       extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], build_directory=str(out),
                       verbose=False)


def replay_us(timer, fns, rounds: int = 15) -> float:
    """Median µs per call of the fns captured back to back in one graph: the lab's stream-mode timer
    (profiler.measure.timing.StreamTimer: no flush, replay overhead subtracted, divided by the call count)."""
    import numpy as np

    return float(np.median(timer.sample([timer.capture(fns)], rounds)))


def grid(sm: int, quick: bool):
    rows = []
    for per_sm in ((1,) if quick else (1, 2, 3)):
        for chunk in (4096, 8192, 16384, 32768):
            for stages in ((2, 8, 24) if quick else (2, 4, 8, 12, 16, 24)):
                if 1024 + stages * chunk > SMEM_PER_BLOCK_BYTES // per_sm - SMEM_RESERVED_PER_BLOCK_BYTES:
                    continue
                for inter in ((0,) if quick else (0, 1)):
                    rows.append((per_sm * sm, chunk, stages, 1, inter, 0))
    rows += [(sm, 16384, 8, 2, 0, 0), (sm, 32768, 6, 4, 0, 0)]
    if not quick:
        rows += [(sm, 8192, 8, 1, 0, 1), (sm, 16384, 8, 1, 0, 1)]
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one CTA per SM, fewer depths, contiguous ranges only")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("bench_tma_ring: needs torch with CUDA (a GPU host)")
        return 2
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
        print("bench_tma_ring: needs an sm_90 GPU (bulk copies and mbarrier transaction counts)")
        return 2
    from kernels.cuda.build import find_nvcc
    if not find_nvcc():
        print("bench_tma_ring: needs a CUDA compiler (nvcc) to build its kernel")
        return 2
    from profiler.measure.probes import read_fns
    from profiler.measure.timing import StreamTimer

    t = time.time()
    mod = build()
    print(f"built in {time.time() - t:.0f} s")
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    timer = StreamTimer("cuda")
    print(f"{torch.cuda.get_device_name()}, {sm} SMs; replay overhead {timer.overhead_us:.2f} us (subtracted)")
    sink = torch.zeros(4 * sm, device="cuda", dtype=torch.int32)
    for label, nbytes in (("2304 x 8192 BF16 (qkv_gate)", 2304 * 8192 * 2), ("4096 x 8192 BF16 (pooler)", 4096 * 8192 * 2)):
        buf = torch.empty(COPIES * nbytes // 4, device="cuda", dtype=torch.float32).normal_()
        u8 = buf.view(torch.uint8)
        probe = {}
        for c in range(COPIES):
            for name, f in read_fns(buf[c * nbytes // 4:(c + 1) * nbytes // 4], nbytes, sm).items():
                probe.setdefault(name, []).append(f)
        pt = {n: replay_us(timer, fs) for n, fs in probe.items()}
        pb = min(pt, key=pt.get)
        print(f"== {label}: {nbytes / 1e6:.1f} MB; read probe {pt[pb]:.2f} us ({pb}) {nbytes / pt[pb] / 1e6:.2f} TB/s")
        print("   CTAs  stage  depth  copies  assign  hint      us   TB/s  of probe")
        for ctas, chunk, stages, subs, inter, hint in grid(sm, args.quick):
            fns = [lambda c=c, u8=u8: mod.run_ring(u8[c * nbytes:(c + 1) * nbytes], nbytes, chunk, stages, subs, inter,
                                            hint, ctas, sink) for c in range(COPIES)]
            us = replay_us(timer, fns)
            print(f"   {ctas:4d} {chunk // 1024:4d}KB {stages:6d} {subs:7d}  {'inter ' if inter else 'contig'} "
                  f"{hint:5d} {us:7.2f} {nbytes / us / 1e6:6.2f} {pt[pb] / us * 100:8.0f}%")
        del buf, u8, probe
    return 0


if __name__ == "__main__":
    sys.exit(main())
