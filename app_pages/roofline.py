"""Roofline: intensity vs achieved throughput under the measured memory and compute roofs; time vs floor."""
import streamlit as st

from ui import figures, tables, terms, view, widgets

st.title("Roofline")
selection = view.pick()
table = selection.shape_table()
curve = tables.probe_curve(selection.data)
peak = selection.data.run.get("compute_peak_tflops")
if curve is None:
    st.warning(f"{widgets.md_text(selection.label)} has no probe curve: no memory roof can be drawn. Showing the points only.")
tbps = curve.tbps_max_point if curve is not None else float("nan")
src = ("measured roofs (run probes, compute probe)" if selection.kind == "run"
       else "published times; roofs from the write-up's probes and its quoted 989 TFLOP/s")
view.caption_source(selection, f"Roofs: {src}. Points: achieved = 2MNK ÷ time (derived). The baseline is drawn as open "
                         "rings under the other candidates.")
terms.link("floor", "sol", "sol_over")
# Keyed by the source: another run has other candidates, and a selection kept from the last one would be emptied.
cands = st.multiselect("Candidates", selection.data.candidates(), default=[selection.baseline, selection.candidate],
                       key=f"roof_cands|{selection.label}")
pts = tables.roofline_points(table, cands)
colors = figures.series_colors(selection.data.candidates(), selection.baseline)
device = view.device_name(selection)
st.plotly_chart(figures.roofline(pts, tbps, peak, src, colors=colors, hollow=(selection.baseline,), device=device),
                width="stretch", theme=None)
times = ("times measured; floors derived from the run's probes" if selection.kind == "run"
         else f"times {selection.source}; floors derived from the write-up's probes and its quoted 989 TFLOP/s")
st.plotly_chart(figures.time_vs_floor(pts, times, colors), width="stretch", theme=None)
cols = ["shape", "candidate", "median_us", "floor_us", "bound", "sol", "tflops"]
st.dataframe(pts[cols], hide_index=True, width="stretch", placeholder="—", column_config={
    "median_us": st.column_config.NumberColumn("µs", format="%.3f"),
    "floor_us": st.column_config.NumberColumn("floor µs (derived)", format="%.3f"),
    "sol": st.column_config.NumberColumn("SOL", format="percent"),
    "tflops": st.column_config.NumberColumn("TFLOP/s (derived)", format="%.2f")})
