"""Compare 2..N timing series (candidates of one run, or of different runs) shape by shape.

A *series* is one candidate's per-shape timings: a tidy DataFrame with columns
`series, load, family, M, N, K, median_us, samples_us, pair_group, status, reason` and optionally `route`
(samples_us may be None for published tables; `pair_group` names the run — samples of two series from the same run
are paired by index, because the profiler times them in alternating rounds; `status` is dashboard.scoring's ok /
incorrect / failed / below_floor, and a failed shape is a row without a time; `route` is the method label the
candidate dispatched). A shape row says `same_route` where both sides of one run dispatched the same route: its
ratio and verdict are then the spread of one call timed twice, whatever they read.

Every comparison goes through dashboard.scoring.gate_pair: a shape where either side is incorrect, failed or (by
default) below the floor gets that verdict (INCORRECT / FAILED / BELOW FLOOR) and no ratio, and a load or overall
row that would need it gets NO SCORE; `Comparison.gates` holds each series' gate and its message.

Ratios are speedups of a series over the reference: reference_us / series_us (> 1: the series is faster).

Verdict from the bootstrap CI of the median ratio (percentile bootstrap, 95%, seeded):
  CI entirely above 1 + eps → FAST; entirely below 1 - eps → SLOW;
  CI inside [1 - eps, 1 + eps] → SAME; otherwise (CI straddles a band edge) → AMBIGUOUS.
Without samples (a published table) there is no CI and the verdict is NO SAMPLES.

EPS_DEFAULT = 0.01: a 1% band. The profiler stops a shape at a ratio RSE of 0.5%
(profiler.commands.sweep.SweepSettings.rse_target), so its 95% CI half-width is about 1%; differences smaller than that are not resolvable, and the write-up's official
repeats (036 check 1.3020 vs scored 1.3012) differ by 0.06%, well inside it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dashboard import scoring

EPS_DEFAULT = 0.01
N_BOOT = 1000
SHAPE_KEY = ["load", "family", "M", "N", "K"]
GATED = {scoring.FAILED: "FAILED", scoring.INCORRECT: "INCORRECT", scoring.BELOW_FLOOR: "BELOW FLOOR",
         scoring.MISSING: "NO SCORE"}
NO_SCORE = "NO SCORE"
VERDICTS = ("FAST", "SLOW", "SAME", "AMBIGUOUS", "NO SAMPLES", "INCORRECT", "FAILED", "BELOW FLOOR", NO_SCORE)


def verdict(ci_low: float, ci_high: float, eps: float = EPS_DEFAULT) -> str:
    """FAST / SLOW / SAME / AMBIGUOUS from a ratio CI (see module docstring); NO SAMPLES if the CI is NaN."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "NO SAMPLES"
    if ci_low > 1 + eps:
        return "FAST"
    if ci_high < 1 - eps:
        return "SLOW"
    if ci_low >= 1 - eps and ci_high <= 1 + eps:
        return "SAME"
    return "AMBIGUOUS"


def _boot_medians(ref: np.ndarray, oth: np.ndarray, paired: bool, rng: np.random.Generator, n_boot: int):
    """Bootstrap replicates [n_boot] of (median ref, median other); paired draws share indices."""
    i_ref = rng.integers(0, len(ref), (n_boot, len(ref)))
    i_oth = i_ref if paired else rng.integers(0, len(oth), (n_boot, len(oth)))
    return np.median(ref[i_ref], axis=1), np.median(oth[i_oth], axis=1)


@dataclass
class Comparison:
    """Result of `compare`: per-shape rows, per-load and overall rows, and the intersection note."""

    reference: str
    eps: float
    shapes: pd.DataFrame
    loads: pd.DataFrame
    overall: pd.DataFrame
    dropped: pd.DataFrame = field(default_factory=pd.DataFrame)
    note: str = ""
    gates: dict = field(default_factory=dict)   # series name → dashboard.scoring.Gate against the reference

    def no_score(self) -> dict[str, str]:
        """series → 'no score: …' for every series the gate refused (empty when all were scored)."""
        return {name: g.message() for name, g in self.gates.items() if not g.ok}


