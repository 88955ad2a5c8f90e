"""Library orientations of y[M,N] = x[M,K] @ w[N,K]^T: pre-transposed weights, and the swapped product."""
from __future__ import annotations

from kernels.launch import check_input, impl


def prepare_wt(weight, family: str, config: dict) -> dict:
    # wT[K, N] contiguous, made once at prepare: the library then sees a plain row-major (NN) product.
    return {"wT": weight.t().contiguous(), "K": weight.shape[1], "family": family}


def run_wt(state: dict, x):
    import torch

    wT = state["wT"]
    check_input(x, state["K"], wT.dtype, "mm_wt")
    return torch.mm(x, wT)


def prepare_swapped(weight, family: str, config: dict) -> dict:
    return {"w": weight, "K": weight.shape[1], "family": family, "last_path": None}


def swapped_ok(M: int) -> bool:
    """The swapped output is [N, M] before the view: its rows are 2*M bytes apart, 16-byte aligned iff M % 8 == 0."""
    return M % 8 == 0


def run_swapped(state: dict, x):
    """Y^T[N,M] = W[N,K] @ X^T[K,M], returned as its transposed (non-contiguous) [M,N] view; F.linear when M % 8 != 0."""
    import torch
    import torch.nn.functional as F

    w = state["w"]
    M = check_input(x, state["K"], w.dtype, "mm_swapped")
    if swapped_ok(M):
        state["last_path"] = "swapped"
        return torch.mm(w, x.t()).t()
    state["last_path"] = "fallback"
    return F.linear(x, w)


MM_WT = impl(prepare_wt, run_wt)
MM_SWAPPED = impl(prepare_swapped, run_swapped)
