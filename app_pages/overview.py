"""Overview: the score, per-load ratios, time saved, score-equivalent time, SOL, gap to a target, environment."""
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.model import compare, glossary, kernels, peers, planner, scoring, views, workloads
from dashboard.plots import figures
from dashboard.cli import summary
from ui import loaders, targets, terms, uploads, view, widgets


# Expanders whose content is drawn only while they are open (on_change="rerun": Streamlit reruns the page when one is
# opened or closed, and .open says which). A closed one sends nothing, so a first visit's browser neither fetches the
# code of nor mounts the uploader, the telemetry chart and the field table: the browser test's first page of a fresh
# server went from 1.40x to 1.27x the bare page's (medians of 8 alternating per-round ratios, 2 cores).
LAZY = dict(on_change="rerun")


def _environment(v) -> None:
    if v.kind == "run":
        st.subheader("Environment (measured)")
        env = v.run["environment"]
        clock = views.clock_summary(v.run)
        flags = v.data.results["flags"]
        flagged = int(flags.map(len).gt(0).sum())
        counts = flags.explode().dropna().value_counts()
        note = ("Results with flags: " + ", ".join(f"{n} {widgets.md_text(name)}" for name, n in counts.items())
                + ". A flag is a note on a timed result (below_floor and incorrect ones are never scored); the "
                "glossary's *flags* says what each means." if flagged else "No result carries a flag.")
        overhead = env.get("replay_overhead_us")
        widgets.show_figures({("Device" if clock["cpu"] else "GPU"): env.get("gpu") or "not recorded",
                              "SM clock while measuring": views.mhz_range(clock),
                             "Replay overhead": f"{overhead:.2f} µs" if isinstance(overhead, (int, float))
                             else "not recorded",
                             "Results with flags": f"{flagged} / {len(v.data.results)}"}, note=note,
                            help=f"**SM clock while measuring**: {glossary.short('clock')}\n\n"
                                 f"**Results with flags**: {glossary.short('flags')}")
        (st.warning if clock["throttle_reasons"] else st.caption)(widgets.md_text(views.clock_text(clock)))
        for line in summary.device_lines(v.run, v.data.results):   # a CPU's times, a plan from elsewhere
            st.caption(widgets.md_text(line.strip()))
        telemetry = pd.DataFrame(v.run.get("telemetry", []))
        if len(telemetry) > 1:   # the chart is built when asked for (LAZY)
            clock_chart = st.expander("SM clock, power and temperature during the run (measured)",
                                      key="telemetry_chart", **LAZY)
            if clock_chart.open:
                clock_chart.plotly_chart(figures.telemetry_figure(telemetry), width="stretch", theme=None)
        fields = st.expander("All environment fields", key="environment_fields", **LAZY)
        if fields.open:
            fields.dataframe(v.data.environment.astype(str), hide_index=True, width="stretch")


def _peers(v) -> None:
    """The candidate against the best of the run's peers (dashboard.model.peers), where the run holds peers."""
    if v.kind != "run":
        return
    pc = peers.peer_comparison(loaders.run_data(v.path), v.candidate)
    if pc is None:
        return
    st.subheader(f"{widgets.md_text(v.candidate)} vs the strongest peer (derived)")
    o = pc.comparison.overall.iloc[0]
    widgets.show_figures({f"{v.candidate} vs {peers.BEST_OF_PEERS}": f"{o.score:.4f}×" if pd.notna(o.score) else "—",
                         "verdict": o.verdict},
                        note=f"{peers.DERIVED_NOTE.capitalize()}. Peers: {widgets.md_text(', '.join(pc.peers['peer']))}.")
    num = st.column_config.NumberColumn   # the load table's formats below: ratios to 4 decimals, µs to 1
    st.dataframe(pc.comparison.loads[["load", "ratio", "ci_low", "ci_high", "verdict", "reference_us", "series_us"]]
                 .rename(columns={"reference_us": "Σw·peers µs", "series_us": f"Σw·{v.candidate} µs"}),
                 hide_index=True, width="stretch", column_config={
                     "ratio": num("ratio ×", format="%.4f", help=glossary.short("ratio")),
                     "ci_low": num("95% CI low", format="%.4f", help=glossary.short("ci")),
                     "ci_high": num("95% CI high", format="%.4f", help=glossary.short("ci")),
                     "Σw·peers µs": num(format="%.1f"), f"Σw·{v.candidate} µs": num(format="%.1f")})
    for p in pc.peers.itertuples():
        if p.failing:   # a peer that failed the contract is shown failing, never dropped
            st.warning(f"{widgets.md_text(p.peer)} failed at {len(p.failing)} scored shape(s): "
                       f"{widgets.md_text(', '.join(p.failing[:6]))} — left "
                       f"out of the best of peers there.")


