"""The decode step on CPU (profiler/worker/step_model.py, step_task.py, profiler/cli/step.py): the step computes what a
decoder layer computes, the step task runs the baseline and a module candidate through the same step, the step rule
rejects candidates whose projections are wrong (outright, or only after their first call), the run file's step object
is validated, and the command line refuses bad input in one line before any worker starts. The CPU times are wall-clock
times on a shared machine: nothing here asserts what they are, only that they are there and well-formed."""
import json
import math

import pytest

torch = pytest.importorskip("torch")

from datasets import load_workload  # noqa: E402
from datasets.layer_spec import layer_of  # noqa: E402
from datasets.paths import PROJECT_DIR  # noqa: E402
from datasets.runfile import RunFileError, validate_run  # noqa: E402

TINY = PROJECT_DIR / "tests" / "fixtures" / "workloads" / "tiny_layer.json"
GOOD = '''import torch
NAME = "linear_module"
def prepare(weight):
    return weight.contiguous()
def run(state, family, x):
    return torch.nn.functional.linear(x, state)
'''
SCALED = '''import torch
NAME = "scaled_2pct"
def prepare(weight):
    return weight
def run(state, family, x):
    return torch.nn.functional.linear(x, state) * 1.02
'''
# Right on the first call of each weight, then the same answer whatever the input: passes an eager step on one input
STALE = '''import torch
NAME = "stale"
def prepare(weight):
    return {"w": weight, "y": None}
def run(state, family, x):
    if state["y"] is None:
        state["y"] = torch.nn.functional.linear(x, state["w"])
    return state["y"]
'''


@pytest.fixture(scope="module")
def tiny():
    return load_workload(str(TINY))


def _run_task(task: dict) -> dict:
    """The task in this process through the in-process worker (inprocess_worker.py): a fresh session, as a fresh
    worker has, and everything the candidates changed in this process put back when it closes."""
    from inprocess_worker import InProcessWorker

    worker = InProcessWorker({"device": "cpu"})
    try:
        return worker.call(task, 0.0)
    finally:
        worker.close()


def _model(tiny, batch=3, context=5, layers=2):
    from profiler.worker.step_model import StepModel

    return StepModel(layer_of(tiny), tiny.families, batch, context, layers, "cpu", seed=1)


def test_attention_is_grouped_query_softmax_over_the_cache_and_the_new_token(tiny):
    """Query head h reads KV head h // (heads / kv_heads); it attends over the `context` cached tokens and the new
    one, softmax(q k^T / sqrt(d)) v; the written path (a timed graph's) and the reference path agree."""
    m = _model(tiny)
    lay = m.layer
    g = torch.Generator().manual_seed(0)
    q = torch.randn(m.batch, lay.heads, lay.head_dim, generator=g).to(m.dtype)
    k = torch.randn(m.batch, lay.kv_heads, lay.head_dim, generator=g).to(m.dtype)
    v = torch.randn(m.batch, lay.kv_heads, lay.head_dim, generator=g).to(m.dtype)
    got_ref = m._attention(0, q, k, v, write_cache=False).double()
    got = m._attention(0, q, k, v, write_cache=True).double()
    group = lay.heads // lay.kv_heads
    want = torch.empty(m.batch, lay.heads, lay.head_dim, dtype=torch.float64)
    for b in range(m.batch):
        for h in range(lay.heads):
            kv = h // group
            keys = torch.cat([m.k_cache[0][b, kv, :m.context].double(), k[b, kv].double()[None]])
            vals = torch.cat([m.v_cache[0][b, kv, :m.context].double(), v[b, kv].double()[None]])
            w = torch.softmax(keys @ q[b, h].double() / math.sqrt(lay.head_dim), dim=0)
            want[b, h] = w @ vals
    want = want.reshape(m.batch, -1)
    assert torch.allclose(got_ref, want, rtol=0.02, atol=0.02)
    assert torch.allclose(got, got_ref)


def test_rotary_rotates_pairs_by_the_position_angle(tiny):
    """Rotate-half rotary at position `context`: dimension i pairs with i + d/2, both turned by
    context * theta^(-2i/d)."""
    m = _model(tiny, context=7)
    d = m.layer.head_dim
    t = torch.zeros(1, 1, d, dtype=torch.float64)
    t[..., 0] = 1.0
    out = m._rotary(t, torch.float64)
    angle = 7 * m.layer.rope_theta ** 0.0
    assert out[0, 0, 0].item() == pytest.approx(math.cos(angle)) and out[0, 0, d // 2].item() == pytest.approx(
        math.sin(angle))


def test_the_reference_never_writes_the_cache_and_layers_are_distinct(tiny):
    m = _model(tiny)
    before = [c.clone() for c in m.k_cache]
    m.reference(m.input(0))
    assert all(torch.equal(a, b) for a, b in zip(before, m.k_cache))
    assert not torch.equal(m.weights[0]["qkv"], m.weights[1]["qkv"])


