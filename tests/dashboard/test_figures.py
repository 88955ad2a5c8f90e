"""dashboard.plots.figures: each builder draws the right traces, axes and values, and says where numbers come from."""
from pathlib import Path

import pandas as pd
import pytest

from dashboard.plots import figures, roofline_figures
from dashboard.model import views
from dashboard.model import runs
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


def _pts():
    return pd.DataFrame({"shape": ["s1", "s2", "s1", "s2"], "candidate": ["base", "base", "x", "x"],
                         "intensity": [1.0, 300.0, 1.0, 300.0], "tflops": [2.0, 150.0, 3.0, 200.0],
                         "median_us": [15.0, 26.0, 10.0, 20.0], "floor_us": [9.0, 15.0, 9.0, 15.0],
                         "bound": ["memory"] * 4})


def test_roofline_roofs_are_labelled_with_values_and_the_ridge():
    fig = roofline_figures.roofline(_pts(), memory_tbps=4.0, compute_tflops=700.0, source="measured", device="NVIDIA H200")
    by = {t.name: t for t in fig.data}
    roof = by["probe roof (4.00 TB/s, largest probe)"]
    assert roof.y[0] == pytest.approx(roof.x[0] * 4.0) and max(roof.y) == pytest.approx(700.0)
    assert by["H200 SXM datasheet 4.8 TB/s (reference)"].line.dash == "dash"
    # the datasheet line is the run's device's (datasets.devices), and none where the table has none
    h100 = {t.name for t in roofline_figures.roofline(_pts(), 3.0, 700.0, "measured", device="NVIDIA H100 80GB HBM3").data}
    assert "H100 SXM datasheet 3.35 TB/s (reference)" in h100 and not any("4.8" in n for n in h100)
    cpu = roofline_figures.roofline(_pts(), 0.0139, 0.33, "measured", device="CPU: Some CPU")
    names = {t.name for t in cpu.data}
    assert "probe roof (13.9 GB/s, largest probe)" in names and not any("datasheet" in n for n in names)
    assert any(a.text == "compute 330 GFLOP/s" for a in cpu.layout.annotations)
    ridge = by["ridge 175 FLOP/B"]  # 700 TFLOP/s ÷ 4 TB/s
    assert (ridge.x[0], ridge.y[0]) == (pytest.approx(175.0), 700.0)
    notes = {a.text for a in fig.layout.annotations}
    assert {"4.00 TB/s", "compute 700 TFLOP/s"} <= notes
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_roofline_x_range_is_the_datas():
    fig = roofline_figures.roofline(_pts(), 4.0, 700.0, "measured")
    lo, hi = fig.layout.xaxis.range
    assert 10 ** lo == pytest.approx(1.0 / 1.6) and 10 ** hi == pytest.approx(300.0 * 1.6)


def test_roofline_draws_the_baseline_as_rings_under_the_candidates():
    fig = roofline_figures.roofline(_pts(), 4.0, 700.0, "measured", colors={"base": "#111111", "x": "#222222"},
                           hollow=("base",))
    names = [t.name for t in fig.data]
    assert names.index("base") < names.index("x")  # drawn first, so the filled points sit on top
    base, x = fig.data[names.index("base")], fig.data[names.index("x")]
    assert base.marker.symbol == "circle-open" and base.marker.size > x.marker.size
    assert (base.marker.color, x.marker.color) == ("#111111", "#222222")
    assert list(x.x) == [1.0, 300.0] and list(x.y) == [3.0, 200.0]


def test_time_vs_floor_puts_a_floor_tick_on_every_bar():
    df = pd.DataFrame({"shape": ["a", "a", "b", "b"], "candidate": ["x", "y", "x", "y"],
                       "median_us": [1.0, 2.0, 3.0, 4.0], "floor_us": [0.5, 0.5, 2.0, 2.0]})
    fig = roofline_figures.time_vs_floor(df, "measured", colors={"x": "#aa0000"})
    bars = [t for t in fig.data if t.type == "bar"]
    ticks = [t for t in fig.data if t.type == "scatter"]
    assert [b.name for b in bars] == ["x", "y"] and bars[0].marker.color == "#aa0000"
    assert [t.offsetgroup for t in ticks] == [b.offsetgroup for b in bars]  # one tick per bar, aligned with it
    assert all(list(t.y) == [0.5, 2.0] for t in ticks)
    assert fig.layout.scattermode == "group" and sum(bool(t.showlegend) for t in ticks) == 1


def test_series_colors_fixed_per_name_baseline_grey():
    c = figures.series_colors(["best", "baseline", "seed036"], "baseline")
    assert c["baseline"] == figures.SERIES_COLORS[0]
    assert len({c["best"], c["seed036"], c["baseline"]}) == 3
    assert figures.series_colors(["baseline", "best"], "baseline")["best"] == c["best"]


