"""Shared page plumbing: cached loaders (keyed by path + mtime), the sidebar picker whose state lives in the URL,
uploads, and the gate's notices. What a source is, how it loads and which pair it shows come from
dashboard.sources; every score from dashboard.runs.run_score (through the correctness gate).

State: the sidebar's source, baseline and candidate (and a page's main selection, via url_selectbox /
url_multiselect) are kept in st.session_state, so they survive page switches, and in the URL query
(?source=<file name>&baseline=<name>&candidate=<name>), so a reload or a shared link reproduces the view. A URL
value that does not exist gets an st.warning and the default instead.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import compare, noise, run_kinds, runs as drun, scoring, sources, views, workloads
from datasets import NEARBY_LOAD, RUNS_DIR, DatasetError, load_ledger, load_official, load_seed_probes, load_workload
from datasets.runfile import RunFileError

SOURCE_NOTE = sources.PROVENANCE
BAD_INPUT = (DatasetError, RunFileError, scoring.ScoringError, sources.SourceError, ValueError, KeyError, OSError)
# Uploads: the largest committed run file is 1.1 MB (a tune log with every sample); 16 MB is room for ten times
# that while keeping a stray upload from filling the server's memory or disk.
MAX_UPLOAD_MB = 16
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024
FLOOR_PARAM, INCLUDE = "below_floor", "include"
RED = "color: #d62728; font-weight: 600"


# --- cached loaders: the cache key is (path, mtime) so an edited file is re-read ------------------------------
def _mtime(path) -> float:
    return Path(path).stat().st_mtime


@st.cache_data(show_spinner=False)
def _workload(path: str | None, mtime: float):
    return load_workload(path)


def workload():
    """The default workload (muse_bf16_proj): what the published tables belong to. A page showing a run uses the
    run's own workload instead (View.workload, run_data(path).workload)."""
    from datasets.paths import WORKLOAD_JSON
    return _workload(None, _mtime(WORKLOAD_JSON))


@st.cache_data(show_spinner=False)
def _named_workload(name: str, mtime: float):
    return load_workload(name)


def named_workload(name: str):
    """A workload of datasets/workloads/ by name (the Shapes page's picker), cached by the file's mtime."""
    from datasets.workload import resolve_workload
    return _named_workload(name, _mtime(resolve_workload(name)))


def official_note(wl, what: str = "this run") -> str | None:
    """None when the published muse tables (official 036, ledger, seed probes) apply to `wl`, else the line that
    says they do not (dashboard.workloads.official_only)."""
    return workloads.official_only(wl, what)


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


@st.cache_data(show_spinner=False, persist="disk")
def _official_score(path: str, mtime: float, workload_mtime: float, code: str) -> scoring.ScoreBreakdown:
    # On disk like the committed runs' derived tables: the published table and the default workload are files of
    # the checkout, so their score survives a server restart (0.04-0.13 s of the first page on 2 cores), keyed by
    # both files and the scoring code.
    return scoring.score_official(official(path), workload())


def official_score() -> scoring.ScoreBreakdown:
    """The official 036 table's own score (published times; scoring.score_official) against the default workload."""
    from datasets.paths import OFFICIAL_036_CSV, WORKLOAD_JSON
    return _official_score(str(OFFICIAL_036_CSV), _mtime(OFFICIAL_036_CSV), _mtime(WORKLOAD_JSON),
                           _score_code())


@st.cache_data(show_spinner=False)
def _score_code() -> str:
    from datasets import tables, workload as workload_module
    return _code(scoring, tables, workload_module)


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
    return drun.load_run_data(path)   # with the run's own workload (embedded, or muse assumed with a note)


@st.cache_data(show_spinner=False)
def _run_data_code() -> str:
    """The disk key of _committed_run_data: the sources that read, validate and tabulate a run file."""
    from datasets import jsonfile, runfile, workload as workload_module
    from dashboard import metrics, roofline
    return _code(drun, scoring, metrics, roofline, runfile, workload_module, jsonfile)


@st.cache_data(show_spinner=False, persist="disk")
def _committed_run_data(path: str, mtime: float, code: str) -> drun.RunData:
    # On disk for committed runs only, like _committed_derived: a restarted server's first page reads the default
    # run back as a pickle (~5 ms) instead of parsing and validating its JSON (~40 ms on 2 cores).
    return drun.load_run_data(path)


