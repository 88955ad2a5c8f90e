"""The step view's figures (dashboard/model/step.py's tables drawn): where the step's time goes per candidate, Amdahl's
curve with every measured candidate on it, and in-step vs isolated time per projection family. Every builder
returns through dashboard.plots.figures.html_labels (no name can add markup), and a candidate's name reaches hover text
only as trace data (%{text}, %{fullData.name}), never spliced into a hovertemplate."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.plots.figures import _title, html_labels, series_colors
from dashboard.model.step import PART_TITLES, curve
from dashboard.model.workloads import family_colors

OTHER_COLORS = {"attention": "#7f7f7f", "norms_activations": "#bcbd22", "rest": "#c7c7c7",
                "unattributed": "#e5e5e5"}


def step_bars(breakdown: pd.DataFrame, families: list[str], source: str) -> go.Figure:
    """One stacked bar per candidate at one point: each projection family, attention, norms and activations, the
    rest and the unattributed remainder, in µs of the step."""
    colors = family_colors(families) | OTHER_COLORS
    fig = go.Figure()
    cands = list(dict.fromkeys(breakdown["candidate"]))
    for part in dict.fromkeys(breakdown["part"]):
        rows = breakdown[breakdown["part"] == part].set_index("candidate").reindex(cands)
        name = PART_TITLES.get(part, part)
        fig.add_bar(x=cands, y=rows["us"].fillna(0.0), name=name, marker_color=colors.get(part),
                    hovertemplate="%{x}<br>" + name + ": %{y:.1f} µs<extra></extra>")
    fig.update_layout(barmode="relative", title=_title("Where the step's time goes", source),
                      yaxis_title="µs per step", legend_traceorder="normal", height=420)
    return html_labels(fig)


def amdahl_curve(amd: pd.DataFrame, source: str) -> go.Figure:
    """Step speedup against projection speedup: Amdahl's curve at the baseline's projection share p, each
    candidate's measured step speedup (with its interval) at its in-step projection speedup, and the prediction
    from its isolated per-shape speedup."""
    fig = go.Figure()
    rows = amd[np.isfinite(amd["p"].astype(float))]
    if rows.empty:
        return html_labels(fig.update_layout(title=_title("Amdahl: no projection share measured", source)))
    p = float(rows["p"].iloc[0])
    xs_seen = [v for v in (*rows["s_in_step"], *rows["s_isolated"]) if np.isfinite(v)]
    hi = max([1.5, *(v * 1.1 for v in xs_seen)])
    lo = min([0.8, *(v * 0.95 for v in xs_seen)])
    xs = np.linspace(lo, hi, 60)
    fig.add_scatter(x=xs, y=curve(p, xs), mode="lines", name=f"Amdahl at p = {p:.1%} (derived)",
                    line=dict(color="#444"), hovertemplate="projection ×%{x:.3f} → step ×%{y:.4f}<extra></extra>")
    colors = series_colors(rows["candidate"])
    for r in rows.itertuples():
        color = colors[r.candidate]
        if np.isfinite(r.s_in_step):
            lo_err = r.measured - r.measured_ci_low if r.measured_ci_low is not None else 0.0
            hi_err = r.measured_ci_high - r.measured if r.measured_ci_high is not None else 0.0
            fig.add_scatter(x=[r.s_in_step], y=[r.measured], mode="markers", name=f"{r.candidate}: measured",
                            marker=dict(color=color, size=11), text=[r.candidate],
                            error_y=dict(type="data", symmetric=False, array=[hi_err], arrayminus=[lo_err]),
                            hovertemplate=("%{text}<br>in-step projection ×%{x:.4f}<br>measured step "
                                           "×%{y:.4f}<extra></extra>"))
        if np.isfinite(r.s_isolated) and np.isfinite(r.predicted):
            fig.add_scatter(x=[r.s_isolated], y=[r.predicted], mode="markers", name=f"{r.candidate}: predicted",
                            marker=dict(color=color, size=10, symbol="circle-open"), text=[r.candidate],
                            hovertemplate=("%{text}<br>isolated projection ×%{x:.4f}<br>predicted step "
                                           "×%{y:.4f}<extra></extra>"))
    fig.update_layout(title=_title("Step speedup against projection speedup", source),
                      xaxis_title="projection speedup (× vs the baseline)", yaxis_title="step speedup (×)",
                      height=420)
    return html_labels(fig)


def family_bars(fam: pd.DataFrame, source: str) -> go.Figure:
    """In-step vs isolated µs per call, per family and candidate, at one point."""
    fig = go.Figure()
    colors = series_colors(fam["candidate"])
    for cand in dict.fromkeys(fam["candidate"]):
        rows = fam[fam["candidate"] == cand]
        fig.add_bar(x=rows["family"], y=rows["isolated_us"], name=f"{cand}: isolated (cold shape)",
                    marker=dict(color=colors[cand], opacity=0.45),
                    hovertemplate="%{x}: %{y:.2f} µs alone<extra>%{fullData.name}</extra>")
        fig.add_bar(x=rows["family"], y=rows["in_step_us"], name=f"{cand}: in the step",
                    marker=dict(color=colors[cand]),
                    hovertemplate="%{x}: %{y:.2f} µs in the step<extra>%{fullData.name}</extra>")
    fig.update_layout(barmode="group", title=_title("Per call: in the step vs alone", source),
                      yaxis_title="µs per call", height=380)
    return html_labels(fig)
