"""The candidate's reach inside the measurement, through the sweep on CPU (real worker process, fake timer): a memo across timed replays,
lossy weights exact only where rows or columns are recognisable, the baseline slowed through the dispatcher or a
backend flag. Each known-wrong class is rejected with a reason that names its mechanism."""
import json
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets.runfile import load_run  # noqa: E402
from profiler import wrong  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

FAKE = str(Path(__file__).with_name("fake_device.py"))
CONTROL = wrong.spec(wrong.TorchLinear)


def _shapes(families=("o",), Ms=(16,)):
    from profiler.commands.sweep import select_shapes

    small = {"o": {"N": 64, "K": 256}, "router": {"N": 32, "K": 512}, "qkv_gate": {"N": 64, "K": 256}}
    return [s | small[s["family"]] for s in select_shapes("official") if s["family"] in families and s["M"] in Ms]


def _sweep(specs, shapes, out, init="install", **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep

    run_sweep(specs, shapes, out, label=out.stem, device="cpu", log=lambda m: None, worker_init=f"{FAKE}:{init}",
              settings=SweepSettings(**({"probes": False, "timing": replace(SWEEP, max_seconds=5.0), "canary": "off"} | settings)))
    return load_run(out)


def test_a_memo_across_timed_replays_is_rejected_as_a_memo(tmp_path):
    """The memo returns its last answer for a buffer whose content did not change between two calls: with timed
    replays on an unchanged input it was scored; with a fresh input per replay its output answers another input."""
    run = _sweep([CONTROL, wrong.spec(wrong.MemoAcrossReplays)], _shapes(("o", "router"), (16,)), tmp_path / "m.json",
                 init="install_replaying")
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control"}
    fails = [f for f in run["failures"] if f["candidate"] == "memo_across_replays"]
    assert len(fails) == 2 and all((f["kind"], f["phase"]) == ("incorrect", "time") for f in fails)
    # rejected at a timed call judged at random: named a memo where the judge matched the output to an earlier
    # input, else by that call's error (the property is the rejection during timing, not the name)
    assert all("during timing" in f["reasons"][0] and any(w in f["reasons"][0] for w in (
        "an answer kept across replays (a memo)", "rel-L2", "element rule")) for f in fails), \
        [f["reasons"][0] for f in fails]


def test_every_timed_call_reads_a_new_input_of_the_same_layout_and_its_output_is_kept():
    """FreshFeed: each call's input is made at that call (no two alike, none the capture input), keeps the graph's
    probe rows and pairs, carries plain dense rows and spiky ones; keep() stores a plain tensor's copy and marks
    anything else wrong whether judged or not."""
    from profiler.check.inputs import default_contract, make_weight
    from profiler.check.timed import FreshFeed, timed_inputs

    contract = default_contract()
    shape = {"M": 16, "N": 32, "K": 128, "x_dtype": "bfloat16", "y_dtype": "bfloat16", "rel_l2_tol": 0.01}
    w = make_weight("o", 32, 128, 0, "cpu")
    tin = timed_inputs(shape, w, [300], "cpu", contract, salt=5)[0]
    static = tin.x.clone()
    feed = FreshFeed(static, tin, tin.ref.layout, 4, (16, 32), torch.bfloat16, contract)
    seen, plain = [], 0
    for _ in range(6):
        feed()
        assert torch.equal(static, feed.xs[feed.slot])
        assert not any(torch.equal(static, s) for s in seen + [tin.x])
        kinds = dict(tin.ref.layout)
        for r in kinds:
            assert torch.equal(static[r], tin.x[r])
        for a, b in tin.ref.layout.pairs:
            assert int((static[a] != static[b]).sum()) == 1
        big = (static.float().abs() > 5.0).sum(dim=1)
        plain += int(sum(1 for r in range(16) if r not in kinds and big[r] == 0))
        seen.append(static.clone())
        feed.keep(static.float()[:, :32].to(torch.bfloat16).clone())
        assert feed.slot not in feed.bad
    assert plain > 0
    feed()
    feed.keep(torch.zeros(16, 32, dtype=torch.float32))
    assert "not 16" not in feed.bad[feed.slot] and "torch.float32" in feed.bad[feed.slot]


def test_the_judged_share_meets_the_detection_target():
    """judged_share: a candidate wrong at 5 % of the fewest timed calls is caught with probability >= 0.999; the
    sweep's policy gives 0.749 over 96 calls; fewer calls need a larger share (0.999 itself where 5 % is one call)."""
    from profiler.check.timed import detection_probability, judged_share
    from profiler.worker.shape_task import judge_share

    p = judge_share(SWEEP)
    assert abs(p - 0.748811) < 1e-5
    for calls in (96, 200, 5000):
        assert detection_probability(p, calls, 0.05) >= 0.999
    assert detection_probability(p, 96, 0.05) < 0.9991
    assert abs(judged_share(19, 0.05, 0.999) - 0.999) < 1e-12   # one wrong call: judge it with p = 0.999
    assert judged_share(40, 0.05, 0.999) > p


def test_lossy_weights_dispatcher_kernels_and_backend_flags_are_rejected_through_the_sweep(tmp_path):
    """Outlier-exact int8 weights (also only below M=8), a torch.library kernel for aten::mm, mkldnn turned off after
    its own calls: each rejected at each shape with the reason that names its mechanism; the control is measured."""
    specs = [CONTROL] + [wrong.spec(c) for c in (wrong.OutlierExactInt8, wrong.OutlierExactInt8SmallM,
                                                 wrong.DispatcherSlowMM, wrong.BackendFlagToggle)]
    run = _sweep(specs, _shapes(("o",), (1, 16)), tmp_path / "reach.json")
    scored = {(r["candidate"], r["M"]) for r in run["results"]}
    assert scored == {("torch_linear_control", 1), ("torch_linear_control", 16), ("outlier_exact_int8_small_m", 16)}
    why = {(f["candidate"], f["M"]): " | ".join(f["reasons"]) for f in run["failures"]}

    def lossy(text: str) -> bool:
        """Rejected for its weights by the element rule, or by a sparse probe row where one came first (which call
        of the contract has which kind of probe row depends on the run's random input salt)."""
        return ("element rule: " in text and "lossy arithmetic" in text) or \
            "probe rows expose the weight representation" in text

    for M in (1, 16):
        assert lossy(why["outlier_exact_int8", M]), why["outlier_exact_int8", M]
        assert why["dispatcher_slow_mm", M].startswith(
            "registered a dispatcher kernel (torch.library): aten::mm for dispatch key CPU"), why["dispatcher_slow_mm", M]
        assert "changed global setting torch.backends.mkldnn.enabled (from True to False)" in why[
            "backend_flag_toggle", M]
    assert lossy(why["outlier_exact_int8_small_m", 1]), why["outlier_exact_int8_small_m", 1]
    assert ("outlier_exact_int8_small_m", 16) not in why


def _res(key: str, us: float, ci: float = 0.001) -> dict:
    load, family = key.split("/")
    return {"load": load, "family": family, "M": int(load.split()[-1]), "candidate": "baseline", "median_us": us,
            "ci_low_us": us * (1 - ci), "ci_high_us": us * (1 + ci)}


def test_the_canary_band_is_the_noise_models():
    """On a device with committed repeat evidence (the H200) the band is its cross-run band (datasets.noise_model);
    on a device without (a CPU) the derivation's rule on the run's own clean repeats, every pair of timings of a
    shape; too few repeats: no band and "not compared", said so. A correct control inside the band is ok, a 3x
    slowdown disturbed, and the band is never another device's."""
    from datasets import noise_model
    from profiler.commands import canary

    keys = ["decode 1/o", "decode 16/o", "verify 32/o"]
    first = [_res(k, 10.0) for k in keys]
    again = [_res(k, 10.2) for k in keys[:2]] + [_res(k, 11.2) for k in keys[:2]]
    h200, ev = canary.device_band(first, again, "baseline", "NVIDIA H200")
    assert h200 == noise_model.band(noise_model.ACROSS, noise_model.SHAPE, "NVIDIA H200").frac
    assert "measured on NVIDIA H200" in ev["source"]
    own, ev = canary.device_band(first, again, "baseline", "CPU: Some CPU")
    # pairs per shape: (10, 10.2), (10, 11.2), (10.2, 11.2) at two shapes: a bound from six, wider than any of them
    assert ev["repeat_pairs"] == 6 and ev["repeat_largest"] == 0.12
    assert own == noise_model.band_from_repeats([0.02, 0.12, 1 / 10.2] * 2, noise_model.SHAPE) and own > 0.12
    assert "own repeat" in ev["source"] and "H200" not in ev["source"]
    none, ev = canary.device_band(first, again[:1], "baseline", "CPU: Some CPU")
    assert none is None and "cannot bound a band" in ev["source"]
    v = canary.verdict(first, [_res(k, 30.0) for k in keys], "baseline", band=None)
    assert v["verdict"] == canary.NOT_COMPARED and v["compared"] == 3
    control = [_res(k, 11.0) for k in keys]
    assert canary.verdict(first, control, "baseline", band=own)["verdict"] == canary.OK
    slowed = [_res(k, 30.0 if k == "decode 16/o" else 10.0) for k in keys]
    v = canary.verdict(first, slowed, "baseline", band=own)
    assert v["verdict"] == canary.DISTURBED and [d["key"] for d in v["shapes"]] == ["decode 16/o"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: a captured graph and the CUDA dispatch key")
def test_on_the_gpu_a_memo_inside_a_graph_and_a_cuda_dispatcher_kernel_are_rejected(tmp_path):
    """The GPU forms: a memo kept on the device inside the captured graph (MemoInGraph) and a torch.library kernel
    for aten::mm on the CUDA key (DispatcherSlowMM), through the real timer."""
    from profiler.commands.sweep import SweepSettings, run_sweep

    shapes = [s | {"N": 512, "K": 1024} for s in _shapes(("o",), (16,))]
    out = tmp_path / "gpu.json"
    run_sweep([CONTROL, wrong.spec(wrong.MemoInGraph), wrong.spec(wrong.DispatcherSlowMM)], shapes, out,
              label="gpu", device="cuda", log=lambda m: None,
              settings=SweepSettings(probes=False, canary="off", timing=replace(SWEEP, max_seconds=1.0)))
    run = load_run(out)
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control"}
    why = {f["candidate"]: f["reasons"][0] for f in run["failures"]}
    # rejected at a timed call judged at random (on an H100 the reason was the call's rel-L2 error, not the memo
    # named: run 2026-12-06 on nvidia-h100-80gb-hbm3): a wrong answer at any timed call is the property
    assert "during timing" in why["memo_in_graph"] and any(
        w in why["memo_in_graph"] for w in ("a memo", "rel-L2", "element rule")), why
    assert "aten::mm for dispatch key CUDA" in why["dispatcher_slow_mm"], why


def test_fewest_judged_bounds_the_judged_calls_of_an_honest_batch():
    """fewest_judged(p, n): fewer judged calls than it happen with probability <= 1e-9 (exact binomial sums); one
    more would exceed that. The batch of 32 at the sweep's share: fewer than 8 judged is the forging line."""
    import math

    from profiler.check.timed import IMPLAUSIBLE, fewest_judged
    from profiler.worker.shape_task import judge_share

    def below(p, n, k):   # P(Binomial(n, p) < k)
        return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k))

    p = judge_share(SWEEP)
    for n in (8, 16, 32, 96, 200):
        k = fewest_judged(p, n)
        assert below(p, n, k) <= IMPLAUSIBLE < below(p, n, k + 1), (n, k)
    assert fewest_judged(p, 32) == 8
    assert fewest_judged(1.0, 5) == 5 and fewest_judged(0.0, 5) == 0 and fewest_judged(p, 0) == 0
