"""Plotly figure builders: pure functions from DataFrames / numbers to `go.Figure`.

They compute nothing that matters (no scores, floors or ratios — callers pass what `dashboard/` computed);
they only lay numbers out. Every title carries its provenance: measured, derived or published.
Column conventions are named in each docstring. The roof's figures (roofline, time vs floor, probe curve) are
`dashboard.plots.roofline_figures`'; this module holds the shared style (layout, colours, log-axis labels,
HTML-safe labels) and the other figures.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.colors as pcolors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.model.workloads import family_colors

FAMILY_COLORS = family_colors(["qkv_gate", "o", "pooler", "unpooler", "router"])  # muse's; others: family_colors
SERIES_COLORS = ["#7f7f7f", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
VERDICT_SYMBOLS = {"FAST": "triangle-up", "SLOW": "triangle-down", "SAME": "circle", "SAME ROUTE": "circle-open", "AMBIGUOUS": "diamond-open",
                   "NO VERDICT": "circle-dot", "NO SAMPLES": "x", "INCORRECT": "x", "FAILED": "x", "BELOW FLOOR": "x", "NO SCORE": "x"}
GATED_VERDICTS = ("INCORRECT", "FAILED", "BELOW FLOOR", "NO SCORE")  # no ratio: red crosses on the 1.0 line
GATED_COLOR = "#d62728"
FLOOR_TICK = dict(symbol="line-ew", size=18, line=dict(width=3, color="black"))  # a floor drawn across a bar
# No template here: setting one copies and validates the whole template, about 30 ms per figure on this 2-core
# machine. In the app Streamlit's chart theme styles every figure anyway; reports add plotly_white once, in the page
# (dashboard.documents.report_render).
LAYOUT = dict(margin=dict(l=60, r=20, t=60, b=50), hovermode="closest")
REPORT_TEMPLATE = "plotly_white"
SUBPLOTS_LAYOUT = {**LAYOUT, "margin": dict(l=60, r=20, t=100, b=50)}  # room for subplot titles under the title


# Distinct colours for a plan's methods (plotly's Dark24: 24 hues, so a plan's dozen methods never share one);
# torch_linear, the call the baseline makes, keeps the baseline's grey.
METHOD_COLORS = [c for c in pcolors.qualitative.Dark24 if c.upper() not in ("#222A2A",)]
BASELINE_METHOD = "torch_linear"

# Log axes are labelled at chosen values with their unit, never plotly's bare minor digits ("5, 2, 1, 5, 2"):
# decades over three decades or more, 1-2-5 over a wider than 3× span, finer steps inside a narrow one.
_MANTISSAS = {"decades": (1,), "wide": (1, 2, 5), "narrow": (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8)}


def _tick_text(v: float, unit: str) -> str:
    if unit == "B":
        for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if v >= scale:
                return f"{v / scale:g} {prefix}B"
        return f"{v:g} B"
    return f"{v:,.10g}{unit}"


def log_ticks(lo: float, hi: float, unit: str = "") -> tuple[list[float], list[str]]:
    """Tick values inside [lo, hi] for a log axis and their labels with `unit` ("B" gets k/M/G prefixes)."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= lo:
        return [], []
    span = hi / lo
    kind = "decades" if span >= 1000 else "wide" if span >= 3 else "narrow"
    vals = []
    for d in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1):
        vals += [m * 10.0 ** d for m in _MANTISSAS[kind] if lo <= m * 10.0 ** d <= hi]
    if len(vals) < 3:   # a span under ~1.25 (ratios near 1): evenly spaced ticks at a round step instead
        vals = _linear_ticks(lo, hi)
    vals = [float(f"{v:.6g}") for v in vals]
    return vals, [_tick_text(v, unit) for v in vals]


def _linear_ticks(lo: float, hi: float) -> list[float]:
    """3-8 ticks inside [lo, hi] at the smallest step of 1, 2 or 5 times a power of ten that gives at most 8."""
    top = int(np.floor(np.log10(hi - lo)))
    for step in sorted(m * 10.0 ** e for e in range(top - 2, top + 1) for m in (1, 2, 5)):
        vals = np.arange(np.ceil(lo / step) * step, hi + step * 1e-9, step)
        if len(vals) <= 8:
            return list(vals) if len(vals) >= 3 else []
    return []


