"""Kernels: inside one call — which kernels it launches, how long each runs, the bytes it moves against the ideal,
each kernel against the probe roof, and findings in plain words (an explain run, `python -m profiler explain`)."""
import streamlit as st

from ui import figures, kernels, loaders, state, terms, view, widgets

EXPLAIN_HELP = ("Make one on the H200: `python -m profiler explain --plan baseline --plan best --shapes official` "
                "(Nsight Compute + one CUDA-graph replay per call).")

st.title("Kernels")
source_line = st.empty()   # the first line: which run the page reads (filled once the explain run is chosen)
st.caption("Inside a call: what it launches, per kernel. Kernel times from one CUDA-graph replay behind an L2 "
           "flush (Kineto, measured); DRAM/L2 bytes, grid and throughputs from Nsight Compute on one cold call "
           "(measured); floors, shares, gaps and findings derived from those and the run's own probes.")
terms.link("floor", "sol", "provenance")

every, skipped = kernels.explain_runs()
for line in skipped:   # looks like an explain run but does not load: say why
    st.sidebar.warning(widgets.md_text(line))
if not every:
    st.info(f"No explain run among the run files. {EXPLAIN_HELP}")
    st.stop()
explain_runs, missing = kernels.of_source(every, view.current_source())
asked = st.query_params.get("explain")
if asked in every and asked not in explain_runs:   # a link naming an explain run opens it, whatever the source
    explain_runs[asked] = str(every[asked].path)
    st.caption(f"{widgets.md_text(asked)} was asked for by the address; it is not an explain run of the sidebar's "
               "source.")
if not explain_runs:
    st.warning(missing)
    st.stop()
# each option as its date, label and plans (what tells explain runs apart); the whole file name under the picker
shown = {name: kernels.run_text(path, every[name]) for name, path in explain_runs.items()}
labels = list(explain_runs)
label = state.url_selectbox(st.sidebar, "Explain run", labels, "explain", labels[0], key="kernels_source",
                            what="explain run", format_func=shown.get, help="The explain runs of the sidebar's "
                            "source (same workload, same plans), newest first.")
st.sidebar.caption(widgets.md_text(label))
try:
    data, ktab, calls = kernels.open_explain(explain_runs[label])
    wl = data.workload
except loaders.BAD_INPUT as exc:
    st.error(widgets.md_text(f"Cannot use {label}: {exc}"))
    st.stop()
if calls.empty:
    st.warning(f"{widgets.md_text(label)} has no profiled kernels (every call failed; see the failures below).")
    st.dataframe(data.failures, hide_index=True, width="stretch")
    st.stop()
if data.run.get("status") == "partial":
    st.sidebar.warning("Partial run: interrupted; only what finished is shown.")

shapes = data.shapes()
worst = calls.sort_values("sol").iloc[0]["shape"]
# ?shape= (a link from Overview / Where time goes) picks the shape; without one the page opens on the worst call
shape = state.url_selectbox(st, "Shape", shapes, "shape", worst, key="kernels_shape", what="shape",
                             help="Opens on the call furthest from its floor.")
cands = [c for c in data.candidates() if c in set(calls["candidate"])]
chosen = st.multiselect("Candidates", cands, default=cands, key=f"kernels_cands|{label}") or cands

here = kernels.at_shape(calls, shape, chosen)
first = here.iloc[0]
# One floor per (run, shape): for a sweep in the sidebar, the floor and SOL are the sweep's (as in `dashboard table`,
# Shapes and Roofline); the explain run's own (its probes, its replay times) are shown beside them, named.
src = view.current_source()
sweep_rows = kernels.sweep_rows(src, label, shape, chosen)
own = f"{label}'s own probes"
if sweep_rows is not None and len(sweep_rows):
    source_line.markdown(f"**Source:** kernels, bytes and replay times from the explain run {widgets.md_code(label)}; "
                         f"floor and SOL from the sidebar's sweep {widgets.md_code(src.name)} (its own probes and "
                         "times, as on Shapes and in "
                         "`dashboard table`).")
else:
    source_line.markdown(f"**Source:** the explain run {widgets.md_code(label)}: kernels, bytes, replay times, and "
                         "floor and SOL from "
                         "its own probes.")
m = st.columns(4)
if sweep_rows is not None and len(sweep_rows):
    m[0].metric("Floor (sweep)", f"{sweep_rows['floor_us'].iloc[0]:.2f} µs",
                help=f"derived in {widgets.md_text(src.name)} (as on Shapes and in `dashboard table`); in "
                     f"{widgets.md_text(own)}: "
                     f"{first['floor_us']:.2f} µs")
