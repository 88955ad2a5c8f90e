"""The baseline: what the serving framework runs. BF16: F.linear(x, w); router: F.linear(x.float(), w_fp32) -> FP32."""
from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from kernels.launch import impl


def prepare(weight, config: dict) -> dict:
    # Weights are kept exactly as given (the baseline does no preparation).
    if weight.dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32:
        warnings.warn("torch.backends.cuda.matmul.allow_tf32 is True: the FP32 baseline would run TF32", stacklevel=2)
    return {"w": weight}


def run(state: dict, x):
    w = state["w"]
    if w.dtype != x.dtype:  # router: FP32 weights, BF16 input -> FP32 product (TF32 stays off: torch default)
        x = x.to(w.dtype)
    return F.linear(x, w)


TORCH_LINEAR = impl(prepare, run)
