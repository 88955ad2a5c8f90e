"""The tables and notes the run pages (Overview, Where time goes, Shapes, Roofline) derive from the View they draw:
each a function of the View or of a frame the page already holds, so the page does no filtering, merging or scoring
itself (the arithmetic is dashboard.model's; pure functions a page calls as they are are named here)."""
from __future__ import annotations

import pandas as pd

from dashboard.cli.summary import device_lines
from dashboard.model import library_ceiling, peers, planner, views
from dashboard.model import runs as drun
from dashboard.model.eager import has_eager, host_bound_text
from dashboard.model.kernels import furthest_from_floor
from dashboard.model.peers import BEST_OF_PEERS, DERIVED_NOTE
from dashboard.model.scoring import family_weights
from dashboard.model.views import (amdahl_table, ci_text, clock_summary, clock_text, mhz_range, readable_shapes,
                                   roofline_points, sol_over_100, time_above_floor, time_shares)
from ui import loaders, view

__all__ = ["device_lines", "has_eager", "host_bound_text", "furthest_from_floor", "BEST_OF_PEERS", "DERIVED_NOTE",
           "family_weights", "amdahl_table", "ci_text", "clock_summary", "clock_text", "mhz_range", "readable_shapes",
           "roofline_points", "sol_over_100", "time_above_floor", "time_shares", "probe_curve", "flag_counts",
           "peer_comparison", "sol_over_100_note", "load_table", "with_intervals", "scored_shapes",
           "local_vs_official", "shapes_table", "filter_shapes", "library_ceiling_table", "workload_floors"]

probe_curve = drun.probe_curve
workload_floors = drun.workload_floors


def flag_counts(results: pd.DataFrame) -> tuple[int, pd.Series]:
    """How many results carry a flag, and how often each flag occurs (most frequent first)."""
    flags = results["flags"]
    return int(flags.map(len).gt(0).sum()), flags.explode().dropna().value_counts()


def peer_comparison(selection) -> peers.PeerComparison | None:
    """The View's candidate against the best of its run's peers (dashboard.model.peers); None for a table or a run
    without peers."""
    return peers.peer_comparison(loaders.run_data(selection.path), selection.candidate) if selection.kind == "run" else None


def sol_over_100_note(loads: pd.DataFrame, wide: pd.DataFrame, names: dict[str, str]) -> str | None:
    """Where SOL is above 100 % (the kernel beat its floor's probe), per load and per shape, named by `names`
    ({"baseline": ..., "candidate": ...}); None where it is nowhere."""
    over = sol_over_100(wide)
    per_load = [f"{r.load} ({names[side]} {getattr(r, f'sol_{side}'):.1%})" for r in loads.itertuples()
                for side in ("baseline", "candidate") if getattr(r, f"sol_{side}") > 1]
    if not len(over) and not per_load:
        return None
    where = ([f"per load: {', '.join(per_load)}"] if per_load else []) + \
            ([f"per shape: {', '.join(f'{r.shape} ({names[r.side]} {r.sol:.1%})' for r in over.itertuples())}"]
             if len(over) else [])
    return "; ".join(where)


def load_table(breakdown, wide: pd.DataFrame, workload, target: float) -> pd.DataFrame:
    """The score's per-load rows with their SOL (Σw·floor ÷ Σw·time) and the ratio each load alone would need for
    `target` (the other loads unchanged)."""
    loads = breakdown.loads.merge(views.load_sol(wide, family_weights(workload)), on="load", how="left")
    loads["ratio_if_alone_reaches_target"] = loads["load"].map(planner.load_ratios_needed(breakdown, target))
    return loads


def with_intervals(bars: pd.DataFrame, loads: pd.DataFrame, comparison) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-load bars and table with the comparison's bootstrap interval, verdict and band joined by load (and
    the interval as text); unchanged where there is no comparison (a table has no samples)."""
    if comparison is None:
        return bars, loads
    per_load = comparison.loads
    bars = bars.merge(per_load[["load", "ci_low", "ci_high"]], on="load", how="left")
    loads = loads.merge(per_load[["load", "ci_low", "ci_high", "verdict", "band"]], on="load", how="left")
    loads["ci"] = [ci_text(lo, hi) for lo, hi in zip(loads["ci_low"], loads["ci_high"])]
    return bars, loads


def scored_shapes(selection) -> pd.DataFrame:
    """The View's shapes that belong to one of its workload's scored loads (empty for a nearby-only run)."""
    wide = selection.wide()
    return wide[wide["load"].isin(selection.workload.load_order)]


def local_vs_official(selection) -> pd.DataFrame:
    """The View's run beside the official 036 table (published), shape by shape."""
    return views.local_vs_official(selection.shape_table(), loaders.official())


def shapes_table(selection) -> tuple[pd.DataFrame, dict[str, str], str | None]:
    """The Shapes page's table: the pair's readable shape rows, the official times joined where the official table is
    of the View's workload, and each other candidate of a run as a column of its measured medians. Returns the table,
    {column: candidate} of those columns, and why there are no official columns (None where there are)."""
    wide = readable_shapes(selection.wide())
    not_official = view.official_note(selection.workload)
    if not_official is None:
        off = loaders.official().rename(columns={"baseline_us": "official_baseline_us",
                                                 "candidate_us": "official_036_us"})
        wide = wide.merge(off[["load", "family", "official_baseline_us", "official_036_us"]], on=["load", "family"],
                          how="left")
    others = {}
    if selection.kind == "run":
        table = selection.shape_table()
        for cand in selection.data.candidates():
            if cand not in (selection.baseline, selection.candidate):
                medians = table[table["candidate"] == cand].set_index("shape")["median_us"]
                wide[f"{cand}_us"] = wide["shape"].map(medians)
                others[f"{cand}_us"] = cand
    return wide, others, not_official


def filter_shapes(wide: pd.DataFrame, loads: list[str], families: list[str], only_bad: bool) -> pd.DataFrame:
    """The rows of the chosen loads and families (all where none is chosen); with only_bad, the flagged rows and
    those kept out of the score."""
    shown = wide
    if loads:
        shown = shown[shown["load"].isin(loads)]
    if families:
        shown = shown[shown["family"].isin(families)]
    if only_bad:
        shown = shown[(shown["flags"] != "") | (~shown["usable"])]
    return shown


def library_ceiling_table(selection, wide: pd.DataFrame) -> tuple[pd.DataFrame, list[str], str | None, str]:
    """cuBLASLt's search benchmark for the View's shapes (dashboard.model.library_ceiling), of the run's GPU only for
    a run, with the run's own ratio beside each shape. Returns the table, its notes, the GPU (None for a table) and
    the caption."""
    gpu = ((selection.run or {}).get("environment") or {}).get("gpu") if selection.kind == "run" else None
    lib, notes = library_ceiling.ceiling(library_ceiling.with_dtypes(wide, selection.workload), gpu=gpu)
    if len(lib):
        lib = lib.merge(wide[["shape", "ratio"]].rename(columns={"ratio": "run_ratio"}), on="shape", how="left")
    return lib, notes, gpu, library_ceiling.caption(lib)