def _axis_values(fig: go.Figure, axis: str) -> list[float]:
    """Every positive finite value the figure's traces put on layout axis `axis` ('xaxis', 'yaxis2', ...)."""
    letter, suffix = axis[0], axis[5:]
    out = []
    for trace in fig.data:
        if (getattr(trace, f"{letter}axis", None) or letter) != f"{letter}{suffix}":
            continue
        values = getattr(trace, letter, None)
        if values is None:
            continue
        base = getattr(trace, "base", None) if letter == "x" and getattr(trace, "orientation", None) == "h" else None
        if base is not None:   # a horizontal bar spans base .. base + x
            values = [b + v for b, v in zip(base, values)] + list(base)
        for v in values:
            if isinstance(v, (int, float, np.number)) and np.isfinite(v) and v > 0:
                out.append(float(v))
    return out


def label_log_axes(fig: go.Figure, units: dict[str, str] | None = None) -> go.Figure:
    """Give every log axis of `fig` ticks with units (log_ticks) over its range (or its data's); `units` maps a
    layout axis name ('xaxis', 'yaxis2') to its unit."""
    units = units or {}
    for name in [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]:
        ax = fig.layout[name]
        if ax.type != "log":
            continue
        if ax.range is not None:
            lo, hi = 10.0 ** ax.range[0], 10.0 ** ax.range[1]
        else:
            values = _axis_values(fig, name)
            if not values:
                continue
            lo, hi = min(values) / 1.15, max(values) * 1.15
        vals, text = log_ticks(lo, hi, units.get(name, ""))
        if len(vals) >= 2:
            fig.layout[name].update(tickmode="array", tickvals=vals, ticktext=text, minor=dict(showgrid=False))
    return fig


# Plotly renders a subset of HTML in every label (trace names, tick labels, hover text, titles), links included: a
# name holding '<a href=...>' became live links. Every builder below returns through html_labels, the one place a
# figure's text is made safe: each '<' that does not open one of the tags the builders themselves write is shown as
# text ('&lt;'), so only that formatting survives and no name can add a link or any other markup.
_FOREIGN_TAG = re.compile(r"<(?!/?(?:br|b|i|sub|sup|extra)>)")
_TRACE_TEXT = ("name", "text", "hovertext", "x", "y", "customdata", "labels")


def _safe(value):
    """`value` with html_labels' rule applied to every string in it (nested lists, tuples, object arrays); None
    when nothing changes, so a figure without a foreign '<' is left as it is (no re-validation by plotly)."""
    if isinstance(value, str):
        return _FOREIGN_TAG.sub("&lt;", value) if _FOREIGN_TAG.search(value) else None
    if isinstance(value, np.ndarray) and value.dtype != object:
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        items = [(_safe(v), v) for v in value]
        if all(new is None for new, _ in items):
            return None
        return [v if new is None else new for new, v in items]
    return None


def html_labels(fig: go.Figure) -> go.Figure:
    """The figure with every label, tick text, hover text and title made safe for plotly's HTML (see above).

    Reads the figure's own property dicts (`_data`, `_layout`: plotly's property access costs about 8 ms a figure
    here) and writes through the public API only where a label changes."""
    for i, raw in enumerate(fig._data):
        for attr in _TRACE_TEXT:
            if attr in raw and (new := _safe(raw[attr])) is not None:
                fig.data[i][attr] = new
    layout = fig._layout
    title = layout.get("title")
    if isinstance(title, dict) and (new := _safe(title.get("text"))) is not None:
        fig.layout.title.text = new
    for i, note in enumerate(layout.get("annotations") or ()):
        if (new := _safe(note.get("text"))) is not None:
            fig.layout.annotations[i].text = new
    for name, axis in layout.items():
        if not name.startswith(("xaxis", "yaxis")) or not isinstance(axis, dict):
            continue
        if (new := _safe(axis.get("ticktext"))) is not None:
            fig.layout[name].ticktext = new
        axis_title = axis.get("title")
        if isinstance(axis_title, dict) and (new := _safe(axis_title.get("text"))) is not None:
            fig.layout[name].title.text = new
    return fig


