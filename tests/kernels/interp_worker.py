"""Run the dense Triton kernels through their launchers under the Triton interpreter (CPU); print JSON results.

Started by test_interpreter.py in a subprocess with TRITON_INTERPRET=1 set before triton is imported.
With triton 3.6 the interpreter's tl.dot on bf16 operands is wrong, so the tl.dot kernels (splitk, splitk_fused,
packed) run on fp32 operands here; gemv (no tl.dot) runs on bf16, as on the GPU.
"""
import json

import interp_patch  # noqa: F401  (first: the repo on sys.path, the triton 3.6 interpreter fix)
import torch

from kernels.methods_triton.dense import GEMV_CONFIGS, PACKED_CONFIGS, SPLITK_CONFIGS  # noqa: E402
from kernels.registry import get_method  # noqa: E402


def rel(y, x, w):
    ref = x.double() @ w.double().t()
    return float((y.double() - ref).norm() / ref.norm())


def case(method, config, M, N, K, dtype, calls=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(N, K, generator=g) * K ** -0.5).to(dtype)
    m = get_method(method)
    state = m.prepare(w, config)
    worst = 0.0
    for i in range(calls):  # repeated calls on fresh inputs: scratch and counters must be reset
        x = torch.randn(M, K, generator=g).to(dtype)
        y = m.run(state, x)
        assert tuple(y.shape) == (M, N) and y.dtype == dtype, (y.shape, y.dtype)
        worst = max(worst, rel(y, x, w))
    extra = {}
    if "counters" in state:
        extra["counters_zero"] = bool((state["counters"] == 0).all())
    if "ws" in state:   # the single-launch methods: every call must leave workspace and counters zero
        extra["workspace_zero"] = bool((state["ws"] == 0).all() and (state["cnt"] == 0).all())
    return {"method": method, "config": config, "M": M, "N": N, "K": K, "dtype": str(dtype), "rel": worst, **extra}


out = []
for cfg in (GEMV_CONFIGS[0], {"BN": 8, "num_warps": 4, "cache": ".cg"}, {"BN": 2, "num_warps": 4, "cache": ""}):
    for N, K in ((40, 96), (37, 1100)):  # K not a power of two / K loop with a masked tail; N not a BN multiple
        out.append(case("gemv", cfg, 1, N, K, torch.bfloat16))
small_tile = {"BM": 16, "BN": 32, "BK": 64, "num_warps": 4, "num_stages": 2}
for method in ("splitk", "splitk_fused"):
    for split in (1, 3, 4):
        for M, N, K in ((1, 48, 320), (17, 40, 256), (32, 64, 200)):  # ragged N, K tail, M tiles
            out.append(case(method, {**small_tile, "SPLIT": split}, M, N, K, torch.float32))
for split in (1, 2, 4):
    for M in (1, 3, 17):
        out.append(case("packed", {**small_tile, "BK": 64, "SPLIT": split}, M, 64, 256, torch.float32))
tile = {"num_warps": 4, "num_stages": 2}
for cfg in ({"BM": 16, "BN": 32, "BK": 32, "SPLIT": 4}, {"BM": 16, "BN": 32, "BK": 64, "SPLIT": 1},
            {"BM": 32, "BN": 16, "BK": 32, "SPLIT": 8}):
    for M, N, K in ((1, 64, 256), (17, 96, 256), (40, 32, 512)):   # M tiles, padded rows, 2-3 N tiles
        out.append(case("splitk_atomic", {**tile, **cfg}, M, N, K, torch.float32))
for tma in (0, 1):
    for bm, bn, bk in ((16, 32, 32), (32, 16, 64)):
        # CPU: 5 programs (kernels.launch.streamk.CPU_PROGRAMS) over uneven runs: tiles split between programs
        for M, N, K in ((1, 64, 256), (20, 96, 256), (40, 32, 128)):
            out.append(case("streamk", {**tile, "BM": bm, "BN": bn, "BK": bk, "TMA": tma}, M, N, K, torch.float32))
print("RESULTS " + json.dumps(out))
