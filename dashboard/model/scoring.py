"""The competition score (seed: 'The exact scoring formula').

- per-load ratio  = Σ w·baseline_us ÷ Σ w·candidate_us over the load's five shapes (w = 62 for every family here,
  so it cancels — it is still applied, so a workload with unequal weights scores correctly);
- score           = geometric mean of the six load ratios;
- score-equivalent time (per side) = geometric mean over loads of Σ w·t. With w = 62 this is 62 × the geometric
  mean of the plain load sums, and score = baseline equivalent ÷ candidate equivalent;
- time saved      = 1 − 1/score (the fraction of aggregate time removed).

The gate (`gate_pair`): a ratio is only ever computed from shapes where BOTH sides are correct and timed. Each
(shape, candidate) has a status — ok, incorrect (failed the correctness contract but was timed), failed (not
timed: the run's `failures`), below_floor (faster than the run's measured HBM floor: an artifact, left out unless
included explicitly) or missing. `score_long` is the only way a measured score is computed and it goes through the
gate first, so a pair with any incorrect, failed, missing or (by default) below-floor scored shape has no score:
NoScore says which side, why and where ("no score: best is incorrect at 1 scored shape (decode 1/o)").
Published tables (`score_official`) are correct by publication: the official evaluator passed every shape.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from datasets import Workload
from datasets.runfile import DISTURBED_FLAG
from datasets.shapes import shape_key  # how projlab names a shape; re-exported for dashboard callers

SHAPE_ID = ["load", "family", "M", "N", "K"]

# Status of one candidate at one shape, in the order one wins over another when several apply.
FAILED, INCORRECT, BELOW_FLOOR, MISSING, OK = "failed", "incorrect", "below_floor", "missing", "ok"
# The sweep's canary found this baseline result at another speed than in a worker that never loaded a candidate
# (flag "baseline_disturbed"): a candidate reached it, so no ratio with it means anything.
DISTURBED = "disturbed"
STATUSES = (FAILED, INCORRECT, DISTURBED, BELOW_FLOOR, MISSING, OK)
_PHRASE = {INCORRECT: "is incorrect at", FAILED: "failed at", MISSING: "has no time for",
           BELOW_FLOOR: "is below the measured HBM floor at",
           DISTURBED: "ran at another speed than in a clean worker (canary: baseline disturbed) at"}
BELOW_FLOOR_NOTE = "an artifact of the measurement, left out of scores unless included explicitly"


class ScoringError(ValueError):
    """The times given cannot be scored (a shape missing for one side, a non-positive time, ...)."""


class NoScore(ScoringError):
    """The gate refused the pair: `gate` says which side is incorrect / failed / missing / below the floor, where."""

    def __init__(self, gate: "Gate"):
        self.gate = gate
        super().__init__(gate.message())


def result_status(correct, flags) -> list[str]:
    """Status of result rows from their `correct` and `flags` columns: incorrect, disturbed, below_floor or ok."""
    out = []
    for ok, fl in zip(correct, flags):
        fl = fl if isinstance(fl, (list, tuple)) else []
        out.append(INCORRECT if not bool(ok) or "incorrect" in fl else DISTURBED if DISTURBED_FLAG in fl
                   else BELOW_FLOOR if "below_floor" in fl else OK)
    return out


def with_status(times: pd.DataFrame) -> pd.DataFrame:
    """`times` with a `status` column: kept if present, else from `correct` (+ `flags`).

    A table without either cannot say whether its times are right, so it cannot be scored (this is what keeps
    every ratio behind the gate)."""
    if "status" in times:
        bad = set(times["status"]) - set(STATUSES)
        if bad:
            raise ScoringError(f"unknown result status {sorted(bad)}; known: {list(STATUSES)}")
        return times
    if "correct" not in times:
        raise ScoringError("these times carry no correctness ('correct' or 'status'), so they cannot be scored")
    flags = times["flags"] if "flags" in times else [[]] * len(times)
    return times.assign(status=result_status(times["correct"], flags))


@dataclass(frozen=True)
class Gate:
    """Which shapes of a (baseline, candidate) pair may enter a ratio, and why the others may not.

    shapes: SHAPE_ID + shape (key), status_baseline, status_candidate, reason_baseline, reason_candidate, usable.
    """
    baseline: str
    candidate: str
    shapes: pd.DataFrame
    include_below_floor: bool = False
    scope: str = "scored"   # the word in messages: "scored shapes" or just "shapes"

    def problems(self) -> list[tuple[str, str, list[str], list[str]]]:
        """(side name, status, shape keys, reasons) for every blocking status of either side."""
        out = []
        sides = [(self.baseline, "baseline")] + ([(self.candidate, "candidate")]
                                                 if self.candidate != self.baseline else [])
        # plain lists: every page asks ok / wrong / refused several times, and ten DataFrame filters per ask
        # cost 30-60 ms of a fresh server's first page
        shape = self.shapes["shape"].tolist()
        cols = {role: (self.shapes[f"status_{role}"].tolist(), self.shapes[f"reason_{role}"].tolist())
                for _, role in sides}
        for status in (INCORRECT, FAILED, DISTURBED, MISSING, BELOW_FLOOR):
            if status == BELOW_FLOOR and self.include_below_floor:
                continue
            for name, role in sides:
                statuses, reasons = cols[role]
                hit = [i for i, s in enumerate(statuses) if s == status]
                if hit:
                    out.append((name, status, [shape[i] for i in hit], [reasons[i] for i in hit]))
        return out

    @property
    def ok(self) -> bool:
        return not self.problems()

    @property
    def wrong(self) -> bool:
        """Some shape is incorrect or failed (not merely unfinished or below the floor)."""
        return any(status in (INCORRECT, FAILED) for _, status, _, _ in self.problems())

    @property
    def refused(self) -> bool:
        """Blocked by the results themselves (incorrect, failed, below the floor), not merely by unfinished shapes:
        the CLI exits non-zero for such a pair, the app shows an error rather than a note."""
        return any(status != MISSING for _, status, _, _ in self.problems())

    @property
    def below_floor(self) -> list[str]:
        """Shape keys where either side is below the floor (left out unless included)."""
        hit = (self.shapes["status_baseline"] == BELOW_FLOOR) | (self.shapes["status_candidate"] == BELOW_FLOOR)
        return list(self.shapes.loc[hit, "shape"])

    @property
    def usable(self) -> pd.DataFrame:
        return self.shapes[self.shapes["usable"]]

    def message(self, first: int = 3) -> str:
        """'no score: best is incorrect at 1 scored shape (decode 1/o: rel_l2 0.2); baseline failed at ...'."""
        parts = []
        for name, status, keys, reasons in self.problems():
            n = len(keys)
            noun = f"{self.scope} shape" if self.scope else "shape"
            shown = [f"{k}: {r}" if r and status in (INCORRECT, FAILED) else k
                     for k, r in zip(keys[:first], reasons[:first])]
            more = f", … {n - first} more" if n > first else ""
            note = f"; {BELOW_FLOOR_NOTE}" if status == BELOW_FLOOR else ""
            parts.append(f"{name} {_PHRASE[status]} {n} {noun}{'s' if n != 1 else ''} "
                         f"({', '.join(shown)}{more}{note})")
        return "no score: " + "; ".join(parts) if parts else ""


def _side(times: pd.DataFrame, name: str, shapes: pd.DataFrame) -> pd.DataFrame:
    rows = times[times["candidate"] == name]
    dup = rows.duplicated(SHAPE_ID)
    if dup.any():
        first = rows.loc[dup].iloc[0]
        raise ScoringError(f"candidate {name!r} has two times for {shape_key(first['load'], first['family'], first['M'])}")
    reason = rows["reason"] if "reason" in rows else pd.Series("", index=rows.index)
    merged = shapes.merge(rows[SHAPE_ID].assign(status=rows["status"], reason=reason.fillna("").astype(str)),
                          on=SHAPE_ID, how="left")
    merged["status"] = merged["status"].fillna(MISSING)
    merged["reason"] = merged["reason"].fillna("")
    return merged


def gate_pair(times: pd.DataFrame, baseline: str, candidate: str, shapes: pd.DataFrame | None = None,
              include_below_floor: bool = False, scope: str = "scored") -> Gate:
    """The one correctness gate: status of both sides at each of `shapes` (SHAPE_ID rows; default every shape
    either side has) and whether the shape may enter a ratio (both ok, or below the floor when included).

    `times`: long rows with SHAPE_ID, candidate and `status` (or `correct` [+ `flags`]); a failure record is a row
    with status 'failed' (dashboard.model.runs.status_rows builds these from a run file) and an optional `reason`."""
    times = with_status(times)
    if shapes is None:
        mine = times[times["candidate"].isin([baseline, candidate])]
        shapes = mine[SHAPE_ID].drop_duplicates()
    shapes = shapes[SHAPE_ID].drop_duplicates().reset_index(drop=True)
    b, c = _side(times, baseline, shapes), _side(times, candidate, shapes)
    fine = {OK, BELOW_FLOOR} if include_below_floor else {OK}
    frame = shapes.assign(shape=[shape_key(r.load, r.family, r.M) for r in shapes.itertuples()],
                          status_baseline=b["status"].to_numpy(), status_candidate=c["status"].to_numpy(),
                          reason_baseline=b["reason"].to_numpy(), reason_candidate=c["reason"].to_numpy())
    frame["usable"] = frame["status_baseline"].isin(fine) & frame["status_candidate"].isin(fine)
    return Gate(baseline, candidate, frame, include_below_floor, scope)


@dataclass(frozen=True)
class ScoreBreakdown:
    baseline: str
    candidate: str
    shapes: pd.DataFrame   # load, family, M, N, K, weight, baseline_us, candidate_us, ratio
    loads: pd.DataFrame    # load, baseline_sum_us, candidate_sum_us, ratio (weighted sums), in load order
    score: float
    time_saved: float
    equiv_baseline_us: float
    equiv_candidate_us: float
    below_floor_included: tuple = ()  # shapes below the measured floor that were scored because the user asked
    accuracy: str | None = None       # accuracy_note: shown beside the score wherever it appears
    screen: str | None = None         # UNSCREENED (--trust-candidate), STREAM_MODE (--mode stream): beside the score
                                      # wherever it appears

    def load_ratios(self) -> dict[str, float]:
        return dict(zip(self.loads["load"], self.loads["ratio"]))


def family_weights(workload) -> dict[str, float]:
    """family → scoring weight (the workload's; 62 for every family) for the weighted load sums."""
    return {name: spec["weight"] for name, spec in workload.families.items()}


def geomean(values) -> float:
    """Geometric mean as exp(mean(log)) — the same number as the n-th root of the product."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0 or np.any(~np.isfinite(arr)) or np.any(arr <= 0):
        raise ScoringError(f"geometric mean needs positive finite values, got {arr.tolist()}")
    return float(np.exp(np.mean(np.log(arr))))


def time_saved(score: float) -> float:
    return 1.0 - 1.0 / score


def _score_wide(shapes: pd.DataFrame, load_order: list[str] | None = None, baseline: str = "baseline",
                candidate: str = "candidate", below_floor: tuple = ()) -> ScoreBreakdown:
    """Score a table with one row per shape: load, family, baseline_us, candidate_us and weight.

    Private: callers reach it through score_long (gated) or score_official (a published table)."""
    frame = shapes.copy()
    for col in ("baseline_us", "candidate_us", "weight"):
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = frame.loc[~(values > 0), ["load", "family"]]
        if len(bad):
            first = bad.iloc[0]
            raise ScoringError(f"{col} must be a positive number for {first['load']}/{first['family']}")
        frame[col] = values.astype(float)
    frame["ratio"] = frame["baseline_us"] / frame["candidate_us"]
    order = load_order or list(dict.fromkeys(frame["load"]))
    weighted = frame.assign(b=frame["weight"] * frame["baseline_us"], c=frame["weight"] * frame["candidate_us"])
    sums = weighted.groupby("load", sort=False)[["b", "c"]].sum().reindex(order)
    if sums.isna().any().any():
        raise ScoringError(f"no shapes for load(s) {sums.index[sums['b'].isna()].tolist()}")
    loads = pd.DataFrame({"load": order, "baseline_sum_us": sums["b"].to_numpy(),
                          "candidate_sum_us": sums["c"].to_numpy()})
    loads["ratio"] = loads["baseline_sum_us"] / loads["candidate_sum_us"]
    score = geomean(loads["ratio"])
    return ScoreBreakdown(baseline=baseline, candidate=candidate, shapes=frame, loads=loads, score=score,
                          time_saved=time_saved(score), equiv_baseline_us=geomean(loads["baseline_sum_us"]),
                          equiv_candidate_us=geomean(loads["candidate_sum_us"]), below_floor_included=below_floor)


def score_official(official: pd.DataFrame, workload, candidate: str = "036 (official)") -> ScoreBreakdown:
    """Score a table in the official format (datasets.load_official) with the workload's weights and load order.

    No gate: the format has no correctness column — the published 036 table passed the official evaluator at
    every shape; for any other table `candidate` should say it is not the published one."""
    weights = workload.shapes[["load", "family", "weight"]]
    frame = official.merge(weights, on=["load", "family"], how="left", validate="one_to_one")
    return _score_wide(frame, workload.load_order, baseline="baseline", candidate=candidate)


UNSCREENED = ("unscreened: measured with --trust-candidate (the candidates' source was not screened before it ran; "
              "docs/trust.md)")
STREAM_MODE = ("stream mode: each graph's calls read a fixed rotation of inputs and are judged after timing as the last "
               "replay left them, so an answer kept across replays is not ruled out (fresh inputs and a random judge "
               "are cold mode's; docs/trust.md)")
LESS_ACCURATE = "less_accurate"  # the sweep's flag: correct, but error > the contract's factor x the baseline's


def accuracy_note(times: pd.DataFrame, candidate: str, scored: pd.DataFrame | None = None) -> str | None:
    """The words that go beside a score whose candidate is flagged less_accurate at a scored shape, with the
    factor and, at the worst shape, the error itself against the tolerance ("less accurate: error up to 5.2x the
    baseline's (decode 1/o: rel. L2 1.3e-05, tolerance 0.01) at 3 of 30 scored shapes (decode 1/o, ...)"); None
    when it is not (or `times` carries no flags). `times`: rows with candidate, flags and optionally vs_baseline
    and rel_l2; `scored`: the scored shapes, optionally with rel_l2_tol."""
    if "flags" not in times:
        return None
    rows = times[times["candidate"] == candidate]
    if scored is not None:
        rows = rows.merge(scored[[c for c in (*SHAPE_ID, "rel_l2_tol") if c in scored]], on=SHAPE_ID)
    flagged = rows[[isinstance(f, (list, tuple)) and LESS_ACCURATE in f for f in rows["flags"]]]
    if flagged.empty:
        return None
    factors = (pd.to_numeric(flagged["vs_baseline"], errors="coerce") if "vs_baseline" in flagged
               else pd.Series(dtype=float))
    factor = f"error up to {factors.max():.3g}x the baseline's" if factors.notna().any() else \
        "error above the contract's factor x the baseline's"
    if factors.notna().any() and {"rel_l2", "rel_l2_tol"} <= set(flagged):
        worst = flagged.loc[factors.idxmax()]
        if pd.notna(worst["rel_l2"]) and pd.notna(worst["rel_l2_tol"]):
            factor += (f" ({shape_key(worst['load'], worst['family'], worst['M'])}: rel. L2 error "
                       f"{float(worst['rel_l2']):.2g}, tolerance {float(worst['rel_l2_tol']):.2g})")
    names = [shape_key(r.load, r.family, r.M) for r in flagged.itertuples()]
    where = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    total = len(scored) if scored is not None else len(rows)
    return f"less accurate: {factor} at {len(flagged)} of {total} scored shapes ({where})"


def score_long(times: pd.DataFrame, baseline: str, candidate: str, workload,
               include_below_floor: bool = False) -> ScoreBreakdown:
    """Score two candidates from a long table: load, family, M, N, K, candidate, median_us and correctness
    (`status`, or `correct` [+ `flags`]); failure records are rows with status 'failed'.

    Every scored shape of the workload must be usable for both sides (gate_pair); otherwise NoScore (a
    ScoringError) names the side, the status and the shapes. Rows for other candidates or nearby shapes are
    ignored."""
    scored = workload.shapes[SHAPE_ID + ["weight"]]
    gate = gate_pair(times, baseline, candidate, scored, include_below_floor)
    if not gate.ok:
        raise NoScore(gate)
    times = with_status(times)
    sides = {}
    for role, name in (("baseline_us", baseline), ("candidate_us", candidate)):
        rows = times.loc[(times["candidate"] == name) & (times["status"] != FAILED), SHAPE_ID + ["median_us"]]
        sides[role] = scored.merge(rows, on=SHAPE_ID, how="left")["median_us"].to_numpy()
    frame = scored.assign(**sides)
    out = _score_wide(frame, workload.load_order, baseline=baseline, candidate=candidate,
                      below_floor=tuple(gate.below_floor) if include_below_floor else ())
    tolerances = workload.shapes[SHAPE_ID + ["rel_l2_tol"]] if "rel_l2_tol" in workload.shapes else scored
    return replace(out, accuracy=accuracy_note(times, candidate, tolerances))


def complete_loads(times: pd.DataFrame, baseline: str, candidate: str, workload,
                   include_below_floor: bool = False) -> pd.DataFrame:
    """Per-load ratios for the loads where both candidates pass the gate at every shape (a partial run's usable
    part). No overall score: the geometric mean needs all six loads.
    """
    rows = []
    for load in workload.load_order:
        try:
            part = score_long(times[times["load"] == load], baseline, candidate, _one_load(workload, load),
                              include_below_floor)
        except ScoringError:
            continue
        rows.append(part.loads.iloc[0].to_dict())
    return pd.DataFrame(rows, columns=["load", "baseline_sum_us", "candidate_sum_us", "ratio"])


class _one_load:
    """A workload view restricted to one load (just the attributes score_long reads)."""

    def __init__(self, workload, load: str):
        self.shapes = workload.shapes[workload.shapes["load"] == load]
        self.load_order = [load]
