"""Fleet: the same pair's score and SOL per GPU model, side by side, from the one-run-file-per-model of a fleet sweep
(`python -m profiler run --cluster ...`). Each row is one run file scored on its own (dashboard.model.fleet)."""
import streamlit as st

from ui import figures, fleet, loaders, state, terms, widgets

st.title("Fleet — one sweep on every GPU model")
st.caption("A fleet sweep (`python -m profiler run --cluster tcp://HOST:8786 ...`) writes one run file per GPU "
           "model, named `<date>_<gpu>_<label>.json`: results of different models are never scored together. Each "
           "row below is one run file, scored alone through the correctness gate (**derived** from its measured times); SOL = Σ w·floor ÷ "
           "Σ w·time over the scored shapes, with that run's own probes (**derived**).")
terms.link("score", "sol")
# plan sweeps only: a tune log, a survey or an explain run times configs, not plans
sets, opening = fleet.sweep_sets()
if not sets:
    st.info("No plan sweep named `<date>_<gpu>_<label>.json` yet: run a sweep (the Run page) or a fleet sweep.")
    st.stop()
label = state.url_selectbox(st, "Sweep (run-file label)", list(sets), "fleet", opening,
                             key="fleet_label", what="sweep", help="Plan sweeps, by label; opens on the newest "
                             "fleet sweep of the shipped plan measured on the most GPU models.")
paths = sets[label]
try:
    sweep = fleet.open_sweep(paths)
    datas, names, pair = sweep.datas, sweep.names, sweep.pair
    c = st.columns(2)
    base = state.url_selectbox(c[0], "Baseline", names, "fleet_baseline", pair[0], key="fleet_baseline")
    cand = state.url_selectbox(c[1], "Candidate", names, "fleet_candidate", pair[1], key="fleet_candidate")
    table = fleet.fleet_table(datas, base, cand)   # each run file with its own workload
    for name in dict.fromkeys(d.workload.name for d in datas):
        st.caption(f"Workload: **{widgets.md_text(name)}**")
except loaders.BAD_INPUT as exc:
    st.error(widgets.md_text(f"Cannot show sweep {label!r}: {exc}"))
    st.stop()
models = table["gpu"].nunique()
if models < 2:
    st.info(f"Sweep {widgets.md_text(repr(label))} was measured on {models} GPU model: start dask workers on hosts with other GPUs and "
            "run it with `--cluster` to compare models here.")
for row in table[table["status"] != "scored"].itertuples():
    st.warning(widgets.md_text(f"{row.gpu} ({row.run}): no score: {row.reason}"))
if (table["status"] == "scored").any():
    st.plotly_chart(figures.fleet_figure(table), width="stretch", theme=None)
num = st.column_config.NumberColumn
text = st.column_config.TextColumn
scored = (table["status"] == "scored").any()
numbers = ["score", "sol_candidate", "sol_baseline", "equiv_candidate_us", "time_saved", "shapes"] if scored else []
st.dataframe(table, hide_index=True, width="stretch", placeholder="—", column_order=[
    "gpu", "run", "status", *numbers, "hosts", *(["reason"] if not scored else [])], column_config={
    # fits a 1,600 px page; every column (workers, git sha, reason) is in the CSV
    "gpu": text("GPU model", width=200, pinned=True), "run": text("run file", width=220),
    "status": text("status", width=80), "score": num("score ×", format="%.4f", width=90,
                                                     help="derived from this run's measured times: the candidate vs the baseline"),
    "sol_candidate": num("SOL cand", format="percent", width=80, help="derived: Σ w·floor ÷ Σ w·time"),
    "sol_baseline": num("SOL base", format="percent", width=80, help="derived: Σ w·floor ÷ Σ w·time"),
    "equiv_candidate_us": num("cand µs", format="%.2f", width=100, help="the candidate's score-equivalent time"),
    "time_saved": num("saved", format="percent", width=80), "shapes": num("shapes", format="%d", width=60),
    "hosts": text("hosts", width=120), "reason": text("why no score", width=600)})
widgets.download_csv(table, f"fleet_{fleet.safe_name(label)}.csv")