def run_data(path) -> drun.RunData:
    """A validated run file as DataFrames (dashboard.runs.load_run_data), cached by path + mtime: on disk for a
    committed run, in memory for anything else (an upload's data never leaves its session)."""
    try:
        mtime = _mtime(path)
    except OSError as exc:
        raise RunFileError(f"{Path(path).name}: cannot read: {exc.strerror or exc}") from None
    if _committed(path):
        return _committed_run_data(str(path), mtime, _run_data_code())
    return _run_data(str(path), mtime)


def source_data(src: sources.Source) -> drun.RunData:
    """dashboard.sources.load through the caches above: a run file, or a per-shape table presented as a run."""
    if src.kind == "run":
        return run_data(src.path)
    table = official(src.path)
    return views.official_run_data(table, seed_probes(), src.path, candidate=sources.table_candidate(src))


# --- where sources come from -------------------------------------------------------------------------------------
def source_list() -> list[sources.Source]:
    """dashboard.sources.list_sources: the published table, committed runs, $PROJLAB_EXTRA_RUNS, this session's
    uploads."""
    return sources.list_sources(RUNS_DIR, uploaded_tables=st.session_state.get("uploaded_tables", []),
                                uploaded_runs=st.session_state.get("uploaded_runs", []),
                                shown=st.session_state.get("upload_names", {}))


