"""Where time goes: per load, baseline vs candidate per family (floors marked), the time above the floor per
family (what is recoverable), time shares, Amdahl per shape, local vs official."""
from pathlib import Path

import numpy as np
import streamlit as st

from ui import figures, state, tables, terms, view, widgets

st.title("Where the time goes")
selection = view.pick()
view.caption_source(selection, "Lower is better.")
terms.link("floor", "above_floor", "sigma_w")
wl = selection.workload
wide = selection.wide()
scored = tables.scored_shapes(selection)
if scored.empty:
    # e.g. a nearby-only run: its shapes belong to no load, so there is nothing to split per load or per family
    n_loads = terms.count_word(len(wl.load_order))
    st.info(f"{widgets.md_text(selection.label)} has no shapes of the {n_loads} scored loads (only "
            f"{widgets.md_text(', '.join(sorted(set(wide['load']))))} "
            "shapes), so there is no time per load or per family to show. The Shapes page lists its shapes.")
    st.stop()

series = {f"{selection.baseline}": "baseline_us", f"{selection.candidate}": "candidate_us"}
colors = figures.series_colors(selection.data.candidates(), selection.baseline)  # the same colours as on every page
tag = "measured" if selection.kind == "run" else selection.note
st.plotly_chart(figures.load_time_bars(scored, series, f"{tag} per-shape times; Σ floor derived", wl.load_order,
                                       floor_col="floor_us"), width="stretch", theme=None)

st.subheader("Time above the floor (what is recoverable)")
above = tables.time_above_floor(scored, wl.load_order, wl.family_order)
above_cols = {selection.baseline: "baseline_above_us", selection.candidate: "candidate_above_us"}
st.plotly_chart(figures.above_floor_bars(above, above_cols,
                                         f"derived from {tag} times and the floors", colors), width="stretch", theme=None)
num = st.column_config.NumberColumn
above_w = widgets.fit_widths({c: 150 for c in above.columns})   # 1,600 px with any candidate's name
st.dataframe(above, hide_index=True, width="stretch", column_config={
    **{c: st.column_config.Column(width=w) for c, w in above_w.items()},
    "baseline_above_us": num(f"{selection.baseline} above floor µs", format="%.2f", help=terms.short("above_floor"),
                             width=above_w.get("baseline_above_us")),
    "candidate_above_us": num(f"{selection.candidate} above floor µs", format="%.2f", help=terms.short("above_floor"),
                              width=above_w.get("candidate_above_us")),
    "candidate_us": num(f"{selection.candidate} µs", format="%.2f", width=above_w.get("candidate_us")),
    "floor_us": num("floor µs", format="%.2f", width=above_w.get("floor_us")),
    "candidate_share_above": num(f"share of {selection.candidate} time above floor", format="percent",
                                 width=above_w.get("candidate_share_above"))})
st.caption(f"Summed over the {terms.count_word(len(wl.load_order))} loads, each shape once (µs per call). "
           "Negative where a kernel beat its floor's "
           "probe (SOL above 100%, see the glossary).")

st.subheader("One load")
loads = [l for l in wl.load_order if l in set(scored["load"])]
load = state.url_selectbox(st, "Load", loads, "load", loads[0], key="wtg_load", what="load")
st.plotly_chart(figures.family_bars(scored, load, series, tag, colors), width="stretch", theme=None)

st.subheader("Time shares and Amdahl")
shares = tables.time_shares(scored, tables.family_weights(wl))
st.plotly_chart(figures.share_bars(shares, f"derived from {tag} times ({selection.candidate})"), width="stretch", theme=None)
if selection.breakdown is None:  # a what-if score needs the pair's score: view.pick() said why there is none
    st.info("No Amdahl what-if without a score for this pair.")
else:
    s = st.select_slider("If one shape were s× faster", options=[1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, np.inf],
                         value=2.0, format_func=lambda x: "∞" if not np.isfinite(x) else f"{x}×", key="wtg_s")
    sub = tables.amdahl_table(shares, load, s, selection.breakdown.load_ratios())
    st.dataframe(sub, hide_index=True, width="stretch", column_config={
        **{c: st.column_config.Column(width=w) for c, w in widgets.fit_widths({c: 110 for c in sub.columns}).items()},
        "candidate_us": num(f"{selection.candidate} µs", format="%.3f", width=110),
        "share": num("share of load", format="percent", width=110),
        "load_speedup": num("load speedup × (derived)", format="%.4f", width=160),
        "new_score": num("score then (derived)", format="%.4f", width=140)})

far = tables.furthest_from_floor(wide)
if far:
    st.markdown("**Furthest from the floor** (lowest SOL of " + widgets.md_text(selection.candidate)
                + "): what the call launches, per kernel —")
    for cell, key in zip(st.columns(len(far)), far):
        cell.page_link("app_pages/kernels.py", label=f"Kernels: {widgets.md_text(key)}", icon=":material/memory:",
                       query_params={"shape": key, "source": Path(selection.path).name})

if selection.kind == "run" and view.official_note(wl) is not None:
    st.subheader("Local (measured) vs official (published), same shapes")
    st.info(f"Not shown: {widgets.md_text(view.official_note(wl))}.")
elif selection.kind == "run":
    st.subheader("Local (measured) vs official (published), same shapes")
    side = tables.local_vs_official(selection)
    if side.empty:
        st.info("This run has no scored shapes in common with the official table.")
    else:
        st.caption(terms.short("baselines"))
        side_w = widgets.fit_widths({c: 150 for c in side.columns})
        st.dataframe(side, hide_index=True, width="stretch", column_config={
            **{c: st.column_config.Column(width=w) for c, w in side_w.items()},
            **{c: num(c, format="%.3f", width=side_w[c]) for c in side.columns if c.endswith(")")}})
        widgets.download_csv(side, "local_vs_official.csv")
