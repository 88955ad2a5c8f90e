"""Compare: 2..N candidates / runs side by side — per-shape ratios with CI and verdicts, per-load and overall rows.

Series are told apart by colour (verdicts by marker symbol), named short (run date · run label · candidate) with
the full name on hover. Ratios, intervals, bands and verdicts are dashboard.model.compare.compare's (the function behind
`python -m dashboard compare`): each verdict names its band and where it comes from (dashboard.model.noise), and each
series says whether it was paired within one run, compared across runs, or relative to each run's own baseline.
"""
import streamlit as st

from ui import compare, figures, loaders, state, terms, uploads, view, widgets


def _own_scores(chosen: list[str]) -> None:
    """Each chosen run's own score (its default pair, in its own workload), when the series cannot be paired."""
    rows = compare.own_scores(chosen, options)
    st.subheader("Each run's own score")
    st.dataframe(rows, hide_index=True, width="stretch", placeholder="—", column_config={
        "score": st.column_config.NumberColumn("score × (derived, its own workload)", format="%.4f")})


st.title("Compare")
terms.link("verdicts", "eps", "ci", "baselines")
with st.expander("Upload a run file or a per-shape CSV to compare"):
    uploads.upload_widget("upload_compare", select=False)

# First the runs (and tables) to compare, then the series they offer: each chosen source's candidates, not every
# candidate of every file the app knows about. It opens on the sidebar's source (an upload included) beside the run
# the other pages open on.
srcs, _ = view.sources_in_order()
by_name = {s.name: s for s in srcs}

# The page never adds a series of another workload by itself (no ratio pairs shapes of different projections): the
# run the other pages open on joins the sidebar's source only when it measured the same workload, and a run chosen
# later brings its series only when they share the workload of the series already chosen.
asked = st.query_params.get_all("series")   # a link naming series opens on the sources they come from
opening = compare.opening_sources(srcs, view.current_source(), asked)
run_names = state.url_multiselect(st, "Runs and tables to compare", [s.name for s in srcs], "runs", opening,
                                   key="cmp_runs", format_func=view.source_text(),
                                   help="Grouped by kind, newest first; each one offers its own candidates below.")
options: dict[str, tuple] = {}
run_files, errors, pairs, pair_sources = [], [], [], []
seen = st.session_state.get("_cmp_runs_seen")   # the runs of the last rerun: a run added since brings its series
added = [n for n in run_names if seen is not None and n not in seen]
st.session_state["_cmp_runs_seen"] = run_names
for src in (by_name[n] for n in run_names):
    try:
        offered, pair = compare.offered_series(src)
    except loaders.BAD_INPUT as exc:
        errors.append(f"{src.label}: {exc}")
        continue
    options |= offered
    if pair:
        pairs.append(pair)
        pair_sources.append(src)
        picked = st.session_state.get("_sel_series")
        picked_sources = [options[k][1] for k in picked or () if k in options]
        if src.name in added and picked is not None and all(compare.same_workload(src, s) for s in picked_sources):
            st.session_state["_sel_series"] = [*picked, pairs[-1][-1]]
for e in errors:
    st.error(f"Cannot use a chosen source — {widgets.md_text(e)}")
short = compare.short_names(options)

keys = list(options)
# the first source's default pair (its baseline against its last candidate), then each other source's candidate
default = compare.default_series(pairs, pair_sources)
chosen = state.url_multiselect(st, "Series to compare (2 or more)", keys, "series", default, key="cmp_series")
if len(chosen) < 2:
    st.info("Pick at least two series (choose more runs above for more candidates).")
    st.stop()
named = compare.named_workloads(chosen, options, short)
refusal = compare.mismatch(named)
if refusal:  # shapes of different workloads are different projections: no ratio, CI or verdict across them
    st.error(refusal)
    _own_scores(chosen)
    st.stop()
wl = named[0][1]   # every series' workload (mismatch said they agree)
c1, c2 = st.columns(2)
ref = state.url_selectbox(c1, "Reference (ratios are reference ÷ series)", chosen, "reference", chosen[0],
                           key="cmp_ref", what="reference series")
c2.caption("Bands (dashboard.model.noise, derived from the committed runs): " + compare.band_headline() + ". Each row names "
           "the band its verdict used.")
if {options[k][0] for k in chosen} == {"table", "run"}:
    st.warning("A published table is compared with local runs: their baselines differ (the write-up's SGLang path "
               "on the evaluator vs torch F.linear here), so ratios across them measure the baselines as much as "
               "the kernels. " + terms.short("baselines"))

