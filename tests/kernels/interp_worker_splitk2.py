"""Run splitk_atomic_v2 / splitk_atomic_kn through their launchers under the Triton interpreter (CPU); print JSON.

Started by test_interp_splitk2.py in a subprocess with TRITON_INTERPRET=1 set before triton is imported. fp32
operands (the interpreter's bf16 tl.dot is wrong: tests/kernels/test_interpreter.py); PREFETCH=0 (the L2
prefetch is inline PTX, which the interpreter cannot run; tests/kernels/test_compile_splitk2.py checks it is
emitted, tests/kernels/test_gpu_splitk2.py runs it).
"""
import json
import os
import sys
from pathlib import Path

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import triton.runtime.interpreter as _interp  # noqa: E402

# As in interp_worker.py: triton 3.6's interpreter reads a runtime loop bound with int(ndarray of shape (1,)),
# which numpy >= 2.4 refuses; the uneven slices (SPLIT=3 below) have runtime trip counts.
_orig_patch = _interp._patch_lang_tensor


def _patch_lang_tensor(tensor, scope):
    _orig_patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))


_interp._patch_lang_tensor = _patch_lang_tensor

from kernels.registry import get_method  # noqa: E402

out = []
for name in ("splitk_atomic_v2", "splitk_atomic_kn"):
    for cfg in ({"BM": 16, "BN": 32, "BK": 32, "SPLIT": 4},     # 256/32 = 8 steps: 2 per slice (constexpr trip)
                {"BM": 16, "BN": 16, "BK": 32, "SPLIT": 3},     # 8 steps in 3 slices of 2, 3, 3 (runtime trip)
                {"BM": 32, "BN": 32, "BK": 32, "SPLIT": 8},     # one step per slice
                {"BM": 16, "BN": 32, "BK": 64, "SPLIT": 1}):    # no split: direct store
        for w_load in ("cg", "tma"):
            config = {**cfg, "num_warps": 4, "num_stages": 2, "W_LOAD": w_load, "PREFETCH": 0}
            for M, N, K in ((1, 64, 256), (17, 96, 256), (32, 32, 512)):   # M tiles, padded rows, N tiles
                g = torch.Generator().manual_seed(M + N)
                w = torch.randn(N, K, generator=g) * K ** -0.5
                m = get_method(name)
                state = m.prepare(w, "qkv_gate", config)
                worst = 0.0
                for _ in range(3):   # fresh inputs, one state: the workspace and counters must come back zero
                    x = torch.randn(M, K, generator=g)
                    y = m.run(state, x)
                    assert tuple(y.shape) == (M, N) and y.dtype == torch.float32
                    ref = x.double() @ w.double().t()
                    worst = max(worst, float((y.double() - ref).norm() / ref.norm()))
                out.append({"method": name, "config": config, "M": M, "N": N, "K": K, "rel": worst,
                            "workspace_zero": bool((state["ws"] == 0).all() and (state["cnt"] == 0).all()),
                            "w_unchanged": bool(torch.equal(state["w"].t() if state["w_kn"] else state["w"], w))})
print("RESULTS " + json.dumps(out))
