"""Compare 2..N timing series (candidates of one run, or of different runs) shape by shape.

A *series* is one candidate's per-shape timings: a tidy DataFrame with columns
`series, load, family, M, N, K, median_us, samples_us, pair_group, status, reason` and optionally `route`
(samples_us may be None for published tables; `pair_group` names the run — samples of two series from the same run
are paired by index, because the profiler times them in alternating rounds; `status` is dashboard.model.scoring's ok /
incorrect / failed / below_floor, and a failed shape is a row without a time; `route` is the method label the
candidate dispatched). A shape row says `same_route` where both sides of one run dispatched the same route: its
ratio and verdict are then the spread of one call timed twice, whatever they read.

Every comparison goes through dashboard.model.scoring.gate_pair: a shape where either side is incorrect, failed or (by
default) below the floor gets that verdict (INCORRECT / FAILED / BELOW FLOOR) and no ratio, and a load or overall
row that would need it gets NO SCORE; `Comparison.gates` holds each series' gate and its message.

Ratios are speedups of a series over the reference: reference_us / series_us (> 1: the series is faster).

The verdict and its band come from dashboard.model.noise, the one noise model (its docstring gives the components and
their evidence): the interval is the 95% percentile bootstrap of the ratio (seeded); the band is the within-run band
when both series come from one run (paired by round), the cross-run band when they come from different runs — and
where both runs hold the `baseline` plan on the same routes (and neither series is that baseline), each side is
taken relative to its own run's baseline (ratio of ratios), which cancels most of a run's drift. Which of these was
done is `Comparison.modes[series]`; every load and overall row carries its `band` and `band_source`
("cross-run band ±2.0 %, from 58 repeated sweeps"). A shape whose two sides ran the identical route (same method
label and config, same GPU model) is marked `same_route` with verdict SAME ROUTE: its difference is drift, never a
speedup. Without samples (a published table)
there is no interval and the verdict is NO SAMPLES.

Public entry point: `compare(df, reference, weights=None, ...) -> Comparison` (other modules and the
`python -m dashboard compare` command call it); `compare_runs` builds the series of two run sides and calls it;
`compare_candidates` compares candidates of one run.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from datasets import devices
from dashboard.model import noise, scoring

N_BOOT = 1000
SHAPE_KEY = ["load", "family", "M", "N", "K"]
GATED = {scoring.FAILED: "FAILED", scoring.INCORRECT: "INCORRECT", scoring.BELOW_FLOOR: "BELOW FLOOR",
         scoring.DISTURBED: "DISTURBED", scoring.MISSING: "NO SCORE"}
NO_SCORE = "NO SCORE"
VERDICTS = (*noise.JUDGED, noise.SAME_ROUTE, noise.NO_SAMPLES, noise.NO_VERDICT, "INCORRECT", "FAILED", "DISTURBED", "BELOW FLOOR",
            NO_SCORE)


@dataclass
class Comparison:
    """Result of `compare`: per-shape rows, per-load and overall rows, and the intersection note.

    shapes: series, load, family, M, N, K, reference_us, series_us, delta_us, ratio, ci_low, ci_high, paired,
            same_route, band, band_source, mode, verdict
    loads:  series, load, n_shapes, n_same_route, reference_us, series_us, ratio, ci_low, ci_high, delta_pct, band,
            band_source, verdict
    overall: series, n_loads, score, ci_low, ci_high, delta_pct, band, band_source, mode, verdict
    modes:  series → dashboard.model.noise.WITHIN | ACROSS | ACROSS_RR
    how:    series → that mode in words with the reason for this pair (noise.MODE_WORDS, _how)"""

    reference: str
    shapes: pd.DataFrame
    loads: pd.DataFrame
    overall: pd.DataFrame
    dropped: pd.DataFrame = field(default_factory=pd.DataFrame)
    note: str = ""
    gates: dict = field(default_factory=dict)   # series name → dashboard.model.scoring.Gate against the reference
    modes: dict = field(default_factory=dict)
    how: dict = field(default_factory=dict)     # series name → what was done, in words, and why (_how)

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


@dataclass(frozen=True)
class _Side:
    """One series at one shape: samples (or the median alone), whether they are samples, run, route, GPU model, and
    its run's baseline samples and route there (None where the run has none usable)."""

    arr: np.ndarray
    has: bool
    group: str
    route: str | None
    gpu: str | None
    base: np.ndarray | None
    base_route: str | None


