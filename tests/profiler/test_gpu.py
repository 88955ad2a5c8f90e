"""GPU checks of timing, probes and the sweep (skipped without CUDA). Kept short: device time is scarce."""
import math
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from profiler.measure import probes
from profiler import wrong  # noqa: E402
from datasets.runfile import load_run  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def timer():
    from profiler.measure.timing import ColdTimer

    return ColdTimer("cuda")


def test_overhead_calibrated_and_flush_big_enough(timer):
    lo, hi = timer.overhead_ci_us
    print(f"overhead {timer.overhead_us:.3f} us CI [{lo:.3f}, {hi:.3f}] flush {timer.flush_bytes} L2 {timer.l2_bytes}")
    assert 0.5 < timer.overhead_us < 10.0  # ~3.3 us queued behind GPU work, ~14 us from an idle GPU (H200)
    assert lo <= timer.overhead_us <= hi
    assert timer.flush_bytes >= 2 * timer.l2_bytes


def test_sample_alternates_the_order_every_round(timer):
    """Each graph appends its id to a device-side log when replayed: the log must read A B | B A | A B | B A."""
    log = torch.full((16,), -1, device="cuda", dtype=torch.int64)
    pos = torch.zeros(1, device="cuda", dtype=torch.int64)

    def writer(graph_id):
        def fn():
            log.index_put_((pos,), torch.full((1,), graph_id, device="cuda", dtype=torch.int64))
            pos.add_(1)
        return fn

    graphs = [timer.capture(writer(0)), timer.capture(writer(1))]  # each capture warms up: 4 writes each
    pos.zero_()
    log.fill_(-1)
    s = timer.sample(graphs, 4)
    assert s.shape == (4, 2) and np.isfinite(s).all()
    assert log[:8].tolist() == [0, 1, 1, 0, 0, 1, 1, 0]


def test_persisting_l2_is_reset_and_a_limit_change_is_named():
    from profiler.check import guards

    assert guards.reset_persisting_l2("cuda") == "ok"
    g = guards.Guard()
    assert g.settings["persisting L2 limit (cudaLimitPersistingL2CacheSize)"] == 0
    guards._set_persisting_l2_limit(4 << 20)
    reasons = g.check("run()")
    print(reasons)
    assert any("persisting L2 limit" in r for r in reasons)
    assert guards.persisting_l2_limit() == 0


