"""The app's loaders: each input file read once per (path, modification time) in this server's memory, and what
pages derive from a run (gates, score, shape tables, bootstrap CIs, reports) cached the same way. Committed runs,
extra runs and uploads go through the same loaders.

Nothing is cached on disk, so a changed computation in dashboard/ or datasets/ is always what the app shows after a
restart (tests/app/test_restart.py); every page's first visit on a warm server stays under 3 s on 2 cores without a
disk cache (tests/benchmarks/bench_pages.py).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.model import compare, noise, run_kinds, runs as drun, scoring, sources, views
from dashboard.documents import run_index
from datasets import (NEARBY_LOAD, RUNS_DIR, DatasetError, list_workloads, load_ledger, load_official, load_seed_probes,
                      load_workload)
from datasets.paths import OFFICIAL_036_CSV, SEED_LEDGER_CSV, SEED_PROBES_CSV, WORKLOAD_JSON
from datasets.runfile import RunFileError
from datasets.workload import resolve_workload

BAD_INPUT = (DatasetError, RunFileError, scoring.ScoringError, sources.SourceError, ValueError, KeyError, OSError)


def mtime(path) -> float:
    return Path(path).stat().st_mtime


# --- inputs: one cache each, keyed by path + mtime, so an edited file is re-read -----------------------------------
@st.cache_data(show_spinner=False)
def _workload(path: str, mtime: float):
    return load_workload(path)


def workload():
    """The default workload (muse_bf16_proj): what the published tables belong to. A page showing a run uses the
    run's own workload instead (View.workload, run_data(path).workload)."""
    return _workload(str(WORKLOAD_JSON), mtime(WORKLOAD_JSON))


def workload_names() -> list[str]:
    """The workloads of datasets/workloads/, by name (the pickers of the Shapes and Run pages)."""
    return list_workloads()


def named_workload(name: str):
    """A workload of datasets/workloads/ by name (the Shapes page's picker)."""
    path = resolve_workload(name)
    return _workload(str(path), mtime(path))


@st.cache_data(show_spinner=False)
def _official(path: str, mtime: float) -> pd.DataFrame:
    return load_official(path)


def official(path=None) -> pd.DataFrame:
    path = str(path or OFFICIAL_036_CSV)
    try:
        when = mtime(path)
    except OSError as exc:
        raise DatasetError(path, "file", f"cannot read: {exc.strerror or exc}") from None
    return _official(path, when)


@st.cache_data(show_spinner=False)
def _official_score(path: str, mtime: float, workload_path: str, workload_mtime: float) -> scoring.ScoreBreakdown:
    return scoring.score_official(official(path), workload())


def official_score() -> scoring.ScoreBreakdown:
    """The official 036 table's own score (published times; scoring.score_official) against the default workload,
    cached by both files (0.08-0.15 s to compute on 2 cores; the Overview shows it on every rerun)."""
    return _official_score(str(OFFICIAL_036_CSV), mtime(OFFICIAL_036_CSV), str(WORKLOAD_JSON), mtime(WORKLOAD_JSON))


def ledger() -> pd.DataFrame:
    return load_ledger(SEED_LEDGER_CSV)   # a small CSV (0.03-0.06 s on 2 cores), read by the Ledger page only


def seed_probes() -> pd.DataFrame:
    return load_seed_probes(SEED_PROBES_CSV)   # four rows (~2 ms)


@st.cache_data(show_spinner=False, max_entries=64)
def _run_data(path: str, mtime: float) -> drun.RunData:
    return drun.load_run_data(path)   # with the run's own workload (embedded, or muse assumed with a note)


def run_data(path) -> drun.RunData:
    """A validated run file as DataFrames (dashboard.model.runs.load_run_data), cached by path + mtime."""
    try:
        when = mtime(path)
    except OSError as exc:
        raise RunFileError(f"{Path(path).name}: cannot read: {exc.strerror or exc}") from None
    return _run_data(str(path), when)


def source_data(src: sources.Source) -> drun.RunData:
    """dashboard.model.sources.load through the caches above: a run file, or a per-shape table presented as a run."""
    if src.kind == "run":
        return run_data(src.path)
    return views.official_run_data(official(src.path), seed_probes(), src.path,
                                   candidate=sources.table_candidate(src))


# --- what each run is: the committed index, anything else read directly -------------------------------------------
def _read_meta(path: Path) -> run_kinds.RunMeta | None:
    try:
        return run_kinds.meta_of(run_data(path))
    except BAD_INPUT:
        return None


def run_metas(srcs: list[sources.Source]) -> dict[Path, run_kinds.RunMeta]:
    """dashboard.model.run_kinds.RunMeta of every run source: a committed run's from the run index, any other (a new run,
    an extra run, an upload) from the file itself; files that do not load are left out."""
    index = run_index.read(run_index.RUN_INDEX_JSON, RUNS_DIR)   # ~190 entries: 6 ms, not worth a cache
    return run_index.metas([s.path for s in srcs if s.kind == "run"], index, _read_meta)