def _code(*modules) -> str:
    """A digest of the modules' source files: part of a disk-cache key, so a changed computation is never read
    back from an older server's cache."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


@st.cache_data(show_spinner=False)
def _meta_code() -> str:
    return _code(run_kinds, drun)


@st.cache_data(show_spinner=False, persist="disk")
def _run_meta_on_disk(path: str, mtime: float, code: str) -> run_kinds.RunMeta | None:
    # persist="disk" (Streamlit's cache under ~/.streamlit/cache): a run file is never overwritten, so what it is
    # survives a server restart, keyed by path + mtime + the classifying code; the first page of a restarted server
    # then does not parse every committed run again (0.5-1 s on 2 cores for the 108 committed runs), only new ones.
    return run_kinds.run_meta(path)


@st.cache_data(show_spinner=False)
def _run_meta_in_memory(path: str, mtime: float) -> run_kinds.RunMeta | None:
    return run_kinds.run_meta(path)


# Committed runs' RunMetas already read in this server process, by (path, mtime): the source picker asks for all
# of them (~130) several times per page run, and a plain dict answers each ask without hashing its arguments the
# way st.cache_data does (0.3 s of the first page on 2 cores).
_COMMITTED_METAS: dict[tuple[str, float], run_kinds.RunMeta | None] = {}


def _run_meta(path: str, mtime: float) -> run_kinds.RunMeta | None:
    """run_kinds.run_meta, cached: on disk for committed runs and the files named in $PROJLAB_EXTRA_RUNS, in memory
    for anything else (an upload's facts never leave its session)."""
    if _committed(path):
        key = (path, mtime)
        if key not in _COMMITTED_METAS:
            _COMMITTED_METAS[key] = _run_meta_on_disk(path, mtime, _meta_code())
        return _COMMITTED_METAS[key]
    if path in _extra_paths(os.environ.get(sources.EXTRA_RUNS_ENV, "")):
        # the operator's own files, not uploads: read back on a restarted server instead of parsed again (the
        # browser test's extra run: 0.03 s of a fresh server's first page on 2 cores)
        return _run_meta_on_disk(path, mtime, _meta_code())
    return _run_meta_in_memory(path, mtime)


@functools.lru_cache(maxsize=8)
def _extra_paths(value: str) -> frozenset[str]:
    """The run files $PROJLAB_EXTRA_RUNS names (its value as the key: the variable is read on every lookup)."""
    return frozenset(str(p) for p in sources.extra_run_paths(value))


# The committed runs' metas as one dict, by the listing (paths + mtimes): a page run asks for them three times
# (the picker, its default, the default run), ~150 lookups each.
_COMMITTED_LISTINGS: dict[tuple, dict] = {}


@st.cache_data(show_spinner=False, persist="disk")
def _listing_on_disk(listing: tuple[tuple[str, float], ...], code: str) -> dict[str, run_kinds.RunMeta]:
    # One disk entry for the whole committed listing: a restarted server reads one file instead of one per run
    # (~150, each a hash of its arguments, a read and an unpickle); a new run file makes a new listing, whose other
    # runs still come from their own entries.
    metas = {p: _run_meta(p, m) for p, m in listing}
    return {p: meta for p, meta in metas.items() if meta is not None}


def run_metas(srcs: list[sources.Source] | None = None) -> dict[Path, run_kinds.RunMeta]:
    """dashboard.run_kinds.run_meta of every run source (kind, date, workload, candidates), cached by path + mtime;
    unreadable files are left out."""
    out = {}
    runs = []
    for src in srcs if srcs is not None else source_list():
        if src.kind == "run":
            try:
                runs.append((src.path, _mtime(src.path)))
            except OSError:
                continue
    committed = tuple((p, m) for p, m in runs if _committed(str(p)))
    if committed not in _COMMITTED_LISTINGS:
        metas = _listing_on_disk(tuple((str(p), m) for p, m in committed), _meta_code())
        _COMMITTED_LISTINGS.clear()   # one listing at a time: a new run file makes a new key
        _COMMITTED_LISTINGS[committed] = {p: metas[str(p)] for p, _ in committed if str(p) in metas}
        # and per file, for the lookups by path (the default run's choice), which would go to disk again
        _COMMITTED_METAS.update({(str(p), m): metas.get(str(p)) for p, m in committed})
    known, listed = _COMMITTED_LISTINGS[committed], set(committed)   # a set: ~150 lookups per call
    for path, mtime in runs:
        meta = known.get(path) if (path, mtime) in listed else _run_meta(str(path), mtime)
        if meta is not None:
            out[path] = meta
    return out


# The default run by the committed listing it was chosen from (paths + mtimes): pages ask for it more than once.
_DEFAULT_RUNS: dict[tuple, Path | None] = {}


def default_run_path() -> Path | None:
    """dashboard.run_kinds.default_run over the committed runs' cached RunMetas (one raw read per file)."""
    srcs = [sources.run_source(p) for p in drun.list_runs(RUNS_DIR)]
    key = tuple((str(m.path), _mtime(m.path)) for m in run_metas(srcs).values())
    if key not in _DEFAULT_RUNS:
        _DEFAULT_RUNS.clear()   # one listing at a time, as _COMMITTED_LISTINGS
        _DEFAULT_RUNS[key] = _default_run(key, _meta_code() + _run_data_code())
    return _DEFAULT_RUNS[key]


@st.cache_data(show_spinner=False, persist="disk")
def _default_run(key: tuple, code: str) -> Path | None:
    # On disk, keyed by the committed listing (paths + mtimes) and the code that ranks and loads runs: a restarted
    # server's first page otherwise ranks the listing and loads the winner to check it opens (0.04 s on 2 cores).
    return run_kinds.default_run([_run_meta(p, mtime) for p, mtime in key], opens=run_data)


# --- uploads: validated in the uploader's callback, so the sidebar (drawn first) already lists them ------------
def _upload_dir() -> Path:
    """This session's upload folder. A TemporaryDirectory removes itself when the session's state is dropped
    (the session ended) and at interpreter exit, so uploads never outlive their session."""
    tmp = st.session_state.get("_upload_tmp")
    if tmp is None or not Path(tmp.name).is_dir():
        tmp = tempfile.TemporaryDirectory(prefix="projlab-upload-")
        st.session_state["_upload_tmp"] = tmp
    return Path(tmp.name)


def save_upload(name: str, data: bytes) -> Path:
    """Keep an upload on disk (dashboard.sources.upload_name: content hash + sanitised name) so it flows through the
    same cached loaders."""
    path = _upload_dir() / sources.upload_name(name, hashlib.sha256(data).hexdigest())
    if not path.exists():
        path.write_bytes(data)
    return path


def _named(message: str, path: Path, name: str) -> str:
    return str(message).replace(str(path), name).replace(path.name, name)


def take_upload(name: str, data: bytes) -> tuple[bool, str]:
    """Validate an upload and list it as a source (and select it); (ok, the message to show). A rejected file
    is deleted and never listed."""
    shown = sources.display_name(name)
    if len(data) > MAX_UPLOAD_BYTES:
        return False, (f"Upload {shown!r} rejected: {len(data):,} bytes is over the {MAX_UPLOAD_BYTES:,}-byte "
                       f"({MAX_UPLOAD_BYTES / 2**20:g} MB) limit")
    suffix = Path(shown).suffix.lower()
    if suffix not in (".json", ".csv"):
        return False, f"Upload {shown!r} rejected: expected a run file (.json) or a per-shape table (.csv)"
    path = save_upload(name, data)
    try:
        if suffix == ".json":
            run_data(path)
            kind, src = "uploaded_runs", sources.run_source(path, uploaded=True, shown=shown)
        else:
            official(path)
            kind, src = "uploaded_tables", sources.table_source(path, uploaded=True, shown=shown)
    except BAD_INPUT as exc:
        path.unlink(missing_ok=True)
        return False, f"Upload {shown!r} rejected: {_named(exc, path, shown)}"
    listed = st.session_state.setdefault(kind, [])
    if str(path) not in listed:
        listed.append(str(path))
    st.session_state.setdefault("upload_names", {})[str(path)] = shown
    st.session_state["_sel_source"] = src.name
    chosen = st.session_state.get("_sel_runs")   # Compare shows it too, beside the sources already chosen there
    if chosen is not None and src.name not in chosen:
        st.session_state["_sel_runs"] = [*chosen, src.name]
    return True, (f"Loaded {shown}: it is now the selected source ({src.label!r} in the sidebar) on every page of "
                  "this browser session, Compare included.")


def _on_upload(key: str) -> None:
    up = st.session_state.get(key)
    if up is not None:
        st.session_state[f"_upload_msg_{key}"] = take_upload(up.name, up.getvalue())


def upload_widget(key: str = "upload") -> None:
    """File uploader for a run JSON or an official-format CSV; validated before the page reruns. The size limit is
    written on the page, not only in the widget's tooltip."""
    st.file_uploader("Upload a run file (.json) or a per-shape table (.csv: load,family,M,N,K,baseline_us,"
                     "candidate_us)", type=["json", "csv"], key=key, max_upload_size=MAX_UPLOAD_MB,
                     on_change=_on_upload, args=(key,))
    st.caption(f"At most {MAX_UPLOAD_MB} MB per file ({MAX_UPLOAD_BYTES:,} bytes; the largest committed run file is "
               "1.1 MB); a larger file is refused before it is read. An upload stays in this browser session.")
    msg = st.session_state.get(f"_upload_msg_{key}")
    if msg is not None and st.session_state.get(key) is not None:
        (st.success if msg[0] else st.error)(msg[1])


# --- state in the session and the URL ---------------------------------------------------------------------------
def url_choice(param: str, names: list[str], default: str, what: str | None = None) -> str:
    """The current value of `param` among `names`: a URL value that changed since projlab last wrote it (a link,
    a reload, an edited address) wins; else this session's choice; else `default`. An unknown URL value is
    reported with st.warning and replaced by the default."""
    state = st.session_state
    q = st.query_params.get(param)
    chosen = state.get(f"_sel_{param}")
    if q is not None and q != state.get(f"_url_{param}"):
        if q in names:
            chosen = q
        else:
            fallback = chosen if chosen in names else default
            st.warning(sources.missing_upload(q) if param == "source" and sources.missing_upload(q) else
                       f"The address asks for {what or param} {q!r}, which is not available here; showing "
                       f"{fallback!r} instead.")
            chosen = fallback
    if chosen not in names:
        chosen = default
    state[f"_sel_{param}"] = chosen
    return chosen


def url_write(param: str, value) -> None:
    st.query_params[param] = value
    st.session_state[f"_url_{param}"] = value


def _picked(key: str, param: str, by_label: dict) -> None:
    st.session_state[f"_sel_{param}"] = by_label[st.session_state[key]]


def url_selectbox(box, label: str, options: dict[str, str] | list[str], param: str, default: str | None = None,
                  key: str | None = None, what: str | None = None, **kw) -> str:
    """A selectbox bound to ?param=<name>: `options` maps the URL name → the label shown (or is a list of names
    shown as they are). Returns the chosen name."""
    options = dict(options) if isinstance(options, dict) else {o: str(o) for o in options}
    names = list(options)
    name = url_choice(param, names, default if default in options else names[0], what)
    key = key or param
    # Always (re)seed the widget: after a page switch the key still holds the old page's value, but the new page's
    # widget is a different one and would otherwise start at its first option (the source reset on page switch).
    st.session_state[key] = options[name]
    box.selectbox(label, list(options.values()), key=key, on_change=_picked,
                  args=(key, param, {v: k for k, v in options.items()}), **kw)
    url_write(param, name)
    return name


def _picked_many(key: str, param: str) -> None:
    st.session_state[f"_sel_{param}"] = list(st.session_state[key])


def url_multiselect(box, label: str, options: list[str], param: str, default: list[str], key: str | None = None,
                    **kw) -> list[str]:
    """A multiselect bound to ?param=a&param=b; unknown URL values are dropped with st.warning."""
    state, key = st.session_state, key or param
    q = st.query_params.get_all(param)
    chosen = state.get(f"_sel_{param}")
    if q and q != state.get(f"_url_{param}"):
        unknown = [v for v in q if v not in options]
        if unknown:
            st.warning(f"The address asks for {', '.join(map(repr, unknown))}, not available here; left out.")
        chosen = [v for v in q if v in options]
    chosen = [v for v in chosen if v in options] if chosen is not None else []
    chosen = chosen or [v for v in default if v in options]   # nothing left of the old choice: the default
    state[f"_sel_{param}"] = chosen
    state[key] = chosen  # reseeded every run, as in url_selectbox
    box.multiselect(label, options, key=key, on_change=_picked_many, args=(key, param), **kw)
    url_write(param, chosen)
    return chosen


# --- the view a page works on -----------------------------------------------------------------------------------
@dataclass
class View:
    label: str
    source: str                 # dashboard.sources: "published" | "measured" | "uploaded"
    kind: str                   # "table" | "run"
    path: str
    baseline: str
    candidate: str
    data: drun.RunData          # a run, or a table presented as one (dashboard.views.official_run_data)
    breakdown: scoring.ScoreBreakdown | None
    score_error: str | None
    table: pd.DataFrame | None = None  # runs.shape_table, built once inside view()'s error handling
    gate: scoring.Gate | None = None   # the pair over the scored shapes (what the score needs)
    shape_gate: scoring.Gate | None = None  # the pair over every shape it has (tables, charts)
    include_below_floor: bool = False
    wide_table: pd.DataFrame | None = None  # views.wide_shapes of the pair, built once (view() derives it)

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
        """Long per-shape × candidate table with metrics, floors and SOL (dashboard.runs.shape_table)."""
        if self.table is None:
            self.table = drun.shape_table(self.data)
        return self.table

    def wide(self) -> pd.DataFrame:
        """views.wide_shapes of the pair (a copy: pages add columns to it)."""
        if self.wide_table is None:
            self.wide_table = views.wide_shapes(self.shape_table(), self.data.pairs, self.baseline, self.candidate,
                                                self.shape_gate)
        return self.wide_table.copy()


@st.cache_data(show_spinner=False)
def _comparison_code() -> str:
    return _code(compare, noise, scoring, drun)


def _comparison(path: str, baseline: str, candidate: str, include: bool) -> "compare.Comparison":
    data = run_data(path)
    weights = scoring.family_weights(data.workload)
    return compare.compare_candidates(data.results, baseline, [candidate], Path(path).name, weights,
                                      failures=data.failures, include_below_floor=include,
                                      gpu=noise.gpu_model(data))


@st.cache_data(show_spinner=False)
def _run_comparison(path: str, mtime: float, baseline: str, candidate: str, include: bool) -> "compare.Comparison":
    return _comparison(path, baseline, candidate, include)


@st.cache_data(show_spinner=False, persist="disk")
def _committed_comparison(path: str, mtime: float, baseline: str, candidate: str, include: bool,
                          code: str) -> "compare.Comparison":
    # On disk, like _run_meta_on_disk, for committed runs only (an upload's numbers never leave its session): the
    # bootstrap (0.4-0.6 s, the slowest step of the first page) survives a server restart; `code` (the compare,
    # scoring and runs sources) keeps a changed computation from being read back.
    return _comparison(path, baseline, candidate, include)


def _derive(data: drun.RunData, base: str, cand: str, include: bool) -> tuple:
    """(shape gate, score gate, ScoreBreakdown or None, why no score or None, shape table, wide per-shape table) of
    a pair: what every source page shows. A run naming an unknown family etc. raises here, inside view()'s error handling."""
    shape_gate = drun.pair_gate(data, base, cand, None, include, scored_only=False)
    gate = drun.pair_gate(data, base, cand, None, include)
    bd, err = None, None
    try:
        bd = drun.run_score(data, base, cand, None, include)
    except scoring.ScoringError as exc:
        err = str(exc)
    table = drun.shape_table(data)
    return shape_gate, gate, bd, err, table, views.wide_shapes(table, data.pairs, base, cand, shape_gate)


@st.cache_data(show_spinner=False)
def _derived_code() -> str:
    """The disk key of _committed_derived: the sources of what derives it, this file (_derive's shape) included."""
    return _code(scoring, drun, views, sys.modules[__name__])


@st.cache_data(show_spinner=False, persist="disk")
def _committed_derived(path: str, mtime: float, base: str, cand: str, include: bool, code: str) -> tuple:
    # On disk for committed runs only, like _committed_comparison: the gates, score and shape table (0.4-0.6 s of
    # a first page on 2 cores) survive a server restart, keyed by the file, the pair and the computing code.
    return _derive(run_data(path), base, cand, include)


@st.cache_data(show_spinner=False)
def _run_derived(path: str, mtime: float, base: str, cand: str, include: bool) -> tuple:
    return _derive(run_data(path), base, cand, include)


def derived(src: sources.Source, data: drun.RunData, base: str, cand: str, include: bool) -> tuple:
    """_derive for the view's pair, cached: on disk for a committed run, in memory for an upload; a per-shape table
    (built in memory from its CSV each time) is derived directly."""
    if src.kind != "run":
        return _derive(data, base, cand, include)
    path, mtime = str(src.path), _mtime(src.path)
    if _committed(path):
        return _committed_derived(path, mtime, base, cand, include, _derived_code())
    return _run_derived(path, mtime, base, cand, include)


def _committed(path) -> bool:
    return _committed_path(str(path))


@functools.lru_cache(maxsize=4096)
def _committed_path(path: str) -> bool:
    """Whether `path` is a file of the committed run folder (resolved once per path: the picker asks per run)."""
    try:
        return Path(path).resolve().parent == Path(RUNS_DIR).resolve()
    except OSError:
        return False


def run_comparison(v: "View") -> "compare.Comparison":
    """Bootstrap CIs and verdicts of a run's score and load ratios (dashboard.compare, gated like the score),
    cached like the run file they come from: thousands of resamples are too slow to redo on every widget change."""
    if _committed(v.path):
        return _committed_comparison(v.path, _mtime(v.path), v.baseline, v.candidate, v.include_below_floor,
                                     _comparison_code())
    return _run_comparison(v.path, _mtime(v.path), v.baseline, v.candidate, v.include_below_floor)


@st.cache_resource(show_spinner=False, max_entries=16)
def _report(kind: str, path: str, mtime: float, provenance: str, baseline: str, candidate: str, shape: str | None,
            include: bool):
    from dashboard import report

    src = sources.run_source(path) if kind == "run" else sources.table_source(path)
    return report.build(source_data(src), baseline, candidate, None, official(), source=provenance,
                        shape=shape, include_below_floor=include)


def report_for(v: "View", shape: str | None = None):
    """dashboard.report.build for the view (whole run, or one shape), cached like the file it comes from: the
    bootstrap CIs and figures take most of a second to rebuild on every widget change."""
    return _report(v.kind, v.path, _mtime(v.path), v.source, v.baseline, v.candidate, shape, v.include_below_floor)


def series_workload(kind: str, path):
    """The workload of a Compare series: a run's own, a per-shape table's muse_bf16_proj."""
    return run_data(path).workload if kind == "run" else workload()


def series_frame(specs: tuple) -> pd.DataFrame:
    """Compare series for (label, kind, path, column or candidate) specs, scored shapes only, through the caches:
    a table column (dashboard.compare.series_from_table) or a run's candidate with its failures (series_from_run)."""
    frames = []
    for label, kind, path, col in specs:
        if kind == "table":
            frames.append(compare.series_from_table(official(path), col, label, str(path)))
        else:
            frames.append(compare.series_from_run(run_data(path), col, label))
    both = pd.concat(frames, ignore_index=True)
    return both[both["load"] != NEARBY_LOAD].reset_index(drop=True)


@st.cache_resource(show_spinner=False, max_entries=16)
def _compared(specs: tuple, mtimes: tuple, reference: str, eps: float, include: bool) -> "compare.Comparison":
    # the Compare page pairs only series of one workload (workloads.mismatch), so the first one's weights apply
    weights = scoring.family_weights(series_workload(specs[0][1], specs[0][2]))
    return compare.compare(series_frame(specs), reference, weights, eps, include_below_floor=include)


def compared(specs: tuple, reference: str, eps: float, include: bool) -> "compare.Comparison":
    """dashboard.compare.compare of the series (gated), cached by the files' mtimes: a thousand bootstrap
    resamples per shape are too slow to redo on every widget change."""
    return _compared(specs, tuple(_mtime(path) for _, _, path, _ in specs), reference, eps, include)


def _default_source(srcs: list[sources.Source]) -> str:
    first = default_run_path()  # open on the most complete committed run when there is one
    names = [s.name for s in srcs]
    return first.name if first is not None and first.name in names else names[0]


def current_source() -> sources.Source:
    """The source the sidebar shows (this session's choice, a ?source= link, else the default) for a page that has
    no source picker of its own (Kernels opens that run's explain data)."""
    srcs = source_list()
    name = url_choice("source", [s.name for s in srcs], _default_source(srcs), what="source")
    return sources.find_source(srcs, name)


def sources_in_order() -> tuple[list[sources.Source], dict[str, str]]:
    """Every source in picker order and what each option shows (dashboard.sources.picker: grouped by kind, newest
    first, the default marked)."""
    return _sources_in_order()[:2]


def _sources_in_order() -> tuple[list[sources.Source], dict[str, str], str]:
    """sources_in_order and the default source's name (one default_run_path for both)."""
    srcs = source_list()
    default = _default_source(srcs)
    return *sources.picker(srcs, run_metas(srcs), default), default


def source_text():
    """format_func for a picker of source names (Compare's runs): the grouped text each one shows."""
    srcs, shown = sources_in_order()
    labels = {s.name: s.label for s in srcs}
    return lambda name: shown.get(labels.get(name, name), name)


def _pair(box, src: sources.Source, data: drun.RunData) -> tuple[str, str]:
    if src.kind == "table":
        return "baseline", sources.table_candidate(src)
    names = data.candidates()
    base0, _ = sources.default_pair(data)
    base = url_selectbox(box, "Baseline", names, "baseline", base0, what="baseline")
    others = [n for n in names if n != base] or names
    cand0 = sources.resolve_pair(data, baseline=base)[1]
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


def _notice(v: View) -> None:
    """The gate's verdict on the pair, where every source page shows it: an error when results are incorrect,
    failed or below the floor, a warning when shapes are merely unfinished."""
    if v.gate is None or v.gate.ok:
        if v.breakdown is not None and v.breakdown.below_floor_included:
            st.warning(f"Scored with {len(v.breakdown.below_floor_included)} result(s) below the measured HBM floor "
                       f"({', '.join(v.breakdown.below_floor_included[:3])}), as asked: an artifact, not a speed.")
        return
    text = f"{v.label}: {v.candidate} vs {v.baseline}: {v.gate.message()}"
    if v.gate.below_floor and not v.include_below_floor:
        text += " — use the sidebar toggle to include them."
    (st.error if v.gate.refused else st.warning)(text)


def view(sidebar=True, probes_only_ok: bool = False) -> View:
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
                         help="Grouped by kind (published, plan sweeps, repeatability, tunes, screens, explains, "
                              "uploads), newest first; ★ marks the run projlab opens on. Type to filter.")
    src = sources.find_source(srcs, name)
    source_line = f"Source: **{md_text(shown.get(src.label, src.label))}**"
    try:
        data = source_data(src)
        if data.results.empty:
            if probes_only_ok:
                choice.markdown(source_line)
                return View(src.label, src.provenance, src.kind, str(src.path), "", "", data, None,
                            "the run has no results")
            raise ValueError(f"{src.path.name} has no results (a probe-only run? see the Probes page; an explain run? see the Kernels page)")
        base, cand = _pair(pickers, src, data)
        choice.markdown(f"{source_line}  \nBaseline: **{md_text(base)}** · candidate: **{md_text(cand)}**")
        excluded = derived(src, data, base, cand, False)   # each read of the cache unpickles its tables again
        include = _floor_toggle(box, excluded[0])
        shape_gate, gate, bd, err, table, wide_table = derived(src, data, base, cand, True) if include else excluded
        if data.status == "partial":
            box.warning("Partial run: interrupted; only what finished is shown.")
        v = View(src.label, src.provenance, src.kind, str(src.path), base, cand, data, bd, err, table=table,
                 gate=gate, shape_gate=shape_gate, include_below_floor=include, wide_table=wide_table)
    except BAD_INPUT as exc:
        choice.markdown(source_line)
        st.error(f"Cannot use {src.label}: {exc}")
        st.stop()
    _workload_notice(box, v)
    _notice(v)
    return v