def test_flush_makes_l2_cold(timer):
    from profiler.measure.timing import StreamTimer

    # A bandwidth-bound read (torch.sum is not: 9 us cold and hot at 16 MiB on the H200, 2026-11-30).
    buf = torch.rand(16 * 2**20 // 4, device="cuda")  # 16 MiB: fits in the 60 MB L2
    read = probes.read_fns(buf, buf.numel() * 4, timer.sm_count)["oneshot_b8192"]
    cold = float(np.median(timer.sample([timer.capture(read)], 40)))
    hot_timer = StreamTimer("cuda")
    hot = float(np.median(hot_timer.sample([hot_timer.capture([read] * 8)], 40)))
    print(f"16 MiB read: cold {cold:.2f} us, hot (L2) {hot:.2f} us")
    assert cold > 1.1 * hot


def test_every_read_design_reads_the_whole_prefix(timer):
    buf = torch.rand(3_000_000, device="cuda")
    nbytes = 4 * 2_500_003
    fns = probes.read_fns(buf, nbytes, timer.sm_count)
    want = float(buf[: nbytes // 4].double().sum())
    for name, f in fns.items():
        f()
        if name == "torch_mv":
            continue
        got = float(f.__defaults__[0].double().sum())
        assert math.isclose(got, want, rel_tol=1e-4), (name, got, want)


def test_read_probes_reasonable(timer):
    recs = probes.run_read_probes(timer, [(8388608, "8.4 MB"), (67108864, "67 MB")], n_rounds=16)
    for r in recs:
        print(r)
        assert 1.0 < r["tbps"] < 6.0  # H200 HBM3e datasheet 4.8 TB/s
        assert len(r["designs_us"]) == len(probes.READ_DESIGNS) + 1
        assert r["us"] <= r["designs_us"]["torch_mv"] + 1e-3


def test_measure_shape_pairs_identical_candidates(timer):
    from profiler.measure.timing import measure_shape

    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    fn = lambda: torch.nn.functional.linear(x, w)  # noqa: E731
    ms = measure_shape([fn, fn], timer, max_seconds=1.5)
    r = ms.samples_us[:, 0] / ms.samples_us[:, 1]
    print(f"stopped by {ms.stopped_by} after {len(r)} pairs; ratio median {np.median(r):.4f} rse {ms.ratio_rse}")
    assert len(r) >= 30 and 0.97 < np.median(r) < 1.03


def test_stream_timer_divides_by_calls():
    from profiler.measure.timing import StreamTimer

    st = StreamTimer("cuda")
    w = [torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    h = st.capture([(lambda w=w_: torch.nn.functional.linear(x, w)) for w_ in w] * 3)
    assert h.calls == 12
    s = st.sample([h], 10)
    assert (s > 0).all() and np.median(s) < 50


def _small_shapes():
    from profiler.commands.sweep import select_shapes

    return [s for s in select_shapes("official") if (s["load"], s["family"]) in
            {("decode 1", "o"), ("verify 1", "router")}]


CONTROL, NAN_ROW = wrong.spec(wrong.TorchLinear), wrong.spec(wrong.NaNRow)


def test_sweep_end_to_end(tmp_path):
    from profiler.commands.sweep import SweepSettings, run_sweep

    out = tmp_path / "run.json"
    run = run_sweep([CONTROL, CONTROL, NAN_ROW], _small_shapes(), out, label="t",
                    settings=SweepSettings(timing=replace(SWEEP, max_seconds=1.0)))
    disk = load_run(out)
    assert disk["status"] == "complete" and len(disk["results"]) == 4 and len(disk["pairs"]) == 2
    assert disk["probes"] and disk["compute_peak_tflops"] > 100
    assert all(p["ci_low_us"] <= p["us"] <= p["ci_high_us"] for p in disk["probes"])
    nan = [f for f in disk["failures"] if f["candidate"] == "nan_row"]
    assert len(nan) == 2 and all(f["kind"] == "incorrect" for f in nan)
    assert all(r["correct"] for r in disk["results"])
    assert all(i["persisting_l2_reset"] == "ok" for i in disk["shape_info"].values())
    for p in disk["pairs"]:
        print(p["family"], p["ratio_median"], p["ratio_ci_low"], p["ratio_ci_high"])
        assert 0.95 < p["ratio_median"] < 1.05
    workers = run["environment"]["workers"]
    # the canary (the baseline alone) first, then the shapes, in one worker: it agrees with the paired baseline
    assert run["environment"]["replay_overhead_us"] > 0 and len(workers) == 1
    assert workers[0]["started_for"].endswith("before any candidate)") and disk["canary"]["verdict"] == "ok", \
        disk["canary"]


def test_interrupt_keeps_partial(tmp_path):
    from profiler.commands.sweep import SweepSettings, run_sweep

    out = tmp_path / "partial.json"

    def progress(stage, i, n):
        if stage == "shapes" and i == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep([CONTROL], _small_shapes(), out, label="p",
                  settings=SweepSettings(probes=False, timing=replace(SWEEP, max_seconds=0.5)), progress=progress)
    disk = load_run(out)
    assert disk["status"] == "partial" and len(disk["results"]) == 1


def test_stream_mode_sweep(tmp_path):
    from profiler.commands.sweep import SweepSettings, run_sweep

    out = tmp_path / "stream.json"
    run_sweep([CONTROL, CONTROL], _small_shapes()[:1], out, label="s",
              settings=SweepSettings(mode="stream", probes=False, timing=replace(SWEEP, max_seconds=0.5)))
    disk = load_run(out)
    assert disk["environment"]["settings"]["mode"] == "stream" and len(disk["results"]) == 2
    assert all(r["median_us"] > 0.5 for r in disk["results"])
