"""Shared page plumbing: cached loaders (keyed by path + mtime), the sidebar source picker, uploads, errors.

A *source* is either a per-shape table in the official CSV format (the published 036 table, or an uploaded
CSV) or a run file (committed in datasets/runs/, named in $PROJLAB_EXTRA_RUNS, or uploaded). Pages get a
`View`: the chosen source, its baseline and candidate, and the score breakdown computed by dashboard/.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import runs as drun
from dashboard import compare, scoring, views
from datasets import RUNS_DIR, DatasetError, load_ledger, load_official, load_seed_probes, load_workload
from profiler.runfile import RunFileError

OFFICIAL_LABEL = "Official 036 table (published)"
UPLOAD_DIR = Path(tempfile.gettempdir()) / "projlab_uploads"
SOURCE_NOTE = {"published": "published (write-up, official run)", "measured": "measured (run file)",
               "uploaded": "uploaded table (as given)"}
BAD_INPUT = (DatasetError, RunFileError, scoring.ScoringError, ValueError, KeyError, OSError)


# --- cached loaders: the cache key is (path, mtime) so an edited file is re-read ------------------------------
def _mtime(path) -> float:
    return Path(path).stat().st_mtime


@st.cache_data(show_spinner=False)
def _workload(path: str | None, mtime: float):
    return load_workload(path)


def workload():
    from datasets.paths import WORKLOAD_JSON
    return _workload(None, _mtime(WORKLOAD_JSON))


@st.cache_data(show_spinner=False)
def _official(path: str, mtime: float) -> pd.DataFrame:
    return load_official(path)


def official(path=None) -> pd.DataFrame:
    from datasets.paths import OFFICIAL_036_CSV
    path = str(path or OFFICIAL_036_CSV)
    try:
        mtime = _mtime(path)
    except OSError as exc:
        raise DatasetError(path, "file", f"cannot read: {exc.strerror or exc}") from None
    return _official(path, mtime)


@st.cache_data(show_spinner=False)
def _ledger(path: str, mtime: float) -> pd.DataFrame:
    return load_ledger(path)


def ledger() -> pd.DataFrame:
    from datasets.paths import SEED_LEDGER_CSV
    return _ledger(str(SEED_LEDGER_CSV), _mtime(SEED_LEDGER_CSV))


@st.cache_data(show_spinner=False)
def _seed_probes(path: str, mtime: float) -> pd.DataFrame:
    return load_seed_probes(path)


def seed_probes() -> pd.DataFrame:
    from datasets.paths import SEED_PROBES_CSV
    return _seed_probes(str(SEED_PROBES_CSV), _mtime(SEED_PROBES_CSV))


@st.cache_data(show_spinner=False)
def _run_data(path: str, mtime: float) -> drun.RunData:
    return drun.load_run_data(path)


def run_data(path) -> drun.RunData:
    """A validated run file as DataFrames (dashboard.runs.load_run_data), cached by path + mtime."""
    try:
        mtime = _mtime(path)
    except OSError as exc:
        raise RunFileError(f"{Path(path).name}: cannot read: {exc.strerror or exc}") from None
    return _run_data(str(path), mtime)


# --- where runs come from --------------------------------------------------------------------------------------
def run_paths() -> list[Path]:
    """Committed runs, then any named in $PROJLAB_EXTRA_RUNS (files or folders, os.pathsep-separated), then
    uploads of this session."""
    paths = drun.list_runs(RUNS_DIR)
    for item in filter(None, os.environ.get("PROJLAB_EXTRA_RUNS", "").split(os.pathsep)):
        p = Path(item)
        paths += sorted(p.glob("*.json")) if p.is_dir() else [p]
    paths += [Path(p) for p in st.session_state.get("uploaded_runs", [])]
    return list(dict.fromkeys(paths))


def save_upload(uploaded) -> Path:
    """Keep an uploaded file on disk (content-addressed) so it flows through the same cached loaders."""
    data = uploaded.getvalue()
    UPLOAD_DIR.mkdir(parents=True, exist_ok=True)
    suffix = Path(uploaded.name).suffix.lower()
    path = UPLOAD_DIR / f"{Path(uploaded.name).stem}-{hashlib.sha256(data).hexdigest()[:10]}{suffix}"
    if not path.exists():
        path.write_bytes(data)
    return path


def _named(message: str, path: Path, name: str) -> str:
    return str(message).replace(str(path), name).replace(path.name, name)


def upload_widget(key: str = "upload") -> None:
    """File uploader for a run JSON or an official-format CSV; validated now, errors shown with st.error."""
    up = st.file_uploader("Upload a run file (.json) or a per-shape table (.csv: load,family,M,N,K,baseline_us,"
                          "candidate_us)", type=["json", "csv"], key=key)
    if up is None:
        return
    path = save_upload(up)
    try:
        if path.suffix == ".json":
            run_data(path)
            lst = st.session_state.setdefault("uploaded_runs", [])
        else:
            official(path)
            lst = st.session_state.setdefault("uploaded_tables", [])
    except BAD_INPUT as exc:
        st.error(f"Upload {up.name!r} rejected: {_named(exc, path, up.name)}")
        return
    if str(path) not in lst:
        lst.append(str(path))
    st.success(f"Loaded {up.name}; pick it in the sidebar source list.")


# --- the view a page works on -----------------------------------------------------------------------------------
@dataclass
class View:
    label: str
    source: str                 # "published" | "measured" | "uploaded"
    kind: str                   # "table" | "run"
    path: str
    baseline: str
    candidate: str
    data: drun.RunData          # a run, or a table presented as one (dashboard.views.official_run_data)
    breakdown: scoring.ScoreBreakdown | None
    score_error: str | None
    table: pd.DataFrame | None = None  # runs.shape_table, built once inside view()'s error handling

    @property
    def note(self) -> str:
        return SOURCE_NOTE[self.source]

    @property
    def run(self) -> dict | None:
        return self.data.run if self.kind == "run" else None

    def shape_table(self) -> pd.DataFrame:
        """Long per-shape × candidate table with metrics, floors and SOL (dashboard.runs.shape_table)."""
        if self.table is None:
            self.table = drun.shape_table(self.data, workload())
        return self.table

    def wide(self) -> pd.DataFrame:
        return views.wide_shapes(self.shape_table(), self.data.pairs, self.baseline, self.candidate)


def sources() -> dict[str, tuple[str, str]]:
    """Display label → (kind, path)."""
    from datasets.paths import OFFICIAL_036_CSV
    out = {OFFICIAL_LABEL: ("table", str(OFFICIAL_036_CSV))}
    for p in st.session_state.get("uploaded_tables", []):
        out[f"upload: {Path(p).name}"] = ("table", p)
    for p in run_paths():
        out[f"run: {p.name}"] = ("run", str(p))
    return out


def sticky_select(box, label: str, options: list[str], key: str, default: int = 0, **kw) -> str:
    """A selectbox whose choice survives page switches (Streamlit drops a page's widget state when it leaves)."""
    keep = f"_keep_{key}"
    if key not in st.session_state and st.session_state.get(keep) in options:
        st.session_state[key] = st.session_state[keep]
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]
    if key in st.session_state:
        value = box.selectbox(label, options, key=key, **kw)
    else:
        value = box.selectbox(label, options, index=default, key=key, **kw)
    st.session_state[keep] = value
    return value