def _workload_notice(box, v: View) -> None:
    """Which workload the view is scored with; for a run that does not record one, that muse was assumed."""
    wl = v.workload
    box.caption(f"Workload: **{wl.name}** — {len(wl.family_order)} families ({', '.join(wl.family_order)}), "
                f"{len(wl.load_order)} loads ({', '.join(wl.load_order)})")
    if v.kind == "run" and v.data.workload_note:
        box.info(v.data.workload_note)


def caption_source(v: View, what: str = "") -> None:
    st.caption(f"Source: **{v.label}** — {v.note}. {what}")


# Markdown that would change a figure table's text: emphasis, links, math, inline HTML, strikethrough, the cell
# separator, a directive's brackets. A run's candidate and GPU names reach the table, so they are escaped too.
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|$~"})


def md_text(text) -> str:
    """`text` shown as it is inside markdown (one line)."""
    return str(text).translate(_MD_SPECIAL).replace("\n", " ")


def figure_table(figures: dict[str, str], strong: tuple[str, ...] = ()) -> str:
    """Figures as one markdown table, each label above its value (the values of the labels in `strong` in bold)."""
    values = [f"**{md_text(v)}**" if k in strong else md_text(v) for k, v in figures.items()]
    return "\n".join(["| " + " | ".join(map(md_text, figures)) + " |", "|" + " --- |" * len(figures),
                      "| " + " | ".join(values) + " |"])


