"""Ledger: the write-up's candidate history (checks vs scored, intervals) as a chart and a table."""
import streamlit as st

from ui import figures, loaders, terms, widgets

st.title("Ledger — candidate history")
st.caption("Source: datasets/seed_ledger.csv — **published** (the write-up's official checks and scored "
           "submissions; 'local' rows are the author's lab runs, not official).")
st.caption("The ledger belongs to the write-up's workload, muse_bf16_proj: its scores are of that workload's 30 "
           "shapes and say nothing about a run of another workload.")
terms.link("provenance", "ci")
try:
    led = loaders.ledger()
except loaders.BAD_INPUT as exc:
    st.error(f"Cannot read the ledger: {exc}")
    st.stop()

c1, c2 = st.columns(2)
kinds = c1.multiselect("Kinds", sorted(led["kind"].unique()), default=sorted(led["kind"].unique()))
tracks = c2.multiselect("Tracks", sorted(led["track"].unique()), default=sorted(led["track"].unique()))
shown = led[led["kind"].isin(kinds) & led["track"].isin(tracks)]
st.plotly_chart(figures.ledger_figure(shown), width="stretch", theme=None)
st.caption(f"{len(shown)} of {len(led)} records shown; {int(shown['score'].isna().sum())} have no usable score "
           "(failed or queued) and appear only in the table.")
st.dataframe(shown, hide_index=True, width="stretch", placeholder="—", column_config={
    "score": st.column_config.NumberColumn("score ×", format="%.4f"),
    "ci_low": st.column_config.NumberColumn("CI low", format="%.4f"),
    "ci_high": st.column_config.NumberColumn("CI high", format="%.4f"),
    "approx": st.column_config.CheckboxColumn("approx.", help="score read off a chart, not a table"),
})
widgets.download_csv(shown, "seed_ledger.csv")
