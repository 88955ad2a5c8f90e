"""Run gemv_rows through its launcher under the Triton interpreter (CPU); print JSON.

Started by test_interp_gemv_rows.py in a subprocess with TRITON_INTERPRET=1 set before triton is imported. The
kernel has no tl.dot, so it runs its real dtypes here: BF16 x with BF16 weights (BF16 y) and with FP32 weights
(FP32 y, the router's signature). Outputs are compared with the exact product converted as the interpreter
converts (FP32 to BF16 by truncation there), so a K chunk, token row or N tile added wrongly shows at once.
"""
import json

import interp_patch  # noqa: F401  (first: the repo on sys.path, the triton 3.6 interpreter fix)
import torch

from kernels.registry import get_method  # noqa: E402

m = get_method("gemv_rows")
out = []
for cfg in ({"BM": 4, "BN": 2, "BK": 64}, {"BM": 8, "BN": 4, "BK": 128}, {"BM": 2, "BN": 8, "BK": 256}):
    config = {**cfg, "num_warps": 4, "cache": ".cg"}
    for wdt in (torch.bfloat16, torch.float32):
        for M, N, K in ((1, 16, 256), (5, 24, 512), (11, 40, 256)):   # padded token rows, M tiles, N tails
            g = torch.Generator().manual_seed(M + N)
            w = (torch.randn(N, K, generator=g) * K ** -0.5).to(wdt)
            state = m.prepare(w, config)
            x = torch.randn(M, K, generator=g).to(torch.bfloat16)
            y = m.run(state, x)
            ref = (x.double() @ w.double().t()).float()
            if y.dtype == torch.bfloat16:
                # the interpreter converts FP32 to BF16 by truncation (the GPU rounds to nearest): compare with
                # the exact product truncated the same way
                ref = (ref.view(torch.int32) & ~0xFFFF).view(torch.float32)
            ref = ref.double()
            out.append({"config": config, "w_dtype": str(wdt), "y_dtype": str(y.dtype), "M": M, "N": N, "K": K,
                        "shape_ok": tuple(y.shape) == (M, N),
                        "rel": float((y.double() - ref).norm() / ref.norm())})
print("RESULTS " + json.dumps(out))
