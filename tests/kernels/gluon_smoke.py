"""GPU smoke check of skinny_ws before a timed sweep: every config at qkv_gate (N=2304, K=8192) and M = 1..256,
one eager call each against the FP64 reference, repeated calls (the self-zeroing workspace), a table of rel-L2
errors; exit status 1 when any is above the family's 1e-2 tolerance or the workspace is left non-zero.

    python -m tests.kernels.gluon_smoke [--ms 8 16 32 64 128 256] [--configs 0 3 5]
"""
from __future__ import annotations

import argparse
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ms", nargs="+", type=int, default=[1, 8, 9, 16, 17, 32, 33, 64, 100, 128, 200, 256])
    p.add_argument("--configs", nargs="*", type=int, default=None)
    p.add_argument("--n", type=int, default=2304)
    p.add_argument("--k", type=int, default=8192)
    args = p.parse_args(argv)
    import torch

    from kernels.registry import get_method
    from profiler.check.contract import make_input, make_weight, reference

    method = get_method("skinny_ws")
    N, K = args.n, args.k
    w = make_weight("qkv_gate", N, K, 1, "cuda", dtype="bfloat16")
    bad = 0
    for i, cfg in enumerate(method.configs):
        if args.configs is not None and i not in args.configs:
            continue
        t0 = time.perf_counter()
        state = method.prepare(w, cfg)
        errs = []
        for M in args.ms:
            if method.supports(("bfloat16",) * 3, M, N, K, cfg):
                errs.append(f"M{M}:-")
                continue
            worst = 0.0
            for call in range(2):
                x, _ = make_input(M, K, 100 * M + call, "cuda")
                y = method.run(state, x)
                ref = reference(x, w, "bfloat16")
                worst = max(worst, float((y.double() - ref).norm() / ref.norm()))
            torch.cuda.synchronize()
            bad += worst > 1e-2
            errs.append(f"M{M}:{worst:.1e}")
        zero = not bool(state["ws"].any()) and not bool(state["cnt"].any())
        bad += not zero
        print(f"c{i} {cfg} {time.perf_counter() - t0:.1f}s ws_zero={zero} " + " ".join(errs), flush=True)
    print("smoke:", "FAIL" if bad else "ok", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
