"""Plotly figures of the roof: the roofline (intensity vs achieved throughput under the probe roof), time vs floor
per shape, and the read-probe curve (bytes → µs and TB/s).

Pure functions from DataFrames / numbers to `go.Figure`, in the style of `dashboard.plots.figures` (its layout,
colours, log-axis labels and HTML-safe labels); they compute nothing that matters and every title carries its
provenance: measured, derived or published.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.plots.figures import (FLOOR_TICK, LAYOUT, SUBPLOTS_LAYOUT, _colors_for, _mark_gated, _title,
                                     html_labels, label_log_axes)
from datasets import devices


def bandwidth_text(tbps: float) -> str:
    """A read rate in the unit that shows it: '4.62 TB/s', '13.9 GB/s' (a CPU's); 'not measured' without one."""
    if tbps is None or not np.isfinite(tbps) or tbps <= 0:
        return "not measured"
    return f"{tbps:.2f} TB/s" if tbps >= 0.1 else f"{tbps * 1e3:.3g} GB/s"


def roofline(points: pd.DataFrame, memory_tbps: float, compute_tflops: float | None, source: str,
             colors: dict | None = None, hollow: tuple[str, ...] = (), device: str | None = None) -> go.Figure:
    """Log–log roofline: arithmetic intensity (FLOP/byte) vs achieved TFLOP/s.

    `points` columns: shape (key), candidate, intensity, tflops, median_us, floor_us, bound, and optionally
    floor_tflops (throughput at the shape's floor, drawn as open ticks: the probe curve's roof at its size).
    `memory_tbps`: the probe curve's sustained bandwidth (a run's measured probes, or the write-up's published
    ones); `compute_tflops`: the compute peak (a run's compute probe, or the write-up's quoted rate). Each roof is
    labelled with its value, and the ridge point (peak ÷ bandwidth) is marked. The x range is the data's.
    Candidates in `hollow` (the baseline) are drawn as open rings under the others, so no point hides another.
    `device`: the driver-reported name of the device the times are from; its datasheet bandwidth (datasets.devices)
    is drawn dashed for reference where the table has one, and nothing where it has none (a CPU, an unknown GPU).
    """
    sheet = devices.lookup(device).hbm_tbps if device else devices.NOT_PUBLISHED
    ridge = compute_tflops / memory_tbps if compute_tflops and memory_tbps and np.isfinite(memory_tbps) else None
    lo, hi = 0.5, 500.0
    if len(points):
        lo = float(points["intensity"].min()) / 1.6
        hi = float(points["intensity"].max()) * 1.6
    xs = np.geomspace(lo, hi, 200)
    fig = go.Figure()
    if np.isfinite(memory_tbps):
        roof = xs * memory_tbps
        if compute_tflops:
            roof = np.minimum(roof, compute_tflops)
        fig.add_scatter(x=xs, y=roof, mode="lines",
                        name=f"probe roof ({bandwidth_text(memory_tbps)}, largest probe)",
                        line=dict(color="black"), hoverinfo="skip")
        x_label = float(np.sqrt(lo * min(hi, ridge or hi)))  # mid-slope (log scale), left of any ridge
        fig.add_annotation(x=np.log10(x_label), y=np.log10(x_label * memory_tbps), text=bandwidth_text(memory_tbps),
                           showarrow=False, textangle=-28, yshift=12, font=dict(size=12))
        if sheet.known:
            ds = xs * sheet.value
            if compute_tflops:
                ds = np.minimum(ds, compute_tflops)
            fig.add_scatter(x=xs, y=ds, mode="lines",
                            name=f"{devices.lookup(device).title} datasheet {sheet.value:g} TB/s (reference)",
                            line=dict(color="gray", dash="dash"), hoverinfo="skip")
    if compute_tflops:
        rate = f"{compute_tflops:.0f} TFLOP/s" if compute_tflops >= 10 else f"{compute_tflops * 1e3:.3g} GFLOP/s"
        fig.add_annotation(x=np.log10(hi), y=np.log10(compute_tflops), text=f"compute {rate}",
                           showarrow=False, xanchor="right", yshift=10, font=dict(size=12))
    if ridge and lo < ridge < hi:
        fig.add_scatter(x=[ridge], y=[compute_tflops], mode="markers", name=f"ridge {ridge:.0f} FLOP/B",
                        marker=dict(symbol="diamond", size=10, color="black"),
                        hovertemplate="ridge: %{x:.0f} FLOP/B (compute peak ÷ bandwidth)<extra></extra>")
    if "floor_tflops" in points and points["floor_tflops"].notna().any():
        # Attainable throughput at each shape's floor: the probe curve's roof at that shape's byte count.
        floors = points.drop_duplicates("shape")
        fig.add_scatter(x=floors["intensity"], y=floors["floor_tflops"], mode="markers",
                        name="floor per shape (derived)",
                        marker=dict(symbol="line-ew-open", size=14, color="black",
                                    line=dict(width=2, color="black")),
                        customdata=floors[["shape", "floor_us"]].to_numpy(),
                        hovertemplate="%{customdata[0]}: floor %{customdata[1]:.3f} µs → %{y:.2f} TFLOP/s"
                                      "<extra></extra>")
    cmap = _colors_for(points["candidate"] if len(points) else [], colors)
    groups = list(points.groupby("candidate", sort=False)) if len(points) else []
    groups.sort(key=lambda g: g[0] not in hollow)  # open rings first, filled points drawn over them
    for cand, sub in groups:
        ring = cand in hollow
        marker = (dict(symbol="circle-open", size=13, color=cmap[str(cand)], line=dict(width=2)) if ring
                  else dict(size=8, color=cmap[str(cand)]))
        fig.add_scatter(x=sub["intensity"], y=sub["tflops"], mode="markers", name=str(cand), marker=marker,
                        customdata=sub[["shape", "median_us", "floor_us", "bound"]].to_numpy(),
                        hovertemplate="%{customdata[0]}<br>intensity %{x:.2f} FLOP/B<br>%{y:.2f} TFLOP/s"
                                      "<br>%{customdata[1]:.3f} µs (floor %{customdata[2]:.3f} µs, "
                                      "%{customdata[3]}-bound)<extra>" + str(cand) + "</extra>")
    _mark_gated(fig, points, "intensity", "tflops")
    fig.update_layout(title=_title("Roofline: intensity vs achieved throughput", source),
                      xaxis=dict(type="log", title="arithmetic intensity (FLOP / byte)",
                                 range=[np.log10(lo), np.log10(hi)]),
                      yaxis=dict(type="log", title="achieved TFLOP/s"), **LAYOUT)
    return html_labels(label_log_axes(fig))


def time_vs_floor(df: pd.DataFrame, source: str, colors: dict | None = None) -> go.Figure:
    """Per shape: time of each candidate (bars) and the shape's floor as a black tick across every bar.
    Columns: shape, candidate, median_us, floor_us."""
    fig = go.Figure()
    cmap = _colors_for(df["candidate"] if len(df) else [], colors)
    groups = list(df.groupby("candidate", sort=False))
    for cand, sub in groups:
        fig.add_bar(x=sub["shape"], y=sub["median_us"], name=str(cand), marker_color=cmap[str(cand)],
                    offsetgroup=str(cand), hovertemplate="%{x}: %{y:.3f} µs<extra>" + str(cand) + "</extra>")
    for i, (cand, sub) in enumerate(groups):
        fig.add_scatter(x=sub["shape"], y=sub["floor_us"], mode="markers", name="floor (derived)",
                        offsetgroup=str(cand), legendgroup="floor", showlegend=i == 0, marker=FLOOR_TICK,
                        hovertemplate="%{x} floor: %{y:.3f} µs<extra></extra>")
    _mark_gated(fig, df, "shape", "median_us")
    fig.update_layout(barmode="group", scattermode="group", title=_title("Time vs floor per shape (µs)", source),
                      yaxis_title="µs", xaxis_tickangle=-45, **LAYOUT)
    return html_labels(fig)


def probe_curve(probes: pd.DataFrame | None, seed: pd.DataFrame | None, source: str,
                memory: str = "HBM") -> go.Figure:
    """Read probes: bytes → µs (left) and bytes → TB/s (right), log x; `memory` names what they read ("HBM" on a
    GPU, "memory" on a CPU).

    `probes` columns: bytes, us, tbps, design (a run's), and `derived` where a record is a floor derived from the
    measured rate (a CPU run's per-shape floors, drawn apart); `seed` columns: label, bytes, us (the write-up's).
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=("time (µs)", "bandwidth (TB/s)"))
    sets = []
    if probes is not None and len(probes):
        derived = (probes["derived"].fillna(False).astype(bool) if "derived" in probes
                   else pd.Series(False, index=probes.index))
        if (~derived).any():
            sets.append(("run probes (measured)", probes[~derived].sort_values("bytes"), "lines+markers", "#1f77b4",
                         "circle"))
        if derived.any():
            sets.append(("shape floors (derived from the fastest rate)", probes[derived].sort_values("bytes"),
                         "markers", "#2ca02c", "line-ew-open"))
    if seed is not None and len(seed):
        sets.append(("write-up probes (published)", seed.sort_values("bytes"), "markers", "#d62728", "diamond"))
    for name, d, mode, color, sym in sets:
        tbps = d["tbps"] if "tbps" in d else d["bytes"] / d["us"] / 1e6  # bytes/µs → TB/s (seed has no tbps)
        for col, y, unit in ((1, d["us"], "µs"), (2, tbps, "TB/s")):
            fig.add_scatter(x=d["bytes"], y=y, mode=mode, name=name, legendgroup=name, showlegend=col == 1,
                            marker=dict(color=color, symbol=sym, size=9), line=dict(color=color), row=1, col=col,
                            hovertemplate="%{x:.3s} B: %{y:.3f} " + unit + "<extra>" + name + "</extra>")
    fig.update_xaxes(type="log", title="bytes read")
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_layout(title=_title(f"{memory} read probe curve", source), **SUBPLOTS_LAYOUT)
    return html_labels(label_log_axes(fig, {"xaxis": "B", "xaxis2": "B", "yaxis": " µs"}))