def _title(text: str, source: str) -> dict:
    return dict(text=f"{text}<br><sup>{source}</sup>")


def series_colors(names, baseline: str | None = None) -> dict[str, str]:
    """One colour per series name, fixed for every chart that shows it: the baseline grey, the others in palette
    order. Callers build it once (e.g. for a report) and pass it to each figure."""
    out, i = {}, 1
    for name in dict.fromkeys(names):
        if name == baseline:
            out[name] = SERIES_COLORS[0]
        else:
            out[name] = SERIES_COLORS[1 + (i - 1) % (len(SERIES_COLORS) - 1)]
            i += 1
    return out


def _colors_for(names, colors: dict | None) -> dict[str, str]:
    """`colors` where it names a series, else palette order."""
    names = list(dict.fromkeys(map(str, names)))
    auto = series_colors(names)
    return {n: (colors or {}).get(n, auto[n]) for n in names}


def _mark_gated(fig: go.Figure, df: pd.DataFrame, x: str, y: str) -> None:
    """Red crosses over the points of results the correctness gate keeps out of every score (a `status` column
    other than 'ok': incorrect, or below the measured floor)."""
    if "status" not in df:
        return
    bad = df[df["status"] != "ok"]
    if len(bad):
        fig.add_scatter(x=bad[x], y=bad[y], mode="markers", name="not scored (incorrect / below floor)",
                        marker=dict(symbol="x", size=14, color=GATED_COLOR, line=dict(width=1, color="white")),
                        text=bad["status"], hovertemplate="%{x}: %{text} — not scored<extra></extra>")


def load_time_bars(df: pd.DataFrame, series: dict[str, str], source: str, load_order=None,
                   floor_col: str | None = None) -> go.Figure:
    """Where the time went: per load, one stacked bar per series, stacked by family (µs, lower is better).

    `df` columns: load, family, and one µs column per series; `series` maps legend name → column. With
    `floor_col`, the load's summed floor is drawn as a black tick on every bar.
    """
    loads = [l for l in (load_order or list(dict.fromkeys(df["load"]))) if l in set(df["load"])]
    fig = go.Figure()
    fam_colors = family_colors(df["family"])
    for fam in dict.fromkeys(df["family"]):
        sub = df[df["family"] == fam].set_index("load")
        x0, x1, y = [], [], []
        for load in loads:
            for name, col in series.items():
                x0.append(load)
                x1.append(name)
                y.append(float(sub[col].get(load, np.nan)) if load in sub.index else np.nan)
        fig.add_bar(x=[x0, x1], y=y, name=fam, marker_color=fam_colors[fam],
                    hovertemplate="%{x}<br>" + fam + ": %{y:.3f} µs<extra></extra>")
    if floor_col and floor_col in df and df[floor_col].notna().any():
        floors = df.groupby("load", sort=False)[floor_col].sum(min_count=1)
        x0 = [l for l in loads for _ in series]
        fig.add_scatter(x=[x0, [n for _ in loads for n in series]], y=[floors.get(l, np.nan) for l in x0],
                        mode="markers", name="Σ floor (derived)", marker=FLOOR_TICK,
                        hovertemplate="%{x}<br>Σ floor %{y:.3f} µs<extra></extra>")
    fig.update_layout(barmode="stack", title=_title("Time per load, stacked by family (µs, lower is better)",
                                                    source), yaxis_title="µs", legend_title="family", **LAYOUT)
    return html_labels(fig)


