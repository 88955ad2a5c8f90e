"""Run splitk_atomic_v2 (all four weight loads) / splitk_atomic_kn through their launchers under the Triton
interpreter (CPU); print JSON.

Started by test_interp_splitk2.py in a subprocess with TRITON_INTERPRET=1 set before triton is imported. fp32
operands (the interpreter's bf16 tl.dot is wrong: tests/kernels/test_interpreter.py).
"""
import json

import interp_patch  # noqa: F401  (first: the repo on sys.path, the triton 3.6 interpreter fix)
import torch

from kernels.launch.packed import unpack  # noqa: E402
from kernels.registry import get_method  # noqa: E402


def kept_weight(state):
    """The [N, K] weight the state multiplies by, from whichever layout prepare made."""
    w = state["w"]
    return unpack(w) if w.dim() == 4 else (w.t() if state["w_kn"] else w)


out = []
for name in ("splitk_atomic_v2", "splitk_atomic_kn"):
    for cfg in ({"BM": 16, "BN": 32, "BK": 32, "SPLIT": 4},     # 256/32 = 8 steps: 2 per slice (constexpr trip)
                {"BM": 16, "BN": 16, "BK": 32, "SPLIT": 3},     # 8 steps in 3 slices of 2, 3, 3 (runtime trip)
                {"BM": 32, "BN": 32, "BK": 32, "SPLIT": 8},     # one step per slice
                {"BM": 16, "BN": 32, "BK": 64, "SPLIT": 1}):    # no split: direct store
        for w_load in ("cg", "tma", "pack", "pack_tma") if name == "splitk_atomic_v2" else ("cg", "tma"):
            config = {**cfg, "num_warps": 4, "num_stages": 2, "W_LOAD": w_load}
            for M, N, K in ((1, 64, 256), (17, 96, 256), (32, 32, 512)):   # M tiles, padded rows, N tiles
                g = torch.Generator().manual_seed(M + N)
                w = torch.randn(N, K, generator=g) * K ** -0.5
                m = get_method(name)
                state = m.prepare(w, config)
                worst = 0.0
                for _ in range(2):   # fresh inputs, one state: the second call is right only if the first left the
                    #                  workspace and counters zero (checked after the second too)
                    x = torch.randn(M, K, generator=g)
                    y = m.run(state, x)
                    assert tuple(y.shape) == (M, N) and y.dtype == torch.float32
                    ref = x.double() @ w.double().t()
                    worst = max(worst, float((y.double() - ref).norm() / ref.norm()))
                out.append({"method": name, "config": config, "M": M, "N": N, "K": K, "rel": worst,
                            "workspace_zero": bool((state["ws"] == 0).all() and (state["cnt"] == 0).all()),
                            "w_unchanged": bool(torch.equal(kept_weight(state), w))})
print("RESULTS " + json.dumps(out))
