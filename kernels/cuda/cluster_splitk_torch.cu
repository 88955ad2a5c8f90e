// torch binding of cluster_splitk.cu (compiled in the same translation unit by kernels/cuda/build.py).
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

// x [M, K] BF16; wpk the tile-packed weights (kernels/launch/cluster_splitk.py pack): BF16 [N * K] for y BF16, or
// with hilo the packed H and L parts [2 * N * K] for y FP32.
torch::Tensor cluster_splitk(torch::Tensor x, torch::Tensor wpk, int64_t N, int64_t S, int64_t RW, int64_t KW,
                             int64_t NT, int64_t R, int64_t pipe, bool hilo) {
  TORCH_CHECK(x.is_cuda() && wpk.is_cuda(), "cluster_splitk: x and w must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == at::kBFloat16 && wpk.scalar_type() == at::kBFloat16,
              "cluster_splitk: x and the packed w must be bfloat16");
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && wpk.is_contiguous(), "cluster_splitk: x [M, K] contiguous");
  TORCH_CHECK(wpk.numel() == (hilo ? 2 : 1) * N * x.size(1), "cluster_splitk: packed w does not hold N x K");
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = torch::empty({x.size(0), N}, x.options().dtype(hilo ? at::kFloat : at::kBFloat16));
  const cudaError_t err = projlab_cluster_splitk::launch(
      x.data_ptr(), wpk.data_ptr(), y.data_ptr(), static_cast<int>(x.size(0)), static_cast<int>(N),
      static_cast<int>(x.size(1)), static_cast<int>(S), static_cast<int>(RW), static_cast<int>(KW),
      static_cast<int>(NT), static_cast<int>(R), static_cast<int>(pipe), hilo, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cluster_splitk: launch failed: ", cudaGetErrorString(err));
  return y;
}
