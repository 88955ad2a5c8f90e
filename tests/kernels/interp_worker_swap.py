"""Run splitk_swap (and its HILO form, the router's router_hilo_swap) through the launcher under the Triton
interpreter (CPU); print JSON.

Started by test_interp_swap.py in a subprocess with TRITON_INTERPRET=1 set before triton is imported. fp32
operands (the interpreter's bf16 tl.dot is wrong: tests/kernels/test_interpreter.py); the HILO case builds the
launcher's state from two fp32 halves, so both products of a K step must land in the one accumulator.
"""
import json

import interp_patch  # noqa: F401  (first: the repo on sys.path, the triton 3.6 interpreter fix)
import torch

from kernels.launch import splitk_swap as launch  # noqa: E402

out = []
for cfg in ({"BM": 16, "BN": 32, "BK": 32, "SPLIT": 4},     # 256/32 = 8 steps: 2 per slice (constexpr trip)
            {"BM": 16, "BN": 16, "BK": 32, "SPLIT": 3},     # 8 steps in 3 slices of 2, 3, 3 (runtime trip)
            {"BM": 32, "BN": 32, "BK": 32, "SPLIT": 8},     # one step per slice
            {"BM": 16, "BN": 32, "BK": 64, "SPLIT": 1}):    # no split: direct store
    config = {**cfg, "num_warps": 4, "num_stages": 2}
    for hilo in (False, True):
        for M, N, K in ((1, 64, 256), (17, 96, 256), (32, 32, 512)):   # token tiles, padded tokens, N tiles
            g = torch.Generator().manual_seed(M + N)
            w = torch.randn(N, K, generator=g) * K ** -0.5
            if hilo:
                hi = w.to(torch.bfloat16).float()
                state = launch._state(hi, w - hi, N, K, config, "router_hilo_swap")
            else:
                state = launch.prepare(w, config)
            worst = 0.0
            for _ in range(2):   # fresh inputs, one state: the second call is right only if the first left the
                #                  workspace and counters zero (checked after the second too)
                x = torch.randn(M, K, generator=g)
                y = launch.run(state, x)
                assert tuple(y.shape) == (M, N) and y.dtype == torch.float32
                ref = x.double() @ w.double().t()
                worst = max(worst, float((y.double() - ref).norm() / ref.norm()))
            out.append({"hilo": hilo, "config": config, "M": M, "N": N, "K": K, "rel": worst,
                        "workspace_zero": bool((state["ws"] == 0).all() and (state["cnt"] == 0).all())})
print("RESULTS " + json.dumps(out))
