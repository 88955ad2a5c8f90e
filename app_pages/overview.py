"""Overview: the score, per-load ratios, time saved, score-equivalent time, SOL, gap to a target, environment."""
from pathlib import Path

import pandas as pd
import streamlit as st

from ui import figures, loaders, planning, tables, targets, terms, uploads, view, widgets


# Expanders whose content is drawn only while they are open (on_change="rerun": Streamlit reruns the page when one is
# opened or closed, and .open says which). A closed one sends nothing, so a first visit's browser neither fetches the
# code of nor mounts the uploader, the telemetry chart and the field table: the browser test's first page of a fresh
# server went from 1.40x to 1.27x the bare page's (medians of 8 alternating per-round ratios, 2 cores).
LAZY = dict(on_change="rerun")


def _environment(selection) -> None:
    if selection.kind == "run":
        st.subheader("Environment (measured)")
        env = selection.run["environment"]
        clock = tables.clock_summary(selection.run)
        flagged, counts = tables.flag_counts(selection.data.results)
        note = ("Results with flags: " + ", ".join(f"{n} {widgets.md_text(name)}" for name, n in counts.items())
                + ". A flag is a note on a timed result (below_floor and incorrect ones are never scored); the "
                "glossary's *flags* says what each means." if flagged else "No result carries a flag.")
        overhead = env.get("replay_overhead_us")
        widgets.show_figures({("Device" if clock["cpu"] else "GPU"): env.get("gpu") or "not recorded",
                              "SM clock while measuring": tables.mhz_range(clock),
                             "Replay overhead": f"{overhead:.2f} µs" if isinstance(overhead, (int, float))
                             else "not recorded",
                             "Results with flags": f"{flagged} / {len(selection.data.results)}"}, note=note,
                            help=f"**SM clock while measuring**: {terms.short('clock')}\n\n"
                                 f"**Results with flags**: {terms.short('flags')}")
        (st.warning if clock["throttle_reasons"] else st.caption)(widgets.md_text(tables.clock_text(clock)))
        for line in tables.device_lines(selection.run, selection.data.results):   # a CPU's times, a plan from elsewhere
            st.caption(widgets.md_text(line.strip()))
        telemetry = pd.DataFrame(selection.run.get("telemetry", []))
        if len(telemetry) > 1:   # the chart is built when asked for (LAZY)
            clock_chart = st.expander("SM clock, power and temperature during the run (measured)",
                                      key="telemetry_chart", **LAZY)
            if clock_chart.open:
                clock_chart.plotly_chart(figures.telemetry_figure(telemetry), width="stretch", theme=None)
        fields = st.expander("All environment fields", key="environment_fields", **LAZY)
        if fields.open:
            fields.dataframe(selection.data.environment.astype(str), hide_index=True, width="stretch")


def _peers(selection) -> None:
    """The candidate against the best of the run's peers (dashboard.model.peers), where the run holds peers."""
    pc = tables.peer_comparison(selection)
    if pc is None:
        return
    st.subheader(f"{widgets.md_text(selection.candidate)} vs the strongest peer (derived)")
    o = pc.comparison.overall.iloc[0]
    widgets.show_figures({f"{selection.candidate} vs {tables.BEST_OF_PEERS}":
                          f"{o.score:.4f}×" if pd.notna(o.score) else "—",
                         "verdict": o.verdict},
                        note=f"{tables.DERIVED_NOTE.capitalize()}. Peers: {widgets.md_text(', '.join(pc.peers['peer']))}.")
    num = st.column_config.NumberColumn   # the load table's formats below: ratios to 4 decimals, µs to 1
    st.dataframe(pc.comparison.loads[["load", "ratio", "ci_low", "ci_high", "verdict", "reference_us", "series_us"]]
                 .rename(columns={"reference_us": "Σw·peers µs", "series_us": f"Σw·{selection.candidate} µs"}),
                 hide_index=True, width="stretch", column_config={
                     "ratio": num("ratio ×", format="%.4f", help=terms.short("ratio")),
                     "ci_low": num("95% CI low", format="%.4f", help=terms.short("ci")),
                     "ci_high": num("95% CI high", format="%.4f", help=terms.short("ci")),
                     "Σw·peers µs": num(format="%.1f"), f"Σw·{selection.candidate} µs": num(format="%.1f")})
    for p in pc.peers.itertuples():
        if p.failing:   # a peer that failed the contract is shown failing, never dropped
            st.warning(f"{widgets.md_text(p.peer)} failed at {len(p.failing)} scored shape(s): "
                       f"{widgets.md_text(', '.join(p.failing[:6]))} — left "
                       f"out of the best of peers there.")


