"""Diagnostic driver for Nsight Compute (GPU host; not a test, not a run file): prepare a plan's pick for one
(family, M) of the workload on random weights and call it a few times, eagerly, so `ncu` can profile any section of
its kernels beyond what `python -m profiler explain` records, e.g.

    ncu --section SpeedOfLight --section WarpStateStats --launch-skip 4 --launch-count 2 \\
        python3 tests/benchmarks/run_shape_once.py best router 256
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan", help="plan name or .json path")
    ap.add_argument("family")
    ap.add_argument("M", type=int)
    ap.add_argument("--calls", type=int, default=6)
    args = ap.parse_args(argv)

    import torch

    from datasets import load_workload
    from kernels.plans import load_plan
    from kernels.registry import get_method

    wl = load_workload()
    plan = load_plan(args.plan, wl)
    N, K = wl.n_at(args.family, args.M), int(wl.families[args.family]["K"])
    x_dtype, w_dtype, _ = wl.dtypes(args.family)
    method, config = plan.select(args.family, args.M, N)
    m = get_method(method)
    w = (torch.randn(N, K, device="cuda") * K ** -0.5).to(getattr(torch, w_dtype))
    x = torch.randn(args.M, K, device="cuda").to(getattr(torch, x_dtype))
    state = m.prepare(w, config)
    for _ in range(args.calls):
        m.run(state, x)
    torch.cuda.synchronize()
    print(f"{args.family} M={args.M} N={N} K={K}: {method} {config}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
