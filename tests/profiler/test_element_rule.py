"""The element rule (profiler.check.rules): every output entry within what output rounding and FP32 accumulation
allow of the exact product. Correct arithmetic passes at every official family's N and K -- any accumulation order,
split-K with FP32 partials, the hi/lo router scheme -- and lossy weights fail even where every recognisable row and
column is exact (LLM.int8()'s outlier columns)."""
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from datasets import load_workload  # noqa: E402
from profiler.check import inputs  # noqa: E402
from profiler.check import rules as R  # noqa: E402
from profiler import wrong  # noqa: E402

CONTRACT = inputs.default_contract()
FAMILIES = {name: fam for name, fam in load_workload().families.items()}


def _setup(family: str, M: int, seed: int = 1):
    fam = FAMILIES[family]
    N, K = int(fam["N"]), int(fam["K"])
    w = inputs.make_weight(family, N, K, 0, "cpu", dtype=fam["w_dtype"])
    x, layout = inputs.make_input(M, K, seed, "cpu", dtype=fam["x_dtype"], contract=CONTRACT, vary=True)
    return fam, w, x, R.input_reference(x, R.WeightReference(w), fam["y_dtype"], layout)


def _fp32_orders(x, w, out_dtype):
    """The same FP32-accumulated product in several orders: one call, split-K in 4 and 16 FP32 partials summed in
    either direction, K reversed."""
    xf, wf = x.float(), w.float()
    K = xf.shape[1]
    yield "one call", F.linear(xf, wf)
    for parts in (4, 16):
        chunks = [F.linear(xf[:, k:k + K // parts], wf[:, k:k + K // parts]) for k in range(0, K, K // parts)]
        yield f"split-K {parts}", sum(chunks)
        yield f"split-K {parts} reversed", sum(reversed(chunks))
    yield "K reversed", F.linear(xf.flip(1), wf.flip(1))


def _hilo(x, w):
    hi = w.to(torch.bfloat16)
    lo = (w - hi.float()).to(torch.bfloat16)
    return F.linear(x.float(), hi.float()) + F.linear(x.float(), lo.float())


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("M", [1, 64])
def test_correct_arithmetic_passes_the_element_rule_at_every_official_family(family, M):
    fam, w, x, iref = _setup(family, M, seed=4 if M == 1 else 1)
    tol, y_dtype = float(fam["rel_l2_tol"]), inputs.as_dtype(fam["y_dtype"])
    outputs = [("F.linear", F.linear(x.float(), w) if w.dtype == torch.float32 else F.linear(x, w))]
    outputs += [(name, y.to(y_dtype)) for name, y in _fp32_orders(x, w, y_dtype)]
    if w.dtype == torch.float32:
        outputs.append(("hi/lo router", _hilo(x, w)))
    for name, y in outputs:
        chk = R.check_output(y, iref, tol, contract=CONTRACT)
        assert chk.ok and chk.element_ratio <= 1.0, (name, chk.element_ratio, chk.reasons)


@pytest.mark.parametrize("cls", [wrong.OutlierExactInt8, wrong.OutlierExactInt8Groups])
@pytest.mark.parametrize("family", ["qkv_gate", "o", "unpooler"])
def test_outlier_exact_int8_fails_only_the_element_rule(family, cls):
    """Exact on the probe rows and the spike columns: the pair and probe rules and the 1 % rel-L2 pass it; the
    element rule does not, by a wide margin."""
    fam, w, x, iref = _setup(family, 16)
    cand = cls()
    chk = R.check_output(cand.run(cand.prepare(family, w), family, x), iref, float(fam["rel_l2_tol"]),
                         contract=CONTRACT)
    assert chk.rel_l2 < float(fam["rel_l2_tol"]) and chk.pair_ratio <= 1.0, (chk.rel_l2, chk.pair_ratio, chk.reasons)
    assert chk.sparse_rel <= float(CONTRACT["sparse_probe_rel_tol"]), chk.reasons
    assert not chk.ok and chk.element_ratio > 3 and chk.reasons == [r for r in chk.reasons if "element rule: " in r]
    assert "lossy arithmetic" in chk.reasons[0]


def test_the_element_rule_needs_the_exact_product():
    """Without the bound (a plain reference tensor) the rule does not judge: element_ratio None, not a pass."""
    fam, w, x, iref = _setup("o", 16)
    assert R.check_output(F.linear(x, w), iref.ref, 0.01, contract=CONTRACT).element_ratio is None


def test_the_plan_methods_that_run_on_a_cpu_pass_the_element_rule():
    """best.json's gemv_wide and router_gemv_fp32 (Triton interpreter), torch_linear and mm_wt, at M=1 (two inputs)
    and M=16 on the contract's inputs: every output within the element rule. (The tl.dot methods cannot run here: the
    interpreter's BF16 tl.dot is wrong in triton 3.6; on the GPU every judged output carries element_ratio.) Under the
    interpreter gemv_wide's dominant-entry probe row at one input is 0.44 % off (the probe rule's 0.1 % fails it;
    its entries are within 0.87 of the element bound, more than one BF16 rounding): the interpreter's numerics, not
    the element rule's -- the eager methods pass every rule."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("triton")
    script = Path(__file__).with_name("interp_element_rule.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          env=os.environ | {"TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert {r["method"] for r in rows} == {"gemv_wide", "router_gemv_fp32", "torch_linear", "mm_wt"}
    bad = [r for r in rows if not r["element_ratio"] <= 1.0 or not (r["ok"] or r["method"] == "gemv_wide")]
    assert not bad, bad
    assert all(r["reasons"][0].startswith("sparse probe row") for r in rows if not r["ok"])


def test_the_probe_rule_forgives_exactly_the_rounding_flips_a_correct_fp32_sum_can_make():
    """F.linear's output rounds the FP32 sum, the reference rounds the exact product: where the product lies within
    the accumulation bound of a BF16 midpoint they differ by one ulp. At N = 64 one such flip on a dominant probe row
    weighed ~1e-3 of the row (the bound) and failed a correct kernel about once in 150 checks; measured here, every
    probe row of a correct kernel is at distance 0 from what a correct kernel can give, flips included. A one-ulp
    error where no flip is possible (a one-hot row's output is exact) still counts in full."""
    w = inputs.make_weight("o", 64, 256, 0, "cpu")
    wref = R.WeightReference(w)
    flips = 0
    for seed in range(64):
        x, layout = inputs.make_input(64, 256, seed, "cpu", contract=CONTRACT, salt=seed)
        y = F.linear(x, w)
        iref = R.input_reference(x, wref, "bfloat16", layout)
        probes = [r for r, k in layout.items() if k != "zero"]
        flips += int((y.double()[probes] != iref.ref[probes]).sum())
        check = R.check_output(y, iref, 1e-2, contract=CONTRACT)
        assert check.ok and check.sparse_rel == 0.0, (seed, check.reasons)
        assert R.screen_outputs(y[None], x[None], wref, "bfloat16", layout, 1e-2, CONTRACT) == [True]
    assert flips > 0   # the flips happened, and were forgiven
    one_hot = next(r for r, k in layout.items() if k == "one_hot")
    bad = y.clone()
    bad[one_hot] = torch.nextafter(bad[one_hot], torch.full_like(bad[one_hot], float("inf")))
    check = R.check_output(bad, iref, 1e-2, contract=CONTRACT)
    assert not check.ok and check.sparse_rel > CONTRACT["sparse_probe_rel_tol"], check.reasons
    assert any("sparse probe row error" in r for r in check.reasons)
    assert R.screen_outputs(bad[None], x[None], wref, "bfloat16", layout, 1e-2, CONTRACT) == [False]