@st.cache_data(show_spinner=False)
def _run_comparison(path: str, mtime: float, baseline: str, candidate: str) -> "compare.Comparison":
    data = run_data(path)
    weights = scoring.family_weights(workload())
    return compare.compare_candidates(data.results, baseline, [candidate], Path(path).name, weights)


def run_comparison(v: "View") -> "compare.Comparison":
    """Bootstrap CIs and verdicts of a run's score and load ratios (dashboard.compare), cached like the run file
    they come from: thousands of resamples are too slow to redo on every widget change."""
    return _run_comparison(v.path, _mtime(v.path), v.baseline, v.candidate)


@st.cache_data(show_spinner=False)
def _default_run(key: tuple) -> str | None:
    found = drun.default_run([Path(p) for p, _ in key], workload())
    return str(found) if found else None


def default_run_path() -> Path | None:
    """dashboard.runs.default_run over the committed runs, cached by (path, mtime) of every file."""
    key = tuple((str(p), _mtime(p)) for p in drun.list_runs(RUNS_DIR))
    found = _default_run(key)
    return Path(found) if found else None


def view(sidebar=True, probes_only_ok: bool = False) -> View:
    """Render the sidebar picker and return the chosen view; bad input → st.error and stop the page.

    probes_only_ok: a run without results (`python -m profiler probe`) is fine for this page (Probes)."""
    sources_ = sources()
    labels = list(sources_)
    box = st.sidebar if sidebar else st
    first = default_run_path()  # open on the most complete committed run when there is one
    label_first = f"run: {first.name}" if first else None
    default = labels.index(label_first) if label_first in labels else 0
    label = sticky_select(box, "Source", labels, "source", default,
                          help="Published official table, or a measured run.")
    kind, path = sources_[label]
    try:
        v = _table_view(label, path) if kind == "table" else _run_view(label, path, box, probes_only_ok)
        if v.data.results.empty:
            return v
        v.shape_table()  # a run naming an unknown family etc. fails here, as an st.error, not in a page
        v.wide()
        return v
    except BAD_INPUT as exc:
        st.error(f"Cannot use {label}: {exc}")
        st.stop()


