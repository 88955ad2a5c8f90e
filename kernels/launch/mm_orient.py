"""Library orientations of y[M,N] = x[M,K] @ w[N,K]^T: pre-transposed weights, the swapped product, and the
product with a zero bias (the library's bias-epilogue route)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.launch import check_input, impl


def prepare_wt(weight, config: dict) -> dict:
    # wT[K, N] contiguous, made once at prepare: the library then sees a plain row-major (NN) product.
    return {"wT": weight.t().contiguous(), "K": weight.shape[1]}


def run_wt(state: dict, x):
    wT = state["wT"]
    check_input(x, state["K"], wT.dtype, "mm_wt")
    return torch.mm(x, wT)


def prepare_swapped(weight, config: dict) -> dict:
    return {"w": weight, "K": weight.shape[1], "last_path": None}


def swapped_ok(M: int) -> bool:
    """The swapped output is [N, M] before the view: its rows are 2*M bytes apart, 16-byte aligned iff M % 8 == 0."""
    return M % 8 == 0


def run_swapped(state: dict, x):
    """Y^T[N,M] = W[N,K] @ X^T[K,M], returned as its transposed (non-contiguous) [M,N] view; F.linear when M % 8 != 0."""
    w = state["w"]
    M = check_input(x, state["K"], w.dtype, "mm_swapped")
    if swapped_ok(M):
        state["last_path"] = "swapped"
        return torch.mm(w, x.t()).t()
    state["last_path"] = "fallback"
    return F.linear(x, w)


SWAP_BIAS_MAX_M = 4096   # zeros kept for the swapped bias route; larger M take the [N, K] route


def prepare_bias0(weight, config: dict) -> dict:
    # A bias of zeros makes torch.addmm take the library's bias-epilogue route (cuBLASLt's matmul with an
    # epilogue), whose kernel choice differs from the plain product's; the product does not: the FP32
    # accumulator plus 0.0, converted once (summed in the chosen kernel's order, as any library route). "nk": x @ w^T with w^T a view; "kn": w^T stored [K, N] (as mm_wt); "swap":
    # y^T = w @ x^T + 0 (a bias of M zeros, sliced from one buffer), returned as the .T view, as mm_swapped.
    layout = config["W"]
    state = {"K": weight.shape[1], "layout": layout, "last_path": None,
             "bias": torch.zeros(weight.shape[0], dtype=weight.dtype, device=weight.device),
             "w_mat": weight.t().contiguous() if layout == "kn" else weight.t()}
    if layout == "swap":
        state["bias_m"] = torch.zeros(SWAP_BIAS_MAX_M, dtype=weight.dtype, device=weight.device)
    return state


def run_bias0(state: dict, x):
    w_mat = state["w_mat"]
    M = check_input(x, state["K"], w_mat.dtype, "mm_bias0")
    if state["layout"] == "swap" and swapped_ok(M) and M <= SWAP_BIAS_MAX_M:
        state["last_path"] = "swapped"
        return torch.addmm(state["bias_m"][:M], w_mat.t(), x.t()).t()    # w_mat.t() is the [N, K] weight
    state["last_path"] = state["layout"] if state["layout"] != "swap" else "fallback"
    return torch.addmm(state["bias"], x, w_mat)


MM_WT = impl(prepare_wt, run_wt)
MM_BIAS0 = impl(prepare_bias0, run_bias0)
MM_SWAPPED = impl(prepare_swapped, run_swapped)
