"""Method records whose kernels are this repository's Triton (kernels/triton/), one module per kernel family:
`dense` (the BF16 tiled GEMMs on the tensor cores and the M=1 GEMV), `gemv` (the GEMVs on the CUDA cores, BF16 or
FP32 weights) and `router` (BF16 x, FP32 weights, FP32 y). Each holds its methods' shape checks and tuning spaces;
kernels/registry.py registers TRITON_METHODS, in this order.
"""
from __future__ import annotations

from kernels.method import Method
from kernels.methods_triton.dense import DENSE_METHODS
from kernels.methods_triton.gemv import GEMV_METHODS
from kernels.methods_triton.router import ROUTER_METHODS

TRITON_METHODS: tuple[Method, ...] = (*DENSE_METHODS, *GEMV_METHODS, *ROUTER_METHODS)
