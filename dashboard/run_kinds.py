"""What a run file is, read from its JSON alone (no validation, no DataFrames: every committed file is classified on
an app's first visit): the kind that decides where it is offered (Fleet shows sweeps, Kernels explain runs) and how
the source picker groups it, newest first.

    kind_of(run)             -> SWEEP | REPEAT | TUNE | SCREEN | EXPLAIN | PROBE
    run_meta(path)           -> RunMeta     kind, created_utc, workload name, candidates, cluster, scored count
                                            (None: unreadable)
    newest_first(metas)      -> [RunMeta]
    default_run(metas|paths) -> Path        the run to open first (default_rank), validated
    SHIPPED_PLAN             the candidate name of the shipped plan (kernels/plans/best.json)
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from datasets import DEFAULT_WORKLOAD
from datasets.jsonfile import JsonInputError, read_bytes, read_json
from datasets.workload import RUN_KEY
from dashboard import runs
from dashboard.workloads import default_workload

SWEEP, TUNE, SCREEN, EXPLAIN = runs.SWEEP, runs.TUNE, runs.SCREEN, runs.EXPLAIN   # dashboard.runs.run_kind's
REPEAT, PROBE = "repeatability", "probe"
# The picker's groups, in the order shown; uploads come last (dashboard.sources).
KIND_TITLES = {SWEEP: "plan sweeps", REPEAT: "repeatability", TUNE: "tunes", SCREEN: "screens", EXPLAIN: "explains",
               PROBE: "probes"}
SHIPPED_PLAN = "best"   # `--plan best` / kernels/plans/best.json: the plan projlab ships


def _candidates(run: dict) -> list[str]:
    names = [r.get("candidate") for r in run.get("results") or [] if isinstance(r, dict)]
    return [str(n) for n in dict.fromkeys(names) if n is not None]


def kind_of(run) -> str:
    """dashboard.runs.run_kind (explain, tune, screen, sweep: what wrote the file), refined for the picker: a run
    without results is probes only, and a sweep whose every candidate is one plan timed twice ('baseline' and
    'baseline#2') measures repeatability."""
    if not isinstance(run, dict):
        return PROBE
    kind = runs.run_kind(run)
    if kind != runs.SWEEP:
        return kind
    if not run.get("results"):
        return PROBE
    names = _candidates(run)
    plans = {n.split("#", 1)[0] for n in names}
    return REPEAT if len(names) > 1 and len(plans) == 1 else SWEEP


@dataclass(frozen=True)
class RunMeta:
    path: Path
    kind: str
    created_utc: str
    workload: str             # the embedded workload's name (an older run without one: the default)
    candidates: tuple[str, ...]
    cluster: bool             # measured by a dask fleet (`--cluster`), as its recorded command says
    scored: int = 0           # candidates with a correct result at every scored shape (runs.scored_count_raw)

    @property
    def shipped_pair(self) -> bool:
        """A sweep pairing the baseline with the shipped plan."""
        return self.kind == SWEEP and {"baseline", SHIPPED_PLAN} <= set(self.candidates)


# The timing samples of results and pairs are most of a run file's bytes (63 MB of committed runs, 22 MB without
# them) and say nothing about what the run is, so run_meta blanks those flat lists of numbers before parsing; the
# first page classifies every committed run, so this is on its critical path (1.2 s → 0.5 s for the 108 committed
# runs on a 2-core machine). A file that does not parse once blanked is parsed whole.
_SAMPLE_KEYS = (b'"samples_us": [', b'"ratios": [')


def _blank(data: bytes, key: bytes) -> bytes:
    """`data` with every list after `key` emptied (the list is flat: its first ']' closes it)."""
    out, pos = [], 0
    while (start := data.find(key, pos)) >= 0:
        end = data.find(b"]", start + len(key))
        if end < 0:
            break
        out.append(data[pos:start + len(key)])
        pos = end
    out.append(data[pos:])
    return b"".join(out)


def _skim(path: Path):
    """The run's JSON with its sample lists emptied (classification only: the file is validated, whole, when it is
    opened); None when it cannot be read or parsed."""
    try:
        data = read_bytes(path)
    except JsonInputError:
        return None
    blanked = data
    for key in _SAMPLE_KEYS:
        blanked = _blank(blanked, key)
    for text in (blanked, data):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            continue
    return None


@lru_cache(maxsize=64)
def _scored_shapes(workload_json: str) -> tuple[str, frozenset] | None:
    """(name, scored (load, family, M) shapes) of an embedded workload, once per distinct workload: most runs embed
    the same one. None for a broken one (the run is left out here; opening it names the file and the field)."""
    try:
        wl = runs.run_workload({RUN_KEY: json.loads(workload_json)}, "<run>")[0]
    except runs.RunFileError:
        return None
    return wl.name, frozenset((r.load, r.family, int(r.M)) for r in wl.shapes.itertuples())


def run_meta(path) -> RunMeta | None:
    """The RunMeta of a run file; None when it is not readable JSON (or its embedded workload is broken)."""
    path = Path(path)
    run = _skim(path)
    if not isinstance(run, dict):
        return None
    if RUN_KEY in run:
        found = _scored_shapes(json.dumps(run[RUN_KEY], sort_keys=True))
        if found is None:
            return None
        name, want = found
    else:
        wl = default_workload()
        name, want = wl.name, {(r.load, r.family, int(r.M)) for r in wl.shapes.itertuples()}
    settings = (run.get("environment") or {}).get("settings") if isinstance(run.get("environment"), dict) else None
    command = str((settings or {}).get("command") or "") if isinstance(settings, dict) else ""
    return RunMeta(path, kind_of(run), str(run.get("created_utc") or ""), name, tuple(_candidates(run)),
                   "--cluster" in command.split(), runs.scored_count_raw(run, set(want)))


def newest_first(metas) -> list[RunMeta]:
    """By created_utc, newest first (then by file name, so 'r12' and 'r2' of one day keep the time they ran)."""
    return sorted(metas, key=lambda m: (m.created_utc, m.path.name), reverse=True)


def default_rank(meta: RunMeta) -> tuple:
    """A plan sweep (not a tune log, a screen or an explain run, which time many configs per shape rather than
    compare plans) of the default workload, pairing the baseline with the shipped plan, then the most fully scored
    candidates (the baseline / seed036 / best sweeps), then the newest by created_utc, then by file name."""
    return (meta.kind == SWEEP, meta.workload == DEFAULT_WORKLOAD, meta.shipped_pair, meta.scored, meta.created_utc,
            meta.path.name)


def default_run(metas, opens=None) -> Path | None:
    """The run to open first (default_rank) among RunMetas (or paths, read here); the next one when the winner
    does not load. `opens(path)` loads a run (raising when it cannot: the app passes its cached loader, so the
    winner is read once); by default the file is read and validated here."""
    metas = [m if isinstance(m, RunMeta) else run_meta(m) for m in metas]
    for meta in sorted((m for m in metas if m is not None), key=default_rank, reverse=True):
        try:
            (opens or _validate)(meta.path)
        except (runs.RunFileError, JsonInputError, ValueError, OSError):
            continue
        return meta.path
    return None


def _validate(path: Path) -> None:
    run = read_json(path)
    runs.validate_run(run, source=path.name)  # what runs.load_run_data checks after reading
    runs.check_against_workload(run, path.name, runs.run_workload(run, path.name)[0])