else:
    m[0].metric("Floor (explain run)", f"{first['floor_us']:.2f} µs", help=f"{first['bound']}-bound: max of the "
                f"read probe at the ideal bytes ({first['memory_floor_us']:.2f} µs) and 2MNK at the measured peak "
                f"({first['compute_floor_us']:.2f} µs)")
m[1].metric("Ideal bytes", f"{first['ideal_bytes'] / 1e6:.2f} MB", help="weights + x + y: what the call must move")
m[2].metric("Kernels per call", " / ".join(str(n) for n in here["launches"]),
            help="measured, per candidate: " + widgets.md_text(", ".join(f"{c}: {n}" for c, n in zip(
                here["candidate"], here["launches"]))))
if sweep_rows is not None and len(sweep_rows):
    m[3].metric("SOL (sweep)", " / ".join(f"{s:.0%}" for s in sweep_rows["sol"]),
                help=widgets.md_text(f"derived in {src.name}: its floor ÷ its median time, per candidate: " + ", ".join(
                    f"{c}: {s:.1%}" for c, s in zip(sweep_rows["candidate"], sweep_rows["sol"]))))
    st.caption(widgets.md_text("Per candidate, in the order " + " / ".join(sweep_rows["candidate"]) + f". In {own} "
                               f"and replay times, not the sweep's: floor {first['floor_us']:.2f} µs, SOL " +
                               " / ".join(f"{c} {s:.0%}" for c, s in zip(here["candidate"], here["sol"])) + "."))
else:
    m[3].metric("SOL (explain run)", " / ".join(f"{s:.0%}" for s in here["sol"]),
                help="floor ÷ time, per candidate: " + widgets.md_text(", ".join(
                    f"{c}: {s:.1%}" for c, s in zip(here["candidate"], here["sol"]))))
    st.caption("Per candidate, in the order " + widgets.md_text(" / ".join(here["candidate"])) + ".")

parts = kernels.gap_parts(ktab, calls, shape, chosen)
st.plotly_chart(figures.kernel_stack(parts, float(first["floor_us"]), f"{shape}: kernels of each call against "
                                            f"the floor in {own}"), width="stretch", theme=None)

st.subheader("Findings (derived)")
found = kernels.findings(here, ktab, shape, data)
if found.empty:
    st.caption("No rule fired for this shape.")
for cand, grp in found.groupby("candidate", sort=False):
    st.markdown(f"**{widgets.md_text(cand)}**\n" + "\n".join(f"- {widgets.md_text(t)}" for t in grp["text"]))
st.caption("Rules and thresholds: dashboard/model/kernel_findings.py (one place). Findings are ordered by the time they "
           "account for.")

c = st.columns(2)
c[0].plotly_chart(figures.bytes_vs_ideal(here, f"{shape}: DRAM bytes vs ideal"), width="stretch", theme=None)
probe = kernels.probe_points(data)
rows = kernels.at_shape(ktab, shape, chosen)
c[1].plotly_chart(figures.kernel_roofline(rows, probe, f"{shape}: each kernel under the probe roof"),
                  width="stretch", theme=None)

st.subheader("Every kernel (measured and derived)")
num = st.column_config.NumberColumn
words = kernels.COLUMN_WORDS
kernel_cols = {
    "time_us": num("time µs", format="%.3f", help="the replay's time where it ran ncu's kernels, else ncu's "
                   "(the 'time from' column)"),
    "duration_us": num(words["duration_us"], format="%.3f"), "replay_us": num(words["replay_us"], format="%.3f"),
    "share": num(words["share"], format="percent"), "bw_vs_probe": num(words["bw_vs_probe"], format="percent"),
    "achieved_tbps": num("TB/s (derived)", format="%.3f"), "grid_fill": num(words["grid_fill"], format="percent"),
    "dram_bytes": num(words["dram_bytes"], format="%d"), "grid": num(words["grid"], format="%d"),
    "waves": num(words["waves"], format="%.2f"), "registers": num(words["registers"], format="%d"),
    "candidate": st.column_config.TextColumn(words["candidate"]), "kernel": st.column_config.TextColumn("kernel"),
    "time_basis": st.column_config.TextColumn(words["time_basis"])}
# The lead columns fit the page at 1,600 px; every column is in the table below and in the CSV.
lead = {"candidate": 85, "kernel": 230, "time_us": 85, "share": 75, "dram_bytes": 95, "achieved_tbps": 80,
        "bw_vs_probe": 75, "grid": 65, "grid_fill": 70, "waves": 60, "registers": 70, "time_basis": 80}
st.dataframe(rows, hide_index=True, width="stretch", column_order=[c for c in lead if c in rows],
             column_config={c: {**kernel_cols.get(c, st.column_config.Column(c)), "width": w} for c, w in lead.items()})
with st.expander("Every column of these kernels (as the CSV names them)"):
    st.dataframe(rows, hide_index=True, width="stretch", column_config=kernel_cols)