def _sol_flags(loads: pd.DataFrame, wide: pd.DataFrame, names: dict) -> None:
    """Say where SOL is above 100% (the kernel beat its floor's probe) instead of letting it pass as real."""
    over = views.sol_over_100(wide)
    per_load = [f"{r.load} ({names[side]} {getattr(r, f'sol_{side}'):.1%})" for r in loads.itertuples()
                for side in ("baseline", "candidate") if getattr(r, f"sol_{side}") > 1]
    if len(over) or per_load:
        where = ([f"per load: {', '.join(per_load)}"] if per_load else []) + \
                ([f"per shape: {', '.join(f'{r.shape} ({names[r.side]} {r.sol:.1%})' for r in over.itertuples())}"]
                 if len(over) else [])
        st.warning(f"SOL above 100% — {widgets.md_text('; '.join(where))}. {glossary.short('sol_over')} Read these as ‘at the "
                   "floor’ (see the glossary).")


st.title("Overview")
v = view.pick()
view.caption_source(v)
terms.link("score", "sigma_w", "sol", "verdicts")
upload = st.expander("Upload a run file or a per-shape CSV", key="upload_open", **LAZY)
if upload.open:
    with upload:
        uploads.upload_widget("upload_overview")

if v.breakdown is None:  # view.pick() said why there is no score (gate); show every shape, the kept-out ones in red
    st.subheader("Per shape (measured; rows in red are kept out of every ratio)")
    done = v.wide()
    st.dataframe(widgets.gated_style(done[["shape", "baseline_us", "candidate_us", "ratio", "ratio_paired",
                                          "ratio_ci_low", "ratio_ci_high", "status_baseline", "status_candidate",
                                          "usable", "flags"]]), hide_index=True, width="stretch",
                 column_config=widgets.shape_ratio_columns(v))
    st.caption("The CI (from the run's pairs) belongs to the median of the paired per-round ratios, not to the "
               "ratio of the two medians.")
    _environment(v)
    st.stop()
breakdown = v.breakdown
weights = scoring.family_weights(v.workload)
n_loads = len(v.workload.load_order)

tag = "measured" if v.kind == "run" else "published" if v.source == "published" else "uploaded"
score_label = f"Score ({tag} times; derived)"
widgets.show_figures({score_label: f"{breakdown.score:.4f}×",
                      "Aggregate time saved (derived)": f"{breakdown.time_saved:.2%}",
                     f"Score-equivalent time, {v.baseline} (derived)": f"{breakdown.equiv_baseline_us:,.1f} µs",
                     f"Score-equivalent time, {v.candidate} (derived)": f"{breakdown.equiv_candidate_us:,.1f} µs"},
                    note=f"Score: {glossary.short('score').lower()} Score-equivalent time: geometric mean over the "
                         f"{workloads.count_word(n_loads)} loads of Σ weight × time.", strong=(score_label,))
ci_slot = st.empty()
if breakdown.accuracy:  # a less_accurate candidate is never scored silently
    st.warning(widgets.md_text(f"{v.candidate}: {breakdown.accuracy}"))
if breakdown.screen:    # nor an unscreened one
    st.warning(widgets.md_text(f"{v.candidate}: {breakdown.screen}"))
if v.source != "published" and view.official_note(v.workload) is None:
    ref = loaders.official_score()
    st.caption(f"For reference, the official 036 table (published) scores {ref.score:.4f}× against its baseline "
               "(a different baseline: not comparable).")
elif v.source != "published":
    st.caption(f"No official reference score: {widgets.md_text(view.official_note(v.workload))}.")
else:
    st.caption("Recomputed (derived) from the table's 3-decimal published times. The write-up's own figures — "
               "score 1.301203, score-equivalent 4,830.8 / 3,712.56 µs — come from the evaluator's estimates.")

st.subheader("Per load")
target = targets.target_input("target", v, breakdown.score)
fig_df = breakdown.loads.assign(label=breakdown.loads["load"])
chart, table = st.empty(), st.empty()   # drawn once, at the end, with their CIs
wide = v.wide()
loads = breakdown.loads.merge(views.load_sol(wide, weights), on="load", how="left")
loads["ratio_if_alone_reaches_target"] = loads["load"].map(planner.load_ratios_needed(breakdown, target))
floors_from = ("the run's measured probe curve and compute peak" if v.kind == "run" else
               "the write-up's four published probes and its quoted 989 TFLOP/s")
