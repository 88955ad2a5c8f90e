"""Launchers: check shapes/dtypes/strides, allocate (or take `out=`), build the grid, launch.

Each module exposes one object per method with `prepare(weight, config) -> state` and `run(state, x) -> y`
(kernels.method.Method's launcher pair; no family: a method computes dtype signatures), named in the methods'
`impl` strings. Launchers are imported only when a method first runs (kernels.method._load_impl), so torch and
the kernel modules are imported once, at the top of each launcher.
"""
from __future__ import annotations

from types import SimpleNamespace

import torch


def impl(prepare, run) -> SimpleNamespace:
    """The (prepare, run) pair a Method's `impl` string points at."""
    return SimpleNamespace(prepare=prepare, run=run)


def require(ok: bool, what: str, message: str) -> None:
    """Raise ValueError("what: message") unless ok: the launcher's check of what its kernel leaves unmasked
    (the Triton tutorials assert it; a ValueError also survives `python -O` and names the method)."""
    if not ok:
        raise ValueError(f"{what}: {message}")


def check_input(x, K: int, dtype, what: str) -> int:
    """Validate a [M, K] activation with unit stride along K; returns M."""
    if x.dim() != 2 or x.shape[1] != K:
        raise ValueError(f"{what}: x must be [M, {K}], got {tuple(x.shape)}")
    if x.dtype != dtype:
        raise ValueError(f"{what}: x must be {dtype}, got {x.dtype}")
    if x.stride(1) != 1:
        raise ValueError(f"{what}: x must be contiguous along K (stride {x.stride()})")
    return x.shape[0]


def check_out(out, M: int, N: int, dtype, device, what: str):
    """Allocate y[M, N] or check the caller's `out`."""
    if out is None:
        return torch.empty((M, N), dtype=dtype, device=device)
    if tuple(out.shape) != (M, N) or out.dtype != dtype:
        raise ValueError(f"{what}: out must be [{M}, {N}] {dtype}, got {tuple(out.shape)} {out.dtype}")
    return out


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())