def family_bars(df: pd.DataFrame, load: str, series: dict[str, str], source: str, colors: dict | None = None,
                floor_col: str | None = "floor_us") -> go.Figure:
    """One load: grouped bars of each family's time per series, the shape's floor as a tick on every bar.
    Columns as in `load_time_bars`, plus `floor_col` (µs) when present."""
    sub = df[df["load"] == load]
    cmap = _colors_for(series, colors)
    fig = go.Figure()
    for name, col in series.items():
        fig.add_bar(x=sub["family"], y=sub[col], name=name, marker_color=cmap[name], offsetgroup=name,
                    hovertemplate="%{x}: %{y:.3f} µs<extra>" + name + "</extra>")
    if floor_col in sub and sub[floor_col].notna().any():
        for i, name in enumerate(series):
            fig.add_scatter(x=sub["family"], y=sub[floor_col], mode="markers", offsetgroup=name,
                            name="floor (derived)", legendgroup="floor", showlegend=i == 0, marker=FLOOR_TICK,
                            hovertemplate="%{x} floor: %{y:.3f} µs<extra></extra>")
    fig.update_layout(barmode="group", scattermode="group", title=_title(f"{load}: time per family (µs)", source),
                      yaxis_title="µs", **LAYOUT)
    return html_labels(fig)


def above_floor_bars(df: pd.DataFrame, series: dict[str, str], source: str, colors: dict | None = None) -> go.Figure:
    """Per family: time above the floor (µs, summed over the loads) per series — what is recoverable.
    `df`: dashboard.model.views.time_above_floor output; `series` maps legend name → column."""
    cmap = _colors_for(series, colors)
    fig = go.Figure()
    for name, col in series.items():
        fig.add_bar(x=df["family"], y=df[col], name=name, marker_color=cmap[name],
                    text=[f"{v:.1f}" for v in df[col]], textposition="outside",
                    hovertemplate="%{x}: %{y:.2f} µs above the floor<extra>" + name + "</extra>")
    fig.update_layout(barmode="group", title=_title("Time above the floor per family (µs summed over the loads; "
                                                    "what a kernel at the floor would recover)", source),
                      yaxis_title="µs above the floor", **LAYOUT)
    return html_labels(fig)


def share_bars(shares: pd.DataFrame, source: str) -> go.Figure:
    """Time shares: columns load, family, share (0..1) — 100%-stacked horizontal bars per load."""
    fig = go.Figure()
    fam_colors = family_colors(shares["family"])
    for fam in dict.fromkeys(shares["family"]):
        sub = shares[shares["family"] == fam]
        fig.add_bar(y=sub["load"], x=sub["share"] * 100, name=fam, orientation="h",
                    marker_color=fam_colors[fam], hovertemplate="%{y} " + fam + ": %{x:.1f}%<extra></extra>")
    fig.update_layout(barmode="stack", title=_title("Share of each load's time per family (%)", source),
                      xaxis_title="% of the load's time", yaxis_autorange="reversed", **LAYOUT)
    return html_labels(fig)


def ratio_bars(df: pd.DataFrame, source: str, target: float | None = None) -> go.Figure:
    """Per-load (or per-shape) speedup ratios. Columns: label, ratio, optional ci_low / ci_high."""
    # Plain lists, not pandas columns: plotly hands pandas input to narwhals, whose pandas backend is imported on
    # first use (0.2-0.3 s of the first page's first script run on 2 cores, for the one chart that page draws).
    err = None
    if {"ci_low", "ci_high"} <= set(df.columns) and df["ci_low"].notna().any():
        err = dict(type="data", symmetric=False, array=(df["ci_high"] - df["ratio"]).tolist(),
                   arrayminus=(df["ratio"] - df["ci_low"]).tolist())
    top = max([float(np.nanmax(df["ratio"])) if len(df) else 1.0, float(target or 0)]
              + ([float(np.nanmax(df["ci_high"]))] if err is not None else []))
    shapes, notes = [_hline(1.0, dict(color="black", width=1))], []
    if target:
        # the label sits in the right margin, outside the bars, so it never covers a bar's own label
        shapes.append(_hline(target, dict(color="#d62728", dash="dot")))
        notes.append(dict(xref="x domain", x=1, xanchor="left", yref="y", y=target, showarrow=False,
                          text=f"target<br>{target:.4f}×", font=dict(color="#d62728")))
    # One constructor call with the lines as layout shapes (add_hline walks the subplot grid for every line).
    return html_labels(go.Figure(
        go.Bar(x=df["label"].tolist(), y=df["ratio"].tolist(), error_y=err, marker_color="#1f77b4",
               text=[f"{r:.4f}×" for r in df["ratio"]], textposition="outside",
               hovertemplate="%{x}: %{y:.4f}×<extra></extra>"),
        layout=dict(LAYOUT, title=_title("Speedup ratio (baseline ÷ candidate; > 1 is faster)", source),
                    yaxis=dict(title=dict(text="ratio ×"), range=[0, top * 1.15]), shapes=shapes, annotations=notes,
                    margin=dict(LAYOUT["margin"], r=90 if target else 20))))