def _table_view(label: str, path: str) -> View:
    table = official(path)
    source = "published" if label == OFFICIAL_LABEL else "uploaded"
    name = views.OFFICIAL_CANDIDATE if source == "published" else "candidate"
    data = views.official_run_data(table, seed_probes(), Path(path), candidate=name)
    bd = scoring.score_official(table, workload())
    return View(label, source, "table", path, "baseline", name, data, bd, None)


def _run_view(label: str, path: str, box, probes_only_ok: bool = False) -> View:
    data = run_data(path)
    cands = data.candidates()
    if not cands:
        if probes_only_ok:
            return View(label, "measured", "run", path, "", "", data, None, "the run has no results")
        raise ValueError(f"{Path(path).name} has no results (a probe-only run? see the Probes page; an explain run? "
                         "see the Kernels page)")
    base_default = "baseline" if "baseline" in cands else cands[0]
    base = sticky_select(box, "Baseline", cands, "baseline", cands.index(base_default))
    others = [c for c in cands if c != base] or cands
    cand = sticky_select(box, "Candidate", others, "candidate", len(others) - 1)
    bd, err = None, None
    try:
        bd = drun.run_score(data, base, cand, workload())
    except scoring.ScoringError as exc:
        err = str(exc)
    if data.status == "partial":
        box.warning("Partial run: interrupted; only what finished is shown.")
    return View(label, "measured", "run", path, base, cand, data, bd, err)


def caption_source(v: View, what: str = "") -> None:
    st.caption(f"Source: **{v.label}** — {v.note}. {what}")


def require_breakdown(v: View):
    """The score breakdown, or an explanation (partial run / missing shapes) and stop."""
    if v.breakdown is None:
        st.warning(f"{v.label}: cannot score {v.candidate} against {v.baseline}: {v.score_error}")
        st.stop()
    return v.breakdown


def ratio_ci_columns(point: str = "ratio", label: str = "ratio × (derived)") -> dict:
    """Column labels for a ratio (or score) and the 95% bootstrap CI dashboard.compare computed around it."""
    num = st.column_config.NumberColumn
    return {point: num(label, format="%.4f"), "ci_low": num("95% CI low", format="%.4f"),
            "ci_high": num("95% CI high", format="%.4f")}


def shape_ratio_columns(v: View) -> dict:
    """Column labels for dashboard.views.wide_shapes' times and ratios: the per-shape CI in a run file belongs to
    the median of the paired per-round ratios (ratio_paired), not to the ratio of the two medians (ratio)."""
    t = "measured" if v.kind == "run" else "published" if v.source == "published" else "uploaded"
    num = st.column_config.NumberColumn
    return {"baseline_us": num(f"{v.baseline} µs ({t})", format="%.3f"),
            "candidate_us": num(f"{v.candidate} µs ({t})", format="%.3f"),
            "ratio": num("ratio of medians × (derived)", format="%.4f"),
            "ratio_paired": num("median paired ratio × (measured pairs)", format="%.4f"),
            "ratio_ci_low": num("paired ratio CI low", format="%.4f"),
            "ratio_ci_high": num("paired ratio CI high", format="%.4f")}


def download_csv(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    st.download_button(label, df.to_csv(index=False).encode(), file_name=name, mime="text/csv", key=f"dl-{name}")
