"""Run files (datasets/runs/*.json) as DataFrames, with metrics, floors, SOL and scores per candidate pair.

Each run is read with its own workload (RunData.workload: the one embedded in the run, or for an older run the
default muse_bf16_proj, with RunData.workload_note saying it was assumed); `workload=None` means that one.

Every score goes through dashboard.model.scoring's gate: `status_rows` turns a run's results and its `failures` into the
per-(shape, candidate) statuses the gate reads, and `run_score` / `pair_gate` never look at a median without them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from datasets import NEARBY_LOAD, RUNS_DIR, DatasetError, Workload, workload_of_run
from datasets.paths import run_paths
from datasets.runfile import RunFileError, load_run, validate_run
from dashboard.model import metrics, roofline, scoring
from dashboard.model.workloads import default_workload

RUN_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})_(.+?)_(.+)\.json(?:\.gz)?$")
FAILURE_COLUMNS = ["shape", *scoring.SHAPE_ID, "candidate", "status", "reason"]


@dataclass(frozen=True)
class RunData:
    path: Path
    run: dict                    # the validated JSON, untouched
    results: pd.DataFrame        # one row per (shape, candidate); samples_us kept as a list column
    pairs: pd.DataFrame          # one row per (shape, baseline, candidate)
    probes: pd.DataFrame         # bytes, us, tbps, design, kind, for_shape
    environment: pd.DataFrame    # key, value (nested keys flattened with '.')
    # shape, load, family, M, N, K, candidate, status ('failed'), reason: candidates that were not timed there
    failures: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FAILURE_COLUMNS))
    # the workload the run was measured with (datasets.workload_of_run); None only for a hand-built RunData, which
    # reads as the default workload (see workload_of)
    workload: Workload | None = None
    # set when the run does not record its workload and the default was assumed: say so wherever it is shown
    workload_note: str | None = None

    @property
    def status(self) -> str:
        return self.run["status"]

    @property
    def label(self) -> str:
        return self.run["label"]

    def candidates(self) -> list[str]:
        return list(dict.fromkeys(self.results["candidate"])) if len(self.results) else []


def _flatten(prefix: str, value, out: list) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else key, inner, out)
    else:
        out.append({"key": prefix, "value": value})


def _with_key(frame: pd.DataFrame) -> pd.DataFrame:
    if len(frame):
        frame.insert(0, "shape", [scoring.shape_key(r.load, r.family, r.M) for r in frame.itertuples()])
    return frame


def _reasons(error) -> str:
    reasons = error.get("reasons") if isinstance(error, dict) else None
    return "; ".join(map(str, reasons)) if isinstance(reasons, list) else ""


def _failures(run: dict, source: str) -> pd.DataFrame:
    """The run's `failures` (candidates not timed at a shape, with reasons) as status rows."""
    rows = []
    items = run.get("failures") or []
    if not isinstance(items, list):
        raise RunFileError(f"{source}: failures: expected list, got {type(items).__name__}")
    for i, rec in enumerate(items):
        if not isinstance(rec, dict) or not all(k in rec for k in (*scoring.SHAPE_ID, "candidate")):
            raise RunFileError(f"{source}: failures[{i}]: expected an object with load, family, M, N, K, candidate")
        reasons = rec.get("reasons") if isinstance(rec.get("reasons"), list) else []
        rows.append({**{k: rec[k] for k in (*scoring.SHAPE_ID, "candidate")}, "status": scoring.FAILED,
                     "reason": "; ".join(map(str, reasons))})
    return _with_key(pd.DataFrame(rows, columns=FAILURE_COLUMNS[1:])) if rows else \
        pd.DataFrame(columns=FAILURE_COLUMNS)


