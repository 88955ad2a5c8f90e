// torch binding of cluster_splitk.cu (compiled in the same translation unit by kernels/cuda/build.py).
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>

torch::Tensor cluster_splitk(torch::Tensor x, torch::Tensor w, int64_t S, int64_t RW, int64_t KW, int64_t NT) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "cluster_splitk: x and w must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16,
              "cluster_splitk: x and w must be bfloat16");
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "cluster_splitk: x [M, K] and w [N, K]");
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous(), "cluster_splitk: x and w must be contiguous");
  const c10::cuda::CUDAGuard guard(x.device());
  auto y = torch::empty({x.size(0), w.size(0)}, x.options());
  const cudaError_t err = projlab_cluster_splitk::launch(
      x.data_ptr(), w.data_ptr(), y.data_ptr(), static_cast<int>(x.size(0)), static_cast<int>(w.size(0)),
      static_cast<int>(x.size(1)), static_cast<int>(S), static_cast<int>(RW), static_cast<int>(KW),
      static_cast<int>(NT), c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, "cluster_splitk: launch failed: ", cudaGetErrorString(err));
  return y;
}
