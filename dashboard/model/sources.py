"""Where the numbers come from: the sources a page, a report or the CLI can show (the published official table,
committed and extra run files, uploads), what each one is (the provenance words, defined here only), how it loads
as a RunData, and which baseline / candidate pair it shows by default or on request.

Torch- and streamlit-free: the app wraps these in its caches and widgets; the CLI and reports call them directly.

    list_sources(...)                 -> [Source]   every source, the published table first
    find_source(sources, name)        -> Source     by URL name ("official_036.csv", a run file name) or label
    table_source(path) / run_source(path, uploaded=False) -> Source
    table_provenance(path)            -> "published" | "uploaded"
    load(source, workload)            -> RunData    a run, or a table presented as one
    candidate_names(data)             -> [str]
    default_pair(data)                -> (baseline, candidate) | None
    resolve_pair(data, baseline=None, candidate=None) -> (baseline, candidate)   SourceError if a name is unknown
    picker(sources, metas, default)   -> ([Source], {label: text})   picker order (grouped by kind, newest first)
                                                    and what each option shows (its group; the default marked)
    run_text(path, meta)              -> str        a run as a picker shows it: date, label, candidates
    safe_name(text)                   -> str        a file name fit for a label, a URL and a file on disk
    display_name(text)                -> str        an uploaded file's own name, as its label shows it
    upload_name(display, digest)      -> str        an upload's URL and file name ('upload-<digest>-<safe name>')
    missing_upload(name)              -> str | None the line for a link naming an upload this server does not have

Uploads are sources like any other for the browser session that uploaded them (every page, Compare included), shown
under the user's own file name. The app keeps them on its server by content hash, so a link naming one opens it on
that server; a link naming one the server no longer has says so instead of showing another run in its place.
"""
from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from datasets import RUNS_DIR, Workload, load_official, load_seed_probes
from datasets.jsonfile import JsonInputError, read_checked
from datasets.paths import OFFICIAL_036_CSV, run_paths
from dashboard.model import run_kinds, runs, views

PUBLISHED, MEASURED, UPLOADED = "published", "measured", "uploaded"
PROVENANCE = {PUBLISHED: "published (write-up, official run)", MEASURED: "measured (run file)",
              UPLOADED: "uploaded table (as given)"}
OFFICIAL_LABEL = "Official 036 table (published)"
TABLE_CANDIDATE = "candidate"  # the candidate column of a per-shape table that is not the published one
EXTRA_RUNS_ENV = "PROJLAB_EXTRA_RUNS"


class SourceError(ValueError):
    """A source or a candidate name that does not exist; the message names what was asked and what exists."""


@dataclass(frozen=True)
class Source:
    name: str        # what a URL carries (?source=...): the file name
    label: str       # what a picker shows
    kind: str        # "run" | "table"
    path: Path
    provenance: str  # PUBLISHED | MEASURED | UPLOADED
    uploaded: bool = False

    @property
    def words(self) -> str:
        return PROVENANCE[self.provenance]


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(read_checked(path, "table")).hexdigest()
    except JsonInputError:   # not a regular file, too large, unreadable: not the official table
        return None


def table_provenance(path) -> str:
    """PUBLISHED only for the committed official table (the file itself, or a byte-identical copy); any other
    per-shape table — an edited copy included — is UPLOADED, a table as given."""
    path = Path(path)
    try:
        if path.resolve() == OFFICIAL_036_CSV.resolve():
            return PUBLISHED
    except OSError:
        pass
    digest = _digest(path)
    return PUBLISHED if digest is not None and digest == _digest(OFFICIAL_036_CSV) else UPLOADED


def table_source(path, uploaded: bool = False, shown: str | None = None) -> Source:
    path = Path(path)
    if not uploaded and table_provenance(path) == PUBLISHED and path.name == OFFICIAL_036_CSV.name:
        return Source(path.name, OFFICIAL_LABEL, "table", path, PUBLISHED)
    prov = table_provenance(path)
    return Source(path.name, f"{'upload' if uploaded else 'table'}: {shown or path.name}", "table", path, prov,
                  uploaded)


def run_source(path, uploaded: bool = False, shown: str | None = None) -> Source:
    """A run file as a source; `shown` is an upload's own file name (its label), else the file's name."""
    path = Path(path)
    return Source(path.name, f"{'upload' if uploaded else 'run'}: {shown or path.name}", "run", path, MEASURED,
                  uploaded)


def extra_run_paths(value: str | None = None) -> list[Path]:
    """Run files named in $PROJLAB_EXTRA_RUNS (files or folders, os.pathsep-separated), in that order."""
    value = os.environ.get(EXTRA_RUNS_ENV, "") if value is None else value
    paths: list[Path] = []
    for item in filter(None, value.split(os.pathsep)):
        p = Path(item)
        paths += run_paths(p) if p.is_dir() else [p]
    return paths