def check_against_workload(run: dict, source: str, workload: Workload) -> None:
    """What the schema cannot know: every family is the workload's, a scored shape has the workload's M, N and K,
    one (load, family, M) never appears at two N, and a compute peak is positive. RunFileError names the field."""
    scored = {(r.load, r.family): (int(r.M), int(r.N), int(r.K)) for r in workload.shapes.itertuples()}
    n_seen: dict[tuple, tuple[int, int]] = {}
    for name in ("results", "failures"):
        for i, rec in enumerate(run.get(name) or []):
            where = f"{source}: {name}[{i}]"
            if rec["family"] not in workload.families:
                raise RunFileError(f"{where}.family: {rec['family']!r} is not a family of the workload "
                                   f"({', '.join(workload.family_order)})")
            key = (rec["load"], rec["family"], rec["M"])
            if key in n_seen and n_seen[key][0] != rec["N"]:
                raise RunFileError(f"{where}.N: {rec['load']}/{rec['family']} M={rec['M']} appears at two N "
                                   f"({n_seen[key][0]} at {name}[{n_seen[key][1]}], {rec['N']} here)")
            n_seen.setdefault(key, (rec["N"], i))
            if rec["load"] == NEARBY_LOAD:
                continue
            if (rec["load"], rec["family"]) not in scored:
                raise RunFileError(f"{where}.load: {rec['load']!r} is not a load of the workload "
                                   f"({', '.join(workload.load_order)}, or {NEARBY_LOAD!r})")
            want = scored[(rec["load"], rec["family"])]
            for axis, value in zip("MNK", want):
                if rec[axis] != value:
                    raise RunFileError(f"{where}.{axis}: {rec['load']}/{rec['family']} has {axis}={value} in the "
                                       f"workload, got {rec[axis]!r}")
    peak = run.get("compute_peak_tflops")
    if peak is not None and not peak > 0:
        raise RunFileError(f"{source}: compute_peak_tflops: expected a positive number, got {peak!r}")


def workload_of(data: RunData, workload: Workload | None = None) -> Workload:
    """`workload` when given, else the run's own (the default for a hand-built RunData without one)."""
    return workload or data.workload or default_workload()


def run_workload(run: dict, source: str) -> tuple[Workload, str | None]:
    """datasets.workload_of_run, with a broken embedded workload as a RunFileError naming the file and field."""
    try:
        return workload_of_run(run, source)
    except DatasetError as exc:
        raise RunFileError(str(exc)) from None


def load_run_data(path, workload: Workload | None = None) -> RunData:
    """Load and validate a run file (datasets.runfile.load_run, then check_against_workload) and tabulate it.

    The workload is the run's own (embedded, or the default with a note for an older run); passing `workload`
    checks the run against that one instead. Results get a `status` (ok / incorrect / below_floor, see
    dashboard.model.scoring) and a `reason` column."""
    path = Path(path)
    run = load_run(path)
    note = None
    if workload is None:
        workload, note = run_workload(run, path.name)
    check_against_workload(run, path.name, workload)
    results = _with_key(pd.DataFrame(run["results"]))
    for column in ("method", "ci_low_us", "ci_high_us", "n_samples", "flags", "throttled_samples", "samples_us",
                   "error", "eager_us"):   # eager_us: optional, host-inclusive time per eager call (dashboard.model.eager)
        if len(results) and column not in results:
            results[column] = None
    if len(results):
        results["flags"] = [f if isinstance(f, list) else [] for f in results["flags"]]
        results["status"] = scoring.result_status(results["correct"], results["flags"])
        results["reason"] = [_reasons(e) for e in results["error"]]
    env_rows: list = []
    _flatten("", run["environment"], env_rows)
    return RunData(path=path, run=run, results=results, pairs=_with_key(pd.DataFrame(run["pairs"])),
                   probes=pd.DataFrame(run.get("probes", []), columns=None),
                   environment=pd.DataFrame(env_rows, columns=["key", "value"]),
                   failures=_failures(run, path.name), workload=workload, workload_note=note)


def status_rows(data: RunData) -> pd.DataFrame:
    """What the gate reads: one row per (shape, candidate) result with its status and median, plus one row per
    failure record (status 'failed', no time)."""
    cols = ["shape", *scoring.SHAPE_ID, "candidate", "median_us", "status", "reason", "flags", "vs_baseline",
            "rel_l2"]
    res = scoring.with_status(data.results) if len(data.results) else pd.DataFrame(columns=cols)
    if "reason" not in res:
        res = res.assign(reason="")
    if len(res):  # the flags and the errors travel with the status: a less_accurate score says so, and by how much
        errors = [e if isinstance(e, dict) else {} for e in (res["error"] if "error" in res else [None] * len(res))]
        res = res.assign(flags=res["flags"] if "flags" in res else [[]] * len(res),
                         vs_baseline=[e.get("vs_baseline") for e in errors], rel_l2=[e.get("rel_l2") for e in errors])
    frames = [res.reindex(columns=cols)]
    if len(data.failures):
        frames.append(data.failures.assign(median_us=np.nan, flags=[[]] * len(data.failures),
                                           vs_baseline=np.nan, rel_l2=np.nan)[cols])
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def pair_gate(data: RunData, baseline: str, candidate: str, workload: Workload | None = None,
              include_below_floor: bool = False, scored_only: bool = True) -> scoring.Gate:
    """dashboard.model.scoring.gate_pair over the run's scored shapes (scored_only) or every shape either side has."""
    shapes = workload_of(data, workload).shapes if scored_only else None
    return scoring.gate_pair(status_rows(data), baseline, candidate, shapes, include_below_floor,
                             scope="scored" if scored_only else "")