def test_probe_curve_overlays_run_and_seed():
    seed = load_seed_probes()
    run = pd.DataFrame({"bytes": [1e6, 1e8], "us": [3.0, 25.0], "tbps": [0.33, 4.0], "design": ["a", "b"]})
    fig = roofline_figures.probe_curve(run, seed, "measured vs published")
    names = {t.name for t in fig.data}
    assert names == {"run probes (measured)", "write-up probes (published)"}
    seed_tbps = [t for t in fig.data if t.name.startswith("write-up") and t.xaxis == "x2"][0]
    assert seed_tbps.y[3] == pytest.approx(67108864 / 16.65 / 1e6)
    assert fig.layout.xaxis.type == "log"
    assert len(roofline_figures.probe_curve(None, seed, "published").data) == 2


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


def test_compare_figure_colours_series_and_marks_verdicts_by_symbol():
    shapes = pd.DataFrame({"series": ["run A · best"] * 2 + ["run B · best"] * 2,
                           "load": ["verify 1", "decode 1"] * 2, "family": ["o", "router"] * 2,
                           "ratio": [1.2, 1.0, 0.9, 1.0], "ci_low": [1.1, 0.995, 0.85, 0.98],
                           "ci_high": [1.3, 1.005, 0.95, 1.03], "verdict": ["FAST", "SAME", "SLOW", "AMBIGUOUS"]})
    labels = {"run A · best": "A", "run B · best": "B"}
    order = ["decode 1/router", "verify 1/o"]
    fig = figures.compare_figure(shapes, "derived", labels, order)
    a, b = fig.data[0], fig.data[1]
    assert (a.name, b.name) == ("A", "B") and a.marker.color != b.marker.color  # one colour per series
    assert list(a.marker.symbol) == [figures.VERDICT_SYMBOLS["FAST"], figures.VERDICT_SYMBOLS["SAME"]]
    assert "run A · best" in a.hovertemplate  # the full name on hover
    legend = {t.name for t in fig.data[2:]}
    assert legend == {"FAST", "SAME", "SLOW", "AMBIGUOUS"}  # verdict symbols explained once each
    assert list(fig.layout.xaxis.categoryarray) == order and fig.layout.yaxis.type == "log"
    assert not [s for s in fig.layout.shapes if s.type == "rect"]   # each point's own band is in its hover text
    assert fig.layout.legend.orientation == "h"   # in rows under the chart: a long series name wraps, never cut


def test_a_log_axis_of_ratios_near_one_gets_several_ticks_not_only_1x():
    vals, text = figures.log_ticks(0.99, 1.02, "×")
    assert len(vals) >= 3 and "1×" in text and "0.99×" in text and "1.02×" in text
    assert figures.log_ticks(1, 100, "×")[1] == ["1×", "2×", "5×", "10×", "20×", "50×", "100×"]   # as before
    shapes = pd.DataFrame({"series": ["a"] * 3, "load": ["decode 1"] * 3, "family": ["o", "qkv_gate", "router"],
                           "ratio": [0.995, 1.0, 1.01], "ci_low": [0.99, 0.99, 1.0], "ci_high": [1.0, 1.01, 1.02],
                           "verdict": ["SAME"] * 3})
    assert len(figures.compare_figure(shapes, "derived").layout.yaxis.tickvals) >= 3


def test_the_fleet_chart_calls_the_score_derived():
    table = pd.DataFrame({"gpu": ["A"], "run": ["r.json"], "status": ["scored"], "score": [1.2],
                          "sol_candidate": [0.5]})
    assert figures.fleet_figure(table).data[0].name == "score (derived)"


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


def test_telemetry_clock_axis_has_whole_mhz_ticks_around_a_flat_clock():
    tel = pd.DataFrame({"t_s": [0, 1, 2], "sm_mhz": [1980, 1980, 1980], "power_w": [300, 310, 305],
                        "temp_c": [40, 41, 41]})
    fig = figures.telemetry_figure(tel)
    assert fig.layout.yaxis.tickformat == "d" and list(fig.layout.yaxis.range) == [1930, 2030]
    assert fig.layout.yaxis3.tickformat == "d"


def test_load_time_bars_floor_tick_on_every_bar_and_only_present_loads():
    wl = load_workload()
    df = OFF.assign(floor_us=1.0)
    fig = figures.load_time_bars(df[df["load"] != "verify 32"], {"baseline": "baseline_us", "036": "candidate_us"},
                                 "published", wl.load_order, floor_col="floor_us")
    ticks = fig.data[-1]
    assert ticks.name == "Σ floor (derived)" and len(ticks.y) == 5 * 2  # five loads present × two series
    assert set(ticks.y) == {5.0}  # five shapes × 1 µs per load
    assert "verify 32" not in set(fig.data[0].x[0])


def test_family_bars_floor_ticks_and_above_floor_bars():
    df = OFF.assign(floor_us=OFF["candidate_us"] / 2)
    fig = figures.family_bars(df, "verify 1", {"b": "baseline_us", "c": "candidate_us"}, "published")
    ticks = [t for t in fig.data if t.type == "scatter"]
    assert [t.offsetgroup for t in ticks] == ["b", "c"]
    above = views.time_above_floor(df.assign(shape=df["load"] + "/" + df["family"]))
    fig = figures.above_floor_bars(above, {"b": "baseline_above_us"}, "derived")
    assert list(fig.data[0].x) == list(above["family"]) and list(fig.data[0].y) == list(above["baseline_above_us"])


