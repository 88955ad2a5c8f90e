"""Compare: 2..N candidates / runs side by side — per-shape times, ratios with CI, verdicts, per-load deltas."""
import pandas as pd
import streamlit as st

from app_pages import common
from dashboard import compare, figures, scoring

st.title("Compare")
with st.expander("Upload a run file or a per-shape CSV to compare"):
    common.upload_widget("upload_compare")

# Every (source, candidate) the app knows about is a possible series.
options: dict[str, tuple] = {}
errors = []
for label, (kind, path) in common.sources().items():
    try:
        if kind == "table":
            table = common.official(path)
            for col, name in (("baseline_us", "baseline"), ("candidate_us", "036" if label == common.OFFICIAL_LABEL
                                                             else "candidate")):
                options[f"{label} · {name}"] = ("table", path, col, name)
        else:
            for cand in common.run_data(path).candidates():
                options[f"{label} · {cand}"] = ("run", path, cand, cand)
    except common.BAD_INPUT as exc:
        errors.append(f"{label}: {exc}")
for e in errors:
    st.error(f"Skipped a source that cannot be read — {e}")

keys = list(options)
runs_first = [k for k in keys if options[k][0] == "run"]
default = runs_first[:2] if len(runs_first) >= 2 else keys[:2]
chosen = st.multiselect("Series to compare (2 or more)", keys, default=default, key="cmp_series")
if len(chosen) < 2:
    st.info("Pick at least two series.")
    st.stop()
c1, c2 = st.columns(2)
ref = c1.selectbox("Reference (ratios are reference ÷ series)", chosen, key="cmp_ref")
eps = c2.slider("SAME band ε (±)", 0.002, 0.05, compare.EPS_DEFAULT, 0.001, format="%.3f", key="cmp_eps",
                help="Verdict from the 95% bootstrap CI of the median ratio: above 1+ε FAST, below 1−ε SLOW, "
                     "inside [1−ε, 1+ε] SAME, else AMBIGUOUS. Default 1% ≈ the CI half-width at the profiler's "
                     "0.5% RSE stopping rule.")

frames = []
for key in chosen:
    kind, path, col, name = options[key]
    if kind == "table":
        frames.append(compare.series_from_table(common.official(path), col, key, path))
    else:
        frames.append(compare.series_from_results(common.run_data(path).results, col, key, path))
weights = scoring.family_weights(common.workload())
scored = [f[f["load"] != "nearby"] for f in frames]
try:
    res = compare.compare(pd.concat(scored, ignore_index=True), ref, weights, eps)
except ValueError as exc:
    st.error(f"Cannot compare: {exc}")
    st.stop()
if res.note:
    st.warning(res.note)
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
st.dataframe(shown, hide_index=True, width="stretch", column_config={
    "reference_us": st.column_config.NumberColumn("reference µs", format="%.3f"),
    "series_us": st.column_config.NumberColumn("series µs", format="%.3f"),
    "delta_us": st.column_config.NumberColumn("Δ µs", format="%+.3f"),
    **common.ratio_ci_columns("ratio", "ratio of medians × (derived)")})
common.download_csv(shown, "compare_shapes.csv")
if len(res.dropped):
    with st.expander(f"{len(res.dropped)} rows outside the intersection"):
        st.dataframe(res.dropped, hide_index=True, width="stretch")
