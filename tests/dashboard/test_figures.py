"""dashboard.figures: each builder draws the right traces, axes and values, and says where numbers come from."""
from pathlib import Path

import pandas as pd
import pytest

from dashboard import figures, views
from dashboard import runs
from datasets import load_ledger, load_official, load_seed_probes, load_workload

OFF = load_official()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "app"


def _wide():
    return OFF.assign(shape=OFF["load"] + "/" + OFF["family"])


def test_load_time_bars_stack_families_per_load_and_series():
    wl = load_workload()
    fig = figures.load_time_bars(OFF, {"baseline": "baseline_us", "036": "candidate_us"}, "published",
                                 wl.load_order)
    assert [t.name for t in fig.data] == wl.family_order
    assert fig.layout.barmode == "stack"
    router = fig.data[-1]
    assert list(router.x[0][:2]) == ["decode 1", "decode 1"] and list(router.x[1][:2]) == ["baseline", "036"]
    assert list(router.y[:2]) == [10.528, 3.770]
    assert "published" in fig.layout.title.text


def test_family_bars_one_load():
    fig = figures.family_bars(OFF, "verify 1", {"b": "baseline_us", "c": "candidate_us"}, "published")
    assert [t.name for t in fig.data] == ["b", "c"]
    assert list(fig.data[1].y) == list(OFF[OFF["load"] == "verify 1"]["candidate_us"])


def test_share_bars_percentages():
    shares = views.time_shares(OFF, {})
    fig = figures.share_bars(shares, "derived")
    total = sum(t.x[0] for t in fig.data)  # first load, every family
    assert total == pytest.approx(100.0)


def test_ratio_bars_with_ci_and_target():
    df = pd.DataFrame({"label": ["a", "b"], "ratio": [1.2, 0.9], "ci_low": [1.1, 0.85], "ci_high": [1.3, 0.95]})
    fig = figures.ratio_bars(df, "derived", target=1.32)
    bar = fig.data[0]
    assert list(bar.error_y.array) == pytest.approx([0.1, 0.05])
    assert list(bar.error_y.arrayminus) == pytest.approx([0.1, 0.05])
    assert {s.y0 for s in fig.layout.shapes} == {1.0, 1.32}


def test_roofline_roofs_and_points():
    pts = pd.DataFrame({"shape": ["s1", "s2"], "candidate": ["x", "x"], "intensity": [1.0, 100.0],
                        "tflops": [3.0, 200.0], "median_us": [10.0, 20.0], "floor_us": [9.0, 15.0],
                        "bound": ["memory", "memory"]})
    fig = figures.roofline(pts, memory_tbps=4.0, compute_tflops=700.0, source="measured")
    roof, sheet, points = fig.data
    assert roof.y[0] == pytest.approx(roof.x[0] * 4.0) and max(roof.y) == pytest.approx(700.0)
    assert sheet.line.dash == "dash" and "4.8" in sheet.name
    assert list(points.x) == [1.0, 100.0] and list(points.y) == [3.0, 200.0]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_time_vs_floor_has_one_floor_per_shape():
    df = pd.DataFrame({"shape": ["a", "a", "b", "b"], "candidate": ["x", "y", "x", "y"],
                       "median_us": [1.0, 2.0, 3.0, 4.0], "floor_us": [0.5, 0.5, 2.0, 2.0]})
    fig = figures.time_vs_floor(df, "measured")
    assert [t.type for t in fig.data] == ["bar", "bar", "scatter"]
    assert list(fig.data[2].y) == [0.5, 2.0]


def test_probe_curve_overlays_run_and_seed():
    seed = load_seed_probes()
    run = pd.DataFrame({"bytes": [1e6, 1e8], "us": [3.0, 25.0], "tbps": [0.33, 4.0], "design": ["a", "b"]})
    fig = figures.probe_curve(run, seed, "measured vs published")
    names = {t.name for t in fig.data}
    assert names == {"run probes (measured)", "write-up probes (published)"}
    seed_tbps = [t for t in fig.data if t.name.startswith("write-up") and t.xaxis == "x2"][0]
    assert seed_tbps.y[3] == pytest.approx(67108864 / 16.65 / 1e6)
    assert fig.layout.xaxis.type == "log"
    assert len(figures.probe_curve(None, seed, "published").data) == 2