specs = compare.series_specs(chosen, options)
try:
    both = loaders.series_frame(specs)
    include = (both["status"] == "below_floor").any() and st.toggle(
        "Include results below the measured HBM floor (artifacts; left out by default)", key="cmp_below_floor")
    res = loaders.compared(specs, ref, bool(include))
except ValueError as exc:
    st.error(f"Cannot compare: {widgets.md_text(exc)}")
    st.stop()
if res.note:
    st.warning(widgets.md_text(res.note))
for name, message in res.no_score().items():  # the gate: no verdict or score from incorrect / failed shapes
    (st.error if res.gates[name].refused else st.warning)(widgets.md_text(f"{name} vs {ref}: {message}"))
st.caption("Times: measured (runs) or published (tables) as named; ratios, CIs and verdicts are **derived**. "
           "Two candidates of the same run are paired by round; different runs are resampled independently.")
for name, how in res.how.items():
    st.caption(widgets.md_text(f"{short.get(name, name)} vs {short.get(ref, ref)}: {how}."))

overall, loads, shapes = (f.assign(name=f["series"].map(short)) if len(f) else f
                          for f in (res.overall, res.loads, res.shapes))
num = st.column_config.NumberColumn
series_col = st.column_config.TextColumn("series", width=220)
# the band each verdict used (dashboard.model.noise), as a number; its source is in the caption above and in the CSV
band_col = num("band ±", format="percent", width=70, help="The band the verdict read its interval against "
               "(dashboard.model.noise): within-run, cross-run or relative cross-run, per the caption above.")
st.subheader("Overall")
st.dataframe(overall, hide_index=True, width="stretch", placeholder="—",
             column_order=["name", "n_loads", "score", "ci_low", "ci_high", "delta_pct", "verdict", "band"],
             column_config={"name": series_col, "band": band_col,
                            **widgets.ratio_ci_columns("score", "score vs reference × (derived)"),
                            "delta_pct": num("Δ score-equivalent time %", format="%+.2f")})
if (res.overall["n_loads"] < len(wl.load_order)).any():
    st.caption(f"Fewer than {terms.count_word(len(wl.load_order))} loads in common: this is a geometric mean "
               "over the loads present, not the "
               "benchmark score.")
st.subheader("Per load")
st.dataframe(loads, hide_index=True, width="stretch", placeholder="—",
             column_order=["name", "load", "ratio", "ci_low", "ci_high", "verdict", "band", "n_same_route",
                           "reference_us", "series_us", "delta_pct"],
             column_config={"name": series_col, "band": band_col, "reference_us": num("Σw·reference µs", format="%.1f"),
                            "series_us": num("Σw·series µs", format="%.1f"), **widgets.ratio_ci_columns(),
                            "delta_pct": num("Δ time %", format="%+.2f")})
st.subheader("Per shape")
order = compare.shape_order(wl.load_order, wl.family_order)
st.plotly_chart(figures.compare_figure(res.shapes, "derived from the series' samples", short, order),
                width="stretch", theme=None)
verdicts = st.multiselect("Verdicts", list(compare.VERDICTS), default=list(compare.VERDICTS), key="cmp_verdicts")
shown = compare.with_verdicts(shapes, verdicts)
st.dataframe(widgets.gated_style(compare.marked_usable(shown)),
             hide_index=True, width="stretch", placeholder="—",
             column_order=["name", "load", "family", "M", "reference_us", "series_us", "delta_us", "ratio",
                           "ci_low", "ci_high", "verdict", "same_route", "band"],
             column_config={"name": st.column_config.TextColumn("series", width=180), "M": num("M", width=50),
                            "band": band_col,
                            "same_route": st.column_config.CheckboxColumn(
                                "same route", help="both sides ran the identical route here (method and config, "
                                                   "same GPU model): the difference is drift, verdict SAME ROUTE"),
                            "reference_us": num("reference µs", format="%.3f"),
                            "series_us": num("series µs", format="%.3f"), "delta_us": num("Δ µs", format="%+.3f"),
                            **widgets.ratio_ci_columns("ratio", "ratio of medians ×")})
n_same = int(shown["same_route"].sum()) if "same_route" in shown else 0
if n_same:
    st.caption(f"{n_same} of {len(shown)} shape rows: both sides ran the identical route (verdict SAME ROUTE); "
               "whatever ratio they show is drift between two timings of one call, not a difference between the "
               "candidates.")
widgets.download_csv(shown, "compare_shapes.csv")
if len(res.dropped):
    with st.expander(f"{len(res.dropped)} rows outside the intersection"):
        st.dataframe(res.dropped, hide_index=True, width="stretch")
