"""Tables the app and the reports show, built from dashboard.runs / scoring / roofline (no new analysis).

The published official table is turned into the same long form as a run's results (candidates "baseline" and
"036"), with floors from the write-up's four published probes and its quoted 989 TFLOP/s peak, so every page
and report treats a published table and a measured run alike. The `source` column says which is which.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dashboard import runs, scoring

# The write-up's "applicable" dense BF16 peak used in its roofline arithmetic (seed section 'A rough way to ask
# how much room was left'): a published model input, not a measurement of this lab.
SEED_PEAK_TFLOPS = 989.0
OFFICIAL_CANDIDATE = "036"


def official_run_data(official: pd.DataFrame, seed_probes: pd.DataFrame, path: Path,
                      candidate: str = OFFICIAL_CANDIDATE) -> runs.RunData:
    """A RunData view of a per-shape table (baseline_us / candidate_us) so runs.shape_table applies."""
    rows = []
    for name, col in (("baseline", "baseline_us"), (candidate, "candidate_us")):
        part = official[["load", "family", "M", "N", "K"]].copy()
        part["candidate"] = name
        part["median_us"] = official[col].astype(float)
        rows.append(part)
    results = pd.concat(rows, ignore_index=True)
    for col in ("method", "ci_low_us", "ci_high_us", "n_samples", "throttled_samples", "samples_us"):
        results[col] = None
    results["correct"] = True  # the official evaluator passed every shape of 036
    results["flags"] = [[] for _ in range(len(results))]
    results.insert(0, "shape", results["load"] + "/" + results["family"])
    run = {"status": "complete", "label": path.stem, "environment": {}, "compute_peak_tflops": SEED_PEAK_TFLOPS,
           "results": [], "pairs": []}
    return runs.RunData(path=path, run=run, results=results, pairs=pd.DataFrame(),
                        probes=seed_probes[["bytes", "us"]].copy(), environment=pd.DataFrame(columns=["key", "value"]))


def wide_shapes(table: pd.DataFrame, pairs: pd.DataFrame, baseline: str, candidate: str,
                gate: scoring.Gate | None = None) -> pd.DataFrame:
    """One row per shape: baseline and candidate times, ratio (+ CI from the run's pairs), SOL, status.

    `table` is runs.shape_table output (long, one row per shape × candidate). Ratios are only filled where the
    gate lets the shape in (both sides correct and timed; `gate` from dashboard.runs.pair_gate, else computed from
    `table` with below-floor results left out): elsewhere they are NaN and status_* / usable say why."""
    if gate is None:
        gate = scoring.gate_pair(table, baseline, candidate, scope="")
    keep = ["load", "family", "M", "N", "K", "bytes", "flops", "intensity_flop_per_byte",
            "memory_floor_us", "compute_floor_us", "floor_us", "bound"]
    b = table[table["candidate"] == baseline].set_index("shape")
    c = table[table["candidate"] == candidate].set_index("shape")
    gated = gate.shapes.set_index("shape")
    index = [k for k in dict.fromkeys([*table["shape"], *gated.index]) if k in c.index or k in b.index
             or k in gated.index]
    meta = table.drop_duplicates("shape").set_index("shape")
    out = meta[[k for k in keep if k in meta]].reindex(index)
    for col in ("load", "family", "M", "N", "K"):  # shapes only in the failures: identity from the gate
        out[col] = out[col].fillna(gated[col].reindex(index)) if col in out else gated[col].reindex(index)
    out["baseline_us"] = b["median_us"].reindex(index)
    out["candidate_us"] = c["median_us"].reindex(index)
    out["status_baseline"] = gated["status_baseline"].reindex(index)
    out["status_candidate"] = gated["status_candidate"].reindex(index)
    out["usable"] = gated["usable"].reindex(index).fillna(False).astype(bool)
    out["ratio"] = (out["baseline_us"] / out["candidate_us"]).where(out["usable"])
    # The CI belongs to the median of the paired per-round ratios (ratio_paired), which need not equal the ratio of
    # the two medians (ratio, the one the score aggregates): show both, never a CI around the wrong point.
    out["ratio_paired"] = np.nan
    out["ratio_ci_low"] = np.nan
    out["ratio_ci_high"] = np.nan
    if pairs is not None and len(pairs):
        p = pairs[(pairs["baseline"] == baseline) & (pairs["candidate"] == candidate)].set_index("shape")
        if len(p):
            for col, src in (("ratio_paired", "ratio_median"), ("ratio_ci_low", "ratio_ci_low"),
                             ("ratio_ci_high", "ratio_ci_high")):
                out[col] = p[src].reindex(index).where(out["usable"])
    out["sol_baseline"] = b["sol"].reindex(index) if "sol" in b else np.nan
    out["sol_candidate"] = c["sol"].reindex(index) if "sol" in c else np.nan
    out["correct"] = out["status_candidate"].isin([scoring.OK, scoring.BELOW_FLOOR])
    out["method"] = c["method"].reindex(index) if "method" in c else None
    out["flags"] = c["flags"].reindex(index).map(lambda f: ", ".join(f) if isinstance(f, list) else "") \
        if "flags" in c else ""
    out["M"] = out["M"].astype(int)
    return out.rename_axis("shape").reset_index()


def load_sol(wide: pd.DataFrame, weights: dict[str, float] | None = None) -> pd.DataFrame:
    """SOL per load: Σ w·floor ÷ Σ w·time, for baseline and candidate (NaN where floors are unknown, and for a load
    with a shape the gate keeps out: SOL is a speed figure, not computed from an incorrect result)."""
    w = wide["family"].map(weights or {}).fillna(1.0)
    g = wide.assign(wf=w * wide["floor_us"], wb=w * wide["baseline_us"], wc=w * wide["candidate_us"],
                    bad=~wide["usable"] if "usable" in wide else False)
    sums = g.groupby("load", sort=False)[["wf", "wb", "wc"]].sum(min_count=1)
    bad = g.groupby("load", sort=False)["bad"].any()
    sums.loc[bad[bad].index, ["wb", "wc"]] = np.nan
    return pd.DataFrame({"load": sums.index, "floor_sum_us": sums["wf"].to_numpy(),
                         "sol_baseline": (sums["wf"] / sums["wb"]).to_numpy(),
                         "sol_candidate": (sums["wf"] / sums["wc"]).to_numpy()})


def local_vs_official(table: pd.DataFrame, official: pd.DataFrame) -> pd.DataFrame:
    """A run's per-shape medians next to the published official times for the same shapes (scored only)."""
    local = table.pivot_table(index=["load", "family"], columns="candidate", values="median_us", sort=False)
    local.columns = [f"{c} µs (measured)" for c in local.columns]
    pub = official.set_index(["load", "family"])[["baseline_us", "candidate_us"]]
    pub.columns = ["baseline µs (published)", "036 µs (published)"]
    return pub.join(local, how="inner").reset_index()


def roofline_points(table: pd.DataFrame, candidates: list[str]) -> pd.DataFrame:
    """Rows of runs.shape_table for `candidates`, with intensity, achieved TFLOP/s = 2MNK ÷ time and the
    throughput a run at the floor would reach (2MNK ÷ floor)."""
    pts = table[table["candidate"].isin(candidates)].copy()
    pts["intensity"] = pts["intensity_flop_per_byte"]
    pts["tflops"] = pts["flops"] / (pts["median_us"] * 1e-6) / 1e12
    pts["floor_tflops"] = pts["flops"] / (pts["floor_us"] * 1e-6) / 1e12
    return pts


def time_shares(wide: pd.DataFrame, weights: dict[str, float], column: str = "candidate_us") -> pd.DataFrame:
    """Each shape's share of its load's weighted time (load, family, <column>, share)."""
    out = wide[["load", "family", column]].copy()
    wt = out["family"].map(weights).fillna(1.0) * out[column]
    out["share"] = wt / wt.groupby(out["load"]).transform("sum")
    return out


def amdahl_table(shares: pd.DataFrame, load: str, speedup: float, load_ratios: dict[str, float]) -> pd.DataFrame:
    """For each shape of `load`: the load's speedup if that shape alone ran `speedup`× faster (∞ = free), and
    the resulting score with the other loads unchanged."""
    from dashboard import planner
    sub = shares[shares["load"] == load].copy()
    sub["load_speedup"] = [planner.amdahl_limit(f) if not np.isfinite(speedup) else
                           planner.amdahl_speedup(f, speedup) for f in sub["share"]]
    if load in load_ratios:
        sub["new_score"] = [planner.what_if_score(load_ratios, load, load_ratios[load] * x) if np.isfinite(x)
                            else np.inf for x in sub["load_speedup"]]
    return sub
