"""Planner: what it would take — aggregation (what-if), Amdahl, tile geometry, and per-shape targets.

Every number here is **derived** (arithmetic on the selected source's times); nothing is a prediction.
"""
import numpy as np
import streamlit as st

from ui import figures, planning, targets, terms, view, widgets

st.title("Planner — what would it take?")
selection = view.pick()
breakdown = view.require_breakdown(selection)
view.caption_source(selection, "All planner outputs are **derived** calculations, not predictions of a kernel.")
terms.link("score", "sigma_w")
ratios = breakdown.load_ratios()

tab_agg, tab_amdahl, tab_tile, tab_target = st.tabs(["Aggregation", "Amdahl", "Tile geometry", "Target"])

with tab_agg:
    n = len(ratios)
    st.markdown(f"Change one load's ratio; the score is the geometric mean of the {terms.count_word(n)}, so it "
                f"moves by r^(1/{n}).")
    c1, c2, c3 = st.columns(3)
    load = c1.selectbox("Load", list(ratios), key="agg_load")
    others_at_one = c2.toggle("Others held at 1.00× (write-up's calculator)", value=False, key="agg_one")
    base = {k: (1.0 if others_at_one else r) for k, r in ratios.items()}
    # keyed by load, mode and the pair shown, so another load or source starts the slider at its own ratio
    start = float(round(base[load], 3))
    new = c3.slider("New ratio for this load", 0.5, 3.0, start, 0.001, format="%.3f",
                    key=f"agg_ratio_{load}_{others_at_one}|{selection.label}|{selection.baseline}|"
                        f"{selection.candidate}")
    score_new = planning.what_if_score(base, load, new)
    m1, m2 = st.columns(2)
    before = planning.what_if_score(base, load, base[load])
    # no change shown until the slider moves: its start is the ratio rounded to its 0.001 step, not a change
    m1.metric("New score (derived)", f"{score_new:.4f}×", f"{score_new - before:+.4f}" if new != start else None)
    m2.metric("Time saved at the new score (derived)", f"{1 - 1 / score_new:.2%}")
    xs = np.linspace(0.5, 3.0, 101)
    ys = [planning.what_if_score(base, load, x) for x in xs]
    st.plotly_chart(figures.line_figure(xs, ys, f"Score vs the {load} ratio", f"{load} ratio ×", "score ×",
                                        "derived", marker=(new, score_new)), width="stretch", theme=None)

with tab_amdahl:
    c1, c2 = st.columns(2)
    frac = c1.slider("Fraction of time that gets faster", 0.0, 1.0, 0.2, 0.01, key="amdahl_f")
    s = c2.number_input("Its speedup ×", min_value=0.1, max_value=1000.0, value=2.0, step=0.1, key="amdahl_s")
    total = planning.amdahl_speedup(frac, s)
    m1, m2 = st.columns(2)
    m1.metric("Total speedup (derived)", f"{total:.4f}×")
    lim = planning.amdahl_limit(frac)
    m2.metric("Limit at infinite speedup (derived)", "∞" if not np.isfinite(lim) else f"{lim:.4f}×")
    xs = np.geomspace(1, 100, 100)
    st.plotly_chart(figures.line_figure(xs, [planning.amdahl_speedup(frac, x) for x in xs],
                                        f"Amdahl: {frac:.0%} of the time sped up", "part speedup ×",
                                        "total speedup ×", "derived", marker=(s, total) if 1 <= s <= 100 else None,
                                        hlines={"limit": lim} if np.isfinite(lim) else None, log_x=True),
                    width="stretch", theme=None)

with tab_tile:
    st.markdown("Reuse versus the work grid (defaults: pooler M=16, N=4,096, K=8,192). Geometry only.")
    c = st.columns(5)
    M = c[0].number_input("M", 1, 4096, 16, key="tile_M")
    N = c[1].number_input("N", 1, 65536, 4096, key="tile_N")
    BM = c[2].selectbox("BM", [8, 16, 32, 64, 128, 256], index=1, key="tile_BM")
    BN = c[3].selectbox("BN", [16, 32, 64, 128, 256], index=1, key="tile_BN")
    splits = c[4].number_input("split-K", 1, 128, 1, key="tile_S")
    m1, m2, m3 = st.columns(3)
    m1.metric("Blocks (derived)", f"{planning.tile_blocks(M, N, BM, BN, splits):,}")
    m2.metric("Reuse FLOP / operand byte (derived)", f"{planning.reuse_flop_per_operand_byte(BM, BN):.2f}")
    m3.metric("Split-K FP32 scratch (derived)",
              f"{planning.splitk_scratch_bytes(splits, M, N):,} B" if splits > 1 else "none")
    table = planning.tile_table(M, N, [(bm, bn) for bm in (16, 32, 64, 128) for bn in (32, 64, 128, 256)], splits)
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "reuse_flop_per_byte": st.column_config.NumberColumn("FLOP / operand byte", format="%.2f")})
    st.caption("Ignores scratch, outputs, cache effects, instruction granularity and scheduling.")

with tab_target:
    target = targets.target_input("plan_target", selection, breakdown.score)
    m1, m2, m3 = st.columns(3)
    m1.metric("Current score", f"{breakdown.score:.4f}×", help=selection.note)
    m2.metric("Aggregate time to remove (derived)", f"{planning.required_time_reduction(breakdown.score, target):.3%}")
    m3.metric("Single-load factor needed (derived)",
              f"{planning.single_load_factor(breakdown.score, target, len(ratios)):.4f}×")
    tgt = planning.shape_targets(breakdown, target, selection.wide())
    num = st.column_config.NumberColumn
    st.dataframe(tgt, hide_index=True, width="stretch", placeholder="—", column_config={
        "load": st.column_config.TextColumn("load", width=85), "family": st.column_config.TextColumn(width=85),
        "candidate_us": num("candidate µs", format="%.3f", width=100),
        "floor_us": num("floor µs", format="%.3f", width=75, help="the shape's roofline floor (derived)"),
        "share": num("share of load", format="percent", width=95),
        "speedup_needed": num("speedup needed ×", format="%.4f", width=120),
        "new_us": num("would need µs", format="%.3f", width=105),
        "feasible": st.column_config.CheckboxColumn("alone enough?", width=100, help="the load reaches the target "
                                                    "with this shape alone sped up, at a time above its floor"),
        "reason": st.column_config.TextColumn("why not", width="medium")})
    widgets.download_csv(tgt, "shape_targets.csv")
