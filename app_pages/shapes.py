"""Shapes: the scored-shape table (30 for muse_bf16_proj) — candidate time, ratio with CI, SOL and method first,
then baseline, floor, bound, MB and GFLOP; every other column (M/N/K, intensity, floors, official times, other candidates) in a second table
and the CSV. Filterable, sortable, downloadable. The official times are joined only for muse_bf16_proj runs (the
table is that workload's); a picker at the bottom lists any workload's shapes (datasets/workloads/*.json)."""
import streamlit as st

from ui import loaders, tables, terms, view, widgets

st.title("Shapes")
selection = view.pick()
view.caption_source(selection, "MB, GFLOP, floors and SOL are **derived**; times are as labelled.")
terms.link("ratio", "ci", "floor", "sol", "sol_over")
wide, other_columns, muse_only = tables.shapes_table(selection)
if muse_only is not None:
    st.caption(f"No official-time columns: {widgets.md_text(muse_only)}.")
# other candidates of the run: their measured medians, one column each
others = {col: st.column_config.NumberColumn(f"{cand} µs (measured)", format="%.3f")
          for col, cand in other_columns.items()}

c1, c2, c3 = st.columns(3)
loads = c1.multiselect("Loads", list(dict.fromkeys(wide["load"])), key="shapes_loads")
fams = c2.multiselect("Families", list(dict.fromkeys(wide["family"])), key="shapes_fams")
only_bad = c3.toggle("Only flagged / kept out of the score", key="shapes_bad")
shown = tables.filter_shapes(wide, loads, fams, only_bad)

num = st.column_config.NumberColumn
t = "measured" if selection.kind == "run" else "published" if selection.source == "published" else "uploaded"
# Widths in px sum to < 1,100 so the table fits the page at 1,600 px without scrolling sideways.
lead = {
    "shape": st.column_config.TextColumn("shape", pinned=True, width=150),
    "candidate_us": num(f"{selection.candidate} µs", format="%.3f", width=95, help=f"{t} median"),
    "ratio": num("ratio ×", format="%.3f", width=70, help="ratio of medians (what the score aggregates): "
                                                         + terms.short("ratio")),
    "paired_ci": st.column_config.TextColumn("paired ratio [95% CI]", width=150,
                                             help="median of the paired per-round ratios and its CI (measured "
                                                  "pairs; a published table has none)"),
    "sol_candidate": num("SOL", format="percent", width=70, help=terms.short("sol")),
    "method_label": st.column_config.TextColumn("method", width=160,
                                                help="what the candidate ran at this shape; '(= baseline)': the "
                                                     "baseline's own route, so a ratio off 1 is the spread of two "
                                                     "timings of one call, not a kernel difference"),
    "baseline_us": num(f"{selection.baseline} µs", format="%.3f", width=95, help=f"{t} median"),
    "floor_us": num("floor µs", format="%.3f", width=75, help=terms.short("floor")),
    "bound": st.column_config.TextColumn("bound", width=70),
    "mb": num("MB", format="%.1f", width=55, help="bytes moved (weights + activations + output), decimal MB"),
    "gflop": num("GFLOP", format="%.3f", width=65, help="2·M·N·K"),
    "correct": st.column_config.CheckboxColumn("ok", width=40, help="passed the correctness contract"),
}
has_eager = selection.kind == "run" and tables.has_eager(selection.shape_table())
moved = []
if has_eager:   # the eager times take the place of MB, GFLOP and bound (in the second table), so it still fits
    moved = ["bound", "mb", "gflop"]
    lead = {k: c for k, c in lead.items() if k not in moved}
    lead_order = list(lead)
    at = lead_order.index("baseline_us") + 1
    eager_cols = {
        "eager_candidate_us": num(f"{selection.candidate} eager µs", format="%.2f", width=85,
                                  help="host-inclusive time per eager call (measured): " + terms.short("eager")),
        "eager_baseline_us": num(f"{selection.baseline} eager µs", format="%.2f", width=85,
                                 help="host-inclusive time per eager call (measured)"),
        "host_bound_candidate": st.column_config.CheckboxColumn("host > kernel", width=60,
                                                                help="eager − graph time exceeds the graph time")}
    lead = {k: lead[k] for k in lead_order[:at]} | eager_cols | {k: lead[k] for k in lead_order[at:]}
st.dataframe(widgets.gated_style(shown), hide_index=True, width="stretch", height="content", placeholder="—",
             column_order=[c for c in lead if c in shown], column_config=lead)
if has_eager:
    note = tables.host_bound_text(shown, selection.baseline, selection.candidate)
    (st.warning if note else st.caption)(widgets.md_text(note) if note else "Eager times (measured, host-inclusive) are beside the graph "
                                         "times; at no shape shown does the host cost exceed the kernel time.")
elif selection.kind == "run":
    st.caption("This run records no eager (host-inclusive) times; the times are CUDA-graph replays "
               "(glossary: eager vs graph).")
over = tables.sol_over_100(shown)
st.caption(f"{len(shown)} of {len(wide)} shapes shown; rows in red are kept out of every score (incorrect, failed "
           "or below the measured floor), so they have no ratio. The ratio of medians is what the score aggregates; the CI "
           "(95%, from the run's pairs) belongs to the median paired ratio next to it."
           + (f" SOL above 100% at {len(over)} point(s): the kernel beat its floor's probe ("
              f"{terms.short('sol_over')})" if len(over) else ""))
