"""One command on several backends (one per GPU model): file names per model, one progress bar, all at once.

    on_each_backend(backends, work, progress) -> {model: work(model, backend, progress_for_it)}
    model_paths(out, models, default) -> {model: path}
"""
from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Callable

from datasets import RUNS_DIR
from datasets.runfile import run_filename, slug
from profiler.backends.base import for_each
from profiler.backends.open import Backends


def model_paths(out, models: list[str], default: Callable[[str], Path]) -> dict[str, Path]:
    """One file per GPU model: `out` itself for one model, else `out` with the model's slug before the suffix;
    no `out`: default(model)."""
    if out is None:
        return {m: Path(default(m)) for m in models}
    out = Path(out)
    if len(models) == 1:
        return {models[0]: out}
    return {m: out.with_name(f"{out.stem}_{slug(m)}{out.suffix}") for m in models}


def default_run(label: str) -> Callable[[str], Path]:
    """datasets/runs/<date>_<gpu model>_<label>.json for a model."""
    return lambda model: Path(RUNS_DIR) / run_filename(dt.date.today(), model, label)


class FleetProgress:
    """One bar for the whole fleet: shapes (or points) done over all models, per-worker counts as its detail."""

    def __init__(self, progress: Callable | None, groups: dict):
        self.progress, self.groups, self.done = progress, groups, {}
        self._lock = threading.Lock()

    def for_group(self, model: str) -> Callable | None:
        if self.progress is None:
            return None

        def report(stage: str, i: int, n: int, detail: str | None = None) -> None:
            if stage == "probes":
                return
            with self._lock:
                self.done[model] = i
                total = n * len(self.groups)
                text = " ".join(g.detail() for g in self.groups.values())
                self.progress(stage, sum(self.done.values()), total, detail=text)

        return report


def on_each_backend(backends: Backends, work: Callable, progress: Callable | None = None) -> dict:
    """work(model, backend, progress) for every GPU model, all at once (disjoint GPUs). One backend on this host
    gets `progress` itself; a cluster's share one bar over all models. Ctrl-C cancels every backend's tasks."""
    if not backends.cluster:
        return {m: work(m, b, progress) for m, b in backends.items()}
    bars = FleetProgress(progress, backends)
    out: dict = {}
    for_each(list(backends), lambda m: work(m, backends[m], bars.for_group(m)), lambda m, r: out.__setitem__(m, r),
             len(backends), backends.cancel)
    return {m: out[m] for m in backends}
