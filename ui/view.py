"""The view a page works on: the sidebar's source picker (grouped, newest first, its state in the session and the
URL), the baseline / candidate pair, the gate's notices, and the View a page draws from. What a source is, how it
loads and which pair it shows come from dashboard.model.sources; every score from dashboard.model.runs.run_score (through the
correctness gate), through the caches of ui.loaders.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dashboard.model import runs as drun, scoring, sources, views, workloads
from datasets import devices
from ui import loaders, uploads
from ui.state import url_choice, url_selectbox, url_write
from ui.widgets import md_text

SOURCE_NOTE = sources.PROVENANCE
FLOOR_PARAM, INCLUDE = "below_floor", "include"


def official_note(wl, what: str = "this run") -> str | None:
    """None when the published muse tables (official 036, ledger, seed probes) apply to `wl`, else the line that
    says they do not (dashboard.model.workloads.official_only)."""
    return workloads.official_only(wl, what)


def source_list() -> list[sources.Source]:
    """dashboard.model.sources.list_sources: the published table, committed runs, $PROJLAB_EXTRA_RUNS, this session's
    uploads (and those the address names, ui.uploads.from_links)."""
    uploads.from_links()
    return sources.list_sources(loaders.RUNS_DIR, uploaded_tables=st.session_state.get("uploaded_tables", []),
                                uploaded_runs=st.session_state.get("uploaded_runs", []),
                                shown=st.session_state.get("upload_names", {}))


@dataclass
class View:
    label: str
    source: str                 # dashboard.model.sources: "published" | "measured" | "uploaded"
    kind: str                   # "table" | "run"
    path: str
    baseline: str
    candidate: str
    data: drun.RunData          # a run, or a table presented as one (dashboard.model.views.official_run_data)
    breakdown: scoring.ScoreBreakdown | None
    score_error: str | None
    table: pd.DataFrame | None = None  # runs.shape_table, built once inside pick()'s error handling
    gate: scoring.Gate | None = None   # the pair over the scored shapes (what the score needs)
    shape_gate: scoring.Gate | None = None  # the pair over every shape it has (tables, charts)
    include_below_floor: bool = False
    wide_table: pd.DataFrame | None = None  # views.wide_shapes of the pair, built once (pick() derives it)

    @property
    def note(self) -> str:
        return SOURCE_NOTE[self.source]

    @property
    def workload(self):
        """The workload of the run shown (a per-shape table: muse_bf16_proj, whose format it is)."""
        return drun.workload_of(self.data)

    @property
    def run(self) -> dict | None:
        return self.data.run if self.kind == "run" else None

    def shape_table(self) -> pd.DataFrame:
        """Long per-shape × candidate table with metrics, floors and SOL (dashboard.model.runs.shape_table)."""
        if self.table is None:
            self.table = drun.shape_table(self.data)
        return self.table

    def wide(self) -> pd.DataFrame:
        """views.wide_shapes of the pair (a copy: pages add columns to it)."""
        if self.wide_table is None:
            self.wide_table = views.wide_shapes(self.shape_table(), self.data.pairs, self.baseline, self.candidate,
                                                self.shape_gate)
        return self.wide_table.copy()




def _default_source(srcs: list[sources.Source]) -> str:
    first = loaders.default_run_path()  # open on the most complete committed run when there is one
    names = [s.name for s in srcs]
    return first.name if first is not None and first.name in names else names[0]


def current_source() -> sources.Source:
    """The source the sidebar shows (this session's choice, a ?source= link, else the default) for a page that has
    no source picker of its own (Kernels opens that run's explain data)."""
    srcs = source_list()
    name = url_choice("source", [s.name for s in srcs], _default_source(srcs), what="source")
    return sources.find_source(srcs, name)


def sources_in_order() -> tuple[list[sources.Source], dict[str, str]]:
    """Every source in picker order and what each option shows (dashboard.model.sources.picker: grouped by kind, newest
    first, the default marked)."""
    return _sources_in_order()[:2]


def _sources_in_order() -> tuple[list[sources.Source], dict[str, str], str]:
    """sources_in_order and the default source's name (one default_run_path for both)."""
    srcs = source_list()
    default = _default_source(srcs)
    return *sources.picker(srcs, loaders.run_metas(srcs), default), default


def source_text():
    """format_func for a picker of source names (Compare's runs): the grouped text each one shows."""
    srcs, shown = sources_in_order()
    labels = {s.name: s.label for s in srcs}
    return lambda name: shown.get(labels.get(name, name), name)


def _pair(box, src: sources.Source, rd: drun.RunData) -> tuple[str, str]:
    if src.kind == "table":
        return "baseline", sources.table_candidate(src)
    names = rd.candidates()
    base0, _ = sources.default_pair(rd)
    base = url_selectbox(box, "Baseline", names, "baseline", base0, what="baseline")
    others = [n for n in names if n != base] or names
    cand0 = sources.resolve_pair(rd, baseline=base)[1]
    cand = url_selectbox(box, "Candidate", others, "candidate", cand0, what="candidate")
    return base, cand


def _floor_toggle(box, gate: scoring.Gate) -> bool:
    """Shown only when the pair has results below the measured floor: they are left out unless included."""
    if not gate.below_floor:
        return False
    on = url_choice(FLOOR_PARAM, ["exclude", INCLUDE], "exclude") == INCLUDE
    st.session_state["below_floor_toggle"] = on
    value = box.toggle(f"Include {len(gate.below_floor)} result(s) below the measured HBM floor",
                       key="below_floor_toggle", help="Faster than the run's measured memory floor: an artifact of "
                       "the measurement, so left out of every score and ratio unless you include them.",
                       on_change=lambda: st.session_state.update(
                           _sel_below_floor=INCLUDE if st.session_state["below_floor_toggle"] else "exclude"))
    url_write(FLOOR_PARAM, INCLUDE if value else "exclude")
    return bool(value)


def _notice(selection: View) -> None:
    """The gate's verdict on the pair, where every source page shows it: an error when results are incorrect,
    failed or below the floor, a warning when shapes are merely unfinished."""
    if selection.gate is None or selection.gate.ok:
        if selection.breakdown is not None and selection.breakdown.below_floor_included:
            included = selection.breakdown.below_floor_included
            st.warning(f"Scored with {len(included)} result(s) below the measured HBM floor "
                       f"({md_text(', '.join(included[:3]))}), as asked: an artifact, not a speed.")
        return
    text = md_text(f"{selection.label}: {selection.candidate} vs {selection.baseline}: {selection.gate.message()}")
    if selection.gate.below_floor and not selection.include_below_floor:
        text += " — use the sidebar toggle to include them."
    (st.error if selection.gate.refused else st.warning)(text)


def pick(sidebar=True, probes_only_ok: bool = False) -> View:
    """Render the sidebar picker and return the chosen view; bad input → st.error and stop the page.

    The sidebar says what is shown (source, baseline, candidate) and keeps the three pickers in a popover under it:
    a closed popover's widgets keep their state, URL and callbacks like any other, but the browser mounts them only
    when it opens, so a first page needs no selectbox code (the largest piece of frontend code the first page asked
    for besides the chart's and the table's: ~20 files from the server, see tests/browser/test_browser.py).

    probes_only_ok: a run without results (`python -m profiler probe`) is fine for this page (Probes)."""
    srcs, shown, default = _sources_in_order()
    box = st.sidebar if sidebar else st
    choice = box.empty()   # what is shown, written once the pair is known
    pickers = box.popover("Change source or pair", icon=":material/swap_horiz:", width="stretch",
                          help="The source (a run file or a per-shape table), its baseline and its candidate.")
    name = url_selectbox(pickers, "Source", {s.name: s.label for s in srcs}, "source", default,
                         key="source", what="source", format_func=lambda label: shown.get(label, label),
                         help="Grouped by kind (published, plan sweeps, repeatability, tunes, surveys, explains, "
                              "uploads), newest first; each run as its date, label and candidates (the whole file "
                              "name is shown under 'Source'); ★ marks the run projlab opens on, the shipped plan's "
                              "latest full sweep. Type to filter.")
    src = sources.find_source(srcs, name)
    source_line = f"Source: **{md_text(shown.get(src.label, src.label))}**"
    if src.kind == "run":   # the option shows what tells runs apart; here the whole file name, wrapped
        source_line += f"  \n:small[:gray[{md_text(src.path.name)}]]"
    try:
        rd = loaders.source_data(src)
        if rd.results.empty:
            if probes_only_ok:
                choice.markdown(source_line)
                return View(src.label, src.provenance, src.kind, str(src.path), "", "", rd, None,
                            "the run has no results")
            raise ValueError(f"{src.path.name} has no results (a probe-only run? see the Probes page; an explain run? "
                             "see the Kernels page)")
        base, cand = _pair(pickers, src, rd)
        choice.markdown(f"{source_line}  \nBaseline: **{md_text(base)}** · candidate: **{md_text(cand)}**")
        excluded = loaders.derived(src, rd, base, cand, False)   # each read of the cache unpickles its tables again
        include = _floor_toggle(box, excluded[0])
        shape_gate, gate, breakdown, err, table, wide_table = (loaders.derived(src, rd, base, cand, True)
                                                               if include else excluded)
        if rd.status == "partial":
            box.warning("Partial run: interrupted; only what finished is shown.")
        selection = View(src.label, src.provenance, src.kind, str(src.path), base, cand, rd, breakdown, err,
                         table=table, gate=gate, shape_gate=shape_gate, include_below_floor=include, wide_table=wide_table)
    except loaders.BAD_INPUT as exc:
        choice.markdown(source_line)
        st.error(md_text(f"Cannot use {src.label}: {exc}"))
        st.stop()
    _workload_notice(box, selection)
    _notice(selection)
    return selection


def _workload_notice(box, selection: View) -> None:
    """Which workload the view is scored with; for a run that does not record one, that muse was assumed."""
    wl = selection.workload
    box.caption(f"Workload: **{md_text(wl.name)}** — {len(wl.family_order)} families "
                f"({md_text(', '.join(wl.family_order))}), {len(wl.load_order)} loads ({md_text(', '.join(wl.load_order))})")
    if selection.kind == "run" and selection.data.workload_note:
        box.info(md_text(selection.data.workload_note))


def caption_source(selection: View, what: str = "") -> None:
    st.caption(f"Source: **{md_text(selection.label)}** — {selection.note}. {what}")


def require_breakdown(selection: View):
    """The score breakdown, or stop the page (pick() has already said why there is none)."""
    if selection.breakdown is None:
        st.info("This page needs a score; see the message above.")
        st.stop()
    return selection.breakdown




def device_name(selection) -> str | None:
    """The device a view's numbers come from (datasets.devices): the run's, or the write-up's for a published
    source."""
    return devices.device_of(selection.run) if selection.kind == "run" else devices.WRITEUP_DEVICE


def memory_word(selection) -> str:
    """What a read probe reads on the view's device: "memory" on a CPU, "HBM" on a GPU."""
    return "memory" if selection.kind == "run" and devices.of_run(selection.run).is_cpu else "HBM"
