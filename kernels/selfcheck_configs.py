"""Every config of some methods at one shape, or at every shape of the workload its shape check admits: PASS/FAIL lines
vs the FP64 product (a pre-screen check, and the GPU test suite's sweep of every config at every shape).

    python -m kernels.selfcheck_configs splitk_atomic_v2 splitk_atomic_kn streamk_small --family qkv_gate --M 16
    python -m kernels.selfcheck_configs splitk_swap --all-shapes      # every official and nearby shape

Per config: prepare on a random weight, two calls on fresh inputs (the second one shows a workspace or counter
left dirty by the first), rel-L2 of each vs the FP64 product against the family's tolerance, and, for the
methods with a workspace, workspace and counters zero afterwards. A config the shape check rejects at the shape is
reported SKIP. Exit 1 when any config FAILs. The full contract is profiler/check/contract.py (the screen runs it too).
"""
from __future__ import annotations

import argparse
import sys


def check_config(method, shape: dict, config: dict, device) -> str:
    """'' when the config is right at this shape (a Workload.shape row), else the reason."""
    import torch

    from kernels.selfcheck import make_problem, rel_l2

    M, N, K, tol = int(shape["M"]), int(shape["N"]), int(shape["K"]), float(shape["rel_l2_tol"])
    x, w = make_problem(shape, M, N, K, device, seed=M)
    state = method.prepare(w, config)
    for call in range(2):
        if call:
            x = torch.randn(M, K, device=device).to(x.dtype)
        y = method.run(state, x)
        err = rel_l2(y, (x.double() @ w.double().t()).to(y.dtype))
        if not err <= tol:
            return f"call {call}: rel_l2 {err:.3e} > {tol}"
    if isinstance(state, dict) and "ws" in state and (state["ws"].any() or state["cnt"].any()):
        return "workspace or counters not zero after the calls"
    return ""


def workload_rows(workload) -> list[dict]:
    """Every official and nearby shape of a workload, as the shape rows check_config takes."""
    return [r._asdict() for df in (workload.shapes, workload.nearby) for r in df.itertuples(index=False)]


def sweep(method, rows: list[dict], device) -> list[tuple[str, str]]:
    """(label, reason) for every config of `method` at every row its shape check admits: reason '' when it passed.
    An exception is a failure with its first line (one broken config must not hide the others)."""
    from kernels.method import format_config

    out = []
    for config in method.configs:
        for row in rows:
            M, N, K = int(row["M"]), int(row["N"]), int(row["K"])
            if method.supports(row, M, N, K, config) is not None:
                continue
            label = f"{format_config(method.name, config)} {row['family']} M={M} N={N} K={K}"
            try:
                why = check_config(method, row, config, device)
            except Exception as exc:
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            out.append((label, why))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernels.selfcheck_configs", description=__doc__.splitlines()[0])
    p.add_argument("methods", nargs="+")
    p.add_argument("--family", default="qkv_gate")
    p.add_argument("--M", type=int, default=16)
    p.add_argument("--all-shapes", action="store_true", help="every official and nearby shape of the workload "
                                                             "(instead of --family/--M)")
    p.add_argument("--workload", default=None, help="a workload name or .json file (default muse_bf16_proj)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    import torch

    from datasets import load_workload
    from kernels.method import format_config
    from kernels.registry import get_method

    workload = load_workload(args.workload)
    rows = workload_rows(workload) if args.all_shapes else [workload.shape(args.family, args.M)]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    failed = 0
    for name in args.methods:
        method = get_method(name)
        if not args.all_shapes:
            row = rows[0]
            for config in method.configs:
                reason = method.supports(row, int(row["M"]), int(row["N"]), int(row["K"]), config)
                if reason:
                    print(f"SKIP {format_config(name, config)} {row['family']} M={row['M']}: {reason}")
        for label, why in sweep(method, rows, device):
            failed += bool(why)
            print(f"{'FAIL' if why else 'PASS'} {label}{': ' + why if why else ''}", flush=True)
    print(f"# {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
