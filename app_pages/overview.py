"""Overview: the score, per-load ratios, time saved, score-equivalent time, SOL, gap to a target, environment."""
import pandas as pd
import streamlit as st

from app_pages import common
from dashboard import figures, kernels, planner, scoring, views


def _environment(v) -> None:
    if v.kind == "run":
        st.subheader("Environment (measured)")
        env = v.run["environment"]
        clocks = env.get("clocks", {})
        e = st.columns(4)
        e[0].metric("GPU", env.get("gpu", "?"))
        telemetry = pd.DataFrame(v.run.get("telemetry", []))
        sm = telemetry["sm_mhz"].dropna() if "sm_mhz" in telemetry else pd.Series(dtype=float)
        # The start reading is taken on an idle GPU (clocks down, reason gpu_idle): what matters is the clock
        # while measuring, sampled after the probes and after every shape.
        e[1].metric("SM clock while measuring", f"{sm.min():.0f}–{sm.max():.0f} MHz" if len(sm) else "?",
                    help=f"max {clocks.get('sm_max_mhz', '?')} MHz; idle reading at start "
                         f"{clocks.get('sm_mhz_start', '?')} MHz, at end {clocks.get('sm_mhz_end', '?')} MHz")
        e[2].metric("Replay overhead", f"{env.get('replay_overhead_us', float('nan')):.2f} µs")
        flagged = int(v.data.results["flags"].map(len).gt(0).sum())
        e[3].metric("Results with flags", f"{flagged} / {len(v.data.results)}")
        thr = [r for r in env.get("throttle_reasons") or [] if r != "gpu_idle"]  # idle at start is not throttling
        during = sorted({r for rs in telemetry.get("throttle", pd.Series(dtype=object)).dropna() for r in rs}
                        - {"gpu_idle"})
        reasons = sorted(set(thr) | set(during))
        (st.warning if reasons else st.caption)(
            f"Throttle reasons (start + samples, idle excluded): {', '.join(reasons) if reasons else 'none'}")
        if len(telemetry) > 1:
            st.plotly_chart(figures.telemetry_figure(telemetry), width="stretch")
        with st.expander("All environment fields"):
            st.dataframe(v.data.environment.astype(str), hide_index=True, width="stretch")


st.title("Overview")
v = common.view()
common.caption_source(v)
with st.expander("Upload a run file or a per-shape CSV"):
    common.upload_widget("upload_overview")

if v.breakdown is None:  # a partial run or a different shape set: show what finished, say why there is no score
    st.warning(f"{v.label}: cannot score {v.candidate} against {v.baseline}: {v.score_error}")
    st.subheader("What finished (measured)")
    done = v.wide()
    st.dataframe(done[["shape", "baseline_us", "candidate_us", "ratio", "ratio_paired", "ratio_ci_low",
                       "ratio_ci_high", "correct", "flags"]], hide_index=True, width="stretch",
                 column_config=common.shape_ratio_columns(v))
    st.caption("The CI (from the run's pairs) belongs to the median of the paired per-round ratios, not to the "
               "ratio of the two medians.")
    _environment(v)
    st.stop()
bd = v.breakdown
weights = scoring.family_weights(common.workload())

cmp = common.run_comparison(v) if v.kind == "run" else None
ci = cmp.overall.iloc[0] if cmp is not None else None
tag = "measured" if v.kind == "run" else "published" if v.source == "published" else "uploaded"
c = st.columns(4)
c[0].metric(f"Score ({tag} times; derived)", f"{bd.score:.4f}×",
            help=f"{v.candidate} vs {v.baseline}: geometric mean of the six load ratios")
if ci is not None and pd.notna(ci["ci_low"]):
    c[0].caption(f"95% bootstrap CI {ci['ci_low']:.4f}–{ci['ci_high']:.4f} ({ci['verdict']})")