st.caption(f"Ratios, Σw sums, CIs and SOL are derived from {tag} times; floors from {floors_from}. "
           "Each verdict reads the CI against the within-run band named in the table (dashboard.model.noise, derived "
           "from the committed runs; see the glossary).")
_sol_flags(loads, wide, {"baseline": v.baseline, "candidate": v.candidate})
far = kernels.furthest_from_floor(wide)
if far:
    st.caption("Furthest from the floor (lowest SOL): open a shape on the Kernels page to see what its call launches.")
    links = st.container(horizontal=True)   # one row without a column block per link
    for key in far:
        links.page_link("app_pages/kernels.py", label=f"Kernels: {widgets.md_text(key)}", icon=":material/memory:",
                        query_params={"shape": key, "source": Path(v.path).name})

st.subheader(f"Gap to {target:.4f}×")
if breakdown.score >= target:
    st.success(f"{breakdown.score:.4f}× already meets the target {target:.4f}×.")
else:
    widgets.show_figures({
        "Aggregate time to remove (derived)": f"{planner.required_time_reduction(breakdown.score, target):.3%}",
        "Aggregate speed factor needed (derived)": f"{planner.required_speed_factor(breakdown.score, target):.5f}×",
        "…or one load alone by (derived)":
            f"{planner.single_load_factor(breakdown.score, target, len(breakdown.loads)):.4f}×"},
        note="Per load: the last table column is the ratio that load alone would need (others unchanged). The "
             "Planner page shows it per shape.")

_peers(v)
_environment(v)

# The bootstrap CIs come last: thousands of resamples are the slowest step of a first visit, so everything above is
# already on its way to the browser (which loads the chart library meanwhile); the chart and the table fill the slots
# left for them, drawn once (a first draw without CIs would make the browser lay out both twice).
cmp = loaders.run_comparison(v) if v.kind == "run" else None
ci = cmp.overall.iloc[0] if cmp is not None else None
if ci is not None:
    if pd.notna(ci["ci_low"]):
        ci_slot.caption(f"95% bootstrap CI {ci['ci_low']:.4f}–{ci['ci_high']:.4f} "
                        + widgets.md_text(f"({ci['verdict']}; {ci['band_source']})"))
    fig_df = fig_df.merge(cmp.loads[["load", "ci_low", "ci_high"]], on="load", how="left")
chart.plotly_chart(figures.ratio_bars(fig_df, f"{tag} times; ratios derived", target=target), width="stretch", theme=None)
if ci is not None:
    loads = loads.merge(cmp.loads[["load", "ci_low", "ci_high", "verdict", "band"]], on="load", how="left")
    loads["ci"] = [views.ci_text(lo, hi) for lo, hi in zip(loads["ci_low"], loads["ci_high"])]
num = st.column_config.NumberColumn
table.dataframe(loads, hide_index=True, width="stretch", placeholder="—",
                column_order=[c for c in ("load", "ratio", "ci", "verdict", "band", "baseline_sum_us", "candidate_sum_us",
                                          "floor_sum_us", "sol_baseline", "sol_candidate",
                                          "ratio_if_alone_reaches_target") if c in loads],
                column_config={
    "load": st.column_config.TextColumn("load", width=90),
    "ratio": num("ratio ×", format="%.4f", width=80, help=glossary.short("ratio")),
    "ci": st.column_config.TextColumn("95% CI", width=120, help=glossary.short("ci")),
    "verdict": st.column_config.TextColumn("verdict", width=90, help=glossary.short("verdicts")),
    "band": num("band ±", format="percent", width=70,
                help="The within-run band each verdict read its interval against (dashboard.model.noise; caption above)."),
    "baseline_sum_us": num(f"Σw·{v.baseline} µs", format="%.1f", width=115, help=glossary.short("sigma_w")),
    "candidate_sum_us": num(f"Σw·{v.candidate} µs", format="%.1f", width=115, help=glossary.short("sigma_w")),
    "floor_sum_us": num("Σw·floor µs", format="%.1f", width=100, help=glossary.short("floor")),
    "sol_baseline": num("SOL base", format="percent", width=80, help=glossary.short("sol")),
    "sol_candidate": num("SOL cand", format="percent", width=80, help=glossary.short("sol")),
    "ratio_if_alone_reaches_target": num("alone would need ×", format="%.4f", width=125,
                                         help="The ratio this load alone would need for the target score, "
                                              "the other loads unchanged (derived).")})
