"""Trust by construction through the sweep (CPU, real worker processes, fake timer): every timed graph checked
after timing, the canary in the run file, eager times recorded where asked (GPU cases marked)."""
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets.runfile import DISTURBED_FLAG, load_run  # noqa: E402
from datasets.shapes import shape_key_of  # noqa: E402
from profiler import wrong  # noqa: E402
from profiler.commands import canary  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

FAKE = str(Path(__file__).with_name("fake_device.py"))
CONTROL = wrong.spec(wrong.TorchLinear)


def _shapes(families=("o", "router"), Ms=None):
    from profiler.commands.sweep import select_shapes

    # N of a few hundred: at N = 64 one output-rounding flip of a large entry of a sparse probe row (a correct
    # kernel's FP32 sum rounding the other way than the FP64 reference) weighs ~1e-3 of the row, the probe bound,
    # and the control failed a shape in about 1 of 150 contract checks
    small = {"o": {"N": 256, "K": 256}, "router": {"N": 128, "K": 512}, "qkv_gate": {"N": 256, "K": 256},
             "pooler": {"N": 256, "K": 256}, "unpooler": {"N": 256, "K": 256}}
    return [s | small[s["family"]] for s in select_shapes("official")
            if s["family"] in families and (Ms is None or s["M"] in Ms)]


