"""run_sweep's orchestration on CPU with a fake timer and fake probes: run-file validity, flags, pairs,
failures, partial flushes. (The real timer and probes are exercised by test_gpu.py on the device.)"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from profiler import wrong  # noqa: E402
from profiler.runfile import load_run  # noqa: E402
from profiler.timing import GraphHandle  # noqa: E402


class FakeTimer:
    """Runs each graph's function eagerly once per round and returns made-up times (10 us x speed)."""

    def __init__(self, device=None, flush_bytes=None, **kw):
        self.device, self.l2_bytes, self.sm_count = device, 60 << 20, 132
        self.flush_bytes = flush_bytes or 4 * self.l2_bytes
        self.overhead_us, self.overhead_ci_us = 3.3, (3.2, 3.4)
        self.rng = np.random.default_rng(0)

    def capture(self, fn):
        fns = fn if isinstance(fn, list) else [fn]
        return GraphHandle(graph=None, output=fns[-1](), calls=len(fns))

    def sample_raw(self, graphs, n_rounds, clock=None, clock_out=None):
        if clock_out is not None:
            clock_out.append(1980)
        return 13.3 + self.rng.normal(0, 0.01, size=(n_rounds, len(graphs)))

    def sample(self, graphs, n_rounds, clock=None, clock_out=None):
        return self.sample_raw(graphs, n_rounds, clock, clock_out) - self.overhead_us


@pytest.fixture
def fake_gpu(monkeypatch):
    import profiler.probes as probes
    import profiler.timing as timing

    monkeypatch.setattr(timing, "ColdTimer", FakeTimer)
    monkeypatch.setattr(timing, "StreamTimer", FakeTimer)
    monkeypatch.setattr(probes, "run_read_probes", lambda timer, plan, n_rounds=0, progress=None: [
        {"bytes": b, "us": b / 4.0e6 + 2.0, "tbps": 4.0, "design": "fake", "kind": "read", "for_shape": lab,
         "designs_us": {"fake": b / 4.0e6 + 2.0}} for b, lab in plan])
    monkeypatch.setattr(probes, "run_compute_probe", lambda timer: {"M": 8, "N": 8, "K": 8, "us": 1.0, "tflops": 1.0})


def _shapes(n=2):
    from profiler.sweep import select_shapes

    small = []
    for s in select_shapes("official")[:n]:
        small.append(s | {"N": 64, "K": 256})  # CPU-sized stand-ins with the real loads/families
    return small


def test_sweep_writes_valid_run(fake_gpu, tmp_path):
    from profiler.sweep import SweepSettings, run_sweep

    out = tmp_path / "r.json"
    cands = [wrong.TorchLinear(), wrong.TorchLinear(), wrong.NaNRow()]
    run_sweep(cands, _shapes(), out, label="cpu", device="cpu", log=lambda m: None,
              settings=SweepSettings(max_seconds_per_shape=0.2))
    run = load_run(out)
    assert run["status"] == "complete"
    assert [r["candidate"] for r in run["results"][:3]] == ["torch_linear_control", "torch_linear_control#2",
                                                             "nan_row"]
    nan = run["results"][2]
    assert not nan["correct"] and "incorrect" in nan["flags"] and "non-finite" in nan["error"]["reasons"][0]
    # fake times ~10 us, fake floors ~2 us: nothing below its floor
    assert all("below_floor" not in r["flags"] for r in run["results"])
    assert len(run["pairs"]) == 4 and all(0.99 < p["ratio_median"] < 1.01 for p in run["pairs"])
    assert run["results"][0]["error"]["vs_baseline"] == 1.0
    assert run["environment"]["replay_overhead_us"] == 3.3 and run["probes"]
    assert run["environment"]["settings"]["candidates"][1] == "torch_linear_control#2"


def test_sweep_records_failures_and_never_overwrites(fake_gpu, tmp_path):
    from profiler.runfile import RunFileError
    from profiler.sweep import SweepSettings, run_sweep

    class Boom(wrong.TorchLinear):
        name = "boom"

        def prepare(self, family, weight):
            raise RuntimeError("bad prepare")

    out = tmp_path / "r.json"
    run_sweep([wrong.TorchLinear(), Boom()], _shapes(1), out, label="cpu", device="cpu", log=lambda m: None,
              settings=SweepSettings(probes=False, max_seconds_per_shape=0.1))
    run = load_run(out)
    assert len(run["results"]) == 1 and run["failures"][0]["candidate"] == "boom"
    assert "bad prepare" in run["failures"][0]["reasons"][0]
    with pytest.raises(RunFileError):
        run_sweep([wrong.TorchLinear()], _shapes(1), out, label="cpu", device="cpu", log=lambda m: None)


def test_sweep_interrupt_leaves_partial(fake_gpu, tmp_path):
    from profiler.sweep import SweepSettings, run_sweep

    def progress(stage, i, n):
        if stage == "shapes" and i == 1:
            raise KeyboardInterrupt

    out = tmp_path / "p.json"
    with pytest.raises(KeyboardInterrupt):
        run_sweep([wrong.TorchLinear()], _shapes(2), out, label="p", device="cpu", log=lambda m: None,
                  settings=SweepSettings(probes=False, max_seconds_per_shape=0.1), progress=progress)
    run = load_run(out)
    assert run["status"] == "partial" and len(run["results"]) == 1 and run["interrupted"] is True


def test_below_floor_flag(fake_gpu, tmp_path, monkeypatch):
    import profiler.probes as probes
    from profiler.sweep import SweepSettings, run_sweep

    monkeypatch.setattr(probes, "run_read_probes", lambda timer, plan, n_rounds=0, progress=None: [
        {"bytes": b, "us": 50.0, "design": "fake"} for b, _ in plan])
    out = tmp_path / "f.json"
    run_sweep([wrong.TorchLinear()], _shapes(1), out, label="f", device="cpu", log=lambda m: None,
              settings=SweepSettings(max_seconds_per_shape=0.1))
    r = load_run(out)["results"][0]
    assert "below_floor" in r["flags"] and r["floor_us"] == 50.0


def test_cli_summary_of_sweep(fake_gpu, tmp_path):
    from profiler.__main__ import format_run
    from profiler.sweep import SweepSettings, run_sweep

    out = tmp_path / "s.json"
    run = run_sweep([wrong.TorchLinear(), wrong.TorchLinear()], _shapes(2), out, label="s", device="cpu",
                    log=lambda m: None, settings=SweepSettings(probes=False, max_seconds_per_shape=0.1))
    text = format_run(run)
    assert "decode 1/qkv_gate" in text and "ratio torch_linear_c" in text and "(complete)" in text


def test_measure_shape_rotates_instances_per_batch():
    from profiler.timing import measure_shape

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


def test_sweep_uses_three_instances_in_cold_mode(fake_gpu, tmp_path):
    from profiler.sweep import SweepSettings, run_sweep

    run = run_sweep([wrong.TorchLinear(), wrong.TorchLinear()], _shapes(1), tmp_path / "i.json", label="i",
                    device="cpu", log=lambda m: None, settings=SweepSettings(probes=False, max_seconds_per_shape=0.2))
    info = next(iter(run["shape_info"].values()))
    assert info["instances"] == 3 and run["results"][0]["n_samples"] >= 96