def list_sources(runs_dir=RUNS_DIR, extra_runs: list | None = None, uploaded_tables=(),
                 uploaded_runs=(), shown: dict | None = None) -> list[Source]:
    """The published table, uploaded tables, committed runs (oldest first), extra runs, uploaded runs; `shown` maps
    an upload's path to the user's own file name (its label).

    A name (the URL value) is unique: a later source with a name already listed is dropped. So is a label: a second
    upload under one file name gets its upload name added."""
    shown = {str(k): v for k, v in (shown or {}).items()}
    out = [table_source(OFFICIAL_036_CSV)]
    out += [table_source(p, uploaded=True, shown=shown.get(str(p))) for p in uploaded_tables]
    extra = extra_run_paths() if extra_runs is None else [Path(p) for p in extra_runs]
    out += [run_source(p) for p in [*runs.list_runs(runs_dir), *extra]]
    out += [run_source(p, uploaded=True, shown=shown.get(str(p))) for p in uploaded_runs]
    seen: dict[str, Source] = {}
    labels: set[str] = set()
    for src in out:
        if src.name in seen:
            continue
        if src.label in labels:
            src = Source(src.name, f"{src.label} ({src.name})", src.kind, src.path, src.provenance, src.uploaded)
        seen[src.name] = src
        labels.add(src.label)
    return list(seen.values())


# The picker's groups, in order: what a source is decides where it is listed (run_kinds.kind_of for run files).
GROUPS = {"published": "Published", run_kinds.SWEEP: "Plan sweep", run_kinds.REPEAT: "Repeatability",
          run_kinds.TUNE: "Tune", run_kinds.SURVEY: "Survey", run_kinds.EXPLAIN: "Explain", run_kinds.PROBE: "Probes",
          run_kinds.STEP: "Decode step", "table": "Table", "unreadable": "Unreadable", "upload": "Upload"}
DEFAULT_MARK = "★ default"   # the picker's help says what it is: the shipped plan's latest full sweep
MAX_NAMED_CANDIDATES = 3      # more than this: a count, so an option fits a sidebar's width


def run_text(path, meta=None, gpu: bool = False) -> str:
    """What tells a run file apart, first: '<date> <label> · <candidates>' ('2026-12-04 best-final · baseline, best',
    '… · 12 candidates'), from the file name '<date>_<gpu>_<label>' and its RunMeta; the GPU only with `gpu` (runs
    of a fleet sweep share date and label). The full name is shown beside the picker; a name off the convention is
    shown whole."""
    path = Path(path)
    parts = runs.parse_run_name(path)
    text = (f"{parts['date']} {parts['gpu'] + ' ' if gpu else ''}{parts['label']}" if parts else path.name)
    names = list(meta.candidates) if meta is not None else []
    if names:
        text += " · " + (", ".join(names) if len(names) <= MAX_NAMED_CANDIDATES else f"{len(names)} candidates")
    return text


def _group(src: Source, metas: dict) -> str:
    if src.uploaded:
        return "upload"
    if src.kind == "table":
        return "published" if src.provenance == PUBLISHED else "table"
    meta = metas.get(src.path)
    return meta.kind if meta is not None else "unreadable"


def picker(sources: list[Source], metas: dict, default: str | None = None) -> tuple[list[Source], dict[str, str]]:
    """The sources in picker order — grouped by kind (GROUPS: published, plan sweeps, repeatability, tunes,
    surveys, explains, …, uploads), newest first inside a group (created_utc, not the file name's text, so 'r12'
    and 'r2' keep the order they ran in) — and what each option shows: '<group> · <label>', the `default` source
    marked. A run named '<date>_<gpu>_<label>' shows run_text (date, label, candidates) rather than its whole file
    name, which a sidebar cuts before the part that differs; any other source shows its label. `metas` maps a run file's path to its run_kinds.RunMeta."""
    order = list(GROUPS)
    groups = {src.name: _group(src, metas) for src in sources}

    def when(src: Source) -> str:
        meta = metas.get(src.path)
        return meta.created_utc if meta is not None else ""

    newest = sorted(sources, key=lambda s: (when(s), s.name), reverse=True)
    ordered = sorted(newest, key=lambda s: order.index(groups[s.name]))   # stable: newest first inside a group
    runs_shown = [s for s in ordered if s.kind == "run" and not s.uploaded and runs.parse_run_name(s.path)]
    seen = Counter(run_text(s.path, metas.get(s.path)) for s in runs_shown)

    def text(src: Source) -> str:
        if src not in runs_shown:
            return src.label
        short = run_text(src.path, metas.get(src.path))
        return short if seen[short] == 1 else run_text(src.path, metas.get(src.path), gpu=True)

    shown = {s.label: f"{GROUPS[groups[s.name]]} · {text(s)}" + (f"  {DEFAULT_MARK}" if s.name == default else "")
             for s in ordered}
    return ordered, shown


def find_source(sources: list[Source], name: str) -> Source | None:
    """The source whose URL name or label is `name`, else None."""
    return next((s for s in sources if name in (s.name, s.label)), None)