def _sol_flags(loads: pd.DataFrame, wide: pd.DataFrame, names: dict) -> None:
    """Say where SOL is above 100% (the kernel beat its floor's probe) instead of letting it pass as real."""
    where = tables.sol_over_100_note(loads, wide, names)
    if where:
        st.warning(f"SOL above 100% — {widgets.md_text(where)}. {terms.short('sol_over')} Read these as ‘at the "
                   "floor’ (see the glossary).")


st.title("Overview")
selection = view.pick()
view.caption_source(selection)
terms.link("score", "sigma_w", "sol", "verdicts")
upload = st.expander("Upload a run file or a per-shape CSV", key="upload_open", **LAZY)
if upload.open:
    with upload:
        uploads.upload_widget("upload_overview")

if selection.breakdown is None:  # view.pick() said why there is no score (gate); show every shape, the kept-out ones in red
    st.subheader("Per shape (measured; rows in red are kept out of every ratio)")
    done = selection.wide()
    st.dataframe(widgets.gated_style(done[["shape", "baseline_us", "candidate_us", "ratio", "ratio_paired",
                                          "ratio_ci_low", "ratio_ci_high", "status_baseline", "status_candidate",
                                          "usable", "flags"]]), hide_index=True, width="stretch",
                 column_config=widgets.shape_ratio_columns(selection))
    st.caption("The CI (from the run's pairs) belongs to the median of the paired per-round ratios, not to the "
               "ratio of the two medians.")
    _environment(selection)
    st.stop()
breakdown = selection.breakdown
n_loads = len(selection.workload.load_order)

tag = "measured" if selection.kind == "run" else "published" if selection.source == "published" else "uploaded"
score_label = f"Score ({tag} times; derived)"
widgets.show_figures({score_label: f"{breakdown.score:.4f}×",
                      "Aggregate time saved (derived)": f"{breakdown.time_saved:.2%}",
                     f"Score-equivalent time, {selection.baseline} (derived)": f"{breakdown.equiv_baseline_us:,.1f} µs",
                     f"Score-equivalent time, {selection.candidate} (derived)": f"{breakdown.equiv_candidate_us:,.1f} µs"},
                    note=f"Score: {terms.short('score').lower()} Score-equivalent time: geometric mean over the "
                         f"{terms.count_word(n_loads)} loads of Σ weight × time.", strong=(score_label,))
ci_slot = st.empty()
if breakdown.accuracy:  # a less_accurate candidate is never scored silently
    st.warning(widgets.md_text(f"{selection.candidate}: {breakdown.accuracy}"))
if breakdown.screen:    # nor an unscreened one
    st.warning(widgets.md_text(f"{selection.candidate}: {breakdown.screen}"))
if selection.source != "published" and view.official_note(selection.workload) is None:
    ref = loaders.official_score()
    st.caption(f"For reference, the official 036 table (published) scores {ref.score:.4f}× against its baseline "
               "(a different baseline: not comparable).")
elif selection.source != "published":
    st.caption(f"No official reference score: {widgets.md_text(view.official_note(selection.workload))}.")
else:
    st.caption("Recomputed (derived) from the table's 3-decimal published times. The write-up's own figures — "
               "score 1.301203, score-equivalent 4,830.8 / 3,712.56 µs — come from the evaluator's estimates.")

st.subheader("Per load")
target = targets.target_input("target", selection, breakdown.score)
fig_df = breakdown.loads.assign(label=breakdown.loads["load"])
chart, table = st.empty(), st.empty()   # drawn once, at the end, with their CIs
wide = selection.wide()
loads = tables.load_table(breakdown, wide, selection.workload, target)
floors_from = ("the run's measured probe curve and compute peak" if selection.kind == "run" else
               "the write-up's four published probes and its quoted 989 TFLOP/s")