def test_ledger_figure_kinds_and_intervals():
    led = load_ledger()
    fig = figures.ledger_figure(led)
    by = {t.name: t for t in fig.data}
    assert {"check", "scored"} <= set(by)
    assert by["scored"].marker.symbol == "diamond" and by["check"].marker.symbol == "circle"
    i = list(by["scored"].x).index("039")
    assert by["scored"].y[i] == pytest.approx(1.32343)
    assert by["scored"].error_y.array[i] == pytest.approx(1.3433 - 1.32343)
    assert sum(len(t.x) for t in fig.data) == int(led["score"].notna().sum())


def test_compare_figure_colours_by_verdict_and_draws_band():
    shapes = pd.DataFrame({"series": ["s", "s"], "load": ["decode 1"] * 2, "family": ["o", "router"],
                           "ratio": [1.2, 1.0], "ci_low": [1.1, 0.995], "ci_high": [1.3, 1.005],
                           "verdict": ["FAST", "SAME"]})
    fig = figures.compare_figure(shapes, 0.01, "derived")
    assert [t.name for t in fig.data] == ["s: FAST", "s: SAME"]
    assert fig.data[0].marker.color == figures.VERDICT_COLORS["FAST"]
    band = [s for s in fig.layout.shapes if s.type == "rect"][0]
    assert (band.y0, band.y1) == (0.99, 1.01)


def test_dispatch_figure_spans_regions():
    regions = pd.DataFrame({"family": ["o", "o"], "M_lo": [1, 9], "M_hi": [8, 256], "method": ["gemv", "mm"]})
    shapes = pd.DataFrame({"family": ["o"], "M": [16], "load": ["decode 16"]})
    fig = figures.dispatch_figure(regions, shapes, "plan", selected_M=16)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.base[0] for b in bars] == pytest.approx([0.55, 8.55])
    assert bars[1].x[0] == pytest.approx(256.45 - 8.55)
    assert fig.data[-1].x[0] == 16 and fig.layout.xaxis.type == "log"


def test_line_and_samples_and_telemetry():
    fig = figures.line_figure([1, 2, 3], [1.0, 1.1, 1.2], "t", "x", "y", "derived", marker=(2, 1.1),
                              hlines={"limit": 1.25})
    assert list(fig.data[1].x) == [2] and fig.layout.shapes[0].y0 == 1.25
    s = figures.samples_figure({"a": [1.0, 1.1], "b": [2.0]}, 0.9, "t", "measured")
    assert [t.name for t in s.data] == ["a", "b"] and s.layout.shapes[0].y0 == 0.9
    tel = pd.DataFrame({"t_s": [0, 1], "sm_mhz": [1980, 1900], "power_w": [300, 310], "temp_c": [40, 41]})
    assert len(figures.telemetry_figure(tel).data) == 3


def test_roofline_points_from_a_run():
    data = runs.load_run_data(FIXTURES / "synthetic_a.json")
    pts = views.roofline_points(runs.shape_table(data, load_workload()), ["seed036"])
    row = pts[pts["shape"] == "decode 1/pooler"].iloc[0]
    assert row["tflops"] == pytest.approx(2 * 1 * 4096 * 8192 / (row["median_us"] * 1e-6) / 1e12)
    assert row["floor_tflops"] == pytest.approx(row["tflops"] * row["median_us"] / row["floor_us"])
    fig = figures.roofline(pts, 4.0, 780.0, "measured")
    assert fig.data[2].name == "floor per shape (derived)" and len(fig.data[2].x) == 30
    assert len(fig.data[3].x) == 30