def probe_curve(data: RunData) -> roofline.ProbeCurve | None:
    """The run's memory-floor curve from its read probes (kind 'read' or unset), or None when it has none.

    Weight streaming is a read, so other probe kinds (writes, copies) would mislabel the floor.
    """
    probes = data.probes
    if not probes.empty and "kind" in probes:
        probes = probes[probes["kind"].isna() | (probes["kind"] == "read")]
    if probes.empty:
        return None
    return roofline.ProbeCurve.from_frame(probes)


def shape_table(data: RunData, workload: Workload | None = None) -> pd.DataFrame:
    """Results joined with metrics, memory/compute floors, which bound applies and SOL = floor ÷ median. floor_us:
    the result's own exact-bytes probe floor (the one below_floor was flagged with), or the compute floor where
    that is higher; curve_floor_us: the probe curve at the shape's bytes (the memory floor of results without
    one)."""
    workload = workload_of(data, workload)
    if data.results.empty:
        return pd.DataFrame()
    dtypes = pd.DataFrame([{"family": name, "x_dtype": f["x_dtype"], "w_dtype": f["w_dtype"],
                            "y_dtype": f["y_dtype"]} for name, f in workload.families.items()])
    unknown = set(data.results["family"]) - set(dtypes["family"])
    if unknown:  # load_run_data already refuses these; a hand-built RunData may not have been checked
        raise RunFileError(f"{data.path.name}: family not in the workload: {sorted(unknown)}")
    table = metrics.add_metrics(data.results.drop(columns=["samples_us"], errors="ignore").merge(
        dtypes, on="family", how="left"))
    curve = probe_curve(data)
    # One floor per name: `floor_us` in a result is the run's own read probe at exactly its bytes, the floor the
    # profiler flagged `below_floor` with (the gate's); the tables use that same number. `curve_floor_us` is the
    # probe curve interpolated at the bytes: the memory floor only where a result has no floor_us of its own.
    table["curve_floor_us"] = curve.us(table["bytes"].to_numpy()) if curve else np.nan
    own = table["floor_us"].astype(float) if "floor_us" in table else pd.Series(np.nan, index=table.index)
    table["memory_floor_us"] = own.where(own.notna(), table["curve_floor_us"])
    peak = data.run.get("compute_peak_tflops")
    table["compute_floor_us"] = roofline.compute_floor_us(table["flops"], peak) if peak else np.nan
    table["floor_us"] = roofline.floor_us(table["memory_floor_us"], table["compute_floor_us"])
    table["bound"] = roofline.bound(table["memory_floor_us"], table["compute_floor_us"])
    table["sol"] = roofline.sol(table["floor_us"], table["median_us"])
    return table


def workload_floors(workload: Workload, data: RunData) -> pd.DataFrame:
    """Any workload's scored shapes with their metrics and floors (derived) on the GPU `data` measured: the memory
    floor is `data`'s read-probe curve at each shape's bytes and the compute floor its compute peak (the same rules
    as shape_table's curve_floor_us), so a workload nobody has run yet shows floors too. Without probes in `data`
    (a published table) the floor columns are NaN."""
    table = metrics.add_metrics(workload.shapes.copy())
    curve = probe_curve(data)
    table["memory_floor_us"] = curve.us(table["bytes"].to_numpy()) if curve else np.nan
    peak = data.run.get("compute_peak_tflops")
    table["compute_floor_us"] = roofline.compute_floor_us(table["flops"], peak) if peak else np.nan
    table["floor_us"] = roofline.floor_us(table["memory_floor_us"], table["compute_floor_us"])
    table["bound"] = roofline.bound(table["memory_floor_us"], table["compute_floor_us"])
    return table


