"""The Step page's data: the step runs among the run sources (committed, extra, uploaded), read through the loaders'
caches (dashboard.model.step does the arithmetic)."""
from __future__ import annotations

from pathlib import Path

from dashboard.model import run_kinds
from dashboard.model import runs as drun
from ui import loaders, view


def step_runs() -> dict[str, Path]:
    """File name -> path of every readable step run (dashboard.model.run_kinds.STEP), newest first."""
    srcs = [s for s in view.source_list() if s.kind == "run"]
    metas = [m for m in loaders.run_metas(srcs).values() if m.kind == run_kinds.STEP]
    return {m.path.name: m.path for m in run_kinds.newest_first(metas)}


def step_data(path) -> drun.RunData:
    """The run, read and validated once per file version (ui.loaders.run_data)."""
    return loaders.run_data(path)
