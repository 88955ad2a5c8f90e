"""What a run file is: the kind that decides where it is offered (Fleet shows sweeps, Kernels explain runs) and how
the source picker groups it, newest first.

    kind_of(run)             -> SWEEP | REPEAT | TUNE | SURVEY | EXPLAIN | PROBE | STEP
    meta_of(run_data)        -> RunMeta     kind, created_utc, workload name, candidates, cluster, scored count
    run_meta(path)           -> RunMeta     the same from a file, validated (None: it does not load)
    read_with_meta(path)     -> (RunData, RunMeta)   the file and its meta from one read (None: it does not load)
    newest_first(metas)      -> [RunMeta]
    default_run(metas|paths) -> Path        the run to open first (default_rank), validated
    SHIPPED_PLAN             the candidate name of the shipped plan (kernels/plans/best.json)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from datasets import DEFAULT_WORKLOAD, DatasetError, devices
from datasets.jsonfile import JsonInputError, read_json
from dashboard.model import runs

SWEEP, TUNE, SURVEY, EXPLAIN, STEP = runs.SWEEP, runs.TUNE, runs.SURVEY, runs.EXPLAIN, runs.STEP   # runs.run_kind's
REPEAT, PROBE = "repeatability", "probe"
HOME_DEVICE = devices.lookup(devices.WRITEUP_DEVICE).key   # the official table's device: the default run's
SHIPPED_PLAN = "best"   # `--plan best` / kernels/plans/best.json: the plan projlab ships
_UNREADABLE = (runs.RunFileError, JsonInputError, DatasetError, ValueError, KeyError, OSError)


def _candidates(run: dict) -> list[str]:
    names = [r.get("candidate") for r in run.get("results") or [] if isinstance(r, dict)]
    return [str(n) for n in dict.fromkeys(names) if n is not None]


def kind_of(run) -> str:
    """dashboard.model.runs.run_kind (explain, tune, survey, sweep: what wrote the file), refined for the picker: a run
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
    scored: int = 0           # candidates with a correct result at every scored shape (runs.scored_candidates)
    device: str = HOME_DEVICE   # the device kind that measured it (datasets.devices: its table key)

    @property
    def shipped_pair(self) -> bool:
        """A sweep pairing the baseline with the shipped plan."""
        return self.kind == SWEEP and {"baseline", SHIPPED_PLAN} <= set(self.candidates)


def meta_of(data: runs.RunData) -> RunMeta:
    """The RunMeta of a validated run (dashboard.model.runs.load_run_data); `scored` counts runs.scored_candidates."""
    run = data.run
    env = run.get("environment")
    settings = env.get("settings") if isinstance(env, dict) else None
    command = str((settings or {}).get("command") or "") if isinstance(settings, dict) else ""
    return RunMeta(data.path, kind_of(run), str(run.get("created_utc") or ""), runs.workload_of(data).name,
                   tuple(_candidates(run)), "--cluster" in command.split(), len(runs.scored_candidates(data)),
                   devices.lookup((env or {}).get("gpu") if isinstance(env, dict) else None).key)


def run_meta(path) -> RunMeta | None:
    """The RunMeta of a run file, read and validated whole; None when it does not load (opening it in the app or
    the CLI names the file and the field). The committed runs' metas are also in the run index
    (dashboard.documents.run_index), so a page does not read every committed file to list them."""
    read = read_with_meta(path)
    return read[1] if read else None


def read_with_meta(path) -> tuple[runs.RunData, RunMeta] | None:
    """The run file read and validated whole, and its RunMeta (one read for both); None when it does not load."""
    try:
        data = runs.load_run_data(path)
    except _UNREADABLE:
        return None
    return data, meta_of(data)


def newest_first(metas) -> list[RunMeta]:
    """By created_utc, newest first (then by file name, so 'r12' and 'r2' of one day keep the time they ran)."""
    return sorted(metas, key=lambda m: (m.created_utc, m.path.name), reverse=True)


def default_rank(meta: RunMeta) -> tuple:
    """A plan sweep (not a tune log, a config survey or an explain run, which time many configs per shape rather than
    compare plans) of the default workload, measured on the write-up's device (the official table's), pairing the
    baseline with the shipped plan, then the most fully scored candidates (the baseline / seed036 / best sweeps),
    then the newest by created_utc, then by file name."""
    return (meta.kind == SWEEP, meta.workload == DEFAULT_WORKLOAD, meta.device == HOME_DEVICE, meta.shipped_pair,
            meta.scored, meta.created_utc, meta.path.name)


def default_run(metas, opens=None) -> Path | None:
    """The run to open first (default_rank) among RunMetas (or paths, read here); the next one when the winner
    does not load. `opens(path)` loads a run (raising when it cannot: the app passes its cached loader, so the
    winner is read once); by default the file is read and validated here."""
    metas = [m if isinstance(m, RunMeta) else run_meta(m) for m in metas]
    for meta in sorted((m for m in metas if m is not None), key=default_rank, reverse=True):
        try:
            (opens or _validate)(meta.path)
        except _UNREADABLE:
            continue
        return meta.path
    return None


def _validate(path: Path) -> None:
    run = read_json(path)
    runs.validate_run(run, source=path.name)  # what runs.load_run_data checks after reading
    runs.check_against_workload(run, path.name, runs.run_workload(run, path.name)[0])
