"""Per-shape work and traffic: FLOPs, bytes moved, arithmetic intensity.

FLOP convention: a projection y[M,N] = x[M,K] @ w[N,K]^T does 2·M·N·K useful FLOPs (multiply and add counted
separately; seed section 'A rough way to ask how much room was left'). The router's permitted hi/lo scheme splits
the FP32 weight into two BF16 parts and multiplies by both, so its tensor cores *execute* 2 × 2·M·N·K; scores and
floors use the useful count (`flops`), `executed_flops` is there to explain tensor-core time, not to inflate FLOP/s.

Bytes moved = weights + input + output, each once, at their stored dtypes (the task's own floor counts all three).
The router's FP32 weight is 4 B per element; its hi/lo form is two BF16 parts, also 4 B per element.
All functions accept scalars or numpy arrays / pandas Series (plain arithmetic broadcasts).
"""
from __future__ import annotations

import pandas as pd

from datasets.shapes import DTYPE_BYTES, bytes_moved, dtype_bytes  # noqa: F401  (the one byte count: datasets)

HILO_PARTS = 2  # hi + lo BF16 parts of one FP32 router weight


def flops(M, N, K):
    """Useful FLOPs, 2·M·N·K (the convention every score and floor uses)."""
    return 2 * M * N * K


def executed_flops(M, N, K, hilo: bool = False):
    """FLOPs the tensor cores run: 2·M·N·K, doubled for the router's hi/lo scheme (two BF16 products)."""
    return flops(M, N, K) * (HILO_PARTS if hilo else 1)


def weight_bytes(N, K, w_dtype: str = "bfloat16"):
    return N * K * dtype_bytes(w_dtype)


def intensity_flop_per_byte(M, N, K, x_dtype="bfloat16", w_dtype="bfloat16", y_dtype="bfloat16"):
    """Arithmetic intensity over all compulsory bytes (FLOP/byte)."""
    return flops(M, N, K) / bytes_moved(M, N, K, x_dtype, w_dtype, y_dtype)


def flop_per_weight_byte(M, N, K, w_dtype: str = "bfloat16"):
    """Weight-only intensity 2MNK / (NK·bytes): exactly M for BF16 weights, M/2 for the FP32 router."""
    return flops(M, N, K) / weight_bytes(N, K, w_dtype)


def add_metrics(shapes: pd.DataFrame) -> pd.DataFrame:
    """Copy of `shapes` (needs M, N, K, x_dtype, w_dtype, y_dtype) with the metric columns added."""
    out = shapes.copy()
    x_b = out["x_dtype"].map(dtype_bytes)
    w_b = out["w_dtype"].map(dtype_bytes)
    y_b = out["y_dtype"].map(dtype_bytes)
    M, N, K = (out[c].astype("int64") for c in ("M", "N", "K"))
    out["flops"] = flops(M, N, K)
    out["weight_bytes"] = N * K * w_b
    out["bytes"] = N * K * w_b + M * K * x_b + M * N * y_b
    out["intensity_flop_per_byte"] = out["flops"] / out["bytes"]
    out["flop_per_weight_byte"] = out["flops"] / out["weight_bytes"]
    return out
