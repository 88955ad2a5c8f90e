"""Kernels: inside one call — which kernels it launches, how long each runs, the bytes it moves against the ideal,
each kernel against the probe roof, and findings in plain words (an explain run, `python -m profiler explain`)."""
from pathlib import Path

import streamlit as st

from dashboard.plots import kernel_figures
from dashboard.model import kernel_findings, kernels, run_kinds, runs, scoring, sources
from dashboard.documents import kernel_report
from ui import loaders, state, terms, view, widgets

EXPLAIN_HELP = ("Make one on the H200: `python -m profiler explain --plan baseline --plan best --shapes official` "
                "(Nsight Compute + one CUDA-graph replay per call).")

st.title("Kernels")
source_line = st.empty()   # the first line: which run the page reads (filled once the explain run is chosen)
st.caption("Inside a call: what it launches, per kernel. Kernel times from one CUDA-graph replay behind an L2 "
           "flush (Kineto, measured); DRAM/L2 bytes, grid and throughputs from Nsight Compute on one cold call "
           "(measured); floors, shares, gaps and findings derived from those and the run's own probes.")
terms.link("floor", "sol", "provenance")


def _head(path, limit: int = 1 << 20) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return ""


@st.cache_resource(show_spinner=False, max_entries=16)
def _shape_report(path: str, mtime: float, shape: str, _data):
    """kernel_report.build_report once per (explain run file and its mtime, shape): it draws every figure (0.6 s),
    too slow for each rerun of the page. A built report is never modified, so one shared copy is fine."""
    return kernel_report.build_report(_data, shape=shape)   # the run's own workload


def _explain_runs() -> dict[str, object]:
    """Every readable explain run among the run sources (file name → its run_kinds.RunMeta, from the run index: no
    file is opened here); a file that looks like one but does not load is named in the sidebar."""
    out = {}
    srcs = [src for src in view.source_list() if src.kind == "run"]
    metas = loaders.run_metas(srcs)
    for src in srcs:
        meta = metas.get(src.path)
        if meta is not None:
            if meta.kind == run_kinds.EXPLAIN:
                out[src.name] = meta
        elif '"kernels"' in _head(src.path):  # looks like an explain run but does not load: say why
            try:
                loaders.run_data(src.path)
            except loaders.BAD_INPUT as exc:
                st.sidebar.warning(widgets.md_text(f"Skipped {src.path.name}: {exc}"))
    return out


def _of_source(every: dict) -> tuple[dict[str, str], str | None]:
    """The explain runs of the sidebar's source (kernels.explains_of: same workload and plans, best first) as
    file name → path, plus the line to show when there is none. A source that is an explain run opens itself."""
    src = view.current_source()
    if src.name in every:
        return {src.name: str(every[src.name].path)}, None
    try:
        data = loaders.source_data(src)
    except loaders.BAD_INPUT as exc:
        return {}, widgets.md_text(f"Cannot read the sidebar's source {src.label}: {exc}")
    state = st.session_state
    pair = sources.default_pair(data) or ("baseline", "best")
    base, cand = state.get("_sel_baseline", pair[0]), state.get("_sel_candidate", pair[1])
    same_name = [loaders.run_data(m.path) for m in every.values() if m.workload == runs.workload_of(data).name]
    found = kernels.explains_of(data, same_name, cand, base)   # opens only those of the source's workload
    if found:
        return {d.path.name: str(d.path) for d in found}, None
    wl = runs.workload_of(data)
    return {}, (f"No explain run of {widgets.md_text(src.label)} (workload {widgets.md_text(wl.name)}, the same "
                f"plans): the Kernels page shows only the kernels of the run you are looking at. Make one on the "
                f"H200: {widgets.md_code(kernels.explain_command(base, cand, wl))}")


every = _explain_runs()
if not every:
    st.info(f"No explain run among the run files. {EXPLAIN_HELP}")
    st.stop()
explain_runs, missing = _of_source(every)
asked = st.query_params.get("explain")
if asked in every and asked not in explain_runs:   # a link naming an explain run opens it, whatever the source
    explain_runs[asked] = str(every[asked].path)
    st.caption(f"{widgets.md_text(asked)} was asked for by the address; it is not an explain run of the sidebar's "
               "source.")
if not explain_runs:
    st.warning(missing)
    st.stop()
# each option as its date, label and plans (what tells explain runs apart); the whole file name under the picker
shown = {name: sources.run_text(path, every[name]) for name, path in explain_runs.items()}
labels = list(explain_runs)
label = state.url_selectbox(st.sidebar, "Explain run", labels, "explain", labels[0], key="kernels_source",
                            what="explain run", format_func=shown.get, help="The explain runs of the sidebar's "
                            "source (same workload, same plans), newest first.")
st.sidebar.caption(widgets.md_text(label))
try:
    data = kernels.from_run_data(loaders.run_data(explain_runs[label]))
    wl = data.workload
    ktab = kernels.kernel_table(data)
    calls = kernels.call_table(data, wl, ktab)
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

here = calls[(calls["shape"] == shape) & calls["candidate"].isin(chosen)]
first = here.iloc[0]
# One floor per (run, shape): for a sweep in the sidebar, the floor and SOL are the sweep's (as in `dashboard table`,
# Shapes and Roofline); the explain run's own (its probes, its replay times) are shown beside them, named.
src = view.current_source()
sweep = None
if src.kind == "run" and src.name != label:
    try:
        sweep = loaders.source_data(src)
    except loaders.BAD_INPUT:
        sweep = None
sweep_rows = kernels.sweep_sol(sweep, shape) if sweep is not None else None
sweep_rows = sweep_rows[sweep_rows["candidate"].isin(chosen)] if sweep_rows is not None else None
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

parts = kernels.kernel_gap_parts(ktab, calls)
parts = parts[(parts["shape"] == shape) & parts["candidate"].isin(chosen)]
st.plotly_chart(kernel_figures.kernel_stack(parts, float(first["floor_us"]), f"{shape}: kernels of each call against "
                                            f"the floor in {own}"), width="stretch", theme=None)

st.subheader("Findings (derived)")
found = kernel_findings.findings(here, ktab, shape, data.sm_count, data.run.get("compute_peak_tflops"))
if found.empty:
    st.caption("No rule fired for this shape.")
for cand, grp in found.groupby("candidate", sort=False):
    st.markdown(f"**{widgets.md_text(cand)}**\n" + "\n".join(f"- {widgets.md_text(t)}" for t in grp["text"]))
st.caption("Rules and thresholds: dashboard/model/kernel_findings.py (one place). Findings are ordered by the time they "
           "account for.")

c = st.columns(2)
c[0].plotly_chart(kernel_figures.bytes_vs_ideal(here, f"{shape}: DRAM bytes vs ideal"), width="stretch", theme=None)
probe = data.curve.points() if data.curve is not None else None
if probe is not None:
    probe = probe.assign(tbps=probe["bytes"] / probe["us_monotone"] / 1e6)
rows = ktab[(ktab["shape"] == shape) & ktab["candidate"].isin(chosen)]
c[1].plotly_chart(kernel_figures.kernel_roofline(rows, probe, f"{shape}: each kernel under the probe roof"),
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
loads = kernels.gap_by_load(calls, cand, scoring.family_weights(wl), wl.load_order)
st.plotly_chart(kernel_figures.gap_parts_bars(loads, kernels.GAP_PARTS, f"{cand}: the gap to the floor per load, by "
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
        rep = _shape_report(explain_runs[label], Path(explain_runs[label]).stat().st_mtime, shape, data)
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