def _text(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _array(samples, median) -> tuple[np.ndarray, bool]:
    has = samples is not None and not (isinstance(samples, float)) and len(samples) > 0
    return (np.asarray(samples, dtype=float) if has else np.array([median], float)), has


def _series_arrays(g: pd.DataFrame) -> dict:
    """shape key → _Side."""
    out = {}
    for row in g.itertuples(index=False):
        if not np.isfinite(row.median_us):  # a failure record: no time (the gate keeps it out)
            continue
        arr, has = _array(row.samples_us, row.median_us)
        base_med = getattr(row, "base_median_us", np.nan)
        base = None
        if isinstance(base_med, (int, float)) and np.isfinite(base_med):
            base = _array(getattr(row, "base_samples_us", None), base_med)[0]
        out[tuple(getattr(row, k) for k in SHAPE_KEY)] = _Side(
            arr, has, row.pair_group, _text(getattr(row, "route", None)), _text(getattr(row, "gpu", None)),
            base, _text(getattr(row, "base_route", None)))
    return out


def _worst(a: str, b: str) -> str:
    return min(a, b, key=scoring.STATUSES.index)


def _identical(r: _Side, o: _Side) -> bool:
    """Both sides ran the identical route: the same method label (config included) on the same GPU model."""
    if r.route is None or r.route != o.route:
        return False
    return r.gpu == o.gpu if r.gpu and o.gpu else r.group == o.group


def _mode(ref: dict, oth: dict, keys: list) -> str:
    """WITHIN when every shape pairs sides of one run; ACROSS_RR when each side has its run's baseline on the same
    route at every shape; ACROSS otherwise (noise.MODE_WORDS)."""
    if all(ref[k].group == oth[k].group for k in keys):
        return noise.WITHIN
    if keys and all(ref[k].base is not None and oth[k].base is not None and ref[k].base_route is not None
                    and ref[k].base_route == oth[k].base_route for k in keys):
        return noise.ACROSS_RR
    return noise.ACROSS


def _how(mode: str, ref: dict, oth: dict, keys: list) -> str:
    """The mode in words, with this pair's reason where raw times across runs has two: a side with no baseline of
    its own run to divide by (it is that baseline, or its run timed none) is not a difference of routes."""
    if mode == noise.ACROSS and any(ref[k].base is None or oth[k].base is None for k in keys):
        return ("across runs, raw times (a side has no baseline of its own run to divide by: it is that run's "
                "baseline, or its run timed none)")
    return noise.MODE_WORDS[mode]


def _medians(arr: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.median(arr[idx], axis=1)


def _replicates(r: _Side, o: _Side, mode: str, rng: np.random.Generator, n_boot: int):
    """Bootstrap replicates [n_boot] of (reference time, series time, reference's baseline, series' baseline); the
    baselines are ones unless the mode is ACROSS_RR. Draws share indices where the profiler paired the samples by
    round (the two sides of one run; a side and its own run's baseline)."""
    draw = lambda n: rng.integers(0, n, (n_boot, n))   # noqa: E731 — one line, used four times below
    ones = np.ones(n_boot)
    if mode == noise.WITHIN and len(r.arr) == len(o.arr):
        idx = draw(len(r.arr))
        return _medians(r.arr, idx), _medians(o.arr, idx), ones, ones
    i_r, i_o = draw(len(r.arr)), draw(len(o.arr))
    rt, ot = _medians(r.arr, i_r), _medians(o.arr, i_o)
    if mode != noise.ACROSS_RR:
        return rt, ot, ones, ones
    rb = _medians(r.base, i_r if len(r.base) == len(r.arr) else draw(len(r.base)))
    ob = _medians(o.base, i_o if len(o.base) == len(o.arr) else draw(len(o.base)))
    return rt, ot, rb, ob


def _ci(values: np.ndarray, has: bool) -> tuple[float, float]:
    return tuple(np.quantile(values, [0.025, 0.975])) if has else (np.nan, np.nan)


class _Bands:
    """The band of each level for one comparison: the model's (datasets.noise_model: the device's committed
    evidence, else the run's own repeat `own`, else none: NO VERDICT)."""

    def __init__(self, mode: str, gpu: str | None, own: dict | None = None):
        self.mode, self.gpu, self.own = mode, gpu, own

    def __call__(self, level: str, key: str | None = None) -> noise.Band:
        return noise.band(self.mode, level, self.gpu, key, own=self.own if self.mode == noise.WITHIN else None)


def _device(sides) -> str | None:
    """The one device the compared sides ran on (sides that name none, a published table, left aside); two kinds
    of device: a name that has no evidence, so no verdict ("two devices: A and B")."""
    named = {s.gpu for s in sides if s.gpu}
    if not named:
        return None
    kinds = {devices.lookup(g).key for g in named}
    return sorted(named)[0] if len(kinds) == 1 else "two devices: " + " and ".join(sorted(named))


def _judged(row: dict, band: noise.Band) -> dict:
    return {**row, "band": band.frac if band.known else np.nan, "band_source": band.text(),
            "verdict": noise.verdict(row["ci_low"], row["ci_high"], band)}


def compare(df: pd.DataFrame, reference: str, weights: dict | None = None,
            n_boot: int = N_BOOT, seed: int = 0, include_below_floor: bool = False, own: dict | None = None
            ) -> Comparison:
    """Compare every series in `df` against `reference` on the shapes all of them have.

    `weights`: family → scoring weight (the workload's) used for load sums. Ratio = reference time ÷ series time
    (> 1: the series is faster). Per-load ratio = Σ w·ref_us / Σ w·series_us over the load's shapes (in ACROSS_RR
    mode, each side's sum relative to its run's baseline sum); overall = geometric mean of the load ratios (only
    loads covered by the intersection). CIs come from the same bootstrap replicates; bands and verdicts from
    dashboard.model.noise (`own`: the run's own repeat evidence, dashboard.model.noise.own_bands, for a device without
    committed evidence). Shapes the gate keeps out get their status as verdict and no ratio;
    loads and the overall row that need them get NO SCORE."""
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
    shape_rows, load_rows, overall_rows, gates, modes, how = [], [], [], {}, {}, {}
    for name in names:
        if name == reference:
            continue
        gate = scoring.gate_pair(common.rename(columns={"series": "candidate"}), reference, name, shapes,
                                 include_below_floor, scope="")
        gates[name] = gate
        status = {tuple(r[k] for k in SHAPE_KEY): _worst(r["status_baseline"], r["status_candidate"])
                  for _, r in gate.shapes.iterrows() if not r["usable"]}
        oth = _series_arrays(common[common["series"] == name])
        usable = [k for k in map(tuple, shapes[SHAPE_KEY].to_numpy()) if k not in status]
        mode = _mode(ref, oth, usable)
        bands = _Bands(mode, _device([ref[k] for k in usable] + [oth[k] for k in usable]), own)
        modes[name] = mode
        how[name] = _how(mode, ref, oth, usable)
        boot, same = {}, set()
        for key in map(tuple, shapes[SHAPE_KEY].to_numpy()):
            if key in status:
                shape_rows.append({"series": name, **dict(zip(SHAPE_KEY, key)), "reference_us": np.nan,
                                   "series_us": np.nan, "delta_us": np.nan, "ratio": np.nan, "ci_low": np.nan,
                                   "ci_high": np.nan, "paired": False, "same_route": False, "band": np.nan,
                                   "band_source": "", "mode": mode, "verdict": GATED[status[key]]})
                continue
            r, o = ref[key], oth[key]
            has = r.has and o.has
            paired = has and mode == noise.WITHIN and len(r.arr) == len(o.arr)
            ref_med, oth_med = float(np.median(r.arr)), float(np.median(o.arr))
            rel = mode == noise.ACROSS_RR
            rb_med, ob_med = (float(np.median(r.base)), float(np.median(o.base))) if rel else (1.0, 1.0)
            if has:
                reps = _replicates(r, o, mode, rng, n_boot)
            else:
                reps = tuple(np.full(n_boot, v) for v in (ref_med, oth_med, rb_med, ob_med))
            boot[key] = (reps, has, (ref_med, oth_med, rb_med, ob_med))
            rt, ot, rb, ob = reps
            lo, hi = _ci((rt / rb) / (ot / ob), has)
            same_route = _identical(r, o)
            row = _judged({"series": name, **dict(zip(SHAPE_KEY, key)), "reference_us": ref_med,
                           "series_us": oth_med, "delta_us": oth_med - ref_med,
                           "ratio": (ref_med / rb_med) / (oth_med / ob_med), "ci_low": lo, "ci_high": hi,
                           "paired": paired, "same_route": same_route, "mode": mode},
                          bands(noise.SHAPE, noise.shape_key(key[1], key[2])))
            if same_route:   # one route timed twice: whatever it reads is drift, not a difference
                row["verdict"] = noise.SAME_ROUTE
                same.add(key)
            shape_rows.append(row)
        blocked_loads = {k[0] for k in status}
        load_rows += _load_rows(name, boot, weights, bands, blocked_loads, shapes.groupby("load", sort=False)["M"]
                                .first(), shapes["load"].value_counts(sort=False), same)
        overall_rows.append({**_overall_row(name, boot, weights, bands), "mode": mode} if gate.ok else
                            {"series": name, "n_loads": shapes["load"].nunique(), "score": np.nan,
                             "ci_low": np.nan, "ci_high": np.nan, "delta_pct": np.nan, "band": np.nan,
                             "band_source": "", "mode": mode, "verdict": NO_SCORE})
    return Comparison(reference, pd.DataFrame(shape_rows), pd.DataFrame(load_rows),
                      pd.DataFrame(overall_rows), dropped, note, gates, modes, how)


def _load_sums(boot: dict, keys: list, weights: dict):
    """Weighted sums over `keys` of (reference, series, reference baseline, series baseline): points and
    bootstrap replicates; the load ratio is (ref / ref baseline) ÷ (series / series baseline)."""
    w = np.array([weights.get(k[1], 1.0) for k in keys], float)
    points = [float(w @ np.array([boot[k][2][i] for k in keys])) for i in range(4)]
    reps = [(w[:, None] * np.stack([boot[k][0][i] for k in keys])).sum(0) for i in range(4)]
    return points, reps


def _ratio(p):
    return (p[0] / p[2]) / (p[1] / p[3])


def _load_rows(name: str, boot: dict, weights: dict, bands: _Bands, blocked: set = frozenset(),
               load_m: pd.Series | None = None, n_shapes: pd.Series | None = None, same: set = frozenset()
               ) -> list[dict]:
    """One row per load (n_shapes: load → shapes in common, in order); a blocked load gets NO SCORE."""
    rows = []
    n_shapes = n_shapes if n_shapes is not None else pd.Series([k[0] for k in boot]).value_counts(sort=False)
    for load, n in n_shapes.items():
        keys = [k for k in boot if k[0] == load]
        if load in blocked or not keys:
            rows.append({"series": name, "load": load, "n_shapes": int(n), "n_same_route": 0,
                         "reference_us": np.nan, "series_us": np.nan, "ratio": np.nan, "ci_low": np.nan,
                         "ci_high": np.nan, "delta_pct": np.nan, "band": np.nan, "band_source": "",
                         "verdict": NO_SCORE})
            continue
        points, reps = _load_sums(boot, keys, weights)
        has = all(boot[k][1] for k in keys)
        lo, hi = _ci(_ratio(reps), has)
        ratio = _ratio(points)
        m = int(load_m[load]) if load_m is not None and load in load_m else int(keys[0][2])
        rows.append(_judged({"series": name, "load": load, "n_shapes": len(keys),
                             "n_same_route": sum(k in same for k in keys), "reference_us": points[0],
                             "series_us": points[1], "ratio": ratio, "ci_low": lo, "ci_high": hi,
                             "delta_pct": (1 / ratio - 1) * 100}, bands(noise.LOAD, noise.m_range(m))))
    return rows


def _overall_row(name: str, boot: dict, weights: dict, bands: _Bands) -> dict:
    loads = list(dict.fromkeys(k[0] for k in boot))
    logs, point = [], []
    for load in loads:
        points, reps = _load_sums(boot, [k for k in boot if k[0] == load], weights)
        logs.append(np.log(_ratio(reps)))
        point.append(np.log(_ratio(points)))
    geo = np.exp(np.mean(logs, axis=0))
    has = all(v[1] for v in boot.values())
    lo, hi = _ci(geo, has)
    score = float(np.exp(np.mean(point)))
    # delta_pct: change of the score-equivalent (geomean) time vs the reference, = 1/score − 1
    return _judged({"series": name, "n_loads": len(loads), "score": score, "ci_low": lo, "ci_high": hi,
                    "delta_pct": (1 / score - 1) * 100}, bands(noise.OVERALL))


def series_from_results(results: pd.DataFrame, candidate: str, name: str, pair_group: str,
                        failures: pd.DataFrame | None = None, baseline: str | None = None,
                        gpu: str | None = None) -> pd.DataFrame:
    """One candidate's rows of a run's `results` (records as in the run file, with `status` or `correct`) plus
    its `failures` (rows without a time, status 'failed') as a compare series. `baseline`: the run's baseline
    candidate, whose usable samples and route per shape ride along (base_samples_us, base_median_us, base_route)
    for a ratio of ratios across runs (not attached to the baseline's own series); `gpu`: the run's GPU model."""
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
    if baseline is not None and baseline != candidate and len(results):
        base = scoring.with_status(results[results["candidate"] == baseline])
        base = base[base["status"] == scoring.OK]
        base = pd.DataFrame({**{k: base[k].to_numpy() for k in SHAPE_KEY},
                             "base_median_us": base["median_us"].astype(float).to_numpy(),
                             "base_samples_us": base["samples_us"].tolist() if "samples_us" in base else None,
                             "base_route": base["method"].to_numpy() if "method" in base else None})
        out = out.merge(base, on=SHAPE_KEY, how="left")
    out.insert(0, "series", name)
    out["pair_group"] = pair_group
    out["gpu"] = gpu
    return out.reset_index(drop=True)


def series_from_run(data, candidate: str, name: str) -> pd.DataFrame:
    """series_from_results for a dashboard.model.runs.RunData: its results and failures, paired within the run, with the
    run's GPU model and its `baseline` plan (dashboard.model.noise.RUN_BASELINE) for a ratio of ratios across runs."""
    base = noise.RUN_BASELINE if noise.RUN_BASELINE in data.candidates() else None
    return series_from_results(data.results, candidate, name, data.path.name, data.failures, base,
                               noise.gpu_model(data) or None)


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
                       weights: dict | None = None, scored_only: bool = True,
                       failures: pd.DataFrame | None = None, include_below_floor: bool = False,
                       gpu: str | None = None, own: dict | None = None) -> Comparison:
    """Candidates of one run against its `reference` (paired by round), e.g. for the score's CI; `gpu`: the run's
    GPU model (dashboard.model.noise.gpu_model), whose within-run bands apply.

    scored_only drops the nearby shapes so the overall row is the score's bootstrap distribution."""
    if scored_only:
        results = results[results["load"] != NEARBY_LOAD]
        failures = failures[failures["load"] != NEARBY_LOAD] if failures is not None and len(failures) else None
    frames = [series_from_results(results, name, name, run_name, failures, gpu=gpu) for name in [reference, *others]]
    return compare(pd.concat(frames, ignore_index=True), reference, weights,
                   include_below_floor=include_below_floor, own=own)


def side_name(data, candidate: str) -> str:
    """How a run side is named in a comparison: 'run file:candidate'."""
    return f"{data.path.name}:{candidate}"


def compare_runs(a, a_candidate: str, b, b_candidate: str, include_below_floor: bool = False,
                 n_boot: int = N_BOOT) -> Comparison:
    """Side B (a dashboard.model.runs.RunData and a candidate of it) against side A at the scored shapes: one run with two
    candidates (paired, within-run band) or two runs (cross-run band; ratio of ratios where both hold the baseline).
    What `python -m dashboard compare` prints and the Compare page shows for two run series. ValueError (one line)
    when the two runs hold different workloads or a side is compared with itself."""
    if a.path == b.path and a_candidate == b_candidate:
        raise ValueError(f"{side_name(a, a_candidate)} is compared with itself")
    wa, wb = a.workload, b.workload
    if wa is not None and wb is not None and (wa.name, wa.fingerprint) != (wb.name, wb.fingerprint):
        raise ValueError(f"{a.path.name} holds workload {wa.name} and {b.path.name} holds {wb.name}: shapes of "
                         "different workloads are different projections")
    frames = [series_from_run(d, c, side_name(d, c)) for d, c in ((a, a_candidate), (b, b_candidate))]
    both = pd.concat(frames, ignore_index=True)
    both = both[both["load"] != NEARBY_LOAD].reset_index(drop=True)
    if both.empty:
        raise ValueError(f"{a.path.name} and {b.path.name} have no scored shapes")
    own = noise.own_for(a) if a.path == b.path else None
    return compare(both, side_name(a, a_candidate), scoring.family_weights(wa) if wa is not None else None,
                   n_boot=n_boot, include_below_floor=include_below_floor, own=own)