def _intersection(df: pd.DataFrame, names: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    keys = df.groupby("series")[SHAPE_KEY].apply(lambda g: set(map(tuple, g.to_numpy())))
    common = set.intersection(*(keys[n] for n in names))
    in_common = df[SHAPE_KEY].apply(tuple, axis=1).isin(common)
    dropped = df.loc[~in_common, ["series", *SHAPE_KEY]].reset_index(drop=True)
    note = ""
    if len(dropped):
        sizes = ", ".join(f"{n}: {len(keys[n])}" for n in names)
        note = (f"The series cover different shape sets ({sizes}); compared on their intersection of "
                f"{len(common)} shapes, {len(dropped)} rows left out.")
    return df[in_common], dropped, note


def _series_arrays(g: pd.DataFrame) -> dict:
    """shape key → (samples, has samples, pair_group, route or None)."""
    out = {}
    for row in g.itertuples(index=False):
        if not np.isfinite(row.median_us):  # a failure record: no time (the gate keeps it out)
            continue
        s = row.samples_us
        arr = np.asarray(s, dtype=float) if s is not None and len(s) else np.array([row.median_us], float)
        route = getattr(row, "route", None)
        out[tuple(getattr(row, k) for k in SHAPE_KEY)] = (arr, s is not None and len(s) > 0, row.pair_group,
                                                          route if isinstance(route, str) and route else None)
    return out


def _worst(a: str, b: str) -> str:
    return min(a, b, key=scoring.STATUSES.index)


def compare(df: pd.DataFrame, reference: str, weights: dict | None = None, eps: float = EPS_DEFAULT,
            n_boot: int = N_BOOT, seed: int = 0, include_below_floor: bool = False) -> Comparison:
    """Compare every series in `df` against `reference` on the shapes all of them have.

    `weights`: family → scoring weight (the workload's; 62 for every family) used for load sums.
    Per-load ratio = Σ w·ref_us / Σ w·series_us over the load's shapes; overall = geometric mean of the load
    ratios (only loads covered by the intersection). CIs come from the same bootstrap replicates. Shapes the gate
    keeps out get their status as verdict and no ratio; loads and the overall row that need them get NO SCORE.
    """
    names = list(dict.fromkeys(df["series"]))
    if reference not in names:
        raise ValueError(f"reference series {reference!r} is not among {names}")
    if len(names) < 2:
        raise ValueError("compare needs at least two series")
    weights = weights or {}
    df = scoring.with_status(df)
    common, dropped, note = _intersection(df, names)
    rng = np.random.default_rng(seed)
    shapes = common[SHAPE_KEY].drop_duplicates()
    ref = _series_arrays(common[common["series"] == reference])
    shape_rows, load_rows, overall_rows, gates = [], [], [], {}
    for name in names:
        if name == reference:
            continue
        gate = scoring.gate_pair(common.rename(columns={"series": "candidate"}), reference, name, shapes,
                                 include_below_floor, scope="")
        gates[name] = gate
        status = {tuple(r[k] for k in SHAPE_KEY): _worst(r["status_baseline"], r["status_candidate"])
                  for _, r in gate.shapes.iterrows() if not r["usable"]}
        oth = _series_arrays(common[common["series"] == name])
        boot = {}
        for key in map(tuple, shapes[SHAPE_KEY].to_numpy()):
            if key in status:
                shape_rows.append({"series": name, **dict(zip(SHAPE_KEY, key)), "reference_us": np.nan,
                                   "series_us": np.nan, "delta_us": np.nan, "ratio": np.nan, "ci_low": np.nan,
                                   "ci_high": np.nan, "paired": False, "same_route": False,
                                   "verdict": GATED[status[key]]})
                continue
            (r_arr, r_has, r_grp, r_route), (o_arr, o_has, o_grp, o_route) = ref[key], oth[key]
            # one run timed the very same call for both: the ratio is the spread of one route, not a difference
            same_route = r_route is not None and r_route == o_route and r_grp == o_grp
            has = r_has and o_has
            paired = has and r_grp == o_grp and len(r_arr) == len(o_arr)
            ref_med, oth_med = float(np.median(r_arr)), float(np.median(o_arr))
            if has:
                br, bo = _boot_medians(r_arr, o_arr, paired, rng, n_boot)
                lo, hi = np.quantile(br / bo, [0.025, 0.975])
            else:
                br, bo = np.full(n_boot, ref_med), np.full(n_boot, oth_med)
                lo = hi = np.nan
            boot[key] = (br, bo, has, ref_med, oth_med)
            shape_rows.append({"series": name, **dict(zip(SHAPE_KEY, key)), "reference_us": ref_med,
                               "series_us": oth_med, "delta_us": oth_med - ref_med, "ratio": ref_med / oth_med,
                               "ci_low": lo, "ci_high": hi, "paired": paired, "same_route": same_route,
                               "verdict": verdict(lo, hi, eps)})
        blocked_loads = {k[0] for k in status}
        load_rows += _load_rows(name, boot, weights, eps, blocked_loads, shapes["load"].value_counts(sort=False))
        overall_rows.append(_overall_row(name, boot, weights, eps) if gate.ok else
                            {"series": name, "n_loads": shapes["load"].nunique(), "score": np.nan,
                             "ci_low": np.nan, "ci_high": np.nan, "delta_pct": np.nan, "verdict": NO_SCORE})
    return Comparison(reference, eps, pd.DataFrame(shape_rows), pd.DataFrame(load_rows),
                      pd.DataFrame(overall_rows), dropped, note, gates)


def _load_sums(boot: dict, keys: list, weights: dict):
    """Weighted sums of reference and series over `keys`: point values and bootstrap replicates."""
    w = np.array([weights.get(k[1], 1.0) for k in keys], float)
    br = np.stack([boot[k][0] for k in keys])  # [shapes, n_boot]
    bo = np.stack([boot[k][1] for k in keys])
    pr = float(w @ np.array([boot[k][3] for k in keys]))
    po = float(w @ np.array([boot[k][4] for k in keys]))
    return pr, po, (w[:, None] * br).sum(0), (w[:, None] * bo).sum(0)


def _load_rows(name: str, boot: dict, weights: dict, eps: float, blocked: set = frozenset(),
               n_shapes: pd.Series | None = None) -> list[dict]:
    """One row per load (n_shapes: load → shapes in common, in order); a blocked load gets NO SCORE."""
    rows = []
    n_shapes = n_shapes if n_shapes is not None else pd.Series([k[0] for k in boot]).value_counts(sort=False)
    for load, n in n_shapes.items():
        keys = [k for k in boot if k[0] == load]
        if load in blocked or not keys:
            rows.append({"series": name, "load": load, "n_shapes": int(n), "reference_us": np.nan,
                         "series_us": np.nan, "ratio": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                         "delta_pct": np.nan, "verdict": NO_SCORE})
            continue
        pr, po, sr, so = _load_sums(boot, keys, weights)
        has = all(boot[k][2] for k in keys)
        lo, hi = np.quantile(sr / so, [0.025, 0.975]) if has else (np.nan, np.nan)
        rows.append({"series": name, "load": load, "n_shapes": len(keys), "reference_us": pr, "series_us": po,
                     "ratio": pr / po, "ci_low": lo, "ci_high": hi, "delta_pct": (po / pr - 1) * 100,
                     "verdict": verdict(lo, hi, eps)})
    return rows


def _overall_row(name: str, boot: dict, weights: dict, eps: float) -> dict:
    loads = list(dict.fromkeys(k[0] for k in boot))
    logs, point = [], []
    for load in loads:
        pr, po, sr, so = _load_sums(boot, [k for k in boot if k[0] == load], weights)
        logs.append(np.log(sr / so))
        point.append(np.log(pr / po))
    geo = np.exp(np.mean(logs, axis=0))
    has = all(v[2] for v in boot.values())
    lo, hi = np.quantile(geo, [0.025, 0.975]) if has else (np.nan, np.nan)
    score = float(np.exp(np.mean(point)))
    # delta_pct: change of the score-equivalent (geomean) time vs the reference, = 1/score − 1
    return {"series": name, "n_loads": len(loads), "score": score, "ci_low": lo, "ci_high": hi,
            "delta_pct": (1 / score - 1) * 100, "verdict": verdict(lo, hi, eps)}


def series_from_results(results: pd.DataFrame, candidate: str, name: str, pair_group: str,
                        failures: pd.DataFrame | None = None) -> pd.DataFrame:
    """One candidate's rows of a run's `results` (records as in the run file, with `status` or `correct`) plus
    its `failures` (rows without a time, status 'failed') as a compare series."""
    g = results[results["candidate"] == candidate] if len(results) else results
    f = failures[failures["candidate"] == candidate] if failures is not None and len(failures) else None
    if g.empty and (f is None or f.empty):
        raise ValueError(f"candidate {candidate!r} has no results in run {pair_group!r}")
    g = scoring.with_status(g)
    out = g[SHAPE_KEY + ["median_us"]].copy()
    out["samples_us"] = g["samples_us"].tolist() if "samples_us" in g else None
    out["route"] = g["method"].to_numpy() if "method" in g else None     # what the candidate dispatched there
    out["status"] = g["status"].to_numpy()
    out["reason"] = g["reason"].to_numpy() if "reason" in g else ""
    if f is not None and len(f):
        out = pd.concat([out, f[SHAPE_KEY].assign(median_us=np.nan, samples_us=None, status=scoring.FAILED,
                                                  reason=f["reason"].to_numpy())], ignore_index=True)
    out.insert(0, "series", name)
    out["pair_group"] = pair_group
    return out.reset_index(drop=True)


def series_from_run(data, candidate: str, name: str) -> pd.DataFrame:
    """series_from_results for a dashboard.runs.RunData: its results and failures, paired within the run."""
    return series_from_results(data.results, candidate, name, data.path.name, data.failures)


def series_from_table(table: pd.DataFrame, column: str, name: str, pair_group: str) -> pd.DataFrame:
    """A published per-shape table column (e.g. official baseline_us / candidate_us) as a series, no samples."""
    out = table[SHAPE_KEY].copy()
    out["median_us"] = table[column].astype(float).to_numpy()
    out["samples_us"] = None
    out["status"] = scoring.OK   # the official format has no correctness column: a table is taken as given
    out["reason"] = ""
    out.insert(0, "series", name)
    out["pair_group"] = pair_group
    return out.reset_index(drop=True)


NEARBY_LOAD = "nearby"  # generalization shapes: never part of a score


def compare_candidates(results: pd.DataFrame, reference: str, others: list[str], run_name: str,
                       weights: dict | None = None, eps: float = EPS_DEFAULT, scored_only: bool = True,
                       failures: pd.DataFrame | None = None, include_below_floor: bool = False) -> Comparison:
    """Candidates of one run against its `reference` (paired by round), e.g. for the score's CI.

    scored_only drops the nearby shapes so the overall row is the score's bootstrap distribution."""
    if scored_only:
        results = results[results["load"] != NEARBY_LOAD]
        failures = failures[failures["load"] != NEARBY_LOAD] if failures is not None and len(failures) else None
    frames = [series_from_results(results, name, name, run_name, failures) for name in [reference, *others]]
    return compare(pd.concat(frames, ignore_index=True), reference, weights, eps,
                   include_below_floor=include_below_floor)
