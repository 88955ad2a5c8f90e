"""Shapes: the 30-shape table — M/N/K, bytes, FLOPs, intensity, floor, bound, official and local times, ratio with
CI, SOL, correctness and dispatched method; sortable, filterable, downloadable."""
import streamlit as st

from app_pages import common

st.title("Shapes")
v = common.view()
common.caption_source(v, "Bytes/FLOPs/intensity/floors/SOL are **derived**; times are as labelled.")
wide = v.wide()
off = common.official().rename(columns={"baseline_us": "official_baseline_us", "candidate_us": "official_036_us"})
wide = wide.merge(off[["load", "family", "official_baseline_us", "official_036_us"]], on=["load", "family"],
                  how="left")
others = {}  # other candidates of the run: their measured medians, one column each
if v.kind == "run":
    table = v.shape_table()
    for cand in v.data.candidates():
        if cand not in (v.baseline, v.candidate):
            t = table[table["candidate"] == cand].set_index("shape")["median_us"]
            wide[f"{cand}_us"] = wide["shape"].map(t)
            others[f"{cand}_us"] = st.column_config.NumberColumn(f"{cand} µs (measured)", format="%.3f")

c1, c2, c3 = st.columns(3)
loads = c1.multiselect("Loads", list(dict.fromkeys(wide["load"])), key="shapes_loads")
fams = c2.multiselect("Families", list(dict.fromkeys(wide["family"])), key="shapes_fams")
only_bad = c3.toggle("Only flagged / kept out of the score", key="shapes_bad")
shown = wide
if loads:
    shown = shown[shown["load"].isin(loads)]
if fams:
    shown = shown[shown["family"].isin(fams)]
if only_bad:
    shown = shown[(shown["flags"] != "") | (~shown["usable"])]
num = st.column_config.NumberColumn
st.dataframe(common.gated_style(shown), hide_index=True, width="stretch", column_config={
    "bytes": num("bytes", format="%d"), "flops": num("FLOPs", format="%.3e"),
    "intensity_flop_per_byte": num("FLOP/B", format="%.2f"),
    "memory_floor_us": num("mem floor µs", format="%.3f"), "compute_floor_us": num("compute floor µs", format="%.3f"),
    "floor_us": num("floor µs", format="%.3f"), **common.shape_ratio_columns(v),
    "sol_baseline": num("SOL baseline", format="percent"), "sol_candidate": num("SOL candidate", format="percent"),
    "official_baseline_us": num("official baseline µs (published)", format="%.3f"),
    "official_036_us": num("official 036 µs (published)", format="%.3f"),
    "correct": st.column_config.CheckboxColumn("correct"), **others})
st.caption(f"{len(shown)} of {len(wide)} shapes shown. The CI (95%, from the run's pairs) belongs to the median "
           "paired ratio; the ratio of medians is the one the score aggregates.")
common.download_csv(shown, "shapes.csv")