widgets.download_csv(rows, f"kernels_{shape.replace('/', '_').replace(' ', '-')}.csv",
                    "Download this shape's kernels (CSV)")
widgets.download_csv(ktab, f"kernels_{data.path.stem}.csv", "Download every kernel of the run (CSV)")

st.subheader(f"Where each call's gap to the floor goes (derived, µs; floor in {widgets.md_text(own)})")
gap_cols = ["candidate", "time_us", "floor_us", "gap_us", "side_kernels_us", "between_us", "excess_bytes_us",
            "main_slow_us", "main_kernel", "main_grid", "main_waves", "excess_ratio", "time_basis"]
# Widths: each header whole where the page's 1,600 px allow (widgets.fit_widths scales them to fit, and every
# header is the column's help too, so a cut one reads whole on hover).
gap_w = widgets.fit_widths({"candidate": 85, **{c: 8 * len(words[c]) + 24 for c in gap_cols if c.endswith("_us")},
                            "main_kernel": 170, "main_grid": 85, "main_waves": 90, "excess_ratio": 140,
                            "time_basis": 80})
st.dataframe(here[gap_cols], hide_index=True, width="stretch", column_config={
    **{c: num(words[c], format="%.3f", width=gap_w[c], help=words[c]) for c in gap_cols if c.endswith("_us")},
    "candidate": st.column_config.TextColumn(words["candidate"], width=gap_w["candidate"]),
    "main_kernel": st.column_config.TextColumn(words["main_kernel"], width=gap_w["main_kernel"]),
    "main_grid": num(words["main_grid"], width=gap_w["main_grid"], help=words["main_grid"]),
    "main_waves": num(words["main_waves"], format="%.2f", width=gap_w["main_waves"], help=words["main_waves"]),
    "excess_ratio": num(words["excess_ratio"], format="%.2f", width=gap_w["excess_ratio"], help=words["excess_ratio"]),
    "time_basis": st.column_config.TextColumn(words["time_basis"], width=gap_w["time_basis"])})

st.subheader("Per load")
cand = st.selectbox("Candidate", cands, index=len(cands) - 1, key="kernels_load_cand")
loads = kernels.gap_by_load(calls, cand, wl)
st.plotly_chart(figures.gap_parts_bars(loads, kernels.GAP_PARTS, f"{cand}: the gap to the floor per load, by "
                                              "cause"), width="stretch", theme=None)
load_w = widgets.fit_widths({"load": 80, **{c: max(95, 8 * len(words.get(c, c)) + 24) for c in loads.columns
                                            if c.endswith("_us")}, "sol": 70, "launches_per_call": 80})
st.dataframe(loads, hide_index=True, width="stretch", column_config={
    **{c: num(words.get(c, c), format="%.2f", width=load_w[c], help=words.get(c, c))
       for c in loads.columns if c.endswith("_us")},
    "load": st.column_config.TextColumn(words["load"], width=load_w["load"]),
    "sol": num(words["sol"], format="percent", width=load_w["sol"]),
    "launches_per_call": num(words["launches_per_call"], format="%.2f", width=load_w["launches_per_call"])},
    column_order=[c for c in ("load", "time_sum_us", "floor_sum_us", "gap_sum_us", "side_kernels_us", "between_us",
                              "excess_bytes_us", "underfilled_us", "low_bw_us", "below_compute_us", "sol",
                              "launches_per_call") if c in loads])
st.caption("Under-filled grid is a model: the main kernel's time × the share of SMs its grid leaves idle, capped at "
           "its time over its floor (dashboard/model/kernels.py says why).")
with st.expander("Export this shape's breakdown as a report (same as `python -m dashboard report RUN --shape ...`)"):
    try:
        rep = kernels.shape_report(explain_runs[label], shape, data)
    except loaders.BAD_INPUT as exc:
        st.error(f"Cannot build the report: {widgets.md_text(exc)}")
    else:
        r = st.columns(4)
        for cell, (fmt, mime) in zip(r, (("html", "text/html"), ("md", "text/markdown"), ("csv", "text/csv"),
                                         ("json", "application/json"))):
            cell.download_button(fmt.upper(), getattr(rep, {"md": "markdown"}.get(fmt, fmt)),
                                 file_name=f"{rep.stem}.{fmt}", mime=mime, key=f"kernels_rep_{fmt}")
if len(data.failures):
    with st.expander(f"Failures ({len(data.failures)})"):
        st.dataframe(data.failures, hide_index=True, width="stretch")
env = data.run.get("environment", {})
st.caption(widgets.md_text(f"ncu {env.get('ncu_version', '?')} on {env.get('gpu', '?')}; command: ")
           + widgets.md_code(env.get("ncu_command", "?")))