widgets.download_csv(shown.drop(columns=["method_label"]), "shapes.csv")

with st.expander("All columns (the whole method, M, N, K, intensity, both floors, SOL of the baseline, official "
                 "times, other candidates, flags)"):
    rest = ["shape", "method", *moved, "M", "N", "K", "bytes", "flops", "intensity_flop_per_byte", "memory_floor_us",
            "compute_floor_us", "sol_baseline", "ratio_paired", "ratio_ci_low", "ratio_ci_high",
            "official_baseline_us", "official_036_us", *others, "same_route", "flags"]
    st.dataframe(shown, hide_index=True, width="stretch", placeholder="—",
                 column_order=[c for c in rest if c in shown], column_config={
        "shape": st.column_config.TextColumn("shape", pinned=True),
        "method": st.column_config.TextColumn("method", width="large"),
        "bytes": num("bytes", format="%d"), "flops": num("FLOPs", format="%.3e"),
        "intensity_flop_per_byte": num("FLOP/B", format="%.2f"),
        "memory_floor_us": num("mem floor µs", format="%.3f"),
        "compute_floor_us": num("compute floor µs", format="%.3f"),
        "sol_baseline": num("SOL baseline", format="percent"),
        "bound": st.column_config.TextColumn("bound"), "mb": num("MB", format="%.1f"),
        "gflop": num("GFLOP", format="%.3f"),
        "same_route": st.column_config.CheckboxColumn("= baseline", help="the candidate ran the baseline's route"),
        **{k: c for k, c in widgets.shape_ratio_columns(selection).items() if k.startswith("ratio_")},
        "official_baseline_us": num("official baseline µs (published)", format="%.3f"),
        "official_036_us": num("official 036 µs (published)", format="%.3f"), **others})

with st.expander("Library ceiling: what cuBLASLt does when asked well (its search benchmark, measured)"):
    lib, lib_notes, gpu, lib_caption = tables.library_ceiling_table(selection, wide)
    if len(lib):
        st.dataframe(lib, hide_index=True, width="stretch", placeholder="—", column_order=[
            "shape", "M", "torch_linear_us", "heuristic_orient", "heuristic_us", "library_route", "library_us",
            "ceiling_x", "over_heuristic", "run_ratio", "library_config", "source"], column_config={
            "shape": st.column_config.TextColumn("shape", pinned=True),
            "torch_linear_us": num("torch_linear µs", format="%.2f", help="F.linear's own pick (measured)"),
            "heuristic_orient": st.column_config.TextColumn("heuristic orient"),
            "heuristic_us": num("heuristic best µs", format="%.2f",
                                help="the fastest configuration the heuristic lists, any orientation (measured)"),
            "library_route": st.column_config.TextColumn("library best"),
            "library_us": num("library best µs", format="%.2f", help="the fastest of everything re-measured"),
            "ceiling_x": num("ceiling ×", format="%.3f", help="torch_linear ÷ library best (derived, one file)"),
            "over_heuristic": num("found ÷ heuristic", format="%.3f",
                                  help="paired ratio over the heuristic's fastest, as the benchmark recorded it"),
            "run_ratio": num(f"this run: {selection.candidate} ×", format="%.3f",
                             help=widgets.md_text(f"{selection.candidate} vs {selection.baseline} in the run shown (derived; "
                                                  "another session)")),
            "library_config": st.column_config.TextColumn("identity", width="large"),
            "source": st.column_config.TextColumn("search file")})
    st.caption(widgets.md_text(lib_caption + (f" Only shapes of this run's GPU ({gpu})." if gpu else "")))
    for line in lib_notes:
        st.caption(widgets.md_text(line))

st.subheader("Shapes of a workload")
names = loaders.workload_names()
current = selection.workload.name if selection.workload.name in names else names[0]
picked = st.selectbox("Workload (datasets/workloads/)", names, index=names.index(current), key="shapes_workload",
                      help="Every workload file's scored shapes, whatever the run in the sidebar measured.")
try:
    wl = loaders.named_workload(picked)
except loaders.BAD_INPUT as exc:
    st.error(widgets.md_text(f"Cannot read workload {picked!r}: {exc}"))
    st.stop()
spec = tables.workload_floors(wl, selection.data)
st.caption(f"{wl.name}: {len(wl.family_order)} families ({', '.join(wl.family_order)}) × {len(wl.load_order)} loads "
           f"({', '.join(f'{load} M={M}' for load, M in wl.load_m.items())}); source: {wl.source.rstrip('.')}. Floors (derived): "
           f"the probes and compute peak of {selection.data.path.name}" + ("" if spec["floor_us"].notna().any() else
                                                                  ", which has none"))
st.dataframe(spec, hide_index=True, width="stretch", column_order=[
    c for c in ("load", "family", "M", "N", "K", "x_dtype", "w_dtype", "y_dtype", "weight", "bytes", "flops",
                "floor_us", "bound") if c in spec],
    column_config={"bytes": num("bytes", format="%d"), "flops": num("FLOPs", format="%.3e"),
                   "floor_us": num("floor µs", format="%.3f", help=terms.short("floor"))})
