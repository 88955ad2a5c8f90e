"""The Step page's data: the step runs among the run sources (committed, extra, uploaded), read through the loaders'
caches, and its tables at one (batch, context) point (dashboard.model.step does the arithmetic,
dashboard.plots.step_figures draws)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dashboard.model import run_kinds
from dashboard.model import runs as drun
from dashboard.model.step import (amdahl_table, display_amdahl, display_families, failures, families, on_cpu,
                                  points)
from dashboard.model import step as step_model
from dashboard.plots.step_figures import amdahl_curve, family_bars, step_bars
from ui import loaders, view

__all__ = ["step_runs", "step_data", "at_point", "PointTables", "amdahl_table", "display_amdahl", "display_families",
           "failures", "families", "on_cpu", "points", "amdahl_curve", "family_bars", "step_bars"]


def step_runs() -> dict[str, Path]:
    """File name -> path of every readable step run (dashboard.model.run_kinds.STEP), newest first."""
    srcs = [s for s in view.source_list() if s.kind == "run"]
    metas = [m for m in loaders.run_metas(srcs).values() if m.kind == run_kinds.STEP]
    return {m.path.name: m.path for m in run_kinds.newest_first(metas)}


def step_data(path) -> drun.RunData:
    """The run, read and validated once per file version (ui.loaders.run_data)."""
    return loaders.run_data(path)


@dataclass(frozen=True)
class PointTables:
    """The rows of one (batch, context) point: the step's breakdown per candidate, its Amdahl row(s), and each
    family in the step vs alone. Each may be empty (no candidate has it at this point)."""
    breakdown: pd.DataFrame
    amdahl: pd.DataFrame
    families: pd.DataFrame


def at_point(data: drun.RunData, mode: str, amdahl: pd.DataFrame, batch: int, context: int) -> PointTables:
    """The step run's tables at one point in one timing mode ('cold' or 'warm'); `amdahl` is amdahl_table(data,
    mode), which the page shows whole as well."""
    return PointTables(breakdown=step_model.at_point(step_model.breakdown_table(data, mode), batch, context),
                       amdahl=step_model.at_point(amdahl, batch, context),
                       families=step_model.at_point(step_model.family_table(data, mode), batch, context))