def _hline(y: float, line: dict) -> dict:
    """A horizontal line across the plot at y (a layout shape, what add_hline draws)."""
    return dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y, line=line)


def line_figure(x, y, title: str, xlabel: str, ylabel: str, source: str, marker: tuple | None = None,
                hlines: dict | None = None, log_x: bool = False) -> go.Figure:
    """A plain curve (calculators: what-if score, Amdahl), an optional highlighted point and labelled
    horizontal reference lines {label: y}."""
    fig = go.Figure(go.Scatter(x=list(x), y=list(y), mode="lines", name=ylabel, line=dict(color="#1f77b4")))
    if marker is not None:
        fig.add_scatter(x=[marker[0]], y=[marker[1]], mode="markers+text", name="selected",
                        text=[f"{marker[1]:.4f}"], textposition="top center",
                        marker=dict(size=12, color="#d62728"))
    for label, yv in (hlines or {}).items():
        fig.add_hline(y=yv, line_dash="dot", annotation_text=label)
    fig.update_layout(title=_title(title, source), xaxis_title=xlabel, yaxis_title=ylabel, showlegend=False,
                      **LAYOUT)
    if log_x:
        fig.update_xaxes(type="log")
        label_log_axes(fig)
    return html_labels(fig)


def ledger_figure(ledger: pd.DataFrame, source: str = "published (write-up ledger)") -> go.Figure:
    """Candidate history: checks (blue dots) vs scored (red diamonds) vs other kinds, with CI bars.

    Columns: candidate, kind, score, ci_low, ci_high, status, note. Rows without a score are skipped
    (a caller shows them in a table)."""
    styles = {"check": ("#1f77b4", "circle"), "scored": ("#d62728", "diamond")}
    fig = go.Figure()
    d = ledger[ledger["score"].notna()]
    for kind, sub in d.groupby("kind", sort=False):
        color, sym = styles.get(kind, ("#7f7f7f", "square"))
        err = None
        if sub["ci_low"].notna().any():
            err = dict(type="data", symmetric=False, array=(sub["ci_high"] - sub["score"]).fillna(0),
                       arrayminus=(sub["score"] - sub["ci_low"]).fillna(0))
        fig.add_scatter(x=sub["candidate"].astype(str), y=sub["score"], mode="markers", name=str(kind),
                        error_y=err, marker=dict(color=color, symbol=sym, size=10),
                        customdata=sub[["note"]].fillna("").to_numpy(),
                        hovertemplate="%{x}: %{y:.4f}×<br>%{customdata[0]}<extra>" + str(kind) + "</extra>")
    fig.add_hline(y=1.0, line_color="black", line_width=1)
    fig.update_layout(title=_title("Candidate history (score per evaluation)", source),
                      xaxis=dict(type="category", title="candidate", categoryorder="category ascending"),
                      yaxis_title="score ×", **LAYOUT)
    return html_labels(fig)


