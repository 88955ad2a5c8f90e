"""Quick torch-only self-check of one method at one shape against an FP64 reference (rel-L2).

The official contract (poisoning, sparse probes, graph replay, error vs baseline) is profiler/contract.py;
this is the kernel author's fast loop: `python -m kernels.selfcheck gemv o 1`.
"""
from __future__ import annotations

import sys


def rel_l2(y, ref) -> float:
    """||y - ref|| / ||ref|| in FP64."""
    y64, r64 = y.double(), ref.double()
    return float((y64 - r64).norm() / r64.norm().clamp_min(1e-300))


def make_problem(family: str, M: int, N: int, K: int, device, seed: int = 0):
    """(x bf16 [M,K], w [N,K] in the family's weight dtype), scaled so outputs are O(1)."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    w_dtype = torch.float32 if family == "router" else torch.bfloat16
    w = (torch.randn(N, K, generator=g, device=device) * K ** -0.5).to(w_dtype)
    x = torch.randn(M, K, generator=g, device=device).to(torch.bfloat16)
    return x, w


def check_method(name: str, family: str, M: int, N: int, K: int, config: dict | None = None, device="cuda",
                 seed: int = 0, calls: int = 2) -> float:
    """Worst rel-L2 of `calls` fresh-input runs of method `name` (same prepared state) vs the FP64 product."""
    import torch

    from kernels.registry import get_method

    method = get_method(name)
    config = dict(method.configs[0] if config is None else config)
    reason = method.supports(family, M, N, K, config)
    if reason:
        raise ValueError(f"{name} does not admit {family} M={M} N={N} K={K}: {reason}")
    x, w = make_problem(family, M, N, K, device, seed)
    state = method.prepare(w, family, config)
    y_dtype = torch.float32 if family == "router" else torch.bfloat16
    worst = 0.0
    for i in range(calls):
        if i:
            x = torch.randn(M, K, device=device, generator=torch.Generator(device=device).manual_seed(seed + i))
            x = x.to(torch.bfloat16)
        y = method.run(state, x)
        if tuple(y.shape) != (M, N) or y.dtype != y_dtype:
            raise AssertionError(f"{name}: got {tuple(y.shape)} {y.dtype}, want ({M}, {N}) {y_dtype}")
        ref = (x.double() @ w.double().t()).to(y_dtype)
        worst = max(worst, rel_l2(y, ref))
    return worst


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3:
        print("usage: python -m kernels.selfcheck METHOD FAMILY M [N K]")
        return 2
    from datasets import load_workload

    name, family, M = argv[0], argv[1], int(argv[2])
    spec = load_workload().families[family]
    N = int(argv[3]) if len(argv) > 3 else int(spec.get("N_by_M", {}).get(str(M), spec["N"]))
    K = int(argv[4]) if len(argv) > 4 else int(spec["K"])
    import torch

    err = check_method(name, family, M, N, K, device="cuda" if torch.cuda.is_available() else "cpu")
    print(f"{name} {family} M={M} N={N} K={K}: rel_l2={err:.3e}")
    return 0 if err <= float(spec["rel_l2_tol"]) else 1


if __name__ == "__main__":
    sys.exit(main())