def default_run_path() -> Path | None:
    """dashboard.model.run_kinds.default_run over the committed runs (the winner loaded through run_data to check it)."""
    committed = [sources.run_source(p) for p in drun.list_runs(RUNS_DIR)]
    return run_kinds.default_run(list(run_metas(committed).values()), opens=run_data)


# --- what pages derive from a run: cached like the run file -------------------------------------------------------
def _derive(data: drun.RunData, base: str, cand: str, include: bool) -> tuple:
    """(shape gate, score gate, ScoreBreakdown or None, why no score or None, shape table, wide per-shape table) of
    a pair: what every source page shows. A run naming an unknown family etc. raises here, inside the caller's
    error handling."""
    shape_gate = drun.pair_gate(data, base, cand, None, include, scored_only=False)
    gate = drun.pair_gate(data, base, cand, None, include)
    breakdown, err = None, None
    try:
        breakdown = drun.run_score(data, base, cand, None, include)
    except scoring.ScoringError as exc:
        err = str(exc)
    table = drun.shape_table(data)
    return shape_gate, gate, breakdown, err, table, views.wide_shapes(table, data.pairs, base, cand, shape_gate)


@st.cache_data(show_spinner=False, max_entries=64)
def _run_derived(path: str, mtime: float, base: str, cand: str, include: bool) -> tuple:
    return _derive(run_data(path), base, cand, include)


def derived(src: sources.Source, data: drun.RunData, base: str, cand: str, include: bool) -> tuple:
    """_derive for a pair, cached for a run file; a per-shape table (rebuilt from its cached CSV) is derived
    directly."""
    if src.kind != "run":
        return _derive(data, base, cand, include)
    return _run_derived(str(src.path), mtime(src.path), base, cand, include)


@st.cache_data(show_spinner=False, max_entries=64)
def _run_comparison(path: str, mtime: float, baseline: str, candidate: str, include: bool) -> compare.Comparison:
    data = run_data(path)
    return compare.compare_candidates(data.results, baseline, [candidate], Path(path).name,
                                      scoring.family_weights(data.workload), failures=data.failures,
                                      include_below_floor=include, gpu=noise.gpu_model(data),
                                      own=noise.own_for(data))   # a device without committed evidence: its own repeat


def run_comparison(selection) -> compare.Comparison:
    """Bootstrap CIs and verdicts of a view's (ui.view.View) score and load ratios (dashboard.model.compare, gated like
    the score), cached like the run file: thousands of resamples are too slow to redo on every widget change."""
    return _run_comparison(selection.path, mtime(selection.path), selection.baseline, selection.candidate,
                           selection.include_below_floor)


@st.cache_resource(show_spinner=False, max_entries=16)
def _report(kind: str, path: str, mtime: float, provenance: str, baseline: str, candidate: str, shape: str | None,
            include: bool):
    from dashboard.documents import report   # plotly figures and the HTML template: only the Reports page needs them

    src = sources.run_source(path) if kind == "run" else sources.table_source(path)
    return report.build(source_data(src), baseline, candidate, None, official(), source=provenance,
                        shape=shape, include_below_floor=include)


def report_for(selection, shape: str | None = None):
    """dashboard.documents.report.build for a view's pair (ui.view.View; whole run, or one shape), cached like the file it
    comes from: the bootstrap CIs and figures take most of a second to rebuild on every widget change."""
    return _report(selection.kind, selection.path, mtime(selection.path), selection.source, selection.baseline,
                   selection.candidate, shape, selection.include_below_floor)


def series_workload(kind: str, path):
    """The workload of a Compare series: a run's own, a per-shape table's muse_bf16_proj."""
    return run_data(path).workload if kind == "run" else workload()


def series_frame(specs: tuple) -> pd.DataFrame:
    """Compare series for (label, kind, path, column or candidate) specs, scored shapes only, through the caches:
    a table column (dashboard.model.compare.series_from_table) or a run's candidate with its failures (series_from_run)."""
    frames = []
    for label, kind, path, col in specs:
        if kind == "table":
            frames.append(compare.series_from_table(official(path), col, label, str(path)))
        else:
            frames.append(compare.series_from_run(run_data(path), col, label))
    both = pd.concat(frames, ignore_index=True)
    return both[both["load"] != NEARBY_LOAD].reset_index(drop=True)


@st.cache_resource(show_spinner=False, max_entries=16)
def _compared(specs: tuple, mtimes: tuple, reference: str, include: bool) -> compare.Comparison:
    # the Compare page pairs only series of one workload (workloads.mismatch), so the first one's weights apply
    weights = scoring.family_weights(series_workload(specs[0][1], specs[0][2]))
    return compare.compare(series_frame(specs), reference, weights, include_below_floor=include)


def compared(specs: tuple, reference: str, include: bool) -> compare.Comparison:
    """dashboard.model.compare.compare of the series (gated), cached by the files' mtimes: a thousand bootstrap
    resamples per shape are too slow to redo on every widget change."""
    return _compared(specs, tuple(mtime(path) for _, _, path, _ in specs), reference, include)
