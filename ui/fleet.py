"""The Fleet page's data: the plan sweeps among the run sources grouped by label (dashboard.model.fleet), and one
sweep's run files read through the loaders' caches."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dashboard.model import fleet, sources
from dashboard.model.fleet import fleet_table
from dashboard.model.sources import safe_name
from ui import loaders, view

__all__ = ["sweep_sets", "Sweep", "open_sweep", "fleet_table", "safe_name"]


def sweep_sets(metas: dict | None = None) -> tuple[dict[str, list[Path]], str | None]:
    """Label -> run files of every plan sweep among the run sources (a tune log, a survey or an explain run times
    configs, not plans), and the label to open on (dashboard.model.fleet.default_set)."""
    metas = loaders.run_metas(view.source_list()) if metas is None else metas
    sets = fleet.sweep_sets(metas)
    return sets, (fleet.default_set(sets, metas) if sets else None)


@dataclass(frozen=True)
class Sweep:
    """One sweep's run files (one per GPU model), every candidate any of them holds, and the first file's default
    pair (baseline, candidate)."""
    datas: list
    names: list[str]
    pair: tuple[str, str]


def open_sweep(paths: list[Path]) -> Sweep:
    """Reads each run file of the sweep (raises one of ui.loaders.BAD_INPUT for a file that does not load)."""
    datas = [loaders.run_data(p) for p in paths]
    names = list(dict.fromkeys(n for d in datas for n in sources.candidate_names(d)))
    pair = sources.default_pair(datas[0]) or (names[0], names[0])
    return Sweep(datas, names, tuple(pair))
