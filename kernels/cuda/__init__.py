"""CUDA C++ kernels (built through torch.utils.cpp_extension, cached per source hash: build.py)."""
