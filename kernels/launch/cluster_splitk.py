"""Cluster split-K (CUDA C++, kernels/cuda/cluster_splitk.cu): the K-split partials summed through thread-block
cluster distributed shared memory in the same launch, no global workspace, no second kernel.

Built on first use by kernels/cuda/build.py (once per source hash, cached); a host without nvcc and without a
cached build gets one line saying so at prepare(), never at import.
"""
from __future__ import annotations

from kernels.cuda.build import Extension, load_extension
from kernels.launch import check_input, impl

EXTENSION = Extension(
    name="projlab_cluster_splitk",
    sources=("cluster_splitk.cu", "cluster_splitk_torch.cu"),
    declarations="torch::Tensor cluster_splitk(torch::Tensor x, torch::Tensor w, int64_t S, int64_t RW, "
                 "int64_t KW, int64_t NT);",
    functions=("cluster_splitk",),
)


def unavailable_reason() -> str | None:
    """None when this host can run the kernel (an sm_90 GPU), else why not. The build is checked at prepare."""
    import torch

    if not torch.cuda.is_available():
        return "cluster_splitk needs a CUDA GPU (torch.cuda.is_available() is False)"
    if torch.cuda.get_device_capability() != (9, 0):
        return (f"cluster_splitk is built for sm_90a (Hopper), this GPU is sm_"
                f"{''.join(map(str, torch.cuda.get_device_capability()))}")
    return None


def prepare(weight, family: str, config: dict) -> dict:
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    module = load_extension(EXTENSION)
    return {"w": weight.contiguous(), "K": int(weight.shape[1]), "family": family, "module": module,
            "args": (int(config["S"]), int(config["RW"]), int(config["KW"]), int(config["NT"]))}


def run(state: dict, x):
    w = state["w"]
    check_input(x, state["K"], w.dtype, "cluster_splitk")
    return state["module"].cluster_splitk(x.contiguous(), w, *state["args"])


CLUSTER_SPLITK = impl(prepare, run)
