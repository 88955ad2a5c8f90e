// torch binding of cluster_wgmma.cu (compiled in the same translation unit by kernels/cuda/build.py).
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

// x [M, K] BF16 contiguous (16-byte aligned rows, TMA); w the tile-packed BF16 weights of N rows
// (kernels/launch/cluster_wgmma.py pack); y [M, N] BF16.
torch::Tensor cluster_wgmma(torch::Tensor x, torch::Tensor w, int64_t N, int64_t MI, int64_t NWG, int64_t BT,
                            int64_t CN, int64_t CK, int64_t stages, int64_t KA) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "cluster_wgmma: x and w must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16,
              "cluster_wgmma: x and w must be bfloat16");
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && w.is_contiguous() && w.numel() == N * x.size(1),
              "cluster_wgmma: x [M, K] contiguous and the packed w holding N x K");
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = torch::empty({x.size(0), N}, x.options());
  const cudaError_t err = projlab_cluster_wgmma::launch(
      x.data_ptr(), w.data_ptr(), y.data_ptr(), static_cast<int>(x.size(0)), static_cast<int>(N),
      static_cast<int>(x.size(1)), static_cast<int>(MI), static_cast<int>(NWG), static_cast<int>(BT),
      static_cast<int>(CN), static_cast<int>(CK), static_cast<int>(stages), static_cast<int>(KA),
      c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cluster_wgmma: launch failed: ", cudaGetErrorString(err));
  return y;
}

// Clusters of this configuration resident at once on the current device (-1: the query failed).
int64_t cluster_wgmma_max_clusters(int64_t N, int64_t M, int64_t MI, int64_t NWG, int64_t BT, int64_t CN, int64_t CK,
                                   int64_t stages, int64_t KA) {
  return projlab_cluster_wgmma::max_clusters(static_cast<int>(N), static_cast<int>(M), static_cast<int>(MI),
                                             static_cast<int>(NWG), static_cast<int>(BT), static_cast<int>(CN),
                                             static_cast<int>(CK), static_cast<int>(stages), static_cast<int>(KA));
}

// streamk_wgmma: x [M, K] BF16 contiguous, w tile-packed as for cluster_wgmma, ws FP32 (2 * P * BW * BT), counts
// int32 (one per weight tile and token tile, zero); y [M, N] BF16.
torch::Tensor streamk_wgmma(torch::Tensor x, torch::Tensor w, torch::Tensor ws, torch::Tensor counts, int64_t N,
                            int64_t MI, int64_t NWG, int64_t BT, int64_t P, int64_t stages) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda() && ws.is_cuda() && counts.is_cuda(),
              "streamk_wgmma: x, w, ws and counts must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16,
              "streamk_wgmma: x and w must be bfloat16");
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && w.is_contiguous() && w.numel() == N * x.size(1),
              "streamk_wgmma: x [M, K] contiguous and the packed w holding N x K");
  const int64_t bw = 64 * MI * NWG, tiles = N / bw * ((x.size(0) + BT - 1) / BT);
  TORCH_CHECK(ws.scalar_type() == at::kFloat && ws.numel() >= 2 * P * bw * BT,
              "streamk_wgmma: ws must hold 2 * P * BW * BT floats");
  TORCH_CHECK(counts.scalar_type() == at::kInt && counts.numel() >= tiles,
              "streamk_wgmma: counts must hold one int32 per weight tile and token tile");
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = torch::empty({x.size(0), N}, x.options());
  const cudaError_t err = projlab_cluster_wgmma::launch_streamk(
      x.data_ptr(), w.data_ptr(), y.data_ptr(), ws.data_ptr<float>(), counts.data_ptr<int>(),
      static_cast<int>(x.size(0)), static_cast<int>(N), static_cast<int>(x.size(1)), static_cast<int>(MI),
      static_cast<int>(NWG), static_cast<int>(BT), static_cast<int>(P), static_cast<int>(stages),
      c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "streamk_wgmma: launch failed: ", cudaGetErrorString(err));
  return y;
}

// router_hilo_wgmma: x [M, K] BF16 contiguous; w the tile-packed BF16 [N2, K] weight rows with hi/lo interleaved
// (row 2j = bf16(W[j]), row 2j + 1 = bf16(W[j] - bf16(W[j])); kernels/launch/cluster_wgmma.py prepare_router);
// y [M, N2 / 2] FP32.
torch::Tensor router_hilo_wgmma(torch::Tensor x, torch::Tensor w, int64_t N2, int64_t MI, int64_t NWG, int64_t BT,
                                int64_t CN, int64_t CK, int64_t stages, int64_t KA) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "router_hilo_wgmma: x and w must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16,
              "router_hilo_wgmma: x and the packed hi/lo w must be bfloat16");
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && w.is_contiguous() && w.numel() == N2 * x.size(1) && N2 % 2 == 0,
              "router_hilo_wgmma: x [M, K] contiguous and the packed w holding N2 (even) x K");
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = torch::empty({x.size(0), N2 / 2}, x.options().dtype(at::kFloat));
  const cudaError_t err = projlab_cluster_wgmma::launch_hilo(
      x.data_ptr(), w.data_ptr(), y.data_ptr<float>(), static_cast<int>(x.size(0)), static_cast<int>(N2),
      static_cast<int>(x.size(1)), static_cast<int>(MI), static_cast<int>(NWG), static_cast<int>(BT),
      static_cast<int>(CN), static_cast<int>(CK), static_cast<int>(stages), static_cast<int>(KA),
      c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "router_hilo_wgmma: launch failed: ", cudaGetErrorString(err));
  return y;
}

int64_t router_hilo_wgmma_max_clusters(int64_t N2, int64_t M, int64_t MI, int64_t NWG, int64_t BT, int64_t CN,
                                       int64_t CK, int64_t stages, int64_t KA) {
  return projlab_cluster_wgmma::max_clusters_hilo(static_cast<int>(N2), static_cast<int>(M), static_cast<int>(MI),
                                                  static_cast<int>(NWG), static_cast<int>(BT), static_cast<int>(CN),
                                                  static_cast<int>(CK), static_cast<int>(stages), static_cast<int>(KA));
}
