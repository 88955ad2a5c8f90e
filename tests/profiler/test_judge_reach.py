"""The judge out of the candidate's reach (docs/trust.md, "Classes"): five classes of cheating that passed every
check while timed inputs came from a pool and a few timed replays were judged, each rejected through the sweep on
CPU with the reason that names its mechanism -- several forms per class (profiler/wrong/: ANSWER_WRONG,
UNJUDGED_WRONG, FORGING_WRONG, ROW_KIND_WRONG, MODE_WRONG) -- and the properties that close them tested directly."""
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets.runfile import load_run  # noqa: E402
from profiler import wrong  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(Path(__file__).with_name("fake_device.py"))
CONTROL = wrong.spec(wrong.TorchLinear)
TINY = str(ROOT / "tests/fixtures/workloads/tiny.json")


def _shapes(Ms=(16,)):
    from profiler.commands.sweep import select_shapes

    return [s | {"N": 64, "K": 256} for s in select_shapes("official") if s["family"] == "o" and s["M"] in Ms]


def _sweep(specs, shapes, out, init="install_replaying", **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep

    run_sweep(specs, shapes, out, label=out.stem, device="cpu", log=lambda m: None, worker_init=f"{FAKE}:{init}",
              settings=SweepSettings(**({"probes": False, "timing": replace(SWEEP, max_seconds=5.0), "canary": "off"}
                                        | settings)))
    return load_run(out)


def _why(run) -> dict:
    return {(f["candidate"], f["M"]): " | ".join(f["reasons"]) for f in run["failures"]}


def _matches(text: str, expect) -> bool:
    return any(e in text for e in ((expect,) if isinstance(expect, str) else expect))


@pytest.mark.parametrize("group", ["ANSWER_WRONG", "UNJUDGED_WRONG", "ROW_KIND_WRONG"])
def test_each_form_of_the_computing_classes_is_rejected_with_its_reason(tmp_path, group):
    """Answers computed outside the timed call, wrong calls between judged ones, lossy arithmetic on rows without an
    outlier: each form rejected at M=1 and M=16 (the timer replays every graph per round, as the GPU's does), the
    control measured beside them."""
    # LazyOutputInTiming's form needs the CPU timer (the CLI test below); RewritesJudgeStore and
    # ReplaysKeptPair attack from a feed's second batch on, and these sweeps time one batch per instance (their own
    # test drives a feed for four)
    classes = [c for c in getattr(wrong, group)
               if c not in (wrong.LazyOutputInTiming, wrong.RewritesJudgeStore, wrong.ReplaysKeptPair)]
    run = _sweep([CONTROL] + [wrong.spec(c) for c in classes], _shapes((1, 16)), tmp_path / f"{group}.json")
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control"}, _why(run)
    why = _why(run)
    for cls in classes:
        for M in (1, 16):
            assert _matches(why[cls.name, M], cls.expect), (cls.name, M, why[cls.name, M])


def test_each_form_of_forging_is_rejected_and_names_the_forging(tmp_path):
    """A pipe put in place of the reply descriptor, an attribute set on the live timer, a background thread: each
    ends its worker with an in-process forging reason; a verdict cleared in the worker was never there (the parent
    judged the call); the control is measured in the worker after."""
    # PausesJudge and SkewsJudgeShare act from a feed's second batch on: driven below
    forms = [c for c in wrong.FORGING_WRONG if c not in (wrong.PausesJudge, wrong.SkewsJudgeShare)]
    run = _sweep([CONTROL] + [wrong.spec(c) for c in forms], _shapes((16,)), tmp_path / "forge.json")
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control"}, _why(run)
    why = _why(run)
    assert "the reply pipe" in why["rebinds_reply_pipe", 16], why
    assert "changed the live cold timer (overhead_us)" in why["sets_timer_attribute", 16], why
    assert "a thread of its own is running beside the harness" in why["thread_computes", 16], why
    # its wrong call was judged by the parent (a CPU worker's), which holds every verdict: none to clear in the worker
    cleared = next(f for f in run["failures"] if f["candidate"] == "clears_judge_verdict")
    assert (cleared["kind"], cleared["phase"]) == ("incorrect", "time"), cleared
    assert "judged at random after it ran, by the parent" in cleared["reasons"][0], cleared["reasons"]
    for cls in forms:
        assert _matches(why[cls.name, 16], "by the parent" if cls is wrong.ClearsJudgeVerdict else "in-process forging")


def test_a_mode_entered_when_the_candidate_is_loaded_is_refused_at_load(tmp_path):
    """A TorchFunctionMode or a TorchDispatchMode entered at load (outside the dispatcher table): refused at load
    with the mode named; popped, so the control after them is measured."""
    run = _sweep([CONTROL] + [wrong.spec(c) for c in wrong.MODE_WRONG], _shapes((16,)), tmp_path / "mode.json",
                 init="install")
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control"}, _why(run)
    refused = [f for f in run["failures"] if f["kind"] == "load"]   # named by the file's stem: not loaded
    assert len(refused) == len(wrong.MODE_WRONG), refused
    for cls, f in zip(wrong.MODE_WRONG, refused):
        assert f["reasons"][0].startswith("refused at load: left a " + cls.expect), f["reasons"]


def test_through_the_cli_on_cpu_the_real_timer_refuses_a_lazy_output_and_judges_every_call(tmp_path):
    """`python3 -m profiler run --device cpu` (the wall-clock timer: a timed output is type-checked and copied into
    the store inside the timed interval): a lazy output at timed calls and wrong calls between counted ones are
    rejected at "time"; the control is scored; the shape's info states the judged share and P(caught)."""
    out = tmp_path / "cli.json"
    specs = [wrong.spec(c) for c in (wrong.TorchLinear, wrong.LazyOutputInTiming, wrong.WrongOneCallInTen)]
    cmd = [sys.executable, "-m", "profiler", "run", "--device", "cpu", "--workload", TINY, "--plan", "baseline",
           *[a for s in specs for a in ("--candidate", s)], "--trust-candidate", "--canary", "off", "--no-probes",
           "--max-seconds-per-shape", "1.5", "--shapes", "proj:4", "--out", str(out)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    run = json.loads(out.read_text())
    assert {r["candidate"] for r in run["results"]} == {"baseline", "torch_linear_control"}, _why(run)
    fails = {f["candidate"]: f for f in run["failures"]}
    lazy = fails["lazy_output_in_timing"]
    assert (lazy["kind"], lazy["phase"]) == ("incorrect", "time") and "not a plain torch.Tensor" in lazy["reasons"][0]
    tenth = fails["wrong_one_call_in_ten"]
    assert (tenth["kind"], tenth["phase"]) == ("incorrect", "time") and "judged at random after it ran" in \
        tenth["reasons"][0], tenth["reasons"]
    (info,) = run["shape_info"].values()
    judged = info["judged"]
    assert abs(judged["share"] - 0.748811) < 1e-5 and judged["calls"] >= 32 and judged["judged"] > 0
    assert judged["by"] == "the parent"   # a CPU worker's timed calls: judged in the parent, counted there
    assert judged["p_catch"] == pytest.approx(1 - (1 - judged["share"]) ** -(-judged["calls"] * 0.05 // 1), abs=1e-6)


def test_the_batched_screen_gives_check_outputs_verdict():
    """screen_outputs (every judged call of a batch at once) against check_output call by call, on right outputs and
    on outputs wrong by each rule: lossy rows, a zero row made nonzero, a probe row off, a pair off, a NaN."""
    from profiler.check.inputs import default_contract, make_input, make_weight
    from profiler.check.rules import WeightReference, check_output, input_reference, screen_outputs

    contract = default_contract()
    w = make_weight("o", 48, 256, 0, "cpu")
    wref = WeightReference(w)
    x0, layout = make_input(16, 256, 7, "cpu", contract=contract, salt=3)
    xs = torch.stack([x0] * 6)
    ys = torch.nn.functional.linear(xs, w).clone()
    zero = next(r for r, k in layout.items() if k == "zero")
    probe = next(r for r, k in layout.items() if k == "one_hot")
    plain = next(r for r in range(16) if r not in layout and r not in layout.spikes)
    a, _ = layout.pairs[0]
    ys[1, plain] = (ys[1, plain].float() * 1.01).to(ys.dtype)    # lossy on a plain row
    ys[2, zero, 3] = 1e-3
    ys[3, probe] = (ys[3, probe].float() * 1.02).to(ys.dtype)
    ys[4, a, 5] += 0.5
    ys[5, 0, 0] = float("nan")
    got = screen_outputs(ys, xs, wref, "bfloat16", layout, 0.01, contract)
    want = [check_output(ys[i], input_reference(xs[i], wref, "bfloat16", layout), 0.01, expect_shape=(16, 48),
                         expect_dtype="bfloat16", contract=contract).ok for i in range(6)]
    assert got == want == [True, False, False, False, False, False]


def test_the_harness_touches_only_its_own_types():
    """FreshFeed refuses a static input of another type; keep() records a subclass or a wrong shape as a wrong call
    without running any of its methods; the CPU replay's store copies plain tensors only."""
    from profiler.check.inputs import default_contract, make_weight
    from profiler.check.timed import FreshFeed, timed_inputs
    from profiler.measure.timing import EagerReplay

    contract = default_contract()
    shape = {"M": 4, "N": 16, "K": 64, "x_dtype": "bfloat16", "y_dtype": "bfloat16", "rel_l2_tol": 0.01}
    tin = timed_inputs(shape, make_weight("o", 16, 64, 0, "cpu"), [300], "cpu", contract)[0]

    class Sub(torch.Tensor):
        ran = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            Sub.ran.append(func)
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))

    with pytest.raises(TypeError, match="not a plain torch.Tensor"):
        FreshFeed(tin.x.clone().as_subclass(Sub), tin, tin.ref.layout, 4, (4, 16), torch.bfloat16, contract)
    feed = FreshFeed(tin.x.clone(), tin, tin.ref.layout, 4, (4, 16), torch.bfloat16, contract)
    feed()
    sub = torch.zeros(4, 16, dtype=torch.bfloat16).as_subclass(Sub)
    Sub.ran.clear()
    feed.keep(sub)
    assert "returned a Sub, not a plain torch.Tensor" in feed.bad[feed.slot]
    replay = EagerReplay(lambda: sub, torch.zeros(4, 16, dtype=torch.bfloat16))
    replay.store(sub)
    assert Sub.ran == [], Sub.ran   # no method of the candidate's type ran inside the harness's operations


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: a captured graph replayed by the real timer")
def test_on_the_gpu_a_device_memo_of_several_entries_and_a_per_replay_counter_are_rejected(tmp_path):
    """The GPU forms, inside the captured graph: a memo of 8 answers in device memory keyed by a fingerprint of the
    input, a per-replay counter in device memory wrong between the positions a judge of the last replay read; each
    rejected at "time" through the real timer; the control is measured and the shape's info states P(caught)."""
    from profiler.commands.sweep import SweepSettings, run_sweep

    shapes = [s | {"N": 512, "K": 1024} for s in _shapes((1, 16))]
    out = tmp_path / "gpu.json"
    run_sweep([CONTROL] + [wrong.spec(c) for c in wrong.GPU_JUDGE_WRONG], shapes, out, label="gpu", device="cuda",
              log=lambda m: None, settings=SweepSettings(probes=False, canary="off",
                                                         timing=replace(SWEEP, max_seconds=1.0)))
    run = load_run(out)
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control"}, _why(run)
    why = _why(run)
    for cls in wrong.GPU_JUDGE_WRONG:
        for M in (1, 16):
            assert _matches(why[cls.name, M], cls.expect), (cls.name, M, why[cls.name, M])
    assert all(info["judged"]["p_catch"] > 0.9 for info in run["shape_info"].values()), run["shape_info"]


def _drive(cand, parent: bool, batches: int = 4, capacity: int = 32):
    """A FreshFeed driven as the CPU timer drives it -- the next input, the call, keep(y), settle() -- for `batches`
    batches of `capacity` calls, each batch judged after it as the sweep does: by the parent's judge of each call
    (profiler.worker.call_judge, in this process, as a CPU worker's parent runs it) or by the worker's batch judge.
    -> (the first failure, the calls judged, the verdicts the worker sent)."""
    from profiler.check.inputs import default_contract, make_weight
    from profiler.check.rules import WeightReference
    from profiler.check.timed import FreshFeed, GraphJudge, timed_inputs
    from profiler.worker.call_judge import CallJudge

    contract = default_contract()
    shape = {"family": "o", "M": 16, "N": 64, "K": 256, "x_dtype": "bfloat16", "w_dtype": "bfloat16",
             "y_dtype": "bfloat16", "rel_l2_tol": 0.01, "load": "verify 16"}
    w = make_weight("o", 64, 256, 0, "cpu", dtype="bfloat16")
    wref, judge = WeightReference(w), GraphJudge(shape, contract)
    tin = timed_inputs(shape, w, [300], "cpu", contract, wref=wref, salt=5)[0]
    static, sent = tin.x.clone(), []
    calls = CallJudge({"kind": "shape", "shape": shape, "settings": {"seed": 0}}, contract) if parent else None
    where = {"candidate": cand.name, "graph": "graph"}
    channel = ((lambda: calls.input(where)), (lambda payload: calls.output(where | payload))) if parent else None
    feed = FreshFeed(static, tin, tin.ref.layout, capacity, (16, 64), torch.bfloat16, contract, parent=channel,
                     report=sent.append)
    state = cand.prepare("o", w)
    failed, judged = [], 0
    for b in range(batches):
        for _ in range(capacity):
            feed()
            feed.keep(cand.run(state, "o", static))
            feed.settle()
        n, reasons = feed.judge(judge, wref, 0.749, capacity, "graph", f"during timing (batch {b + 1})")
        judged += n
        failed = failed or reasons
    if parent:
        result = calls.apply({"results": [{"candidate": cand.name, "n_samples": batches * capacity}], "pairs": [],
                              "failures": [], "info": {}})
        failed = [r for f in result["failures"] for r in f["reasons"]]
        judged = result["info"]["judged"]["judged"]
    return failed, judged, sent


def test_a_judge_of_each_call_where_candidate_code_runs_between_calls_leaves_no_kept_copy_to_rewrite():
    """RewritesJudgeStore sets the kept copies of its other calls to zero in, zero out and is right only at each
    batch's last call: a judge that reads the batch's kept copies after it finds every judged call right (why the
    CPU, whose timed calls run the candidate's Python, is judged by the parent); the parent, which got each output
    as its call ended, catches it. The parent's draws and counts are out of the worker's reach: a feed taken from
    it for a batch leaves its count of inputs fed short of the calls timed, and the worker's draws replaced change
    nothing it chooses (the worker's batch judge names them forging). The control passes both judges."""
    from profiler.check import timed

    control = wrong.TorchLinear()
    for witness in (wrong.RewritesJudgeStore(), wrong.ReplaysKeptPair()):   # zeros, or a genuine pair replayed
        failed, judged, sent = _drive(witness, parent=False)
        assert failed == [] and judged > 60 and sent == [], witness.name   # the batch judge is beaten
        failed, judged, sent = _drive(witness, parent=True)
        assert failed and "judged at random after it ran, by the parent" in failed[0] and sent == [], witness.name
    failed, judged, sent = _drive(wrong.PausesJudge(), parent=True)
    assert failed and "in-process forging" in failed[0], failed
    draws = timed._uniforms
    try:
        failed, judged, sent = _drive(wrong.SkewsJudgeShare(), parent=False)
        assert failed and "the judge's draws were changed" in failed[0] and sent == [failed], failed
        timed._uniforms = draws
        failed, judged, sent = _drive(wrong.SkewsJudgeShare(), parent=True)
        assert failed and "by the parent" in failed[0], failed
    finally:
        timed._uniforms = draws
    for parent in (False, True):
        failed, judged, sent = _drive(control, parent=parent)
        assert failed == [] and sent == [] and judged > 60
        # either way a wrong call drawn is a failure (8 wrong calls of 128 here: missed with probability
        # 0.251^8 = 1.6e-5); the worker's batch judge sends it out the moment it is found
        failed, judged, sent = _drive(wrong.WrongOneCallInTen(), parent=parent)
        assert failed and sent == ([] if parent else [failed]), (parent, failed)


def test_the_parent_applies_a_verdict_the_reply_left_out():
    """profiler.worker.records.apply_verdicts: a candidate the judge's verdict names loses its result and its pairs
    at that shape and gets the failure, with the reply's silence named; one the reply already failed keeps its own
    failure; other candidates are untouched."""
    from profiler.worker.records import apply_verdicts

    shape = {"family": "o", "M": 16, "N": 64, "K": 256, "load": "verify 16"}
    result = {"results": [{"candidate": c, "median_us": 1.0} for c in ("base", "forger", "honest")],
              "pairs": [{"baseline": "base", "candidate": c} for c in ("forger", "honest")],
              "failures": [{"candidate": "failed_anyway", "kind": "incorrect", "reasons": ["its own"]}]}
    out = apply_verdicts(result, [{"candidate": "forger", "shape": shape, "reasons": ["timed call 7: rel-L2"]},
                                  {"candidate": "failed_anyway", "shape": shape, "reasons": ["timed call 3"]}])
    assert [r["candidate"] for r in out["results"]] == ["base", "honest"]
    assert [p["candidate"] for p in out["pairs"]] == ["honest"]
    forged = next(f for f in out["failures"] if f["candidate"] == "forger")
    assert (forged["kind"], forged["phase"], forged["M"]) == ("incorrect", "time", 16)
    assert forged["reasons"][0] == "timed call 7: rel-L2" and "in-process forging" in forged["reasons"][-1]
    assert [f["reasons"] for f in out["failures"] if f["candidate"] == "failed_anyway"] == [["its own"]]