def test_roofline_points_from_a_run():
    data = runs.load_run_data(FIXTURES / "synthetic_a.json")
    pts = views.roofline_points(runs.shape_table(data, load_workload()), ["seed036"])
    row = pts[pts["shape"] == "decode 1/pooler"].iloc[0]
    assert row["tflops"] == pytest.approx(2 * 1 * 4096 * 8192 / (row["median_us"] * 1e-6) / 1e12)
    assert row["floor_tflops"] == pytest.approx(row["tflops"] * row["median_us"] / row["floor_us"])
    fig = roofline_figures.roofline(pts, 4.0, 780.0, "measured")
    by = {t.name: t for t in fig.data}
    assert len(by["floor per shape (derived)"].x) == 30 and len(by["seed036"].x) == 30


def _log_axes(fig):
    layout = fig.layout.to_plotly_json()
    return {k: fig.layout[k] for k in layout if k.startswith(("xaxis", "yaxis")) and fig.layout[k].type == "log"}


def test_every_log_axis_is_labelled_at_chosen_values_never_bare_minor_digits():
    from dashboard.plots import kernel_figures

    run = pd.DataFrame({"bytes": [1e6, 1e8, 4e9], "us": [3.0, 25.0, 900.0], "tbps": [0.33, 4.0, 4.4],
                        "design": ["a", "b", "c"]})
    compare = pd.DataFrame({"series": ["s"] * 2, "load": ["decode 1"] * 2, "family": ["o", "router"],
                            "ratio": [0.9, 1.3], "ci_low": [0.85, 1.2], "ci_high": [0.95, 1.4],
                            "verdict": ["SLOW", "FAST"]})
    kernels = pd.DataFrame({"candidate": ["a", "a"], "kernel": ["k1", "k2"], "dram_bytes": [2e5, 3e7],
                            "achieved_tbps": [0.4, 3.5], "time_us": [0.5, 8.6]})
    figs = {"roofline": (roofline_figures.roofline(_pts(), 4.0, 700.0, "measured"), ""),
            "probes": (roofline_figures.probe_curve(run, None, "measured"), "B"),
            "compare": (figures.compare_figure(compare, "derived", {"s": "s"}), "×"),
            "amdahl": (figures.line_figure([1, 10, 100], [1, 1.2, 1.25], "t", "x", "y", "derived", log_x=True), ""),
            "kernels": (kernel_figures.kernel_roofline(kernels, run, "t"), "B"),
            "dispatch": (figures.dispatch_figure(pd.DataFrame({"family": ["o"], "M_lo": [1], "M_hi": [256],
                                                               "method": ["mm"]}), None, "plan"), "")}
    for name, (fig, unit) in figs.items():
        axes = _log_axes(fig)
        assert axes, name
        for axis_name, axis in axes.items():
            assert axis.tickmode == "array" and len(axis.tickvals) >= 2, (name, axis_name)
            assert len(axis.ticktext) == len(axis.tickvals)
            mantissas = {float(f"{v:.3e}".split("e")[0]) for v in axis.tickvals}
            assert mantissas <= {1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0}, (name, axis.tickvals)
        if unit:
            first = next(iter(axes.values()))
            assert all(t.endswith(unit) for t in first.ticktext), (name, first.ticktext)
    assert list(figs["compare"][0].layout.yaxis.ticktext) == ["0.8×", "1×", "1.25×"]
    assert "1 MB" in figs["probes"][0].layout.xaxis.ticktext


def test_the_target_label_sits_outside_the_bars():
    df = pd.DataFrame({"label": ["a", "b"], "ratio": [1.6, 0.9]})
    fig = figures.ratio_bars(df, "derived", target=1.62)
    note = next(a for a in fig.layout.annotations if "target" in a.text)
    assert note.xanchor == "left" and note.x >= 1        # in the right margin, past every bar
    assert fig.layout.margin.r >= 80 and fig.layout.yaxis.range[1] >= 1.62 * 1.1   # room above the bar labels


def test_dispatch_gives_every_method_of_the_shipped_plan_its_own_colour_and_a_legend_that_fits():
    from kernels.plans import load_plan

    rows = pd.DataFrame(load_plan("best").table())
    fig = figures.dispatch_figure(rows, None, "plan best")
    colour = {}
    for bar in (t for t in fig.data if t.type == "bar"):
        colour.setdefault(bar.name, bar.marker.color)
        assert colour[bar.name] == bar.marker.color
    assert len(colour) == rows["method"].nunique() >= 10
    assert len(set(colour.values())) == len(colour), colour        # gemv_wide and splitk_atomic never share
    assert colour["torch_linear"] == figures.SERIES_COLORS[0]
    assert fig.layout.legend.orientation == "h" and fig.layout.height >= 300
