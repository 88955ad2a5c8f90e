"""Tables the app and the reports show, built from dashboard.model.runs / scoring / roofline (no new analysis).

The published official table is turned into the same long form as a run's results (candidates "baseline" and
"036"), with floors from the write-up's four published probes and its quoted 989 TFLOP/s peak, so every page
and report treats a published table and a measured run alike. The `source` column says which is which.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dashboard.model import eager, runs, scoring
from datasets import devices
from datasets.paths import run_stem
from dashboard.model.workloads import default_workload

# The write-up's "applicable" dense BF16 peak used in its roofline arithmetic (seed section 'A rough way to ask
# how much room was left'): a published model input, not a measurement of this lab.
SEED_PEAK_TFLOPS = 989.0
OFFICIAL_CANDIDATE = "036"


def official_run_data(official: pd.DataFrame, seed_probes: pd.DataFrame, path: Path,
                      candidate: str = OFFICIAL_CANDIDATE, workload=None) -> runs.RunData:
    """A RunData view of a per-shape table (baseline_us / candidate_us) so runs.shape_table applies. A per-shape
    table is in the official format, which is muse_bf16_proj's (datasets.load_official checks it against that)."""
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
                        probes=seed_probes[["bytes", "us"]].copy(), environment=pd.DataFrame(columns=["key", "value"]),
                        workload=workload or default_workload())


def same_route(table: pd.DataFrame, baseline: str, candidate: str) -> pd.Series:
    """shape → True where `candidate` dispatched the very method and config `baseline` did (a long table with shape,
    candidate and method columns: a run's results or runs.shape_table). There, whatever ratio was measured is the
    spread of two timings of one call (buffer placement, noise), not a kernel difference."""
    if table.empty or "method" not in table:
        return pd.Series(dtype=bool)
    b = table[table["candidate"] == baseline].drop_duplicates("shape").set_index("shape")["method"]
    c = table[table["candidate"] == candidate].drop_duplicates("shape").set_index("shape")["method"]
    common = b.index.intersection(c.index)
    return pd.Series([isinstance(b[s], str) and b[s] == c[s] for s in common], index=common, dtype=bool)


def wide_shapes(table: pd.DataFrame, pairs: pd.DataFrame, baseline: str, candidate: str,
                gate: scoring.Gate | None = None) -> pd.DataFrame:
    """One row per shape: baseline and candidate times, ratio (+ CI from the run's pairs), SOL, status.

    `table` is runs.shape_table output (long, one row per shape × candidate). Ratios are only filled where the
    gate lets the shape in (both sides correct and timed; `gate` from dashboard.model.runs.pair_gate, else computed from
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
    out["same_route"] = same_route(table, baseline, candidate).reindex(index, fill_value=False).astype(bool)
    out["flags"] = c["flags"].reindex(index).map(lambda f: ", ".join(f) if isinstance(f, list) else "") \
        if "flags" in c else ""
    out["M"] = out["M"].astype(int)
    return eager.with_eager(out.rename_axis("shape").reset_index(), table, baseline, candidate)


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
    from dashboard.model import planner
    sub = shares[shares["load"] == load].copy()
    sub["load_speedup"] = [planner.amdahl_limit(f) if not np.isfinite(speedup) else
                           planner.amdahl_speedup(f, speedup) for f in sub["share"]]
    if load in load_ratios:
        sub["new_score"] = [planner.what_if_score(load_ratios, load, load_ratios[load] * x) if np.isfinite(x)
                            else np.inf for x in sub["load_speedup"]]
    return sub


# --- readable tables (units a person reads at a glance; numbers stay numbers so tables sort) ---------------------
BYTES_PER_MB = 1e6   # decimal MB, as the probe and bandwidth figures (TB/s) are decimal
FLOP_PER_GFLOP = 1e9


def ci_text(low, high, digits: int = 4) -> str:
    """'1.4190–1.4245' or '—' where there is no CI (a published table has no samples)."""
    if pd.isna(low) or pd.isna(high):
        return "—"
    return f"{low:.{digits}f}–{high:.{digits}f}"


def readable_shapes(wide: pd.DataFrame) -> pd.DataFrame:
    """wide_shapes output plus what the Shapes table leads with: MB, GFLOP, the paired ratio with its CI as one
    text cell ('1.419 [1.416–1.423]') and the method labelled '(= baseline)' where it is the baseline's own route."""
    out = wide.copy()
    same = out["same_route"] if "same_route" in out else pd.Series(False, index=out.index)
    out["method_label"] = [f"{m} (= baseline)" if s and isinstance(m, str) else m for m, s in zip(out["method"], same)]
    out["mb"] = out["bytes"] / BYTES_PER_MB
    out["gflop"] = out["flops"] / FLOP_PER_GFLOP
    out["paired_ci"] = [f"{p:.3f} [{ci_text(lo, hi, 3)}]" if pd.notna(lo) else "—"
                        for p, lo, hi in zip(out["ratio_paired"], out["ratio_ci_low"], out["ratio_ci_high"])]
    return out


def sol_over_100(wide: pd.DataFrame) -> pd.DataFrame:
    """Rows whose SOL is above 100% (the kernel beat its floor: an artifact of the probe, see the glossary):
    shape, which side, SOL."""
    rows = [{"shape": r["shape"], "side": side, "sol": r[col]} for _, r in wide.iterrows()
            for side, col in (("baseline", "sol_baseline"), ("candidate", "sol_candidate"))
            if col in wide and pd.notna(r[col]) and r[col] > 1]
    return pd.DataFrame(rows, columns=["shape", "side", "sol"])


