"""The candidate's reach inside the measurement, through the sweep on CPU (real worker process, fake timer): a memo across timed replays,
lossy weights exact only where rows or columns are recognisable, the baseline slowed through the dispatcher or a
backend flag. Each known-wrong class is rejected with a reason that names its mechanism."""
import json
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets.runfile import load_run  # noqa: E402
from profiler.check import wrong  # noqa: E402
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
    assert all("during timing" in f["reasons"][0] and "an answer kept across replays (a memo)" in f["reasons"][0]
               for f in fails), [f["reasons"][0] for f in fails]


def test_every_timed_replay_reads_another_input_and_the_judge_reads_its_own():
    """ReplayFeed: consecutive replays of a graph read different pool inputs, never again the one it was captured on;
    fed_input names the one read last."""
    from profiler.check.timed import ReplayFeed, TimedInput, fed_input
    from profiler.measure.timing import GraphHandle

    pool = [TimedInput(torch.full((2, 3), float(k)), ref=None) for k in range(4)]
    static = pool[1].x.clone()
    handle = GraphHandle(graph=None, output=None, feed=ReplayFeed(static, pool, start=1))
    seen = []
    for _ in range(6):
        handle.feed()
        seen.append(float(static[0, 0]))
        assert fed_input(handle, pool[1]) is pool[int(seen[-1])]
    assert seen == [2.0, 3.0, 0.0, 2.0, 3.0, 0.0]   # never again the input it was captured on (pool[1])
    assert fed_input(GraphHandle(graph=None, output=None), pool[1]) is pool[1]


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
    assert "an answer kept across replays (a memo)" in why["memo_in_graph"], why
    assert "aten::mm for dispatch key CUDA" in why["dispatcher_slow_mm"], why
