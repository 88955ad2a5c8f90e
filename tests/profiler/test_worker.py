"""Isolation: candidates that kill, exit, hang or refuse to behave cost a failure record with its cause, never the
sweep (CPU, real worker processes, fake timer installed in the worker; GPU cases marked)."""
import json
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from profiler import wrong  # noqa: E402
from datasets.runfile import load_run  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

FAKE = str(Path(__file__).with_name("fake_device.py"))
CONTROL = wrong.spec(wrong.TorchLinear)


def _shapes(n=1, **over):
    from profiler.commands.sweep import select_shapes

    return [s | {"N": 64, "K": 256} | over for s in select_shapes("official")[:n]]


def _sweep(specs, shapes, out, device="cpu", **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep

    run_sweep(specs, shapes, out, label=out.stem, device=device, log=lambda m: None,
              worker_init=f"{FAKE}:install" if device == "cpu" else None,
              # no canary: these tests count the workers deaths start (the canary's is in test_trust_sweep.py)
              settings=SweepSettings(**({"probes": False, "timing": replace(SWEEP, max_seconds=0.1), "canary": "off"} | settings)))
    return load_run(out)


def _failures(run, name):
    return [f for f in run["failures"] if f["candidate"] == name]


def test_deaths_and_hangs_are_failures_with_their_cause_and_the_others_are_measured(tmp_path):
    specs = [CONTROL, wrong.spec(wrong.ExitProcess), wrong.spec(wrong.Segfault), wrong.spec(wrong.SysExit),
             wrong.spec(wrong.Hang), CONTROL]
    run = _sweep(specs, _shapes(1), tmp_path / "deaths.json", shape_timeout_s=8)
    assert run["status"] == "complete"
    assert [r["candidate"] for r in run["results"]] == ["torch_linear_control", "torch_linear_control#2"]
    assert len(run["pairs"]) == 1
    (ex,), (seg,), (sysexit,), (hang,) = (_failures(run, n) for n in ("exit_process", "segfault", "sys_exit", "hang"))
    assert (ex["kind"], ex["phase"]) == ("died", "check") and "exit code 7" in ex["reasons"][0]
    assert (seg["kind"], seg["phase"]) == ("died", "check") and "killed by SIGSEGV" in seg["reasons"][0]
    assert "wrong/worker.py" in seg["reasons"][0]  # faulthandler's frame names the candidate's code
    assert sysexit["kind"] == "incorrect" and "run() called sys.exit(3)" in sysexit["reasons"][0]
    assert (hang["kind"], hang["phase"]) == ("timeout", "check") and "watchdog" in hang["reasons"][0]
    workers = run["environment"]["workers"]
    assert len(workers) == 4 and workers[-1]["ended"] == "closed"  # three replaced: exit, segfault, hang
    assert all(r["worker"] == 3 for r in run["results"])           # measured again in the last one


def test_a_candidate_that_keeps_killing_workers_is_skipped_after_max_incidents(tmp_path):
    run = _sweep([CONTROL, wrong.spec(wrong.ExitProcess)], _shapes(3), tmp_path / "inc.json", max_incidents=2)
    kinds = [f["kind"] for f in _failures(run, "exit_process")]
    assert kinds == ["died", "died", "skipped"]
    assert "died or hung at 2 shapes" in _failures(run, "exit_process")[2]["reasons"][0]
    assert len([r for r in run["results"] if r["candidate"] == "torch_linear_control"]) == 3
    assert len(run["environment"]["workers"]) == 3


PATCHES_AT_IMPORT = '''
import profiler.measure.timing as timing
timing.measure_shape = lambda *a, **k: None
def prepare(weight):
    return weight
def run(state, family, x):
    return x @ state.T
'''
EXITS_AT_IMPORT = '''
import os
os._exit(5)
'''


def test_modules_refused_at_load_are_failures_at_every_shape(tmp_path):
    patcher, exiter = tmp_path / "patcher.py", tmp_path / "exiter.py"
    patcher.write_text(PATCHES_AT_IMPORT)
    exiter.write_text(EXITS_AT_IMPORT)
    run = _sweep([CONTROL, str(patcher), str(exiter)], _shapes(2), tmp_path / "load.json")
    assert run["environment"]["settings"]["candidates"] == ["torch_linear_control", "patcher", "exiter"]
    p, e = _failures(run, "patcher"), _failures(run, "exiter")
    assert len(p) == len(e) == 2 and {f["kind"] for f in p + e} == {"load"}
    assert "module replaced the profiler's timer (profiler.measure.timing.measure_shape)" in p[0]["reasons"][0]
    assert "the worker died while loading it: exit code 5" in e[0]["reasons"][0]
    assert len(run["results"]) == 2  # the control at both shapes, timed with the original timer


def test_global_setting_changes_are_named_and_restored_before_the_next_candidate(tmp_path):
    shapes = [s | {"N": 32, "K": 512} for s in _shapes(5) if s["family"] == "router"]
    run = _sweep([CONTROL, wrong.spec(wrong.TF32Flipper), CONTROL], shapes, tmp_path / "tf32.json")
    (f,) = _failures(run, "tf32_flipper")
    assert f["reasons"][0] == ("changed global setting torch.backends.cuda.matmul.allow_tf32 (from False to True) "
                               "in prepare()")
    assert [r["candidate"] for r in run["results"]] == ["torch_linear_control", "torch_linear_control#2"]


def test_run_task_is_callable_in_process_with_plain_dicts():
    """The executor-neutral entry point: a load task answered by a JSON-able dict."""
    from profiler.worker.tasks import run_task

    res = run_task({"kind": "load", "specs": [CONTROL, "no_such_plan"]}, {"device": "cpu"})
    assert json.loads(json.dumps(res)) == res
    assert res["loaded"][0]["name"] == "torch_linear_control" and res["loaded"][0]["error"] is None
    assert "no_such_plan" in res["loaded"][1]["error"] and res["loaded"][1]["refused"] is False


def test_exit_descriptions():
    from profiler.worker.process import _stderr_summary, exit_description

    assert exit_description(-11) == "killed by SIGSEGV (segmentation fault)"
    assert exit_description(-9).startswith("killed by SIGKILL (out of host memory?")
    assert exit_description(3) == "exit code 3"
    dump = ["Fatal Python error: Segmentation fault\n", "\n", "Current thread 0x1 (most recent call first):\n",
            '  File "/x/wrong.py", line 9 in run\n', '  File "/x/contract.py", line 5 in step\n',
            '  File "/x/a.py", line 1 in z\n']
    assert _stderr_summary(dump) == ('Fatal Python error: Segmentation fault | File "/x/wrong.py", line 9 in run | '
                                     'File "/x/contract.py", line 5 in step')


# --- on the GPU ------------------------------------------------------------------------------------------------
def _official(*keys):
    from profiler.commands.sweep import select_shapes, shape_key

    return [s for s in select_shapes("official") if shape_key(s) in keys]


@pytest.mark.gpu
def test_gpu_fault_at_one_shape_is_named_and_the_other_shapes_complete(tmp_path):
    shapes = _official("decode 1/o", "decode 16/o", "verify 1/router")
    run = _sweep(["baseline", wrong.spec(wrong.FaultAtOneShape), "baseline"], shapes, tmp_path / "fault.json",
                 device="cuda", timing=replace(SWEEP, max_seconds=0.5))
    (f,) = _failures(run, "fault_at_one_shape")
    print(f)
    assert (f["load"], f["family"], f["kind"]) == ("decode 16", "o", "cuda_fault")
    assert "illegal memory access" in f["reasons"][0]
    by = {(r["load"], r["candidate"]) for r in run["results"]}
    assert {("decode 1", "fault_at_one_shape"), ("verify 1", "fault_at_one_shape")} <= by
    assert all(("decode 16", c) in by for c in ("baseline", "baseline#2"))  # measured again in a fresh worker


@pytest.mark.gpu
def test_gpu_tf32_flipper_leaves_the_router_baseline_correct(tmp_path):
    shapes = _official("decode 1/router", "verify 16/router")
    run = _sweep(["baseline", wrong.spec(wrong.TF32Flipper), "baseline"], shapes, tmp_path / "tf32.json",
                 device="cuda", timing=replace(SWEEP, max_seconds=0.5))
    assert len(_failures(run, "tf32_flipper")) == 2
    base = [r for r in run["results"] if r["candidate"].startswith("baseline")]
    assert len(base) == 4 and all(r["correct"] and r["error"]["rel_l2"] < 1e-4 for r in base)
    for p in run["pairs"]:
        print(p["load"], p["ratio_median"])
        assert 0.9 < p["ratio_median"] < 1.1  # the second baseline was not sped up by TF32 either


def test_tuner_style_shape_task_with_method_specs_and_quick_checks():
    """What the tuner sends: one method + config per candidate, one eager check each, then paired timing."""
    from dataclasses import asdict

    from kernels.candidate import method_spec
    from profiler.backends.isolate import measure_shape_isolated
    from profiler.backends.pool import WorkerPool
    from profiler.worker.settings import SweepSettings

    shape = _shapes(1)[0]
    cands = [{"spec": method_spec("torch_linear", {}), "name": "torch_linear"},
             {"spec": wrong.spec(wrong.NaNRow), "name": "nan_row"}]
    settings = SweepSettings(check="quick", timing=replace(SWEEP, min_pairs=8, batch_rounds=8, instances=2, max_seconds=0.1))
    pool = WorkerPool({"device": "cpu", "mode": "cold", "flush_bytes": None, "init": f"{FAKE}:install"}, lambda m: None)
    try:
        res = measure_shape_isolated(pool, shape, cands, {"kind": "shape", "settings": asdict(settings)}, settings,
                                     {}, lambda m: None)
    finally:
        pool.close()
    assert [r["candidate"] for r in res["results"]] == ["torch_linear"]
    assert res["results"][0]["n_samples"] >= 16 and res["info"]["instances"] == 2
    (f,) = res["failures"]
    assert f["candidate"] == "nan_row" and "eager call 1" in f["reasons"][0]


def test_a_candidate_that_scales_its_weight_in_place_cannot_reach_the_others(tmp_path):
    """Each prepare() gets its own copy of the weights: one that scales them in place (weight.mul_(2)) is named,
    and the candidates before and after it -- same shapes, same family, so the same cached weights -- stay
    correct at every shape (on the H200 the baseline read 2x the answer at 11 shapes when prepare got the
    session's own tensor)."""
    shapes = [s | {"N": 64, "K": 256} for s in _shapes(30) if s["family"] == "o"][:2]
    run = _sweep([CONTROL, wrong.spec(wrong.WeightMutated), CONTROL], shapes, tmp_path / "wmut.json")
    bad = _failures(run, "weight_mutated")
    assert len(bad) == 2 and all("weight tensor was modified by prepare()" in f["reasons"][0] for f in bad)
    assert not _failures(run, "torch_linear_control") and not _failures(run, "torch_linear_control#2")
    assert sorted(r["candidate"] for r in run["results"]) == ["torch_linear_control"] * 2 + [
        "torch_linear_control#2"] * 2