def candidate_pairs(data: RunData) -> list[tuple[str, str]]:
    """(baseline, candidate) pairs to score: those in `pairs`, then every other candidate of the run against the
    baseline — also one with no timed result at all (only `failures`: rejected everywhere), so that a summary
    names it and why it has no score instead of leaving it out."""
    pairs = list(dict.fromkeys(zip(data.pairs["baseline"], data.pairs["candidate"]))) if not data.pairs.empty else []
    names = list(dict.fromkeys([*(data.run["environment"].get("settings", {}).get("candidates") or []),
                                *data.candidates(),
                                *(data.failures["candidate"] if len(data.failures) else [])]))
    base = pairs[0][0] if pairs else ("baseline" if "baseline" in names else (names[0] if names else None))
    paired = {c for _, c in pairs} | {base}
    return pairs + [(base, name) for name in names if name not in paired]


def run_score(data: RunData, baseline: str, candidate: str, workload: Workload | None = None,
              include_below_floor: bool = False) -> scoring.ScoreBreakdown:
    """Score `candidate` against `baseline` from the run's per-shape medians, through the gate: NoScore (a
    ScoringError) when a scored shape of either side is incorrect, failed, missing or below the floor."""
    workload = workload_of(data, workload)
    if data.results.empty:
        raise scoring.ScoringError(f"{data.path.name}: the run has no results")
    breakdown = scoring.score_long(status_rows(data), baseline, candidate, workload, include_below_floor)
    return replace(breakdown, screen=screen_note(data))


def screen_note(data: RunData) -> str | None:
    """What the trust checks did not cover in this run, to go beside every score of it: scoring.UNSCREENED where the
    source screen was skipped (settings.screened false), scoring.STREAM_MODE where the run timed in stream mode
    (settings.mode "stream"), both where both; None for a screened cold-mode run or one that predates the settings."""
    settings = (data.run.get("environment") or {}).get("settings") or {}
    notes = [scoring.UNSCREENED if settings.get("screened") is False else None,
             scoring.STREAM_MODE if settings.get("mode") == "stream" else None]
    return "; ".join(n for n in notes if n) or None


def list_runs(runs_dir=RUNS_DIR) -> list[Path]:
    """Run files in `runs_dir`, oldest date first (the YYYY-MM-DD file-name prefix), then by name.

    Files that do not follow '<date>_<gpu>_<label>.json' sort after the dated ones.
    """
    files = run_paths(runs_dir)

    def key(p: Path):
        match = RUN_NAME_RE.match(p.name)
        return (0, match.group(1), p.name) if match else (1, "", p.name)

    return sorted(files, key=key)


def scored_candidates(data: RunData, workload: Workload | None = None) -> list[str]:
    """Candidates with a correct, timed result at every scored shape of the workload (what a score needs)."""
    workload = workload_of(data, workload)
    if data.results.empty:
        return []
    want = {(r.load, r.family, int(r.M)) for r in workload.shapes.itertuples()}
    res = data.results[data.results["status"].isin([scoring.OK, scoring.BELOW_FLOOR])]
    res = res[~res["candidate"].isin(set(data.failures["candidate"]))] if len(data.failures) else res
    have: dict[str, set] = {}
    for cand, load, family, M in zip(res["candidate"], res["load"], res["family"], res["M"]):
        have.setdefault(cand, set()).add((load, family, int(M)))
    return [c for c in data.candidates() if want <= have.get(c, set())]


EXPLAIN, TUNE, SURVEY, SWEEP, STEP = "explain", "tune", "survey", "sweep", "step"


def run_kind(run: dict) -> str:
    """What wrote a run file: a step run ("step": python -m profiler step), an explain run ("kernels"), a tune log
    ("tune"), a config survey (python -m profiler survey: results marked "plan_pick") or a plan/candidate sweep (python -m profiler run)."""
    if isinstance(run.get("step"), dict):
        return STEP
    if "kernels" in run:
        return EXPLAIN
    if "tune" in run:
        return TUNE
    if any(isinstance(r, dict) and "plan_pick" in r for r in run.get("results") or []):
        return SURVEY
    return SWEEP


def parse_run_name(path) -> dict | None:
    """{'date', 'gpu', 'label'} from a run file name, or None if it does not follow the convention."""
    match = RUN_NAME_RE.match(Path(path).name)
    return dict(zip(("date", "gpu", "label"), match.groups())) if match else None
