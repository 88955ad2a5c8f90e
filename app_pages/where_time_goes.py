"""Where time goes: per load, baseline vs candidate per family, time shares, Amdahl per shape, local vs official."""
import numpy as np
import streamlit as st

from app_pages import common
from dashboard import figures, kernels, scoring, views

st.title("Where the time goes")
v = common.view()
common.caption_source(v, "Lower is better.")
wide = v.wide()
wl = common.workload()
series = {f"{v.baseline}": "baseline_us", f"{v.candidate}": "candidate_us"}
tag = "measured" if v.kind == "run" else v.note
st.plotly_chart(figures.load_time_bars(wide, series, f"{tag} per-shape times", wl.load_order), width="stretch")

loads = [l for l in wl.load_order if l in set(wide["load"])]
load = st.selectbox("Load", loads, key="wtg_load")
st.plotly_chart(figures.family_bars(wide, load, series, tag), width="stretch")

st.subheader("Time shares and Amdahl")
weights = scoring.family_weights(wl)
shares = views.time_shares(wide, weights)
st.plotly_chart(figures.share_bars(shares, f"derived from {tag} times ({v.candidate})"), width="stretch")
s = st.select_slider("If one shape were s× faster", options=[1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, np.inf],
                     value=2.0, format_func=lambda x: "∞" if not np.isfinite(x) else f"{x}×", key="wtg_s")
ratios = v.breakdown.load_ratios() if v.breakdown is not None else {}
sub = views.amdahl_table(shares, load, s, ratios)
st.dataframe(sub, hide_index=True, width="stretch", column_config={
    "candidate_us": st.column_config.NumberColumn(f"{v.candidate} µs", format="%.3f"),
    "share": st.column_config.NumberColumn("share of load", format="percent"),
    "load_speedup": st.column_config.NumberColumn("load speedup × (derived)", format="%.4f"),
    "new_score": st.column_config.NumberColumn("score then (derived)", format="%.4f")})

far = kernels.furthest_from_floor(wide)
if far:
    st.markdown("**Furthest from the floor** (lowest SOL of " + v.candidate + "): what the call launches, per kernel —")
    for cell, key in zip(st.columns(len(far)), far):
        cell.page_link("app_pages/kernels.py", label=f"Kernels: {key}", icon=":material/memory:",
                       query_params={"shape": key})

if v.kind == "run":
    st.subheader("Local (measured) vs official (published), same shapes")
    side = views.local_vs_official(v.shape_table(), common.official())
    if side.empty:
        st.info("This run has no scored shapes in common with the official table.")
    else:
        st.dataframe(side, hide_index=True, width="stretch")
        common.download_csv(side, "local_vs_official.csv")
