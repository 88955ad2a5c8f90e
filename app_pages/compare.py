"""Compare: 2..N candidates / runs side by side — per-shape times, ratios with CI, verdicts, per-load deltas."""
import streamlit as st

from app_pages import common
from dashboard import compare, figures

st.title("Compare")
with st.expander("Upload a run file or a per-shape CSV to compare"):
    common.upload_widget("upload_compare")

# Every (source, candidate) the app knows about is a possible series.
options: dict[str, tuple] = {}
errors = []
for src in common.source_list():
    try:
        if src.kind == "table":
            common.official(src.path)
            for col, name in (("baseline_us", "baseline"), ("candidate_us", common.sources.table_candidate(src))):
                options[f"{src.label} · {name}"] = ("table", src, col, name)
        else:
            for cand in common.run_data(src.path).candidates():
                options[f"{src.label} · {cand}"] = ("run", src, cand, cand)
    except common.BAD_INPUT as exc:
        errors.append(f"{src.label}: {exc}")
for e in errors:
    st.error(f"Skipped a source that cannot be read — {e}")

keys = list(options)
runs_first = [k for k in keys if options[k][0] == "run"]
default = runs_first[:2] if len(runs_first) >= 2 else keys[:2]
chosen = common.url_multiselect(st, "Series to compare (2 or more)", keys, "series", default, key="cmp_series")
if len(chosen) < 2:
    st.info("Pick at least two series.")
    st.stop()
c1, c2 = st.columns(2)
ref = common.url_selectbox(c1, "Reference (ratios are reference ÷ series)", chosen, "reference", chosen[0],
                           key="cmp_ref", what="reference series")
eps = c2.slider("SAME band ε (±)", 0.002, 0.05, compare.EPS_DEFAULT, 0.001, format="%.3f", key="cmp_eps",
                help="Verdict from the 95% bootstrap CI of the median ratio: above 1+ε FAST, below 1−ε SLOW, "
                     "inside [1−ε, 1+ε] SAME, else AMBIGUOUS. Default 1% ≈ the CI half-width at the profiler's "
                     "0.5% RSE stopping rule.")

specs = tuple((key, options[key][0], str(options[key][1].path), options[key][2]) for key in chosen)
try:
    both = common.series_frame(specs)
    include = (both["status"] == "below_floor").any() and st.toggle(
        "Include results below the measured HBM floor (artifacts; left out by default)", key="cmp_below_floor")
    res = common.compared(specs, ref, eps, bool(include))
except ValueError as exc:
    st.error(f"Cannot compare: {exc}")
    st.stop()
if res.note:
    st.warning(res.note)
for name, message in res.no_score().items():  # the gate: no verdict or score from incorrect / failed shapes
    (st.error if res.gates[name].refused else st.warning)(f"{name} vs {ref}: {message}")
st.caption("Times: measured (runs) or published (tables) as named; ratios, CIs and verdicts are **derived**. "
           "Two candidates of the same run are paired by round; different runs are resampled independently.")

st.subheader("Overall")
st.dataframe(res.overall, hide_index=True, width="stretch", column_config={
    **common.ratio_ci_columns("score", "score vs reference × (derived)"),
    "delta_pct": st.column_config.NumberColumn("Δ score-equivalent time %", format="%+.2f")})
if (res.overall["n_loads"] < 6).any():
    st.caption("Fewer than six loads in common: this is a geometric mean over the loads present, not the "
               "benchmark score.")
st.subheader("Per load")
st.dataframe(res.loads, hide_index=True, width="stretch", column_config={
    "reference_us": st.column_config.NumberColumn("Σw·reference µs", format="%.2f"),
    "series_us": st.column_config.NumberColumn("Σw·series µs", format="%.2f"),
    **common.ratio_ci_columns(),
    "delta_pct": st.column_config.NumberColumn("Δ time %", format="%+.2f")})
st.subheader("Per shape")
st.plotly_chart(figures.compare_figure(res.shapes, eps, "derived from the series' samples"), width="stretch")
verdicts = st.multiselect("Verdicts", list(compare.VERDICTS), default=list(compare.VERDICTS), key="cmp_verdicts")
shown = res.shapes[res.shapes["verdict"].isin(verdicts)]
st.dataframe(common.gated_style(shown.assign(usable=~shown["verdict"].isin(compare.GATED.values()))),
             hide_index=True, width="stretch", column_config={
    "reference_us": st.column_config.NumberColumn("reference µs", format="%.3f"),
    "series_us": st.column_config.NumberColumn("series µs", format="%.3f"),
    "delta_us": st.column_config.NumberColumn("Δ µs", format="%+.3f"),
    **common.ratio_ci_columns("ratio", "ratio of medians × (derived)")})
common.download_csv(shown, "compare_shapes.csv")
if len(res.dropped):
    with st.expander(f"{len(res.dropped)} rows outside the intersection"):
        st.dataframe(res.dropped, hide_index=True, width="stretch")
