"""Figures of the Kernels page and of kernel reports: pure layout of what dashboard.model.kernels computed.

Provenance in every title: kernel times from one CUDA-graph replay (Kineto) where it matched ncu's kernels, else
ncu; bytes, grid and throughputs from Nsight Compute (one cold call); floors from the run's own probes (derived).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.plots.figures import LAYOUT, SERIES_COLORS, label_log_axes

KERNEL_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#72b7b2", "#9d755d", "#bab0ac"]
BETWEEN_COLOR = "#d3d3d3"
MEASURED = "measured: kernel times from one graph replay (Kineto), bytes and grid from Nsight Compute"


def _title(text: str, source: str) -> dict:
    return dict(text=f"{text}<br><sup>{source}</sup>")


def kernel_stack(parts: pd.DataFrame, floor_us: float | None, title: str, source: str = MEASURED) -> go.Figure:
    """One horizontal bar per candidate, stacked by its kernels in launch order (plus idle time between them), and
    the shape's floor as a vertical line. `parts`: candidate, kernel, index, time_us (kernels.kernel_gap_parts)."""
    fig = go.Figure()
    cands = list(dict.fromkeys(parts["candidate"]))
    for pos in sorted(parts["index"].unique()):
        sub = parts[parts["index"] == pos].set_index("candidate").reindex(cands)
        names = sub["kernel"].fillna("").tolist()
        colors = [BETWEEN_COLOR if n == "between kernels" else KERNEL_COLORS[int(pos) % len(KERNEL_COLORS)]
                  for n in names]
        fig.add_bar(y=cands, x=sub["time_us"], orientation="h", marker_color=colors, name=f"kernel {int(pos) + 1}",
                    customdata=names, showlegend=False,
                    hovertemplate="%{y}: %{customdata}<br>%{x:.3f} µs<extra></extra>",
                    text=[n[:28] for n in names], textposition="inside", insidetextanchor="start")
    if floor_us is not None and np.isfinite(floor_us):
        fig.add_vline(x=floor_us, line_dash="dash", line_color="#333",
                      annotation_text=f"floor {floor_us:.2f} µs (derived)", annotation_position="bottom right")
    # the subtitle sits left and the plot starts lower, so neither runs under the chart's toolbar (top right)
    fig.update_layout(barmode="relative", title={**_title(title, source), "x": 0, "xanchor": "left"},
                      xaxis_title="µs (lower is better)", yaxis_autorange="reversed", height=220 + 60 * len(cands),
                      **{**LAYOUT, "margin": dict(LAYOUT["margin"], t=100)})
    return fig


def bytes_vs_ideal(calls: pd.DataFrame, title: str,
                   source: str = "measured (Nsight Compute, one cold call)") -> go.Figure:
    """Per candidate: DRAM bytes read and written (stacked, MB) against the ideal weights + x + y (a marker).
    `calls`: candidate, dram_read_bytes, dram_write_bytes, ideal_bytes (kernels.call_table rows of one shape)."""
    fig = go.Figure()
    cands = calls["candidate"].tolist()
    fig.add_bar(x=cands, y=calls["dram_read_bytes"] / 1e6, name="DRAM read", marker_color=SERIES_COLORS[1],
                hovertemplate="%{x}: read %{y:.2f} MB<extra></extra>")
    fig.add_bar(x=cands, y=calls["dram_write_bytes"] / 1e6, name="DRAM write", marker_color=SERIES_COLORS[2],
                hovertemplate="%{x}: written %{y:.2f} MB<extra></extra>")
    fig.add_scatter(x=cands, y=calls["ideal_bytes"] / 1e6, mode="markers", name="ideal: weights + x + y (derived)",
                    marker=dict(symbol="line-ew-open", size=40, line=dict(width=3, color="#000")),
                    hovertemplate="%{x}: ideal %{y:.2f} MB<extra></extra>")
    fig.update_layout(barmode="stack", title=_title(title, source), yaxis_title="MB", **LAYOUT)
    return fig


def kernel_roofline(kernels: pd.DataFrame, probe_points: pd.DataFrame | None, title: str,
                    source: str = MEASURED + "; probe roof measured") -> go.Figure:
    """Each kernel as a point (DRAM bytes, achieved TB/s) under the run's read-probe bandwidth at each size.
    `kernels`: candidate, kernel, dram_bytes, achieved_tbps, time_us; `probe_points`: bytes, tbps."""
    fig = go.Figure()
    if probe_points is not None and len(probe_points):
        pts = probe_points.sort_values("bytes")
        fig.add_scatter(x=pts["bytes"], y=pts["tbps"], mode="lines", name="read probe (measured roof)",
                        line=dict(color="#333", dash="dash"),
                        hovertemplate="%{x:.3s} B: %{y:.2f} TB/s<extra>probe</extra>")
    shown = kernels[kernels["dram_bytes"] > 0]
    for i, (cand, sub) in enumerate(shown.groupby("candidate", sort=False)):
        fig.add_scatter(x=sub["dram_bytes"], y=sub["achieved_tbps"], mode="markers", name=cand,
                        marker=dict(size=11, color=SERIES_COLORS[(i + 1) % len(SERIES_COLORS)]),
                        customdata=np.stack([sub["kernel"], sub["time_us"]], axis=-1),
                        hovertemplate="%{customdata[0]}<br>%{x:.3s} B in %{customdata[1]:.2f} µs: "
                                      "%{y:.3f} TB/s<extra>" + cand + "</extra>")
    fig.update_layout(title=_title(title, source), xaxis_type="log", yaxis_type="log",
                      xaxis_title="DRAM bytes moved by the kernel", yaxis_title="achieved TB/s", **LAYOUT)
    return label_log_axes(fig, {"xaxis": "B"})


def gap_parts_bars(loads: pd.DataFrame, parts: dict[str, str], title: str,
                   source: str = "derived from the explain run") -> go.Figure:
    """Per load, the gap to the floor stacked by cause (kernels.gap_by_load columns named in `parts`)."""
    fig = go.Figure()
    for i, (col, label) in enumerate(parts.items()):
        fig.add_bar(x=loads["load"], y=loads[col], name=label, marker_color=KERNEL_COLORS[i % len(KERNEL_COLORS)],
                    hovertemplate="%{x}: " + label + " %{y:.2f} µs<extra></extra>")
    fig.update_layout(barmode="relative", title=_title(title, source), yaxis_title="µs over the floor (Σ of 5 shapes)",
                      **LAYOUT)
    return fig