st.caption(f"Ratios, Σw sums, CIs and SOL are derived from {tag} times; floors from {floors_from}. "
           "Each verdict reads the CI against the within-run band named in the table (dashboard.model.noise, derived "
           "from the committed runs; see the glossary).")
_sol_flags(loads, wide, {"baseline": selection.baseline, "candidate": selection.candidate})
far = tables.furthest_from_floor(wide)
if far:
    st.caption("Furthest from the floor (lowest SOL): open a shape on the Kernels page to see what its call launches.")
    links = st.container(horizontal=True)   # one row without a column block per link
    for key in far:
        links.page_link("app_pages/kernels.py", label=f"Kernels: {widgets.md_text(key)}", icon=":material/memory:",
                        query_params={"shape": key, "source": Path(selection.path).name})

st.subheader(f"Gap to {target:.4f}×")
if breakdown.score >= target:
    st.success(f"{breakdown.score:.4f}× already meets the target {target:.4f}×.")
else:
    widgets.show_figures({
        "Aggregate time to remove (derived)": f"{planning.required_time_reduction(breakdown.score, target):.3%}",
        "Aggregate speed factor needed (derived)": f"{planning.required_speed_factor(breakdown.score, target):.5f}×",
        "…or one load alone by (derived)":
            f"{planning.single_load_factor(breakdown.score, target, len(breakdown.loads)):.4f}×"},
        note="Per load: the last table column is the ratio that load alone would need (others unchanged). The "
             "Planner page shows it per shape.")

_peers(selection)
_environment(selection)

# The bootstrap CIs come last: thousands of resamples are the slowest step of a first visit, so everything above is
# already on its way to the browser (which loads the chart library meanwhile); the chart and the table fill the slots
# left for them, drawn once (a first draw without CIs would make the browser lay out both twice).
cmp = loaders.run_comparison(selection) if selection.kind == "run" else None
ci = cmp.overall.iloc[0] if cmp is not None else None
if ci is not None:
    if pd.notna(ci["ci_low"]):
        ci_slot.caption(f"95% bootstrap CI {ci['ci_low']:.4f}–{ci['ci_high']:.4f} "
                        + widgets.md_text(f"({ci['verdict']}; {ci['band_source']})"))
    fig_df, loads = tables.with_intervals(fig_df, loads, cmp)
chart.plotly_chart(figures.ratio_bars(fig_df, f"{tag} times; ratios derived", target=target), width="stretch", theme=None)
num = st.column_config.NumberColumn
table.dataframe(loads, hide_index=True, width="stretch", placeholder="—",
                column_order=[c for c in ("load", "ratio", "ci", "verdict", "band", "baseline_sum_us", "candidate_sum_us",
                                          "floor_sum_us", "sol_baseline", "sol_candidate",
                                          "ratio_if_alone_reaches_target") if c in loads],
                column_config={
    "load": st.column_config.TextColumn("load", width=90),
    "ratio": num("ratio ×", format="%.4f", width=80, help=terms.short("ratio")),
    "ci": st.column_config.TextColumn("95% CI", width=120, help=terms.short("ci")),
    "verdict": st.column_config.TextColumn("verdict", width=90, help=terms.short("verdicts")),
    "band": num("band ±", format="percent", width=70,
                help="The within-run band each verdict read its interval against (dashboard.model.noise; caption above)."),
    "baseline_sum_us": num(f"Σw·{selection.baseline} µs", format="%.1f", width=115, help=terms.short("sigma_w")),
    "candidate_sum_us": num(f"Σw·{selection.candidate} µs", format="%.1f", width=115, help=terms.short("sigma_w")),
    "floor_sum_us": num("Σw·floor µs", format="%.1f", width=100, help=terms.short("floor")),
    "sol_baseline": num("SOL base", format="percent", width=80, help=terms.short("sol")),
    "sol_candidate": num("SOL cand", format="percent", width=80, help=terms.short("sol")),
    "ratio_if_alone_reaches_target": num("alone would need ×", format="%.4f", width=125,
                                         help="The ratio this load alone would need for the target score, "
                                              "the other loads unchanged (derived).")})