def table_candidate(source: Source) -> str:
    return views.OFFICIAL_CANDIDATE if source.provenance == PUBLISHED else TABLE_CANDIDATE


def load(source: Source, workload: Workload | None = None) -> runs.RunData:
    """A run file as RunData (validated, with its own workload unless `workload` is given), or a per-shape table
    presented as one (candidates baseline and '036' for the published table, 'candidate' for any other; a table is
    in muse_bf16_proj's official format)."""
    if source.kind == "run":
        return runs.load_run_data(source.path, workload)
    table = load_official(source.path, workload)
    return views.official_run_data(table, load_seed_probes(), source.path, candidate=table_candidate(source),
                                   workload=workload)


def candidate_names(data: runs.RunData) -> list[str]:
    return data.candidates()


def default_pair(data: runs.RunData) -> tuple[str, str] | None:
    """The pair to show first: the run's own baseline ('baseline' if it has one, else the baseline of its pairs,
    else its first candidate) against 'best' where it is paired with it, else the last candidate paired with it —
    'best' in a baseline/seed036/best or a peers sweep, 'baseline#2' in a repeatability run. None for a run
    without results."""
    names = data.candidates()
    if not names:
        return None
    pairs = [(b, c) for b, c in runs.candidate_pairs(data) if b != c and b in names and c in names]
    bases = [b for b, _ in pairs]
    base = "baseline" if "baseline" in (bases or names) else (bases[0] if bases else names[0])
    partners = {c for b, c in pairs if b == base}
    others = [n for n in names if n in partners] or [n for n in names if n != base]
    return base, _last_or_best(others, base)


def _unknown(data: runs.RunData, name: str) -> SourceError:
    names = data.candidates()
    shown = ", ".join(map(repr, names[:8])) + (f", … {len(names) - 8} more" if len(names) > 8 else "")
    return SourceError(f"{data.path.name}: no candidate {name!r} (found {shown or 'none'})")


def resolve_pair(data: runs.RunData, baseline: str | None = None, candidate: str | None = None) -> tuple[str, str]:
    """The pair to score: both given → both must exist; only the candidate → the baseline it was paired with
    (else 'baseline', else the first other candidate); only the baseline → its last paired candidate; neither →
    default_pair. SourceError names an unknown candidate and lists the known ones."""
    names = data.candidates()
    for name in (baseline, candidate):
        if name is not None and name not in names:
            raise _unknown(data, name)
    if baseline is not None and candidate is not None:
        return baseline, candidate
    default = default_pair(data)
    if default is None:
        raise SourceError(f"{data.path.name}: the run has no results (a probe-only run, or an explain run?)")
    pairs = [(b, c) for b, c in runs.candidate_pairs(data) if b != c]
    if candidate is not None:
        paired = [b for b, c in pairs if c == candidate]
        base = paired[0] if paired else ("baseline" if "baseline" in names and candidate != "baseline" else
                                         next((n for n in names if n != candidate), candidate))
        return base, candidate
    if baseline is not None:
        paired = [c for b, c in pairs if b == baseline]
        others = [n for n in names if n in paired] or [n for n in names if n != baseline]
        return baseline, _last_or_best(others, baseline)
    return default


def _last_or_best(others: list[str], fallback: str) -> str:
    """'best' where it is among the candidates (a peers sweep lists the peers after it), else the last one."""
    return "best" if "best" in others else (others[-1] if others else fallback)


UPLOAD_PREFIX = "upload-"


def display_name(text: str, default: str = "upload") -> str:
    """An uploaded file's own name as a label shows it ('résumé run 1.json' stays so): only the last path
    component, without control or format characters, at most 80 characters; `default` if nothing is left."""
    last = str(text).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    kept = "".join(ch for ch in last if not unicodedata.category(ch).startswith("C")).strip()
    return kept[:80] or default


def upload_name(display: str, digest: str) -> str:
    """An upload's name in the URL and on disk: 'upload-<first 10 hex digits of its hash>-<safe name>'."""
    return f"{UPLOAD_PREFIX}{digest[:10]}-{safe_name(display, 'upload')}"


def missing_upload(name: str) -> str | None:
    """The line to show for a link naming an upload that this server does not have; None for a name that is not an
    upload's."""
    if not str(name).startswith(UPLOAD_PREFIX):
        return None
    return (f"The address names an uploaded file ({name!r}) that is not on this server (uploaded to another "
            "server, or removed to keep the upload folder within its limits): upload the file here to see it "
            "(meanwhile the default is shown).")


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, default: str = "file") -> str:
    """A name fit for a label, a URL and a file on disk: only the last path component ('../../x.json' → 'x.json'),
    runs of anything but letters, digits, '.', '_' and '-' → '_' ('my kernels.py' → 'my_kernels.py'), no leading
    '.', '-' or '_' (so never hidden, never an option), at most 80 characters; `default` if nothing is left."""
    last = str(text).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    name = _UNSAFE.sub("_", last).lstrip(".-_")[:80]
    return name or default
