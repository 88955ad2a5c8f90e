"""The Kernels page's data: the explain runs among the run sources and those of the sidebar's source, one explain
run's kernel and call tables, their rows at one shape, the sweep's floor and SOL beside them, and the shape's report
(dashboard.model.kernels and kernel_findings do the arithmetic, dashboard.documents.kernel_report the export)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.documents import kernel_report
from dashboard.model import kernel_findings, kernels, run_kinds, runs, scoring, sources
from dashboard.model.kernels import COLUMN_WORDS, GAP_PARTS
from dashboard.model.sources import run_text
from ui import loaders, view, widgets

__all__ = ["COLUMN_WORDS", "GAP_PARTS", "run_text", "explain_runs", "of_source", "open_explain", "at_shape",
           "sweep_rows", "gap_parts", "findings", "probe_points", "gap_by_load", "shape_report"]

HEAD_BYTES = 1 << 20   # enough of a file to tell an explain run by its "kernels" key


def _head(path, limit: int = HEAD_BYTES) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return ""


def explain_runs() -> tuple[dict[str, run_kinds.RunMeta], list[str]]:
    """Every readable explain run among the run sources (file name -> its run_kinds.RunMeta, from the run index: no
    file is opened for it), and one line per file that looks like one but does not load, saying why."""
    out, skipped = {}, []
    srcs = [src for src in view.source_list() if src.kind == "run"]
    metas = loaders.run_metas(srcs)
    for src in srcs:
        meta = metas.get(src.path)
        if meta is not None:
            if meta.kind == run_kinds.EXPLAIN:
                out[src.name] = meta
        elif '"kernels"' in _head(src.path):
            try:
                loaders.run_data(src.path)
            except loaders.BAD_INPUT as exc:
                skipped.append(f"Skipped {src.path.name}: {exc}")
    return out, skipped


def of_source(every: dict[str, run_kinds.RunMeta], src) -> tuple[dict[str, str], str | None]:
    """The explain runs of a source (kernels.explains_of: same workload and plans, best first) as file name -> path,
    plus the line (markdown) to show when there is none. A source that is an explain run opens itself. The pair is
    the one the sidebar picked, else the source's default pair."""
    if src.name in every:
        return {src.name: str(every[src.name].path)}, None
    try:
        data = loaders.source_data(src)
    except loaders.BAD_INPUT as exc:
        return {}, widgets.md_text(f"Cannot read the sidebar's source {src.label}: {exc}")
    pair = sources.default_pair(data) or ("baseline", "best")
    base = st.session_state.get("_sel_baseline", pair[0])
    cand = st.session_state.get("_sel_candidate", pair[1])
    wl = runs.workload_of(data)
    same_name = [loaders.run_data(m.path) for m in every.values() if m.workload == wl.name]
    found = kernels.explains_of(data, same_name, cand, base)   # opens only those of the source's workload
    if found:
        return {d.path.name: str(d.path) for d in found}, None
    return {}, (f"No explain run of {widgets.md_text(src.label)} (workload {widgets.md_text(wl.name)}, the same "
                f"plans): the Kernels page shows only the kernels of the run you are looking at. Make one on the "
                f"H200: {widgets.md_code(kernels.explain_command(base, cand, wl))}")


def open_explain(path) -> tuple[runs.RunData, pd.DataFrame, pd.DataFrame]:
    """An explain run with its kernel table (one row per kernel) and call table (one row per call); raises one of
    ui.loaders.BAD_INPUT where it does not load."""
    data = kernels.from_run_data(loaders.run_data(path))
    ktab = kernels.kernel_table(data)
    return data, ktab, kernels.call_table(data, data.workload, ktab)


def at_shape(table: pd.DataFrame, shape: str, candidates: list[str]) -> pd.DataFrame:
    """The rows of a kernel, call or gap table at one shape, of the chosen candidates."""
    return table[(table["shape"] == shape) & table["candidate"].isin(candidates)]


def sweep_rows(src, explain_name: str, shape: str, candidates: list[str]) -> pd.DataFrame | None:
    """The sidebar's sweep's floor and SOL at the shape, per chosen candidate (one floor per run and shape: as in
    `dashboard table`, Shapes and Roofline); None where the source is not a run other than the explain run, or does
    not load."""
    if src.kind != "run" or src.name == explain_name:
        return None
    try:
        sweep = loaders.source_data(src)
    except loaders.BAD_INPUT:
        return None
    rows = kernels.sweep_sol(sweep, shape)
    return rows[rows["candidate"].isin(candidates)] if rows is not None else None


def gap_parts(ktab: pd.DataFrame, calls: pd.DataFrame, shape: str, candidates: list[str]) -> pd.DataFrame:
    """Each call's time split into its kernels against the floor (kernels.kernel_gap_parts) at one shape."""
    return at_shape(kernels.kernel_gap_parts(ktab, calls), shape, candidates)


def findings(calls_here: pd.DataFrame, ktab: pd.DataFrame, shape: str, data) -> pd.DataFrame:
    """The findings (dashboard.model.kernel_findings, its rules and thresholds) of the calls at one shape."""
    return kernel_findings.findings(calls_here, ktab, shape, data.sm_count, data.run.get("compute_peak_tflops"))


def probe_points(data) -> pd.DataFrame | None:
    """The explain run's read-probe points with their bandwidth in TB/s (derived); None without a probe curve."""
    if data.curve is None:
        return None
    probe = data.curve.points()
    return probe.assign(tbps=probe["bytes"] / probe["us_monotone"] / 1e6)


def gap_by_load(calls: pd.DataFrame, candidate: str, workload) -> pd.DataFrame:
    """The candidate's gap to the floor per load, by cause (kernels.gap_by_load with the workload's weights)."""
    return kernels.gap_by_load(calls, candidate, scoring.family_weights(workload), workload.load_order)


@st.cache_resource(show_spinner=False, max_entries=16)
def _shape_report(path: str, mtime: float, shape: str, _data):
    """kernel_report.build_report once per (explain run file and its mtime, shape): it draws every figure (0.6 s),
    too slow for each rerun of the page. A built report is never modified, so one shared copy is fine."""
    return kernel_report.build_report(_data, shape=shape)   # the run's own workload


def shape_report(path: str, shape: str, data):
    """The shape's report of an explain run (`python -m dashboard report RUN --shape ...`), cached by file version."""
    return _shape_report(path, loaders.mtime(path), shape, data)