@pytest.fixture(scope="module")
def task_result(tiny, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mods")
    specs = {}
    for name, text in (("good", GOOD), ("scaled", SCALED), ("stale", STALE)):
        (folder / f"{name}.py").write_text(text)
        specs[name] = str(folder / f"{name}.py")
    cands = [{"spec": "baseline", "name": "baseline"}, {"spec": specs["good"], "name": "linear_module"},
             {"spec": specs["scaled"], "name": "scaled_2pct"}, {"spec": specs["stale"], "name": "stale"}]
    return _run_task({"kind": "step", "workload": tiny.to_dict(), "batch": 4, "context": 16, "candidates": cands,
                      "settings": {"layers": 2, "seed": 0, "max_seconds": 0.05}})


def test_the_baseline_and_a_module_candidate_run_the_same_step(task_result):
    by = {c["candidate"]: c for c in task_result["candidates"]}
    assert by["baseline"]["correct"] and by["linear_module"]["correct"]
    for name in ("baseline", "linear_module"):
        for mode in ("cold", "warm"):
            assert by[name][mode]["median_us"] > 0 and by[name][mode]["n_samples"] > 0
        parts = by[name]["breakdown"]
        assert parts["method"].startswith("wall clock per segment")
        assert set(parts["cold"]) == {"qkv", "o", "gate_up", "down", "attention", "norms_activations", "rest"}
    (pair,) = task_result["pairs"]
    assert (pair["baseline"], pair["candidate"]) == ("baseline", "linear_module")
    assert pair["cold"]["ratio_median"] > 0 and pair["warm"]["n_pairs"] > 0
    assert task_result["point"]["tolerance"] == 0.01   # the families' rel_l2_tol: the contract's number
    assert by["linear_module"]["error"]["vs_baseline_step"] <= 0.01
    assert "vs_baseline_step" not in by["baseline"]["error"]


def test_the_step_rule_rejects_wrong_projections(task_result):
    by = {c["candidate"]: c for c in task_result["candidates"]}
    fails = {f["candidate"]: f for f in task_result["failures"]}
    # 2 % too large in every projection: over the step's 1 % tolerance at the eager step, never timed
    assert not by["scaled_2pct"]["correct"] and "cold" not in by["scaled_2pct"]
    assert fails["scaled_2pct"]["kind"] == "incorrect"
    assert "over the tolerance 0.01" in fails["scaled_2pct"]["reasons"][0]
    # right on its first call, stale after: the eager step passes, the graph fed another input does not
    assert not by["stale"]["correct"] and "cold" not in by["stale"]
    assert "step graph on input 2 of 4" in fails["stale"]["reasons"][0]
    assert by["baseline"]["error"]["rel_l2"] <= 0.01


def _run_with(task_result, tiny):
    from datasets.runfile import new_run

    run = new_run("step-test", {"gpu": "cpu"}, workload=tiny)
    run["step"] = {"layers": 2, "batches": [4], "contexts": [16], "seconds_per_mode": 0.05,
                   "candidates": ["baseline", "linear_module"], "points": [task_result | {"worker": 0}]}
    run["step"]["points"][0].pop("kind", None)
    return run


def test_the_step_object_is_validated_naming_the_field(task_result, tiny):
    run = _run_with(task_result, tiny)
    validate_run(run, "step.json")
    bad = json.loads(json.dumps(run))
    bad["step"]["points"][0]["candidates"][0]["cold"]["median_us"] = -3.0
    with pytest.raises(RunFileError, match=r"step.json: step.points\[0\].candidates\[0\].cold.median_us: "):
        validate_run(bad, "step.json")
    bad = json.loads(json.dumps(run))
    bad["step"]["points"][0]["pairs"][0]["candidate"] = "stale"
    with pytest.raises(RunFileError, match=r"pairs\[0\].candidate: 'stale' has no correct, timed step"):
        validate_run(bad, "step.json")
    bad = json.loads(json.dumps(run))
    del bad["workload"]["layer"]
    with pytest.raises(RunFileError, match="workload.layer: missing: a step run's workload declares"):
        validate_run(bad, "step.json")
    bad = json.loads(json.dumps(run))
    wrong = next(c for c in bad["step"]["points"][0]["candidates"] if c["candidate"] == "stale")
    wrong["cold"] = {"median_us": 5.0, "n_samples": 3}
    with pytest.raises(RunFileError, match="an incorrect step has no times"):
        validate_run(bad, "step.json")


@pytest.mark.parametrize("argv, words", [
    (["--plan", "baseline"], "workload muse_bf16_proj declares no decoder layer"),
    (["--workload", str(TINY)], "give at least one --plan"),
    (["--workload", str(TINY), "--plan", "baseline", "--batches", "0,4"], "argument --batches: expected distinct"),
    (["--workload", str(TINY), "--plan", "baseline", "--contexts", "16,16"], "argument --contexts: expected distinct"),
    (["--workload", str(TINY), "--plan", "baseline", "--layers", "65"], "--layers 65 is over the limit 64"),
    (["--workload", str(TINY), "--plan", "no_such_plan"], "cannot load candidate 'no_such_plan'"),
])
def test_bad_input_is_one_line_before_any_worker(argv, words, capsys, tmp_path):
    from profiler.cli.main import main

    try:
        code = main(["step", *argv, "--device", "cpu", "--out", str(tmp_path / "r.json")])
    except SystemExit as exc:   # argparse's own refusals (datasets.cli.OneLineParser) exit from the parser
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and words in err
    assert not (tmp_path / "r.json").exists()


def _trace(replays):
    """A Chrome trace as torch.profiler writes it: per replay a cudaGraphLaunch and its kernels (same correlation)."""
    events, t = [], 0.0
    for c, kernels in enumerate(replays, start=1):
        events.append({"cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": t, "dur": 2, "args": {"correlation": c}})
        for name, dur in kernels:
            t += 1.0
            events.append({"cat": "kernel", "name": name, "ts": t, "dur": dur,
                           "args": {"correlation": c, "grid": [1, 1, 1], "block": [128, 1, 1]}})
            t += dur
    return {"traceEvents": events}


def test_the_kineto_breakdown_splits_a_replay_at_its_markers(tiny):
    """The CUDA breakdown's parser, on a made-up trace: each segment's kernels are those after its marker, summed
    per class; a replay without markers (the L2 flush) is skipped; a replay whose markers do not match the labels
    is an error, never a guess."""
    from profiler.measure.kineto import TraceError
    from profiler.worker.step_task import MARKER_KERNEL, _segment_times

    m = _model(tiny, layers=1)
    spin = f"void at::cuda::(anonymous namespace)::{MARKER_KERNEL}(long)"
    labels = ["attn_norm", "qkv", "rotary", "attention", "o", "residual", "mlp_norm", "gate_up", "silu_mul", "down",
              "residual"]
    durations = {"attn_norm": [2, 1], "qkv": [10], "rotary": [1, 1, 1], "attention": [1, 6], "o": [7],
                 "residual": [1], "mlp_norm": [2, 1], "gate_up": [30], "silu_mul": [3], "down": [15]}
    replay = []
    for label in labels:
        replay.append((spin, 0.5))
        replay += [(f"kernel_{label}", d) for d in durations[label]]
    flush = [("reduce_kernel", 40.0)]
    (got,) = _segment_times(_trace([flush, replay]), labels, m)
    assert got == {"qkv": 10, "o": 7, "gate_up": 30, "down": 15, "attention": 7, "norms_activations": 12, "rest": 2}
    with pytest.raises(TraceError, match="10 marker kernels in a replay of the marked step, 11 segments marked"):
        _segment_times(_trace([replay[1:]]), labels, m)


# The harness's known-wrong candidates that a CPU step exposes every time. Left out: the GPU-only ones (they need a
# capture: test_step_gpu.py); MemoByPointer, stale only when the allocator hands a projection's input the address it
# had before, which it may or may not (a step's projection inputs are intermediates, never its static input); the ones
# that end the process (a worker of their own); the lossy ones whose step error stays under the rel-L2 tolerance (the
# contract's to catch at the shapes: dashboard.model.step.shapes_verdict shows that verdict beside the step).
STEP_CATCHES = {"SkippedKTail": "over the tolerance", "UninitializedOutput": "eager step",
                "TransposedOutput": "raised", "NaNRow": "not finite", "ScratchNotReset": "step graph on input 1",
                "WrongDtype": "raised", "WrongDevice": "raised",
                "SysExit": "sys.exit", "WeightMutated": "modified by prepare()", "TF32Flipper": "allow_tf32",
                "TimerPatcher": "replaced the profiler's timer", "RulePatcher": "replaced a function the harness uses"}


def test_the_step_rejects_the_known_wrong_candidates(tiny):
    cands = [{"spec": "baseline", "name": "baseline"}]
    from profiler import wrong

    cands += [{"spec": wrong.spec(getattr(wrong, n)), "name": n} for n in STEP_CATCHES]
    res = _run_task({"kind": "step", "workload": tiny.to_dict(), "batch": 4, "context": 8, "candidates": cands,
                     "settings": {"layers": 1, "seed": 0, "max_seconds": 0.05}})
    by = {c["candidate"]: c for c in res["candidates"]}
    assert by["baseline"]["correct"], by["baseline"]
    assert res["pairs"] == [], [p["candidate"] for p in res["pairs"]]
    for name, words in STEP_CATCHES.items():
        assert not by[name]["correct"] and "cold" not in by[name], name
        reasons = " ".join(f["reasons"][0] for f in res["failures"] if f["candidate"] == name)
        assert words in reasons, (name, reasons)


def test_a_routed_layer_is_declared_but_not_measured(tmp_path, capsys):
    from profiler.cli.main import main

    spec = json.loads(TINY.read_text())
    spec["layer"]["mlp"] = {"kind": "routed", "experts": 8, "top_k": 2, "intermediate": 96, "activation": "silu"}
    spec["families"]["router"] = {"N": 8, "K": 64, "w_dtype": "float32", "y_dtype": "float32"}
    spec["layer"]["projections"]["router"] = "router"
    path = tmp_path / "routed.json"
    path.write_text(json.dumps(spec))
    assert main(["step", "--workload", str(path), "--plan", "baseline", "--device", "cpu",
                 "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "routed experts are declared, not measured" in err