def default_target(score: float, margin: float = 0.01, step: float = 0.01) -> float:
    """A target score to open the planner on: the first `step` at least `margin` (1%) above the current score, so
    the gap is positive (1.3012 → 1.32, 1.3878 → 1.41); never below 1 (a target is a speedup)."""
    return max(1.0, round(np.ceil(round(score * (1 + margin) / step, 9)) * step, 6))


def time_above_floor(wide: pd.DataFrame, load_order=None, family_order=None) -> pd.DataFrame:
    """Per family: Σ over the loads of (time − floor) for baseline and candidate (µs, each shape once), the
    candidate's total time and the share of it above the floor — what a kernel at the floor would recover."""
    d = wide.assign(baseline_above_us=wide["baseline_us"] - wide["floor_us"],
                    candidate_above_us=wide["candidate_us"] - wide["floor_us"])
    fams = family_order or list(dict.fromkeys(d["family"]))
    g = d.groupby("family", sort=False)[["baseline_above_us", "candidate_above_us", "candidate_us",
                                        "floor_us"]].sum(min_count=1)
    g = g.reindex([f for f in fams if f in g.index])
    g["candidate_share_above"] = g["candidate_above_us"] / g["candidate_us"]
    return g.reset_index()


def clock_summary(run: dict) -> dict:
    """The SM clock while measuring and the throttle reasons that matter, from a run's environment + telemetry.

    The start and end readings are taken on an idle GPU (clock down, reason gpu_idle), so the clock that matters
    is the one sampled after the probes and after every shape; gpu_idle is not throttling."""
    env = run.get("environment", {}) or {}
    clocks = env.get("clocks", {}) or {}
    tel = pd.DataFrame(run.get("telemetry", []) or [])
    sm = tel["sm_mhz"].dropna() if "sm_mhz" in tel else pd.Series(dtype=float)
    during = {r for rs in (tel["throttle"].dropna() if "throttle" in tel else []) for r in rs}
    reasons = sorted((set(env.get("throttle_reasons") or []) | during) - {"gpu_idle"})
    return {"sm_min_mhz": float(sm.min()) if len(sm) else None, "sm_max_mhz": float(sm.max()) if len(sm) else None,
            "n_samples": int(len(sm)), "sm_limit_mhz": clocks.get("sm_max_mhz"),
            "idle_start_mhz": clocks.get("sm_mhz_start"), "idle_end_mhz": clocks.get("sm_mhz_end"),
            "throttle_reasons": reasons, "cpu": devices.of_run(run).is_cpu}


NOT_ON_CPU = "not measured on this device (a CPU has no SM clock)"
NOT_READ = "not read (NVML gave none)"


def mhz_range(c: dict) -> str:
    """'1965–1980 MHz', '1980 MHz' when the clock never moved; why not where it was not sampled."""
    if c["sm_min_mhz"] is None:
        return NOT_ON_CPU if c.get("cpu") else NOT_READ
    lo, hi = round(c["sm_min_mhz"]), round(c["sm_max_mhz"])
    return f"{lo} MHz" if lo == hi else f"{lo}–{hi} MHz"


def _mhz(value) -> str:
    return f"{value} MHz" if value else "not read"


def _pair_mhz(a, b) -> str:
    return f"{a} / {b} MHz" if a and b else f"{_mhz(a)} / {_mhz(b)}"


def clock_text(c: dict) -> str:
    """clock_summary as one sentence, the way the Overview page and the reports say it."""
    if c.get("cpu"):
        return (f"SM clock: {NOT_ON_CPU}; no throttle reasons either. A CPU run's times are wall-clock times of "
                "eager calls on this machine.")
    if c["sm_min_mhz"] is None and not (c["sm_limit_mhz"] or c["idle_start_mhz"] or c["idle_end_mhz"]):
        return (f"SM clock while measuring: {NOT_READ}, nor its limit or idle readings. Throttle reasons while "
                f"measuring (gpu_idle excluded): {', '.join(c['throttle_reasons']) or 'none'}.")
    during = f"{mhz_range(c)} over {c['n_samples']} samples" if c["sm_min_mhz"] is not None else "not sampled"
    return (f"SM clock while measuring: {during} (limit {_mhz(c['sm_limit_mhz'])}). The start and end "
            f"readings ({_pair_mhz(c['idle_start_mhz'], c['idle_end_mhz'])}) are taken on an idle GPU, "
            "whose clock drops and whose throttle reason reads gpu_idle — not throttling. Throttle reasons while "
            f"measuring (gpu_idle excluded): {', '.join(c['throttle_reasons']) or 'none'}.")


def series_label(source_label: str, path, candidate: str) -> str:
    """Short name of a compare series: 'run date · run label · candidate' for a run file named
    <date>_<gpu>_<label>.json, 'published 036 table · 036' for the official table, else 'file stem · candidate'."""
    from pathlib import Path as _Path

    parsed = runs.parse_run_name(path)
    if source_label.startswith("run:") and parsed:
        return f"{parsed['date']} · {parsed['label']} · {candidate}"
    if "published" in source_label.lower():
        return f"published 036 table · {candidate}"
    return f"{run_stem(_Path(path).name)} · {candidate}"


def shape_order(load_order, family_order) -> list[str]:
    """'load/family' keys in workload order (loads, then families): the x order of per-shape charts."""
    return [f"{load}/{fam}" for load in load_order for fam in family_order]
