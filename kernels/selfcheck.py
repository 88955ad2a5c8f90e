"""Quick torch-only self-check of one method at one shape against an FP64 reference (rel-L2).

The official contract (poisoning, sparse probes, graph replay, error vs baseline) is profiler/check/contract.py;
this is the kernel author's fast loop: `python -m kernels.selfcheck gemv o 1` (the default workload), or
`python -m kernels.selfcheck gemv qkv 1 --workload llama31_8b_decode`. Shapes and dtypes come from the workload.
"""
from __future__ import annotations

import sys


def rel_l2(y, ref) -> float:
    """||y - ref|| / ||ref|| in FP64."""
    y64, r64 = y.double(), ref.double()
    return float((y64 - r64).norm() / r64.norm().clamp_min(1e-300))


def make_problem(dtypes, M: int, N: int, K: int, device, seed: int = 0):
    """(x [M,K], w [N,K]) at the signature's x and w dtypes ((x, w, y) names, or a shape/family mapping), scaled so
    outputs are O(1)."""
    import torch

    from kernels.method import signature

    x_dtype, w_dtype, _ = (getattr(torch, d) for d in signature(dtypes))
    g = torch.Generator(device=device).manual_seed(seed)
    w = (torch.randn(N, K, generator=g, device=device) * K ** -0.5).to(w_dtype)
    x = torch.randn(M, K, generator=g, device=device).to(x_dtype)
    return x, w


def check_method(name: str, family: str, M: int, N: int, K: int, config: dict | None = None, device="cuda",
                 seed: int = 0, calls: int = 2, dtypes=None) -> float:
    """Worst rel-L2 of `calls` fresh-input runs of method `name` (same prepared state) vs the FP64 product.
    `dtypes`: the (x, w, y) signature (or the family's workload record); None: the family in the default
    workload."""
    import torch

    from kernels.method import signature
    from kernels.registry import get_method

    if dtypes is None:
        from datasets import load_workload

        dtypes = load_workload().dtypes(family)
    method = get_method(name)
    config = dict(method.configs[0] if config is None else config)
    reason = method.supports(dtypes, M, N, K, config)
    if reason:
        raise ValueError(f"{name} does not admit {family} M={M} N={N} K={K}: {reason}")
    x, w = make_problem(dtypes, M, N, K, device, seed)
    state = method.prepare(w, config)
    y_dtype = getattr(torch, signature(dtypes)[2])
    worst = 0.0
    for i in range(calls):
        if i:
            x = torch.randn(M, K, device=device, generator=torch.Generator(device=device).manual_seed(seed + i))
            x = x.to(getattr(torch, signature(dtypes)[0]))
        y = method.run(state, x)
        if tuple(y.shape) != (M, N) or y.dtype != y_dtype:
            raise AssertionError(f"{name}: got {tuple(y.shape)} {y.dtype}, want ({M}, {N}) {y_dtype}")
        ref = (x.double() @ w.double().t()).to(y_dtype)
        worst = max(worst, rel_l2(y, ref))
    return worst


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ref = None
    if "--workload" in argv:
        i = argv.index("--workload")
        ref = argv[i + 1] if i + 1 < len(argv) else ""
        del argv[i:i + 2]
    if len(argv) < 3:
        print("usage: python -m kernels.selfcheck METHOD FAMILY M [N K] [--workload NAME|FILE]")
        return 2
    from datasets import DatasetError, load_workload

    name, family, M = argv[0], argv[1], int(argv[2])
    try:
        workload = load_workload(ref)
        shape = workload.shape(family, M)
    except (DatasetError, ValueError) as exc:
        print(f"kernels.selfcheck: {exc}", file=sys.stderr)
        return 2
    N = int(argv[3]) if len(argv) > 3 else shape["N"]
    K = int(argv[4]) if len(argv) > 4 else shape["K"]
    import torch

    err = check_method(name, family, M, N, K, device="cuda" if torch.cuda.is_available() else "cpu", dtypes=shape)
    print(f"{name} {family} M={M} N={N} K={K}: rel_l2={err:.3e}")
    return 0 if err <= float(shape["rel_l2_tol"]) else 1


if __name__ == "__main__":
    sys.exit(main())