def compare_figure(shapes: pd.DataFrame, source: str, labels: dict[str, str] | None = None,
                   order: list[str] | None = None, colors: dict | None = None) -> go.Figure:
    """Difference chart: per shape, each series' ratio vs the reference with its CI, on a log y axis.

    Colour = series (short name from `labels`, full name on hover), marker symbol = verdict, shapes in `order`
    (load order), series side by side at each shape. Columns (dashboard.model.compare shapes frame): series, load,
    family, ratio, ci_low, ci_high, verdict."""
    labels = labels or {}
    fig = go.Figure()
    names = list(dict.fromkeys(shapes["series"]))
    cmap = _colors_for([labels.get(n, n) for n in names], colors)
    for series in names:
        sub = shapes[shapes["series"] == series]
        short = labels.get(series, series)
        gated = sub["verdict"].isin(GATED_VERDICTS)  # no ratio by design: a red cross on the 1.0 line
        err = dict(type="data", symmetric=False, array=(sub["ci_high"] - sub["ratio"]).fillna(0),
                   arrayminus=(sub["ratio"] - sub["ci_low"]).fillna(0), thickness=1.2)
        fig.add_scatter(x=sub["load"] + "/" + sub["family"], y=sub["ratio"].where(~gated, 1.0), mode="markers",
                        error_y=err, name=short, offsetgroup=short,
                        marker=dict(color=[GATED_COLOR if g else cmap[short] for g in gated], size=10,
                                    symbol=[VERDICT_SYMBOLS.get(v, "circle") for v in sub["verdict"]]),
                        customdata=sub.reindex(columns=["verdict", "ci_low", "ci_high", "band_source"]).to_numpy(),
                        hovertemplate="%{x}: %{y:.4f}× [%{customdata[1]:.4f}–%{customdata[2]:.4f}] "
                                      "%{customdata[0]} %{customdata[3]}<extra>" + str(series) + "</extra>")
    for verdict_name in [v for v in VERDICT_SYMBOLS if v in set(shapes["verdict"])]:
        gated = verdict_name in GATED_VERDICTS
        fig.add_scatter(x=[None], y=[None], mode="markers", name=verdict_name + (" (no ratio)" if gated else ""),
                        legendgroup="verdict", legendgrouptitle_text="verdict (symbol)",
                        marker=dict(color=GATED_COLOR if gated else "#555", size=10,
                                    symbol=VERDICT_SYMBOLS[verdict_name]))
    fig.add_hline(y=1.0, line_color="black", line_width=1)
    xaxis = dict(tickangle=-45, title="shape (load order)")
    if order:
        present = set(shapes["load"] + "/" + shapes["family"])
        xaxis.update(categoryorder="array", categoryarray=[k for k in order if k in present])
    # each row's own band (dashboard.model.noise) is in its hover text
    fig.update_layout(title=_title("Ratio vs reference per shape (reference ÷ series; > 1 faster; each point's band "
                                   "in its hover text)", source),
                      yaxis=dict(type="log", title="ratio × (log)"), xaxis=xaxis, scattermode="group",
                      # under the chart, in rows: a long series name wraps instead of being cut at the page's edge
                      legend=dict(groupclick="toggleitem", orientation="h", yanchor="top", y=-0.45, x=0),
                      **{**LAYOUT, "margin": dict(LAYOUT["margin"], b=60)})
    return html_labels(label_log_axes(fig, {"yaxis": "×"}))


def dispatch_figure(regions: pd.DataFrame, shapes: pd.DataFrame | None, source: str,
                    selected_M: int | None = None) -> go.Figure:
    """A plan's M-regions per family as horizontal spans on a log M axis, the workload's scored shapes as markers.

    `regions` columns: family, M_lo, M_hi, method; `shapes` columns: family, M, load."""
    methods = list(dict.fromkeys(regions["method"]))
    others = iter(METHOD_COLORS)
    palette = {m: SERIES_COLORS[0] if m == BASELINE_METHOD else next(others) for m in methods}
    fig = go.Figure()
    shown = set()
    for r in regions.itertuples(index=False):
        lo, hi = r.M_lo - 0.45, r.M_hi + 0.45  # half-integers so a one-M region stays visible on log x
        fig.add_bar(y=[r.family], x=[hi - lo], base=[lo], orientation="h", name=r.method,
                    marker_color=palette[r.method], legendgroup=r.method, showlegend=r.method not in shown,
                    hovertemplate=f"{r.family} M {r.M_lo}–{r.M_hi}: {r.method}<extra></extra>")
        shown.add(r.method)
    if shapes is not None and len(shapes):
        fig.add_scatter(y=shapes["family"], x=shapes["M"], mode="markers", name="scored shapes",
                        marker=dict(symbol="x", size=10, color="black"), text=shapes["load"],
                        hovertemplate="%{text}: %{y} M=%{x}<extra></extra>")
    if selected_M:
        fig.add_vline(x=selected_M, line_dash="dot", line_color="#d62728", annotation_text=f"M={selected_M}")
    lanes = regions["family"].nunique()
    # the legend lies under the plot in rows, so a plan's dozen methods never need a scrolling legend
    fig.update_layout(barmode="overlay", title=_title("Dispatch regions by M", source),
                      xaxis=dict(type="log", title="M (token rows)", range=[np.log10(0.5), np.log10(300)]),
                      yaxis=dict(autorange="reversed"), **LAYOUT)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.18, x=0),
                      height=160 + 38 * lanes + 26 * int(np.ceil((len(methods) + 1) / 4)),
                      margin=dict(LAYOUT["margin"], b=40 + 26 * int(np.ceil((len(methods) + 1) / 4))))
    return html_labels(label_log_axes(fig))


