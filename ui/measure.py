"""What the Run page measures with, reached here: the GPU check, the inputs of a live sweep, the sweep itself and
its scores.

The Streamlit process never imports torch: the GPU check asks the NVIDIA driver directly (profiler.measure.telemetry,
libcuda through ctypes, milliseconds), and the sweep runs its candidates in a worker process (profiler.worker), so a
candidate that crashes or hangs cannot take the app down with it. profiler/ is imported inside the functions: only
a host with CUDA reaches them."""
from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path


def cuda() -> tuple[bool, str]:
    """(available, device name or why not), from the driver API; torch is only looked up, not imported."""
    from profiler.measure.telemetry import cuda_device_name

    if importlib.util.find_spec("torch") is None:
        return False, "PyTorch is not installed in this environment."
    name = cuda_device_name()
    if name is None:
        return False, "There is no NVIDIA driver (libcuda.so.1) or no usable GPU on this machine."
    return True, name


def plan_names() -> list[str]:
    from kernels.plans import list_plans

    return list_plans()


def check_inputs(workload_name: str, shapes: str, plans: list[str]):
    """(workload, shape rows) of a sweep's inputs, every one checked before a worker starts; InputError (one line)
    for the first that is wrong."""
    from datasets import DatasetError, load_workload
    from datasets.selection import ShapeSelectionError, select_shapes
    from kernels.plans import PlanError, load_plan

    try:
        workload = load_workload(workload_name)
        rows = select_shapes(shapes, workload)
        for p in plans:
            load_plan(p, workload)
    except (DatasetError, ShapeSelectionError, PlanError) as exc:
        raise InputError(str(exc)) from None
    return workload, rows


class InputError(ValueError):
    """A sweep input (workload, shapes, plan) that is wrong: one line."""


class RunFailed(RuntimeError):
    """The sweep could not run or finish (a worker that does not start, a file that cannot be written): one line."""


def new_run_path(gpu: str, label: str) -> tuple[Path, str]:
    """(datasets/runs/<today>_<gpu>_<label>.json, the label as written); RunFailed when the file exists (runs are
    never overwritten)."""
    from datasets import RUNS_DIR
    from datasets.runfile import run_filename, safe_label

    label = safe_label(label)
    out = Path(RUNS_DIR) / run_filename(dt.date.today(), gpu, label)
    if out.exists():
        raise RunFailed(f"{out.name} exists; runs are never overwritten — pick another label")
    return out, label


def sweep(plans: list[str], shape_rows, out: Path, *, label: str, mode: str, shapes: str, command: str, workload,
          progress, log) -> dict:
    """profiler.commands.sweep.run_sweep as `python -m profiler run` does it, screened and unprivileged; the run."""
    from datasets.runfile import RunFileError
    from profiler.commands.sweep import SweepInputError, SweepSettings, WorkerStartError, run_sweep
    from profiler.worker.process import WorkerDied, WorkerError

    try:
        settings = SweepSettings(mode=mode, shapes=shapes, command=command, screened=True, unprivileged=True)
        return run_sweep(plans, shape_rows, out, label=label, settings=settings, progress=progress, log=log,
                         workload=workload)
    except (SweepInputError, WorkerStartError, RunFileError, WorkerError, WorkerDied) as exc:  # one line
        raise RunFailed(str(exc)) from None


def scores(out: Path) -> list[tuple[str, str, object, str | None]]:
    """(candidate, baseline, ScoreBreakdown or None, why not scored or None) for every pair of the run file."""
    from dashboard.model import runs, scoring

    data = runs.load_run_data(out)
    found = []
    for base, cand in runs.candidate_pairs(data):
        try:
            found.append((cand, base, runs.run_score(data, base, cand), None))
        except scoring.ScoringError as exc:
            found.append((cand, base, None, str(exc)))
    return found
