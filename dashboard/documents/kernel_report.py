"""The kernel breakdown of an explain run as tables, as terminal text (`python -m dashboard explain RUN`) and as a
report (`python -m dashboard report RUN`, dashboard.documents.report hands explain runs here).

Only arranges what dashboard.model.kernels and dashboard.model.kernel_findings computed.
"""
from __future__ import annotations

import math

import pandas as pd

from dashboard.plots import kernel_figures
from dashboard.model import kernel_findings, kernels, scoring
from dashboard.documents.report import Report, slug
from dashboard.model.workloads import default_workload

KERNEL_COLUMNS = ["shape", "candidate", "index", "launches", "kernel", "time_us", "time_basis", "duration_us", "share",
                  "dram_read_bytes", "dram_write_bytes", "l2_bytes", "achieved_tbps", "bw_vs_probe",
                  "sm_throughput_pct", "dram_throughput_pct", "grid", "grid_fill", "waves", "block", "registers",
                  "shared_bytes", "kernel_full"]
SHORT = {"gap_sum_us": "gap", "side_kernels_us": "launches", "between_us": "between", "excess_bytes_us": "excess B",
         "underfilled_us": "underfill", "low_bw_us": "low BW", "below_compute_us": "compute"}
CALL_COLUMNS = ["shape", "candidate", "launches", "time_us", "floor_us", "bound", "sol", "gap_us", "side_kernels_us",
                "between_us", "excess_bytes_us", "main_slow_us", "dram_bytes", "ideal_bytes", "excess_ratio",
                "main_kernel", "main_grid", "main_bw_vs_probe", "method"]


def _us(x: float) -> str:
    """µs to two decimals; a part that rounds to zero prints 0.00, never -0.00 (a rounding residue, not a sign)."""
    text = f"{x:.2f}"
    return "0.00" if text == "-0.00" else text


def tables(data: kernels.ExplainData, workload=None, candidate: str | None = None,
           shape: str | None = None) -> dict[str, pd.DataFrame]:
    """kernels, calls, findings (every row of the run, or one candidate / shape) and per-load gaps per candidate;
    the workload is the run's own unless given."""
    workload = workload or data.workload or default_workload()
    ktab = kernels.kernel_table(data)
    calls = kernels.call_table(data, workload, ktab)
    if candidate is not None:
        if candidate not in set(calls["candidate"]):
            raise kernels.ExplainError(f"{data.path.name}: no profiled candidate {candidate!r} "
                                       f"(found {data.candidates()})")
        ktab, calls = ktab[ktab["candidate"] == candidate], calls[calls["candidate"] == candidate]
    if shape is not None:
        if shape not in set(calls["shape"]):
            raise kernels.ExplainError(f"{data.path.name}: no profiled shape {shape!r} (found e.g. "
                                       f"{data.shapes()[:4]})")
        ktab, calls = ktab[ktab["shape"] == shape], calls[calls["shape"] == shape]
    found = pd.concat([kernel_findings.findings(calls, ktab, s, data.sm_count, data.run.get("compute_peak_tflops"))
                       .assign(shape=s) for s in dict.fromkeys(calls["shape"])], ignore_index=True)
    weights = scoring.family_weights(workload)
    loads = pd.concat([kernels.gap_by_load(calls, c, weights, workload.load_order).assign(candidate=c)
                       for c in dict.fromkeys(calls["candidate"])], ignore_index=True)
    return {"kernels": ktab[[c for c in KERNEL_COLUMNS if c in ktab]],
            "calls": calls[[c for c in CALL_COLUMNS if c in calls]],
            "findings": found[["shape", "candidate", "rule", "text", "us"]] if len(found) else found,
            "gap per load": loads[["candidate", "load", "shapes", "time_sum_us", "floor_sum_us", "gap_sum_us",
                                   *kernels.GAP_PARTS, "launches_per_call", "excess_ratio", "sol"]]}