def show_figures(figures: dict[str, str], note: str | None = None, help: str | None = None,
                 strong: tuple[str, ...] = (), box=st) -> None:
    """A group of figures as one element: figure_table, then `note` (markdown) in caption type with the `help`
    tooltip. What a row of st.metric showed, for a fresh browser's first page: one markdown block instead of a
    metric element per figure and a column block around each, and no metric code to fetch."""
    body = figure_table(figures, strong)
    if note:   # Streamlit draws a markdown element's help icon after its last paragraph, so a table needs one
        body += f"\n\n:small[:gray[{note}]]"
    box.markdown(body, help=help if note else None)


def require_breakdown(v: View):
    """The score breakdown, or stop the page (view() has already said why there is none)."""
    if v.breakdown is None:
        st.info("This page needs a score; see the message above.")
        st.stop()
    return v.breakdown


def gated_style(df: pd.DataFrame, column: str = "usable"):
    """The table with the rows the gate keeps out (incorrect, failed, below the floor) in red."""
    if column not in df or df[column].all():
        return df
    bad = ~df[column].astype(bool)
    return df.style.apply(lambda row: [RED if bad[row.name] else ""] * len(row), axis=1)


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
            "ratio_ci_high": num("paired ratio CI high", format="%.4f"),
            "status_baseline": st.column_config.TextColumn(f"{v.baseline} status"),
            "status_candidate": st.column_config.TextColumn(f"{v.candidate} status"),
            "usable": st.column_config.CheckboxColumn("scored", help="both sides correct and timed (and not below "
                                                                     "the measured floor unless included)")}


def download_csv(df: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    st.download_button(label, df.to_csv(index=False).encode(), file_name=name, mime="text/csv", key=f"dl-{name}")
