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
    safe_name(text)                   -> str        a file name fit for a label, a URL and a file on disk
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from datasets import RUNS_DIR, Workload, load_official, load_seed_probes
from datasets.paths import OFFICIAL_036_CSV, run_paths
from dashboard import runs, views

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

    @property
    def words(self) -> str:
        return PROVENANCE[self.provenance]


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
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


def table_source(path, uploaded: bool = False) -> Source:
    path = Path(path)
    if not uploaded and table_provenance(path) == PUBLISHED and path.name == OFFICIAL_036_CSV.name:
        return Source(path.name, OFFICIAL_LABEL, "table", path, PUBLISHED)
    prov = table_provenance(path)
    return Source(path.name, f"{'upload' if uploaded else 'table'}: {path.name}", "table", path, prov)


def run_source(path, uploaded: bool = False) -> Source:
    path = Path(path)
    return Source(path.name, f"{'upload' if uploaded else 'run'}: {path.name}", "run", path, MEASURED)


def extra_run_paths(value: str | None = None) -> list[Path]:
    """Run files named in $PROJLAB_EXTRA_RUNS (files or folders, os.pathsep-separated), in that order."""
    value = os.environ.get(EXTRA_RUNS_ENV, "") if value is None else value
    paths: list[Path] = []
    for item in filter(None, value.split(os.pathsep)):
        p = Path(item)
        paths += run_paths(p) if p.is_dir() else [p]
    return paths


def list_sources(runs_dir=RUNS_DIR, extra_runs: list | None = None, uploaded_tables=(),
                 uploaded_runs=()) -> list[Source]:
    """The published table, uploaded tables, committed runs (oldest first), extra runs, uploaded runs.

    A name (the URL value) is unique: a later source with a name already listed is dropped."""
    out = [table_source(OFFICIAL_036_CSV)]
    out += [table_source(p, uploaded=True) for p in uploaded_tables]
    extra = extra_run_paths() if extra_runs is None else [Path(p) for p in extra_runs]
    out += [run_source(p) for p in [*runs.list_runs(runs_dir), *extra]]
    out += [run_source(p, uploaded=True) for p in uploaded_runs]
    seen: dict[str, Source] = {}
    for src in out:
        seen.setdefault(src.name, src)
    return list(seen.values())


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
    else its first candidate) against the last candidate paired with it — 'best' in a baseline/seed036/best
    sweep, 'baseline#2' in a repeatability run. None for a run without results."""
    names = data.candidates()
    if not names:
        return None
    pairs = [(b, c) for b, c in runs.candidate_pairs(data) if b != c and b in names and c in names]
    bases = [b for b, _ in pairs]
    base = "baseline" if "baseline" in (bases or names) else (bases[0] if bases else names[0])
    partners = {c for b, c in pairs if b == base}
    others = [n for n in names if n in partners] or [n for n in names if n != base]
    return base, (others[-1] if others else base)


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
        return baseline, (others[-1] if others else baseline)
    return default


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, default: str = "file") -> str:
    """A name fit for a label, a URL and a file on disk: only the last path component ('../../x.json' → 'x.json'),
    runs of anything but letters, digits, '.', '_' and '-' → '_' ('my kernels.py' → 'my_kernels.py'), no leading
    '.', '-' or '_' (so never hidden, never an option), at most 80 characters; `default` if nothing is left."""
    last = str(text).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    name = _UNSAFE.sub("_", last).lstrip(".-_")[:80]
    return name or default
