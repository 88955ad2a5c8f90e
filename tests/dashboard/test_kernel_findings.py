"""Every finding rule fires on one side of its threshold and not on the other (real rows of the committed H200
explain run, with the field a rule reads moved across its threshold), and the sentences carry the numbers."""
from dataclasses import replace
from pathlib import Path

import pytest

from dashboard.model import kernel_findings as F
from dashboard.model import kernels, runs
from datasets import load_workload
from datasets import devices

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_explain-baseline-best.json"
T = F.THRESHOLDS
SMS = devices.lookup("NVIDIA H200").sm_count.value


@pytest.fixture(scope="module")
def tabs():
    data = kernels.from_run_data(runs.load_run_data(RUN))
    ktab = kernels.kernel_table(data)
    return data, ktab, kernels.call_table(data, load_workload(), ktab)


def _call(tabs, shape, cand):
    _, ktab, calls = tabs
    row = calls[(calls["shape"] == shape) & (calls["candidate"] == cand)].iloc[0].copy()
    return row, ktab[(ktab["shape"] == shape) & (ktab["candidate"] == cand)].copy()


def _rules(found):
    return [f.rule for f in found]


def test_side_kernel_threshold(tabs):
    call, ks = _call(tabs, "verify 1/unpooler", "best")  # cuBLAS split-K + its reduce kernel
    side = ks[~ks["is_main"]].iloc[0]
    share = side["time_us"] / ks["time_us"].sum()
    found = F.side_kernels(call, ks, T)
    assert len(found) == 1 and f"cublasLt::splitKreduce_kernel is {share:.0%} of this call" in found[0].text
    assert F.side_kernels(call, ks, replace(T, side_share=share + 1e-9)) == []


def test_extra_launches_names_the_count_and_the_gap_share(tabs):
    call, ks = _call(tabs, "verify 1/unpooler", "best")
    f = F.extra_launches(call, ks, T)
    assert f.text.startswith("2 kernel launches: the 1 besides the weight stream")
    assert f"{call['side_kernels_us'] / call['gap_us']:.0%} of the gap to the floor" in f.text
    one, ks1 = _call(tabs, "decode 1/qkv_gate", "best")  # a single gemv kernel
    assert one["launches"] == 1 and F.extra_launches(one, ks1, T) is None
    over = call.copy()
    over["gap_us"] = call["side_kernels_us"] / 2
    assert "more than the whole gap" in F.extra_launches(over, ks, T).text


def test_idle_sms_threshold(tabs):
    call, ks = _call(tabs, "verify 1/unpooler", "best")  # grid 48
    assert F.idle_sms(call, ks, T, SMS).text.startswith("grid of 48 programs leaves 84 of 132 SMs idle")
    near = call.copy()
    near["main_grid"] = 128  # 4 idle of 132 = 3 % < 5 %
    assert F.idle_sms(near, ks, T, SMS) is None
    assert F.idle_sms(near, ks, replace(T, idle_sm_share=0.03), SMS) is not None
    full = call.copy()
    full["main_grid"] = 264
    assert F.idle_sms(full, ks, replace(T, idle_sm_share=0.0), SMS) is None


def test_tail_wave_threshold(tabs):
    call, ks = _call(tabs, "decode 1/o", "best")
    for waves, fires in ((0.78, False), (2.0, False), (1.3, True), (1.5, False), (2.49, True)):
        call["main_waves"] = waves
        assert (F.tail_wave(call, ks, T) is not None) == fires, waves
    call["main_waves"] = 1.3
    assert "1.30 waves: the last one fills 30% of the GPU" in F.tail_wave(call, ks, T).text


def test_excess_bytes_threshold(tabs):
    call, ks = _call(tabs, "decode 16/router", "baseline")  # FP32 cast + split-K workspace: 1.19x
    assert call["excess_ratio"] >= T.excess_ratio
    assert F.excess_bytes(call, ks, T).text.startswith(f"moves {call['excess_ratio']:.2f}× the ideal bytes")
    assert F.excess_bytes(call, ks, replace(T, excess_ratio=call["excess_ratio"] + 1e-6)) is None


def test_low_bandwidth_threshold_and_not_for_compute_bound(tabs):
    call, ks = _call(tabs, "verify 1/unpooler", "best")
    frac = call["main_bw_vs_probe"]
    assert frac < T.low_bandwidth and f"reaches {frac:.0%} of the probe's bandwidth" in F.low_bandwidth(call, ks, T).text
    assert F.low_bandwidth(call, ks, replace(T, low_bandwidth=frac)) is None
    comp, ks2 = _call(tabs, "verify 32/pooler", "baseline")
    assert comp["bound"] == "compute" and F.low_bandwidth(comp, ks2, replace(T, low_bandwidth=2.0)) is None


def test_compute_bound_rule(tabs):
    data = tabs[0]
    peak = data.run["compute_peak_tflops"]
    call, ks = _call(tabs, "verify 32/pooler", "best")
    f = F.compute_bound(call, ks, T, peak)
    frac = call["main_tflops"] / peak
    assert f.text.startswith("compute-bound") and f"({frac:.0%}" in f.text
    assert ("far from" in f.text) == (frac < T.low_compute)
    assert "near the roof" in F.compute_bound(call, ks, replace(T, low_compute=frac), peak).text
    mem, ks2 = _call(tabs, "verify 32/o", "best")
    assert mem["bound"] == "memory" and F.compute_bound(mem, ks2, T, peak) is None


def test_latency_bound_threshold(tabs):
    call, ks = _call(tabs, "decode 16/router", "best")  # SM 7 %, DRAM 30 % under ncu
    assert F.latency_bound(call, ks, T) is not None
    busy = max(call["main_sm_pct"], call["main_dram_pct"])
    assert F.latency_bound(call, ks, replace(T, busy_pct=busy)) is None


def test_between_kernels_threshold(tabs):
    call, ks = _call(tabs, "decode 16/router", "best")
    share = call["between_us"] / call["time_us"]
    assert share > 0 and F.between_kernels(call, ks, replace(T, between_share=share)) is not None
    assert F.between_kernels(call, ks, replace(T, between_share=share + 1e-9)) is None


def test_near_floor_and_under_floor(tabs):
    call, ks = _call(tabs, "decode 1/pooler", "best")
    assert F.near_floor(call, ks, replace(T, near_floor_sol=call["sol"])).text.startswith(f"at {call['sol']:.0%}")
    assert F.near_floor(call, ks, replace(T, near_floor_sol=call["sol"] + 1e-9)) is None
    under = call.copy()
    under["sol"], under["time_us"] = 1.1, call["floor_us"] / 1.1
    assert "under the probe floor" in F.near_floor(under, ks, T).text


def test_findings_for_a_shape_are_ordered_by_the_time_they_explain(tabs):
    data, ktab, calls = tabs
    found = F.findings(calls, ktab, "verify 1/unpooler", data.sm_count, data.run["compute_peak_tflops"])
    assert set(found["candidate"]) == {"baseline", "best"}
    for _, grp in found.groupby("candidate"):
        assert list(grp["us"]) == sorted(grp["us"], reverse=True)
    assert {"idle_sms", "extra_launches", "side_kernel", "low_bandwidth"} <= set(found["rule"])