def _sweep(specs, shapes, out, init="install", device="cpu", **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep

    run_sweep(specs, shapes, out, label=out.stem, device=device, log=lambda m: None,
              worker_init=f"{FAKE}:{init}" if device == "cpu" else None,
              settings=SweepSettings(**({"probes": False, "timing": replace(SWEEP, max_seconds=0.1)} | settings)))
    return load_run(out)


DEGRADES = '''
from profiler.wrong import DegradesAfterReplays


class DegradesSoon(DegradesAfterReplays):
    """Right for 40 calls: the lifecycle's (and the capture's) calls pass, the fake timer's replays do not."""
    name = "degrades_soon"
    AFTER = 40
'''


def test_a_graph_that_degrades_during_timing_is_incorrect_at_that_shape_and_unscored(tmp_path):
    mod = tmp_path / "degrades.py"
    mod.write_text(DEGRADES)
    run = _sweep([CONTROL, f"{mod}:DegradesSoon"], _shapes(("o",), (16,)), tmp_path / "deg.json",
                 init="install_replaying")
    (f,) = [f for f in run["failures"] if f["candidate"] == "degrades_soon"]
    assert (f["kind"], f["phase"]) == ("incorrect", "time")
    # judged during timing: a call drawn at random after it ran, by the parent (a CPU worker's)
    assert re.match(r"cold timing graph \d of 3 \([^)]*\), during timing \(batch \d+\), timed call \d+ \(judged at "
                    r"random after it ran, by the parent\): ", f["reasons"][0]), f["reasons"]
    assert [r["candidate"] for r in run["results"]] == ["torch_linear_control"] and run["pairs"] == []


def test_the_canary_is_in_the_run_file_and_agrees_with_an_undisturbed_baseline(tmp_path):
    shapes = _shapes(("o", "router"))
    run = _sweep([CONTROL, CONTROL], shapes, tmp_path / "ok.json")
    c = run["canary"]
    why = {"canary": c, "failures": run["failures"], "results": [shape_key_of(r) for r in run["results"]]}
    assert c["verdict"] == canary.OK and c["sample"] == "all" and c["shapes"] == [], why
    assert c["compared"] == len(shapes), why   # every family and M
    # the band from this device's repeat: the smallest and largest M of each family timed twice in the clean worker
    assert c["band_evidence"]["repeat_pairs"] == 3 * len(canary.canary_shapes(shapes, "sample")) == 12
    assert c["band"] is not None and c["band"] >= c["band_evidence"]["repeat_largest"]
    assert set(c["canary_us"]) == set(c["ratios"])
    # the canary ran first, in the sweep's own first worker, before the second candidate was loaded: no extra start
    workers = run["environment"]["workers"]
    assert len(workers) == 1 and c["worker"] == 0 and workers[0]["ended"] == "closed"
    # (then, on a device without committed repeat evidence, the canary's repeat after the sweep: this worker loaded
    # the baseline's spec only, so it serves that too)
    assert "; canary (the baseline alone, before any candidate)" in workers[0]["started_for"]
    assert all(r["worker"] == 0 for r in run["results"])
    assert "canary" not in _sweep([CONTROL], shapes[:1], tmp_path / "off.json", canary="off")


DISTURBER = '''
import sys
import types

sys.modules["projlab_test_disturbance"] = types.ModuleType("projlab_test_disturbance")


class Disturber:
    """Right answers; importing it changes process-wide state the guard does not watch."""
    name = "disturber"

    def prepare(self, family, weight):
        return {"w": weight}

    def run(self, state, family, x):
        import torch.nn.functional as F

        w = state["w"]
        return F.linear(x.float(), w) if w.dtype.is_floating_point and w.element_size() == 4 else F.linear(x, w)
'''


def test_a_disturbed_baseline_is_named_by_the_canary_and_the_pair_has_no_score(tmp_path):
    import pandas as pd

    from dashboard.model import scoring

    mod = tmp_path / "disturber.py"
    mod.write_text(DISTURBER)
    shapes = _shapes(("o",))
    path = tmp_path / "dist.json"
    run = _sweep([CONTROL, f"{mod}:Disturber"], shapes, path, init="install_disturbable", canary="sample")
    c = run["canary"]
    why = {"ratios": c["ratios"], "disturbed": c["shapes"], "not_timed": c["not_timed"], "failures": run["failures"],
           "results": [(r["candidate"], r["load"], r["median_us"], r["worker"]) for r in run["results"]],
           "workers": [w["started_for"] for w in run["environment"]["workers"]]}
    assert c["verdict"] == canary.DISTURBED and {d["key"] for d in c["shapes"]} == {"decode 1/o", "verify 32/o"}, why
    assert all(2.5 < d["ratio"] < 3.5 for d in c["shapes"])
    flagged = [r for r in run["results"] if DISTURBED_FLAG in r.get("flags", [])]
    assert {(r["candidate"], r["load"]) for r in flagged} == {("torch_linear_control", "decode 1"),
                                                              ("torch_linear_control", "verify 32")}
    # the score gate (shapes made small for the CPU, so not the workload's: gated over the run's own shapes)
    gate = scoring.gate_pair(pd.DataFrame(run["results"]), "torch_linear_control", "disturber", scope="")
    assert not gate.ok and gate.refused and "canary: baseline disturbed) at 2 shapes" in gate.message()


@pytest.mark.gpu
@pytest.mark.parametrize("cls", wrong.TIMED_WRONG)
def test_gpu_timed_wrong_classes_are_rejected_by_the_check_of_the_timed_graphs(tmp_path, cls):
    shapes = [s for s in _shapes(("o", "router"), (1, 16)) ]
    run = _sweep([CONTROL, wrong.spec(cls)], shapes, tmp_path / "timed.json", device="cuda", canary="off")
    fails = [f for f in run["failures"] if f["candidate"] == cls.name]
    assert len(fails) == len(shapes) and all(f["kind"] == "incorrect" for f in fails), fails
    assert all(cls.expect in f["reasons"][0] for f in fails), [f["reasons"][0] for f in fails]
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control"}


@pytest.mark.gpu
def test_gpu_eager_time_is_recorded_beside_the_graph_time(tmp_path):
    run = _sweep([CONTROL], _shapes(("o",), (1,)), tmp_path / "eager.json", device="cuda", eager=True,
                 canary="off")
    (r,) = run["results"]
    assert r["eager_us"] > 0 and r["eager_calls"] >= 10 and r["eager_mean_us"] > 0


LATER_PREPARES = '''
from profiler.wrong import TorchLinear, _linear


class LaterPreparesHalfK(TorchLinear):
    """Right on the first two weights it prepares at each (N, K) -- the sweep's and the contract's outlier draw --
    half of K on every later one: the stream-mode graph's weight copies."""
    name = "later_prepares_half_k"

    def prepare(self, family, weight):
        seen = self.__dict__.setdefault("seen", {})
        key = tuple(weight.shape)
        seen[key] = seen.get(key, 0) + 1
        return {"w": weight, "n": seen[key]}

    def run(self, state, family, x):
        if state["n"] <= 2:
            return _linear(x, state["w"])
        half = x.shape[1] // 2
        return _linear(x[:, :half].contiguous(), state["w"][:, :half].contiguous())
'''


def test_stream_mode_graphs_are_checked_call_by_call(tmp_path):
    """Stream mode times one graph of many calls rotating through weight and input copies: every call's output is
    judged against its own input's reference (the control passes; a candidate wrong on the copies does not)."""
    mod = tmp_path / "later.py"
    mod.write_text(LATER_PREPARES)
    shapes = [s | {"N": 512, "K": 1024} for s in _shapes(("o",), (1,))]   # ~1 MB a copy: ~180 copies of 3 x L2
    run = _sweep([CONTROL, f"{mod}:LaterPreparesHalfK"], shapes, tmp_path / "stream.json", mode="stream",
                 canary="off")
    assert [r["candidate"] for r in run["results"]] == ["torch_linear_control"]
    (f,) = [f for f in run["failures"] if f["candidate"] == "later_prepares_half_k"]
    assert f["kind"] == "incorrect" and f["reasons"][0].startswith(
        "stream-mode graph, call 1 of "), f["reasons"]
    assert ", before timing: rel-L2 error" in f["reasons"][0]
