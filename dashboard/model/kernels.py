"""An explain run (`python -m profiler explain`) as tables: per kernel, per call, per load — where the gap goes.

Measured inputs (the run file): per kernel, Nsight Compute's DRAM/L2 bytes, throughputs, grid, block, registers
and duration of one cold call (`--cache-control all`); per call, the kernel sequence of one CUDA-graph replay
behind an L2 flush (Kineto); the run's own HBM read probes. Everything below is derived from those.

Time basis: a kernel's `time_us` is its Kineto replay duration when the replay ran the same kernels in the same
order as ncu saw (`time_basis` "replay"), else ncu's duration ("ncu"). ncu's durations run longer than graph
replays (kernels are serialized and replayed per metric pass), so a replay is the closer reading of the timed
call; ncu's figures are used for what only it measures (bytes, grid, throughputs).

Floor of a call = max(memory floor, compute floor), as everywhere in projlab (dashboard.model.roofline): the run's
read probe at the ideal bytes (weights + x + y), and 2MNK at the run's measured bf16 compute peak.
Gap to the floor of a call (all in µs, summing exactly to time − floor):
- side_kernels_us: time of every kernel other than the main one (the one moving the most DRAM bytes, i.e. the
  weight stream): extra launches;
- between_us: idle time between kernels in the replay (negative where kernels overlap);
- excess_bytes_us: main floor − floor, where the main floor is the same max() with the main kernel's DRAM bytes
  in place of the ideal: what moving more than weights + x + y costs at the probe's bandwidth;
- main_slow_us: main kernel's time − main floor, split per load into "under-filled grid" (underfilled_us: the
  idle-SM share of its time, capped), and the rest: "low bandwidth" for memory-bound calls, "below the compute
  roof" for compute-bound ones.
A kernel's part of the gap = its time − floor × (its DRAM bytes ÷ the call's).
DRAM bytes are what ncu counted during the kernel: output lines still in L2 when it ends are not in them, so a
call can read below its ideal bytes (o at M=256 writes 4 MB of y).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dashboard.model import metrics, roofline, runs
from datasets import DEFAULT_WORKLOAD
from datasets.shapes import shape_key

CALL_ID = ["load", "family", "M", "N", "K", "candidate"]


class ExplainError(ValueError):
    """A run that is not an explain run, or one this analysis cannot read; the message names it."""


@dataclass(frozen=True)
class ExplainData:
    path: Path
    run: dict
    kernels: pd.DataFrame       # one row per (shape, candidate, kernel), as recorded
    calls: pd.DataFrame         # one row per (shape, candidate) with a verdict
    failures: pd.DataFrame
    curve: roofline.ProbeCurve | None
    sm_count: int
    workload: object = None     # the run's workload (dashboard.model.runs.RunData.workload)

    @property
    def label(self) -> str:
        return self.run["label"]

    def candidates(self) -> list[str]:
        return list(dict.fromkeys(self.calls["candidate"])) if len(self.calls) else []

    def shapes(self) -> list[str]:
        return list(dict.fromkeys(self.calls["shape"])) if len(self.calls) else []


def is_explain_run(run: dict) -> bool:
    return isinstance(run, dict) and isinstance(run.get("kernels"), list)


def from_run_data(data: runs.RunData) -> ExplainData:
    """The explain view of a loaded run (dashboard.model.runs.load_run_data validated it)."""
    run = data.run
    if not is_explain_run(run):
        raise ExplainError(f"{data.path.name}: not an explain run (no 'kernels' list; make one with "
                           f"python -m profiler explain)")
    env = run.get("environment", {})
    sm = env.get("sm_count")
    if not sm:
        raise ExplainError(f"{data.path.name}: environment.sm_count is missing (needed for grid fill)")
    kernels = _keyed(pd.DataFrame(run["kernels"]))
    calls = _keyed(pd.DataFrame(run.get("calls", [])))
    failures = _keyed(pd.DataFrame(run.get("failures", [])))
    return ExplainData(data.path, run, kernels, calls, failures, runs.probe_curve(data), int(sm),
                       runs.workload_of(data))


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    if len(frame):
        frame.insert(0, "shape", [shape_key(r.load, r.family, r.M) for r in frame.itertuples()])
    return frame


# --- per kernel --------------------------------------------------------------------------------------------------
def _same_kernels(ncu_names: list[str], replay: dict | None) -> bool:
    """The replay ran the kernels ncu saw, in the same order (names compared without namespaces: ncu and Kineto
    demangle differently, e.g. 'at::unrolled_elementwise_kernel' vs 'at::native::unrolled_elementwise_kernel')."""
    if not isinstance(replay, dict):
        return False
    seq = [k for k in replay.get("kernels", []) if k.get("kind", "kernel") == "kernel"]
    tail = lambda name: name.rsplit("::", 1)[-1]
    return len(seq) == len(ncu_names) and all(tail(a) == tail(b["kernel"]) for a, b in zip(ncu_names, seq))


def kernel_table(data: ExplainData) -> pd.DataFrame:
    """Every kernel record plus: replay_us, time_us + time_basis, dram_bytes, share of the call's kernel time,
    is_main (the kernel moving the most DRAM bytes), achieved_tbps, probe_tbps (the probe at the kernel's bytes),
    bw_vs_probe, grid_fill, idle_sms."""
    k = data.kernels.copy()
    if k.empty:
        return k
    replays = {tuple(r[c] for c in CALL_ID): r.get("kineto") for r in data.run.get("calls", [])}
    k["replay_us"] = np.nan
    for key, grp in k.groupby(CALL_ID, sort=False):
        grp = grp.sort_values("index")
        replay = replays.get(tuple(key))
        if _same_kernels(list(grp["kernel"]), replay):
            seq = [s for s in replay["kernels"] if s.get("kind", "kernel") == "kernel"]
            k.loc[grp.index, "replay_us"] = [s["duration_us"] for s in seq]
    has_replay = k.groupby(CALL_ID, sort=False)["replay_us"].transform(lambda s: s.notna().all())
    k["time_basis"] = np.where(has_replay, "replay", "ncu")
    k["time_us"] = np.where(has_replay, k["replay_us"], k["duration_us"])
    k["dram_bytes"] = k["dram_read_bytes"] + k["dram_write_bytes"]
    call_time = k.groupby(CALL_ID, sort=False)["time_us"].transform("sum")
    k["share"] = k["time_us"] / call_time
    # The main kernel moves the most DRAM bytes (the weight stream); the others are extra launches.
    main_index = k.loc[k.groupby(CALL_ID, sort=False)["dram_bytes"].idxmax(), "index"]
    main_of = dict(zip(k.loc[main_index.index, CALL_ID].itertuples(index=False, name=None), main_index))
    k["is_main"] = [main_of[key] == i for key, i in zip(k[CALL_ID].itertuples(index=False, name=None), k["index"])]
    k["achieved_tbps"] = k["dram_bytes"] / k["time_us"] / 1e6
    if data.curve is not None:
        pos = k["dram_bytes"].clip(lower=1)
        k["probe_tbps"] = pos / data.curve.us(pos.to_numpy()) / 1e6
        k["bw_vs_probe"] = k["achieved_tbps"] / k["probe_tbps"]
    else:
        k["probe_tbps"] = np.nan
        k["bw_vs_probe"] = np.nan
    k["grid_fill"] = np.minimum(k["grid"], data.sm_count) / data.sm_count
    k["idle_sms"] = np.maximum(data.sm_count - k["grid"], 0)
    return k


# --- per call ----------------------------------------------------------------------------------------------------
def _dtypes(workload) -> pd.DataFrame:
    return pd.DataFrame([{"family": name, "x_dtype": f["x_dtype"], "w_dtype": f["w_dtype"], "y_dtype": f["y_dtype"]}
                         for name, f in workload.families.items()])


def call_table(data: ExplainData, workload, kernels: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per profiled call: launches, time (replay span or Σ ncu), ideal vs DRAM bytes, floor, gap and its
    decomposition (module docstring), the main kernel's grid fill, waves and bandwidth against the probe."""
    k = kernel_table(data) if kernels is None else kernels
    if k.empty:
        return pd.DataFrame()
    unknown = set(k["family"]) - set(workload.families)
    if unknown:
        raise ExplainError(f"{data.path.name}: family not in the workload: {sorted(unknown)}")
    g = k.groupby(CALL_ID, sort=False)
    out = g.agg(shape=("shape", "first"), launches=("index", "size"), kernels_us=("time_us", "sum"),
                ncu_us=("duration_us", "sum"), dram_bytes=("dram_bytes", "sum"),
                dram_read_bytes=("dram_read_bytes", "sum"), dram_write_bytes=("dram_write_bytes", "sum"),
                l2_bytes=("l2_bytes", "sum"), time_basis=("time_basis", "first")).reset_index()
    main = k[k["is_main"]].set_index(CALL_ID)
    idx = out.set_index(CALL_ID).index
    for src, dst in (("kernel", "main_kernel"), ("time_us", "main_us"), ("dram_bytes", "main_bytes"),
                     ("grid", "main_grid"), ("grid_fill", "main_grid_fill"), ("idle_sms", "main_idle_sms"),
                     ("waves", "main_waves"), ("sm_throughput_pct", "main_sm_pct"),
                     ("dram_throughput_pct", "main_dram_pct"), ("bw_vs_probe", "main_bw_vs_probe"),
                     ("achieved_tbps", "main_tbps"), ("probe_tbps", "main_probe_tbps")):
        out[dst] = main[src].reindex(idx).to_numpy() if src in main else np.nan
    calls = data.calls.set_index(CALL_ID) if len(data.calls) else pd.DataFrame()
    replay = [calls["kineto"].get(key) if len(calls) and "kineto" in calls else None for key in idx]
    out["method"] = calls["method"].reindex(idx).to_numpy() if "method" in calls else None
    out["replay_span_us"] = [r["span_us"] if isinstance(r, dict) else np.nan for r in replay]
    out["between_us"] = np.where(out["time_basis"] == "replay",
                                 [r["gaps_us"] if isinstance(r, dict) else 0.0 for r in replay], 0.0)
    out["time_us"] = out["kernels_us"] + out["between_us"]
    out = metrics.add_metrics(out.merge(_dtypes(workload), on="family", how="left"))
    out = out.rename(columns={"bytes": "ideal_bytes"})
    out["excess_ratio"] = out["dram_bytes"] / out["ideal_bytes"]
    nan = np.full(len(out), np.nan)
    curve, peak = data.curve, data.run.get("compute_peak_tflops")
    out["memory_floor_us"] = curve.us(out["ideal_bytes"].to_numpy(dtype=float)) if curve is not None else nan
    out["compute_floor_us"] = roofline.compute_floor_us(out["flops"], peak) if peak else nan
    out["floor_us"] = roofline.floor_us(out["memory_floor_us"], out["compute_floor_us"])
    out["bound"] = roofline.bound(out["memory_floor_us"], out["compute_floor_us"])
    main_memory = curve.us(out["main_bytes"].clip(lower=1).to_numpy(dtype=float)) if curve is not None else nan
    main_floor = roofline.floor_us(main_memory, out["compute_floor_us"])
    out["sol"] = out["floor_us"] / out["time_us"]
    out["gap_us"] = out["time_us"] - out["floor_us"]
    out["side_kernels_us"] = out["kernels_us"] - out["main_us"]
    out["excess_bytes_us"] = main_floor - out["floor_us"]
    out["main_slow_us"] = out["main_us"] - main_floor
    out["main_tflops"] = out["flops"] / out["main_us"] / 1e6
    out["underfilled_us"] = underfilled_us(out)
    out["achieved_tbps"] = out["dram_bytes"] / out["kernels_us"] / 1e6
    return out


def kernel_gap_parts(kernels: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: its part of the call's gap = time − floor × (its DRAM bytes ÷ the call's), plus one
    'between kernels' row per call for the replay's idle time; the parts of a call sum to its gap."""
    floor = calls.set_index(CALL_ID)["floor_us"]
    total = kernels.groupby(CALL_ID, sort=False)["dram_bytes"].transform("sum").clip(lower=1)
    k = kernels.copy()
    k["floor_part_us"] = floor.reindex(pd.MultiIndex.from_frame(k[CALL_ID])).to_numpy() * k["dram_bytes"] / total
    k["gap_part_us"] = k["time_us"] - k["floor_part_us"]
    between = calls[calls["between_us"] != 0][CALL_ID + ["shape", "between_us", "launches"]].copy()
    between = between.assign(kernel="between kernels", index=between["launches"], time_us=between["between_us"],
                             gap_part_us=between["between_us"], floor_part_us=0.0)
    cols = CALL_ID + ["shape", "kernel", "index", "time_us", "floor_part_us", "gap_part_us"]
    return pd.concat([k[cols], between[cols]], ignore_index=True).sort_values(CALL_ID + ["index"], kind="stable")


# --- per load ----------------------------------------------------------------------------------------------------
GAP_PARTS = {"side_kernels_us": "extra launches", "between_us": "between kernels",
             "excess_bytes_us": "excess bytes", "underfilled_us": "under-filled grid", "low_bw_us": "low bandwidth",
             "below_compute_us": "below the compute roof"}


# What a reader sees for each column of the tables above (the Kernels page, reports): words with units, never the
# snake_case names the CSVs keep.
COLUMN_WORDS = {
    "candidate": "candidate", "kernel": "kernel", "load": "load", "time_us": "time µs", "floor_us": "floor µs",
    "gap_us": "gap to floor µs", "share": "share of call", "dram_bytes": "DRAM bytes", "achieved_tbps": "TB/s",
    "bw_vs_probe": "vs probe", "grid": "grid (programs)", "grid_fill": "grid fill", "waves": "waves",
    "registers": "registers / thread", "time_basis": "time from", "duration_us": "ncu µs (one cold call)",
    "replay_us": "replay µs", "main_kernel": "main kernel", "main_grid": "main grid", "main_waves": "main waves",
    "excess_ratio": "DRAM ÷ ideal bytes", "main_slow_us": "main kernel slow µs", "time_sum_us": "Σw·time µs",
    "floor_sum_us": "Σw·floor µs", "gap_sum_us": "Σw·gap µs", "sol": "SOL", "launches_per_call": "kernels per call",
    **{part: f"{words} µs" for part, words in GAP_PARTS.items()}}


def underfilled_us(calls: pd.DataFrame) -> pd.Series:
    """The part of the main kernel's below-probe time put down to an under-filled grid: its time × the fraction of
    SMs its grid leaves idle, capped at the below-probe time (a model, not a measurement: it assumes the stream's
    speed scales with the SMs that have work; 128 programs on 132 SMs explain at most 3 % of the kernel's time).
    The rest of the below-probe time is 'low bandwidth'."""
    model = calls["main_us"] * (1.0 - calls["main_grid_fill"])
    return np.minimum(model, calls["main_slow_us"].clip(lower=0.0))


def gap_by_load(calls: pd.DataFrame, candidate: str, weights: dict[str, float], load_order=None) -> pd.DataFrame:
    """Per load, for one candidate: Σw·time, Σw·floor, Σw·gap and Σw· each part of it (GAP_PARTS; w = the family
    weights ÷ their mean, so equal weights give plain µs sums), the main kernel's slow time split by
    underfilled_us() and the call's bound; also kernels per call, DRAM bytes ÷ ideal bytes and the number of
    shapes profiled."""
    c = calls[calls["candidate"] == candidate].copy()
    if c.empty:
        return pd.DataFrame()
    rest = c["main_slow_us"] - c["underfilled_us"]
    c["low_bw_us"] = np.where(c["bound"] == "compute", 0.0, rest)
    c["below_compute_us"] = np.where(c["bound"] == "compute", rest, 0.0)
    w = c["family"].map(weights).fillna(1.0)
    w = w / w.mean()  # weighted like the score, normalised: equal weights (62 each here) give plain µs sums
    timed = {"time_sum_us": "time_us", "floor_sum_us": "floor_us", "gap_sum_us": "gap_us",
             **{part: part for part in GAP_PARTS}}
    frame = pd.DataFrame({name: c[col] * w for name, col in timed.items()})
    frame = frame.assign(load=c["load"], launches=c["launches"], dram_bytes=c["dram_bytes"],
                         ideal_bytes=c["ideal_bytes"], shapes=1)
    agg = frame.groupby("load", sort=False).sum(numeric_only=True)
    agg["sol"] = agg["floor_sum_us"] / agg["time_sum_us"]
    agg["excess_ratio"] = agg["dram_bytes"] / agg["ideal_bytes"]
    agg["launches_per_call"] = agg["launches"] / agg["shapes"]
    agg = agg.reset_index()
    if load_order:
        order = [l for l in load_order if l in set(agg["load"])] + [l for l in agg["load"] if l not in load_order]
        agg = agg.set_index("load").loc[order].reset_index()
    return agg


def sweep_sol(source: runs.RunData, shape: str) -> pd.DataFrame:
    """Per candidate of the sweep `source` at `shape`: floor_us, median_us and sol from dashboard.model.runs.shape_table,
    the numbers `python -m dashboard table`, the Shapes and Roofline pages show for that run (one floor per run and
    shape). Empty when the sweep has no result there. The Kernels page shows these for a sweep; an explain run's
    own floor and SOL (call_table, from its probes and replay times) are shown labelled with that run's name."""
    table = runs.shape_table(source)
    if table.empty:
        return pd.DataFrame(columns=["candidate", "floor_us", "median_us", "sol"])
    return table.loc[table["shape"] == shape, ["candidate", "floor_us", "median_us", "sol"]].reset_index(drop=True)


def furthest_from_floor(wide: pd.DataFrame, n: int = 3, column: str = "sol_candidate") -> list[str]:
    """Shape keys of the `n` shapes with the lowest SOL (views.wide_shapes output): where to look first."""
    if column not in wide or wide[column].isna().all():
        return []
    return list(wide.dropna(subset=[column]).nsmallest(n, column)["shape"])


def _dispatch(rows) -> dict[tuple, str]:
    """(load, family, M, candidate) → the method that ran there, from a run's results or an explain run's calls."""
    return {(r.get("load"), r.get("family"), r.get("M"), r.get("candidate")): r.get("method")
            for r in rows or [] if isinstance(r, dict)}


def same_plans(source: dict, explain: dict) -> bool:
    """The explain run profiled the source run's plans: they share a candidate at some shape, and wherever both
    have a (shape, candidate) the same method ran (a candidate of the same name tuned again dispatches
    differently, and its kernels are not the ones the source timed)."""
    have, profiled = _dispatch(source.get("results")), _dispatch(explain.get("calls"))
    shared = have.keys() & profiled.keys()
    return bool(shared) and all(have[k] == profiled[k] for k in shared)


def explains_of(source: runs.RunData, explains: list[runs.RunData], candidate: str,
                baseline: str | None = None) -> list[runs.RunData]:
    """The explain runs of `source`'s own measurement of `candidate`: the same workload (name and fingerprint),
    `candidate` profiled, and the same plans (same_plans; a per-shape table has no plans, so there only the
    workload and the name count), best first: those that also profiled `baseline`, then the newest (created_utc)."""
    ref = runs.workload_of(source).ref
    is_table = "schema_version" not in source.run

    def profiled(e: runs.RunData) -> set:
        return {c.get("candidate") for c in e.run.get("calls") or [] if isinstance(c, dict)}

    found = [e for e in explains if runs.workload_of(e).ref == ref and candidate in profiled(e)
             and (is_table or same_plans(source.run, e.run))]
    return sorted(found, key=lambda e: (baseline in profiled(e), str(e.run.get("created_utc") or ""), e.path.name),
                  reverse=True)


def explain_command(baseline: str, candidate: str, workload) -> str:
    """The command that makes an explain run of this pair (on the H200)."""
    plans = " ".join(f"--plan {name}" for name in dict.fromkeys((baseline, candidate)))
    extra = "" if workload.name == DEFAULT_WORKLOAD else f" --workload {workload.cli_ref}"
    return f"python -m profiler explain {plans} --shapes official{extra}"