c[1].metric("Aggregate time saved (derived)", f"{bd.time_saved:.2%}")
c[2].metric(f"Score-equivalent time, {v.baseline} (derived)", f"{bd.equiv_baseline_us:,.1f} µs",
            help="Geometric mean over the six loads of Σ weight × time")
c[3].metric(f"Score-equivalent time, {v.candidate} (derived)", f"{bd.equiv_candidate_us:,.1f} µs",
            help="Geometric mean over the six loads of Σ weight × time")
if v.source != "published":
    ref = scoring.score_official(common.official(), common.workload())
    st.caption(f"For reference, the official 036 table (published) scores {ref.score:.4f}× against its baseline.")
else:
    st.caption("Recomputed (derived) from the table's 3-decimal published times. The write-up's own figures — "
               "score 1.301203, score-equivalent 4,830.8 / 3,712.56 µs — come from the evaluator's estimates.")

st.subheader("Per load")
target = st.number_input("Target score", min_value=1.0, max_value=3.0, value=1.32, step=0.005, format="%.4f",
                         key="target")
wide = v.wide()
sol = views.load_sol(wide, weights)
loads = bd.loads.merge(sol, on="load", how="left")
factor = planner.single_load_factor(bd.score, target)
loads["ratio_if_alone_reaches_target"] = loads["load"].map(planner.load_ratios_needed(bd, target))
if ci is not None:
    loads = loads.merge(cmp.loads[["load", "ci_low", "ci_high", "verdict"]], on="load", how="left")
st.dataframe(loads, hide_index=True, width="stretch", column_config={
    "baseline_sum_us": st.column_config.NumberColumn("Σw·baseline µs", format="%.2f"),
    "candidate_sum_us": st.column_config.NumberColumn("Σw·candidate µs", format="%.2f"),
    "floor_sum_us": st.column_config.NumberColumn("Σw·floor µs (derived)", format="%.2f"),
    "sol_baseline": st.column_config.NumberColumn("SOL baseline (derived)", format="percent"),
    "sol_candidate": st.column_config.NumberColumn("SOL candidate (derived)", format="percent"),
    "ratio_if_alone_reaches_target": st.column_config.NumberColumn("ratio this load alone would need (derived)",
                                                                   format="%.4f"),
    **common.ratio_ci_columns()})
floors_from = ("the run's measured probe curve and compute peak" if v.kind == "run" else
               "the write-up's four published probes and its quoted 989 TFLOP/s")
st.caption(f"Ratios and sums: derived from {tag} times. SOL = Σ floor ÷ Σ time, floors from {floors_from}.")
fig_df = bd.loads.assign(label=bd.loads["load"])
if ci is not None:
    fig_df = fig_df.merge(cmp.loads[["load", "ci_low", "ci_high"]], on="load", how="left")
st.plotly_chart(figures.ratio_bars(fig_df, f"{tag} times; ratios derived", target=target), width="stretch")
far = kernels.furthest_from_floor(wide)
if far:
    st.caption("Furthest from the floor (lowest SOL): open a shape on the Kernels page to see what its call launches.")
    for cell, key in zip(st.columns(len(far)), far):
        cell.page_link("app_pages/kernels.py", label=f"Kernels: {key}", icon=":material/memory:",
                       query_params={"shape": key})

st.subheader(f"Gap to {target:.4f}×")
if bd.score >= target:
    st.success(f"{bd.score:.4f}× already meets the target {target:.4f}×.")
else:
    g = st.columns(3)
    g[0].metric("Aggregate time to remove (derived)", f"{planner.required_time_reduction(bd.score, target):.3%}")
    g[1].metric("Aggregate speed factor needed (derived)",
                f"{planner.required_speed_factor(bd.score, target):.5f}×")
    g[2].metric("…or one load alone by (derived)", f"{factor:.4f}×")
    st.caption("Per load: the last table column is the ratio that load alone would need (others unchanged). "
               "The Planner page shows it per shape.")

_environment(v)
