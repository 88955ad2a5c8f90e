"""Run files (datasets/runs/*.json) as DataFrames, with metrics, floors, SOL and scores per candidate pair."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from datasets import NEARBY_LOAD, RUNS_DIR, Workload, load_workload
from datasets.jsonfile import JsonInputError, read_json
from profiler.runfile import RunFileError, load_run, validate_run
from dashboard import metrics, roofline, scoring

RUN_NAME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})_(.+?)_(.+)\.json$")
SCALAR_RESULT_COLUMNS = ["load", "family", "M", "N", "K", "candidate", "method", "median_us", "ci_low_us",
                         "ci_high_us", "n_samples", "correct", "flags", "throttled_samples"]


@dataclass(frozen=True)
class RunData:
    path: Path
    run: dict                    # the validated JSON, untouched
    results: pd.DataFrame        # one row per (shape, candidate); samples_us kept as a list column
    pairs: pd.DataFrame          # one row per (shape, baseline, candidate)
    probes: pd.DataFrame         # bytes, us, tbps, design, kind, for_shape
    environment: pd.DataFrame    # key, value (nested keys flattened with '.')

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


def _shape_key(load: str, family: str, M: int) -> str:
    return f"nearby/{family}/M{M}" if load == NEARBY_LOAD else f"{load}/{family}"


def _with_key(frame: pd.DataFrame) -> pd.DataFrame:
    if len(frame):
        frame.insert(0, "shape", [_shape_key(r.load, r.family, r.M) for r in frame.itertuples()])
    return frame


def load_run_data(path) -> RunData:
    """Load and validate a run file (profiler.runfile.load_run) and tabulate it."""
    path = Path(path)
    run = load_run(path)
    results = _with_key(pd.DataFrame(run["results"]))
    for column in ("method", "ci_low_us", "ci_high_us", "n_samples", "flags", "throttled_samples", "samples_us"):
        if len(results) and column not in results:
            results[column] = None
    if len(results):
        results["flags"] = [f if isinstance(f, list) else [] for f in results["flags"]]
    env_rows: list = []
    _flatten("", run["environment"], env_rows)
    return RunData(path=path, run=run, results=results, pairs=_with_key(pd.DataFrame(run["pairs"])),
                   probes=pd.DataFrame(run.get("probes", []), columns=None),
                   environment=pd.DataFrame(env_rows, columns=["key", "value"]))


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
    """Results joined with metrics, memory/compute floors, which bound applies and SOL = floor ÷ median."""
    workload = workload or load_workload()
    if data.results.empty:
        return pd.DataFrame()
    dtypes = pd.DataFrame([{"family": name, "x_dtype": f["x_dtype"], "w_dtype": f["w_dtype"],
                            "y_dtype": f["y_dtype"]} for name, f in workload.families.items()])
    unknown = set(data.results["family"]) - set(dtypes["family"])
    if unknown:
        raise ValueError(f"{data.path.name}: family not in the workload: {sorted(unknown)}")
    table = metrics.add_metrics(data.results.drop(columns=["samples_us"], errors="ignore").merge(
        dtypes, on="family", how="left"))
    curve = probe_curve(data)
    table["memory_floor_us"] = curve.us(table["bytes"].to_numpy()) if curve else np.nan
    peak = data.run.get("compute_peak_tflops")
    table["compute_floor_us"] = roofline.compute_floor_us(table["flops"], peak) if peak else np.nan
    table["floor_us"] = roofline.floor_us(table["memory_floor_us"], table["compute_floor_us"])
    table["bound"] = roofline.bound(table["memory_floor_us"], table["compute_floor_us"])
    table["sol"] = roofline.sol(table["floor_us"], table["median_us"])
    return table


def candidate_pairs(data: RunData) -> list[tuple[str, str]]:
    """(baseline, candidate) pairs to score: those in `pairs`, else the first candidate against each other."""
    if not data.pairs.empty:
        return list(dict.fromkeys(zip(data.pairs["baseline"], data.pairs["candidate"])))
    names = data.candidates()
    base = "baseline" if "baseline" in names else (names[0] if names else None)
    return [(base, name) for name in names if name != base]


def run_score(data: RunData, baseline: str, candidate: str,
              workload: Workload | None = None) -> scoring.ScoreBreakdown:
    """Score `candidate` against `baseline` from the run's per-shape medians (ScoringError if shapes missing)."""
    workload = workload or load_workload()
    if data.results.empty:
        raise scoring.ScoringError(f"{data.path.name}: the run has no results")
    return scoring.score_long(data.results, baseline, candidate, workload)


def list_runs(runs_dir=RUNS_DIR) -> list[Path]:
    """Run files in `runs_dir`, oldest date first (the YYYY-MM-DD file-name prefix), then by name.

    Files that do not follow '<date>_<gpu>_<label>.json' sort after the dated ones.
    """
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        return []
    files = [p for p in runs_dir.glob("*.json") if p.is_file() and not p.name.startswith(".")]

    def key(p: Path):
        match = RUN_NAME_RE.match(p.name)
        return (0, match.group(1), p.name) if match else (1, "", p.name)

    return sorted(files, key=key)


def scored_candidates(data: RunData, workload: Workload | None = None) -> list[str]:
    """Candidates with a correct result at every scored shape of the workload (what a score needs)."""
    workload = workload or load_workload()
    if data.results.empty:
        return []
    want = {(r.load, r.family, int(r.M)) for r in workload.shapes.itertuples()}
    res = data.results[data.results["correct"].astype(bool)]
    have = res.groupby("candidate").apply(
        lambda g: want <= {(a, b, int(c)) for a, b, c in zip(g["load"], g["family"], g["M"])},
        include_groups=False)
    return [c for c in data.candidates() if bool(have.get(c, False))]


def _scored_count_raw(run, want: set) -> int:
    """scored_candidates' count from a run's raw JSON (no validation, no DataFrames): candidates with a correct
    result at every scored shape in `want` ((load, family, M) tuples)."""
    have: dict = {}
    for r in (run.get("results") if isinstance(run, dict) else None) or []:
        if isinstance(r, dict) and r.get("correct") is True:
            have.setdefault(str(r.get("candidate")), set()).add((r.get("load"), r.get("family"), r.get("M")))
    return sum(want <= shapes for shapes in have.values())


def default_run(paths: list[Path], workload: Workload | None = None) -> Path | None:
    """The committed run to open first: most fully scored candidates (a paired sweep beats a tune log or a
    probe-only run), then the newest by created_utc, then by file name. Unreadable files are skipped (the picker
    still lists them).

    Every file is ranked from its raw JSON and only the winner is validated (the next one if it fails): validating
    and tabulating all 13 committed runs made the app's first page 0.3 s slower."""
    workload = workload or load_workload()
    want = {(r.load, r.family, int(r.M)) for r in workload.shapes.itertuples()}
    ranked = []
    for p in paths:
        try:
            run = read_json(p)
        except JsonInputError:
            continue
        created = str(run.get("created_utc") or "") if isinstance(run, dict) else ""
        ranked.append(((_scored_count_raw(run, want), created, p.name), p, run))
    for _, p, run in sorted(ranked, key=lambda kpr: kpr[0], reverse=True):
        try:
            validate_run(run, source=p.name)  # what load_run checks after reading
        except RunFileError:
            continue
        return p
    return None


def parse_run_name(path) -> dict | None:
    """{'date', 'gpu', 'label'} from a run file name, or None if it does not follow the convention."""
    match = RUN_NAME_RE.match(Path(path).name)
    return dict(zip(("date", "gpu", "label"), match.groups())) if match else None