def telemetry_figure(telemetry: pd.DataFrame, source: str = "measured (NVML telemetry)") -> go.Figure:
    """SM clock, power and temperature over the run. Columns: t_s, sm_mhz, power_w, temp_c.

    Clock and temperature are whole numbers: integer ticks, and a flat clock (the usual case) gets a ±50 MHz
    window instead of fractional ticks around one value."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=("SM clock (MHz)", "power (W)", "temperature (°C)"))
    for i, (col, pad) in enumerate((("sm_mhz", 50), ("power_w", None), ("temp_c", 5)), start=1):
        if col not in telemetry or telemetry[col].dropna().empty:
            continue
        y = telemetry[col]
        fig.add_scatter(x=telemetry["t_s"], y=y, mode="lines", name=col, row=1, col=i)
        if pad is not None:
            lo, hi = float(y.min()), float(y.max())
            if hi - lo < 2 * pad:
                mid = (lo + hi) / 2
                lo, hi = mid - pad, mid + pad
            fig.update_yaxes(range=[lo, hi], tickformat="d", row=1, col=i)
    fig.update_xaxes(title="s")
    fig.update_layout(title=_title("Telemetry during the run", source), showlegend=False,
                      **SUBPLOTS_LAYOUT)
    return html_labels(fig)


def samples_figure(samples: dict[str, list[float]], floor_us: float | None, title: str, source: str,
                   colors: dict | None = None) -> go.Figure:
    """Distribution of each candidate's timing samples at one shape (box + points), floor as a dotted line."""
    cmap = _colors_for(samples, colors)
    fig = go.Figure()
    for name, values in samples.items():
        fig.add_box(y=values, name=name, boxpoints="all", jitter=0.4, pointpos=0, marker_color=cmap[name],
                    hovertemplate="%{y:.3f} µs<extra>" + name + "</extra>")
    if floor_us is not None and np.isfinite(floor_us):
        fig.add_hline(y=floor_us, line_dash="dot", annotation_text=f"floor {floor_us:.3f} µs (derived)")
    fig.update_layout(title=_title(title, source), yaxis_title="µs", showlegend=False, **LAYOUT)
    return html_labels(fig)


def fleet_figure(table: pd.DataFrame) -> go.Figure:
    """The Fleet page's chart of dashboard.model.fleet.fleet_table: score (bars, left axis) and the candidate's SOL
    (markers, right axis) per run file, labelled by GPU model."""
    scored = table[table["status"] == "scored"]
    sol_top = float(np.nanmax(scored["sol_candidate"])) if scored["sol_candidate"].notna().any() else 0.0
    names = [f"{g}<br><sub>{r}</sub>" for g, r in zip(scored["gpu"], scored["run"])]
    fig = go.Figure()
    fig.add_bar(x=names, y=scored["score"], name="score (derived)", text=[f"{s:.4f}×" for s in scored["score"]],
                textposition="outside")
    fig.add_scatter(x=names, y=scored["sol_candidate"], name="SOL candidate (derived)", mode="markers",
                    marker={"size": 12, "symbol": "diamond"}, yaxis="y2")
    fig.update_layout(yaxis={"title": "score (× vs baseline)"},
                      yaxis2={"title": "SOL", "overlaying": "y", "side": "right", "tickformat": ".0%",
                              "range": [0, max(1.05, sol_top)]},
                      legend={"orientation": "h"}, margin={"t": 30})
    return html_labels(fig)
