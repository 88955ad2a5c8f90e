"""The methods of kernels/plans/best.json that run on a CPU -- gemv_wide and router_gemv_fp32 under the Triton
interpreter (no tl.dot: the interpreter's bf16 tl.dot is wrong in triton 3.6), torch_linear and mm_wt eagerly --
judged by check_output (element rule included) on the contract's inputs; prints JSON. Run by
test_element_rule.py with TRITON_INTERPRET=1 set before triton is imported."""
import json
import os
import sys
from pathlib import Path

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kernels"))

import interp_patch  # noqa: E402,F401  (the triton 3.6 interpreter fix)

from kernels.registry import get_method  # noqa: E402
from profiler.check import inputs  # noqa: E402
from profiler.check import rules as R  # noqa: E402

CONTRACT = inputs.default_contract()
PLAN = json.loads((Path(__file__).resolve().parents[2] / "kernels" / "plans" / "best.json").read_text())
FAMILY = {"gemv_wide": "qkv_gate", "router_gemv_fp32": "router", "torch_linear": "o", "mm_wt": "unpooler"}
# K a multiple of every BK the plan gives gemv_wide and router_gemv_fp32
SHAPE = {"qkv_gate": (64, 8192), "router": (64, 8192), "o": (64, 256), "unpooler": (64, 256)}
DTYPES = {"qkv_gate": ("bfloat16", "bfloat16", "bfloat16"), "router": ("bfloat16", "float32", "float32"),
          "o": ("bfloat16", "bfloat16", "bfloat16"), "unpooler": ("bfloat16", "bfloat16", "bfloat16")}

out = []
for family_entries in PLAN["families"].values():
    for entry in family_entries:
        method = entry["method"]
        if method not in FAMILY:
            continue
        family = FAMILY[method]
        N, K = SHAPE[family]
        x_dtype, w_dtype, y_dtype = DTYPES[family]
        w = inputs.make_weight(family, N, K, 0, "cpu", dtype=w_dtype)
        wref = R.WeightReference(w)
        m = get_method(method)
        state = m.prepare(w, entry["config"])
        for M, seed in ((1, 4), (1, 5), (16, 1)):
            if method in ("gemv_wide", "router_gemv_fp32") and M != 1:
                continue
            x, layout = inputs.make_input(M, K, seed, "cpu", dtype=x_dtype, contract=CONTRACT, vary=True, salt=7)
            chk = R.check_output(m.run(state, x), R.input_reference(x, wref, y_dtype, layout), 1e-2 if
                                 family != "router" else 1e-4, expect_shape=(M, N), expect_dtype=y_dtype,
                                 contract=CONTRACT)
            out.append({"method": method, "config": entry["config"], "M": M, "ok": chk.ok,
                        "element_ratio": chk.element_ratio, "reasons": chk.reasons[:1]})
print(json.dumps(out))
