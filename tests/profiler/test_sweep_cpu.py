"""run_sweep's orchestration on CPU, with a fake timer and fake probes installed in the worker (fake_device.py):
run-file validity, failures, not timing incorrect candidates, partial flushes, flags. The worker runs in this process
(inprocess_worker.py: what is under test is what the parent records), except for Ctrl-C's partial file, which goes
through the real worker process. The fake times are made up, so nothing here asserts a timing result. (The real
timer and probes run in test_gpu.py on the device.)"""
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from profiler import wrong  # noqa: E402
from datasets.runfile import load_run  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402
from inprocess_worker import in_process_worker  # noqa: E402,F401  (the fixture)

FAKE = str(Path(__file__).with_name("fake_device.py"))
INSTALL, HIGH_FLOORS = f"{FAKE}:install", f"{FAKE}:install_high_floors"
CONTROL, NAN_ROW = wrong.spec(wrong.TorchLinear), wrong.spec(wrong.NaNRow)


def _shapes(n=2):
    from profiler.commands.sweep import select_shapes

    return [s | {"N": 64, "K": 256} for s in select_shapes("official")[:n]]  # CPU-sized, real loads/families


def _sweep(specs, shapes, out, init=INSTALL, **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep

    return run_sweep(specs, shapes, out, label=out.stem, device="cpu", log=lambda m: None, worker_init=init,
                     settings=SweepSettings(**({"timing": replace(SWEEP, max_seconds=0.1)} | settings)))


def test_sweep_writes_valid_run_and_does_not_time_incorrect_candidates(tmp_path, in_process_worker):
    out = tmp_path / "r.json"
    _sweep([CONTROL, CONTROL, NAN_ROW], _shapes(), out, timing=replace(SWEEP, max_seconds=0.2))
    run = load_run(out)
    assert run["status"] == "complete"
    assert run["environment"]["settings"]["candidates"] == ["torch_linear_control", "torch_linear_control#2",
                                                            "nan_row"]
    # nan_row failed its checks at both shapes: a failure record with the reason, no timed result
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control", "torch_linear_control#2"}
    fails = [f for f in run["failures"] if f["candidate"] == "nan_row"]
    assert len(fails) == 2 and all(f["kind"] == "incorrect" and f["phase"] == "check" for f in fails)
    assert "non-finite" in fails[0]["reasons"][0] and fails[0]["error"]["rel_l2"] is None
    assert len(run["pairs"]) == 2 and {p["candidate"] for p in run["pairs"]} == {"torch_linear_control#2"}
    assert run["results"][0]["error"]["vs_baseline"] == 1.0
    # the canary first, then every shape, all in one worker process, recorded in the environment
    workers = run["environment"]["workers"]
    # (a device without committed repeat evidence: the canary's repeat after the sweep, in a fresh worker)
    assert [w["index"] for w in workers] == [0, 1] and workers[0]["started_for"].endswith("before any candidate)")
    assert workers[1]["started_for"].endswith("canary repeat (the baseline alone, after the sweep)")
    assert all(r["worker"] == 0 for r in run["results"]) and run["canary"]["worker"] == 0
    assert run["probes"] and all("ci_low_us" in p for p in run["probes"])


BOOM = '''
class Boom:
    name = "boom"
    def prepare(self, family, weight):
        raise RuntimeError("bad prepare")
    def run(self, state, family, x):
        return x
'''


def test_sweep_records_prepare_failures_and_never_overwrites(tmp_path, monkeypatch, in_process_worker):
    from datasets.runfile import RunFileError

    (tmp_path / "boom.py").write_text(BOOM)
    monkeypatch.chdir(tmp_path)  # a path relative to the user's directory; the worker runs in the repository root
    out = tmp_path / "r.json"
    _sweep([CONTROL, "boom.py:Boom"], _shapes(1), out, probes=False)
    run = load_run(out)
    assert run["environment"]["settings"]["specs"][1] == "boom.py:Boom"  # recorded as given
    assert len(run["results"]) == 1
    f = run["failures"][0]
    assert (f["candidate"], f["kind"], f["phase"]) == ("boom", "incorrect", "prepare")
    assert f["reasons"] == ["prepare() raised RuntimeError: bad prepare"]
    with pytest.raises(RunFileError):
        _sweep([CONTROL], _shapes(1), out)


def test_broken_module_is_an_input_error_before_any_file(tmp_path, in_process_worker):
    from profiler.commands.sweep import SweepInputError

    mod = tmp_path / "broken.py"
    mod.write_text("def prepare(weight):\n    return weight\n")  # no run()
    out = tmp_path / "b.json"
    with pytest.raises(SweepInputError, match=r"broken.py.*\['run'\]"):
        _sweep([CONTROL, str(mod)], _shapes(1), out, probes=False)
    assert not out.exists()


def test_the_in_process_worker_runs_here_and_puts_back_what_it_changed(tmp_path, in_process_worker):
    """The stand-in the other tests use: the sweep ran on it (its sandbox line), and its close put back the fake timer's
    patch and the integrity check's atexit wrapper (later tests in this process see the real ones)."""
    import atexit

    from profiler.measure import timing

    cold, register = timing.ColdTimer, atexit.register
    run = _sweep([CONTROL], _shapes(1), tmp_path / "here.json", probes=False)
    assert [w["sandbox"] for w in run["environment"]["workers"]] == ["none: in the test's process"]
    assert timing.ColdTimer is cold and atexit.register is register


def test_sweep_interrupt_leaves_partial(tmp_path):
    from profiler.commands.sweep import SweepSettings, run_sweep

    def progress(stage, i, n):
        if stage == "shapes" and i == 1:
            raise KeyboardInterrupt

    out = tmp_path / "p.json"
    with pytest.raises(KeyboardInterrupt):
        run_sweep([CONTROL], _shapes(2), out, label="p", device="cpu", log=lambda m: None, worker_init=INSTALL,
                  settings=SweepSettings(probes=False, timing=replace(SWEEP, max_seconds=0.1)), progress=progress)
    run = load_run(out)
    assert run["status"] == "partial" and len(run["results"]) == 1 and run["interrupted"] is True


def test_below_floor_flag_uses_the_probe_noise(tmp_path, in_process_worker):
    out = tmp_path / "f.json"
    _sweep([CONTROL], _shapes(1), out, init=HIGH_FLOORS)
    r = load_run(out)["results"][0]
    # a CPU device's floor: the shape's bytes at the fastest read rate its probes measured (probes.cpu_floors)
    from fake_device import HIGH_FLOOR_RATE
    from profiler.commands.sweep import shape_bytes
    assert "below_floor" in r["flags"] and r["floor_us"] == pytest.approx(shape_bytes(_shapes(1)[0]) / HIGH_FLOOR_RATE)


def test_cli_summary_of_sweep(tmp_path, in_process_worker):
    from profiler.cli.main import format_run

    out = tmp_path / "s.json"
    run = _sweep([CONTROL, CONTROL, NAN_ROW], _shapes(2), out, probes=False)
    text = format_run(run)
    assert "decode 1/qkv_gate" in text and "ratio torch_linear_c" in text and "(complete)" in text
    assert "FAILED decode 1/qkv_gate M=1 nan_row (incorrect, check): eager call 1" in text


def test_sweep_uses_three_instances_in_cold_mode(tmp_path, in_process_worker):
    run = _sweep([CONTROL, CONTROL], _shapes(1), tmp_path / "i.json", probes=False)
    info = next(iter(run["shape_info"].values()))
    assert info["instances"] == 3 and run["results"][0]["n_samples"] >= 96


def test_measure_shape_rotates_instances_per_batch():
    from fake_device import FakeTimer

    from profiler.measure.timing import GraphHandle, measure_shape

    class Recorder(FakeTimer):
        def __init__(self):
            super().__init__()
            self.batches = []

        def sample_raw(self, graphs, n_rounds, clock=None, clock_out=None):
            self.batches.append(tuple(g.output for g in graphs))
            return super().sample_raw(graphs, n_rounds, clock, clock_out)

    t = Recorder()
    a = [GraphHandle(None, f"a{k}") for k in range(3)]
    b = [GraphHandle(None, f"b{k}") for k in range(3)]
    ms = measure_shape([a, b], t, min_pairs=8, batch_rounds=8, warmup_seconds=0.0, max_seconds=5.0)
    timed = t.batches[3:]  # after the warm-up pass over the 3 instances
    assert timed[:3] == [("a0", "b0"), ("a1", "b1"), ("a2", "b2")]
    assert ms.stopped_by == "rse" and len(ms.samples_us) >= 24  # every instance had a batch before stopping