def _cell(v, spec: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return format(v, spec)


def format_text(data: kernels.ExplainData, t: dict[str, pd.DataFrame]) -> str:
    """Terminal tables: per kernel, findings per shape, then the per-load gap causes."""
    env = data.run.get("environment", {})
    lines = [f"{data.path.name}: explain run {data.label!r} ({data.run.get('status')}), {env.get('gpu', '?')}, "
             f"ncu {env.get('ncu_version', '?')}. Kernel times: one CUDA-graph replay (measured; 'ncu' where the "
             "replay's kernels did not match ncu's); bytes, grid, throughputs: Nsight Compute, one cold call "
             f"(measured); floors, shares, gaps: derived from {data.path.name}'s own probes and replay times — its "
             "floor and SOL, not a sweep's (`python -m dashboard table SWEEP` gives a sweep's)."]
    head = (f"{'shape':<22}{'candidate':<10}{'#':>3} {'kernel':<42}{'µs':>8}{'share':>7}{'DRAM MB':>9}{'TB/s':>7}"
            f"{'%probe':>7}{'grid':>6}{'fill':>6}{'waves':>6}{'SM%':>5}")
    for shape, grp in t["kernels"].groupby("shape", sort=False):
        lines += ["", head, "-" * len(head)]
        for r in grp.itertuples():
            lines.append(f"{r.shape[:21]:<22}{r.candidate[:9]:<10}{r.index + 1:>3} {r.kernel[:41]:<42}"
                         f"{_cell(r.time_us, '.2f'):>8}{_cell(r.share, '.0%'):>7}"
                         f"{(r.dram_read_bytes + r.dram_write_bytes) / 1e6:>9.2f}{_cell(r.achieved_tbps, '.2f'):>7}"
                         f"{_cell(r.bw_vs_probe, '.0%'):>7}{r.grid:>6}{_cell(r.grid_fill, '.0%'):>6}"
                         f"{_cell(r.waves, '.2f'):>6}{_cell(r.sm_throughput_pct, '.0f'):>5}")
        for c in t["calls"][t["calls"]["shape"] == shape].itertuples():
            lines.append(f"  {c.candidate}: {_us(c.time_us)} µs vs floor {_us(c.floor_us)} µs ({c.bound}-bound, SOL "
                         f"{c.sol:.0%}); gap {_us(c.gap_us)} = extra launches {_us(c.side_kernels_us)} + between "
                         f"{_us(c.between_us)} + excess bytes {_us(c.excess_bytes_us)} + main kernel slow "
                         f"{_us(c.main_slow_us)}; {c.dram_bytes / 1e6:.1f} MB moved vs {c.ideal_bytes / 1e6:.1f} ideal")
        f = t["findings"]
        for r in (f[f["shape"] == shape].itertuples() if len(f) else []):
            lines.append(f"  - {r.candidate}: {r.text}")
    lines += ["", "Gap to the floor per load (µs, Σ over the load's shapes; derived):"]
    g = t["gap per load"]
    lines.append(f"{'candidate':<12}{'load':<11}{'time':>8}{'floor':>8}" + "".join(f"{n:>10}" for n in SHORT.values())
                 + f"{'kern/call':>10}{'bytes×':>8}{'SOL':>6}")
    for r in g.itertuples():
        lines.append(f"{r.candidate[:11]:<12}{r.load:<11}{r.time_sum_us:>8.2f}{r.floor_sum_us:>8.2f}"
                     + "".join(f"{_cell(round(getattr(r, c), 2) + 0.0, '.2f'):>10}" for c in SHORT)
                     + f"{r.launches_per_call:>10.1f}{r.excess_ratio:>8.3f}{r.sol:>6.0%}")
    lines.append("  (" + "; ".join(f"{s}: {kernels.GAP_PARTS.get(c, 'time over the floor')}" for c, s in SHORT.items())
                 + "; under-filled grid is a model, see dashboard/model/kernels.py)")
    if len(data.failures):
        lines += ["", f"{len(data.failures)} failures:"]
        lines += [f"  {r.shape} {r.candidate} ({r.stage}): {'; '.join(r.reasons)[:160]}"
                  for r in data.failures.itertuples()]
    return "\n".join(lines)


def build_report(data: kernels.ExplainData, workload=None, candidate: str | None = None, shape: str | None = None):
    """A dashboard.documents.report.Report of the kernel breakdown (tables + figures)."""
    workload = workload or data.workload or default_workload()
    t = tables(data, workload, candidate, shape)
    env = data.run.get("environment", {})
    summary = {"run": data.label, "status": data.run.get("status", "complete"), "gpu": env.get("gpu", "—"),
               "ncu_version": env.get("ncu_version", "—"), "created_utc": data.run.get("created_utc", "—"),
               "candidates": ", ".join(dict.fromkeys(t["calls"]["candidate"])), "shapes": t["calls"]["shape"].nunique(),
               "failures": len(data.failures)}
    figs = [kernel_figures.gap_parts_bars(g, kernels.GAP_PARTS, f"{c}: the gap to the floor per load, by cause")
            for c, g in t["gap per load"].groupby("candidate", sort=False)]
    if shape is not None:
        ktab = kernels.kernel_table(data)
        calls = kernels.call_table(data, workload, ktab)
        parts = kernels.kernel_gap_parts(ktab, calls)
        sel = parts["shape"] == shape
        floor = float(calls[calls["shape"] == shape]["floor_us"].iloc[0])
        figs.insert(0, kernel_figures.kernel_stack(parts[sel], floor, f"{shape}: kernels against the floor"))
    stem = slug(f"{data.label}_kernels" + (f"_{candidate}" if candidate else "") + (f"_{shape}" if shape else ""))
    return Report(f"projlab kernel breakdown — {data.label}", stem, "measured", summary, t, figs, main_table="kernels")
