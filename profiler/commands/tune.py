"""The tuning sweep on the GPU: try every registered method x config per scored (family, M) of a workload, write
its plan.

    python -m profiler tune --shapes official [--workload NAME|FILE] [--families router o ...] [--methods ...]
                            [--out-plan kernels/plans/best.json] [--out-run datasets/runs/<date>_<gpu>_tune.json]
                            [--budget-s 900] [--compile-workers 16] [--m 1 ...] [--base-plan best]
    python -m profiler tune --extend-plan kernels/plans/best.json    # no GPU: add the library fallback only

The workload (default muse_bf16_proj) gives the points (every family at every load's M; neighbours M+-1 at their
own N), the candidates (methods computing each family's dtypes) and the contract; the plan records it ("workload":
name + fingerprint) and is named after --out-plan's file (default: kernels/plans/best.json for the default
workload, kernels/plans/<workload name>.json for another). `--m` tunes only the points at those M (a new method that
serves only them, say): each is re-dispatched by its own one-M entry and every other M keeps the base plan's entry,
so the other points are not re-decided on a fresh, noisier comparison.

The selection rules (candidates, funnel, neighbour and significance rules, ranges per N, the library fallback above
the tuned range) are profiler/commands/tune_rules.py, torch-free and tested on CPU. The one "check + time these
candidates at this shape" step the rules call is profiler.commands.tune_measure.WorkerMeasure: a shape task of the
isolation worker (profiler.worker), as in `python -m profiler run`, so a config that crashes, hangs or breaks its
CUDA context is a rejection with its cause and the tune goes on. This process only orchestrates and writes the plan
and the tune run file (schema v1: results of every timed candidate, baseline-vs-winner pairs, failures, and the
decisions under "tune"; never overwritten). `--cluster` fans the points out over dask workers
(profiler.backends.dask): each point's stages run on one worker, the rules run here, so the same measurements give
the same plan.

Timing is profiler.measure.timing.measure_shape in the worker -- the same sampler as `python -m profiler run` and
the config survey: CUDA graphs, read-based L2 flush, replay overhead subtracted, paired alternating rounds,
warm-up by time, batches below 75% of the max SM clock dropped, RSE stopping rule per stage (the timing policy
presets TUNE_SCREEN / TUNE_FINAL, profiler/measure/policy.py).
Compiles: before the first point, every candidate's Triton kernels are compiled in parallel processes
(kernels.warm), so the workers only load them from Triton's cache.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from datasets import RUNS_DIR, load_workload
from datasets.jsonfile import JsonInputError, read_json
from datasets.paths import DEFAULT_WORKLOAD
from datasets.runfile import (RunFileError, RunWriter, WriteError, new_run, run_filename, utc_now,
                              write_text_atomic)
from kernels.method import PlanError
from kernels.plans import DISPATCH_MAX_M, load_plan, plan_from_dict, with_library_fallback
from kernels.registry import METHODS
from kernels.warm import job_key, unique_jobs, warm
from profiler.backends.base import for_each
from profiler.backends.open import ClusterError, open_backends
from profiler.backends.pool import WorkerStartError
from profiler.commands.fanout import model_paths, on_each_backend
from profiler.commands.runlife import RunLife
from profiler.commands.tune_measure import WorkerMeasure
from profiler.measure.policy import TUNE_FINAL
from profiler.worker.settings import SweepSettings
from profiler.commands.tune_rules import FINALISTS, SCREEN, FINAL, Records, candidates, make_plan
from profiler.commands.tune_rules import tune_point

DEFAULT_BUDGET_S = 900.0   # soft: points left when it runs out keep the base plan's entries


# ------------------------------------------------------------------------------------------ compiles

def warm_jobs(methods: dict, points, only=None) -> list[dict]:
    """Every candidate at every point, as kernels.warm jobs."""
    jobs = []
    for pt in points:
        for name, config in candidates(methods, pt.spec, pt.M, pt.N, pt.K, only):
            jobs.append({"method": name, "config": config, "family": pt.family, "M": pt.M, "N": pt.N,
                         "K": pt.K, "w_dtype": pt.spec["w_dtype"]})
    return jobs


def precompile(methods: dict, points, only, workers: int, extra_jobs=(), log=print) -> dict:
    """Compile every candidate (and extra_jobs) in `workers` processes first (kernels.warm). Returns
    {(method, config json, family): reason} for those that raised there: the sweep leaves them out at that
    family (a kernel that faults would take the sweep's CUDA context down with it)."""

    if workers <= 0:
        return {}
    t0 = time.perf_counter()
    jobs = warm_jobs(methods, points, only) + list(extra_jobs)
    errors = warm(jobs, workers)
    skip = {job_key(job): f"failed when compiled and run once in a worker: {msg}" for job, msg in errors if job}
    log(f"compiled {len(unique_jobs(jobs))} distinct (method, config, shape class) jobs in {workers} processes "
        f"in {time.perf_counter() - t0:.1f} s; {len(errors)} raised there (left out of the sweep):")
    for _, msg in errors:
        log(f"   {msg}")
    return skip


# ------------------------------------------------------------------------------------------ plan + run files

def committed_run_path(run_path) -> str:
    """Where the tune run lives in the repo: its own path when written inside the checkout, else
    datasets/runs/<name> (a device host writes to $OUT; its run files are committed there under the same name)."""
    root = Path(__file__).resolve().parents[2]
    path = Path(run_path).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return f"datasets/runs/{path.name}"


def default_run_path(gpu: str) -> Path:

    return Path(RUNS_DIR) / run_filename(utc_now(), gpu, "tune")


def default_plan_name(workload) -> str:
    """'best' for the default workload (kernels/plans/best.json), the workload's name for another."""

    return "best" if workload.name == DEFAULT_WORKLOAD else workload.name


def write_plan(plan: dict, path, workload) -> None:
    """Validate, then write atomically (a temp file renamed over the old plan)."""

    plan_from_dict(plan, str(path), workload)
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    write_text_atomic(path, json.dumps(plan, indent=1) + "\n")


def extend_plan(path, workload=None) -> int:
    """--extend-plan: rewrite a plan file with the library fallback (kernels.plans.with_library_fallback),
    validated against `workload` (None: the default)."""

    try:
        plan = with_library_fallback(read_json(path, kind="plan"))
        write_plan(plan, path, workload or load_workload())
    except (JsonInputError, PlanError, KeyError, TypeError, AttributeError, OSError, WriteError) as exc:
        print(f"profiler tune --extend-plan: {path}: {exc}", file=sys.stderr)
        return 2   # bad input: the plan file is not one, or cannot be read or written
    print(f"plan -> {path} (every family dispatches 1..{_max_m()}; added entries are torch_linear, not measured)")
    return 0


def _max_m() -> int:

    return DISPATCH_MAX_M


@dataclass
class TuneSettings:
    """What a tune was asked to do (recorded under environment.settings)."""
    shapes: str = "official"
    workload: str = ""             # the workload's name (the run file embeds the whole workload)
    families: list | None = None
    methods: list | None = None
    only_m: list | None = None     # --m: the M tuned; the others keep the base plan
    base_plan: str = "baseline"
    budget_s: float = DEFAULT_BUDGET_S
    finalists: int = FINALISTS
    compile_workers: int = 0
    seed: int = 0
    shape_timeout_s: float = 120.0
    max_incidents: int = 2
    command: str = ""
    input_salt: int | None = None  # SweepSettings.input_salt: None, a fresh salt per shape task; an int for tests


class TuneError(RuntimeError):
    """A tune that cannot start or go on (a worker that cannot start, a run file that exists); one line."""


def tune_sweep(points: list, out_run, out_plan, *, settings: TuneSettings, device="cuda",
               worker_init: str | None = None, workload=None, cluster: str | None = None,
               log: Callable[[str], None] = print, progress: Callable | None = None) -> list[dict]:
    """Compile every candidate (kernels.warm), then tune every point through the isolation worker (or the dask
    workers of each GPU model: `cluster`), write the plan and the tune run file. Returns one
    {"plan", "plan_path", "run", "run_path"} per GPU model (one without a cluster)."""
    workload = workload or load_workload()
    local = cluster is None or str(cluster).startswith("local")
    skip = precompile(METHODS, points, settings.methods, settings.compile_workers if local else 0, log=log)
    config = {"device": str(device), "mode": "cold", "flush_bytes": None, "init": worker_init}
    try:
        with open_backends(cluster, config, log) as backends:
            runs = model_paths(out_run, list(backends), default_run_path)
            plans = model_paths(out_plan, list(backends), lambda m: Path(out_plan))
            writers = {m: RunWriter(p) for m, p in runs.items()}   # refuse an existing run file before any work
            out = on_each_backend(backends, lambda m, backend, bar: tune_on(
                backend, points, writers[m], plans[m], settings=settings, workload=workload, skip=skip, log=log,
                progress=bar), progress)
            return list(out.values())
    except (ClusterError, RunFileError, WorkerStartError) as exc:
        raise TuneError(str(exc)) from None


def tune_on(backend, points: list, writer, out_plan, *, settings: TuneSettings, workload, skip: dict,
            log: Callable[[str], None] = print, progress: Callable | None = None) -> dict:
    """Tune every point on `backend` (profiler.backends.base.Backend): each point's stages run one after another,
    `backend.parallel` points at a time, every measurement one worker task (profiler.commands.tune_measure.
    WorkerMeasure); the run file is flushed as each point finishes. Writes the plan at the end (not after Ctrl-C:
    the partial run is kept)."""
    t0 = time.perf_counter()
    with RunLife(backend, writer, "tune run") as life:
        env = backend.environment()
        gpu = env.get("gpu") or "unknown-gpu"
        env["settings"] = {"mode": "cold", "tool": "tune", "check": "quick", "shapes": settings.shapes,
                           "workload": workload.name,
                           "families": settings.families, "methods": settings.methods, "only_m": settings.only_m,
                           "flush_bytes": env.pop("flush_bytes", None), "seed": settings.seed, "screen": SCREEN,
                           "final": FINAL, "finalists": settings.finalists,
                           "noise": "datasets.noise_model: the within-run band per family and M range on this device",
                           "budget_s": settings.budget_s,
                           "min_clock_fraction": TUNE_FINAL.min_clock_fraction,
                           "shape_timeout_s": settings.shape_timeout_s,
                           "max_incidents": settings.max_incidents, "command": settings.command}
        env["workers"] = backend.records()
        run = life.start(new_run("tune", env, workload=workload))
        measure = WorkerMeasure(backend, SweepSettings(seed=settings.seed, shape_timeout_s=settings.shape_timeout_s,
                                                       max_incidents=settings.max_incidents,
                                                       input_salt=settings.input_salt), log,
                                workload=workload)
        done: dict[int, tuple | None] = {}

        def work(i: int) -> dict:
            if time.perf_counter() - t0 > settings.budget_s:
                return {"skipped": "budget ran out"}
            t_pt, records = time.perf_counter(), Records()
            try:
                d = tune_point(points[i], METHODS, partial(measure, pin=f"point {i}"),
                               n_finalists=settings.finalists, only=settings.methods, records=records, skip=skip,
                               log=log, device=env.get("gpu"))
            except RuntimeError as exc:   # no candidate passed (or could be timed) there: the family keeps the base
                log(f"   {exc}")
                return {"skipped": str(exc)[:600], "records": records}
            log(f"   [{time.perf_counter() - t_pt:.1f} s for this point, {time.perf_counter() - t0:.1f} s total]")
            return {"decision": d, "records": records}

        def finished(i: int, outcome) -> None:
            done[i] = outcome
            _point_records(run, done, points)
            run["telemetry"] = list(measure.telemetry)
            life.flush()
            if progress:
                kw = {"detail": backend.detail()} if backend.detail() is not None else {}
                progress("points", len(done), len(points), **kw)

        for_each(range(len(points)), work, finished, backend.parallel, backend.cancel)
        backend.close()
        skipped = [f"{points[i].family} M={points[i].M}" for i in sorted(done) if "skipped" in done[i]]
        decisions = [done[i]["decision"] for i in sorted(done) if "decision" in done[i]]
        plan = _plan(decisions, skipped, settings, workload, gpu, writer.path, Path(out_plan).stem)
        write_plan(plan, out_plan, workload)
        run["tune_plan"] = plan
        life.finalize(complete=not skipped)
        log(f"tune elapsed {time.perf_counter() - t0:.1f} s")
        return {"plan": plan, "plan_path": str(out_plan), "run": run, "run_path": str(writer.path)}


def _point_records(run: dict, done: dict, points: list) -> None:
    """The run's results, pairs, failures and decisions from the finished points, in point order (points may
    finish in any order on several workers; the file reads the same as a one-worker tune's)."""
    records = Records()
    decisions, skipped = [], []
    for i in sorted(done):
        rec = done[i].get("records") or Records()
        records.results += rec.results
        records.pairs += rec.pairs
        records.failures += rec.failures
        if "decision" in done[i]:
            decisions.append(done[i]["decision"].to_dict())
        else:
            skipped.append({"family": points[i].family, "M": points[i].M, "reason": done[i]["skipped"]})
    run.update(results=records.results, pairs=records.pairs, failures=records.failures, tune=decisions,
               tune_skipped=skipped)


def _plan(decisions: list, skipped: list, settings: TuneSettings, workload, gpu: str, run_path,
          name: str = "best") -> dict:
    """The tuned plan (named `name`, recording `workload`) from the decisions; a family with a point left out
    (budget) keeps the base plan."""

    base = load_plan(settings.base_plan, workload).to_dict()
    skipped_fams = {s.split()[0] for s in skipped}
    decisions = [d for d in decisions if d.family not in skipped_fams]   # a half-tuned family keeps the base
    notes = (f"Tuned by profiler/commands/tune.py on {gpu} for workload {workload.name}, {len(decisions)} scored "
             f"points; families "
             f"{sorted({d.family for d in decisions})} tuned, others from plan {settings.base_plan!r}. Rule: funnel "
             f"(screen every admitted config, {settings.finalists} finalists + baseline), measure_shape timing "
             f"(screen RSE {SCREEN['rse_target']:.0%}, finals and neighbours RSE {FINAL['rse_target']:.1%}), "
             f"neighbour check M+-1 (same-N neighbours decide; winner vs runner-up and vs baseline; a winner slower "
             f"than the baseline next door keeps its point with its range cut short of that neighbour) with "
             f"the device's within-run noise band (datasets.noise_model) as tolerance, baseline unless the win reads "
             f"FAST against that band, ranges split at "
             f"midpoints between scored M, per N (entries with \"N\" for points off the family's N), torch_linear "
             f"above the largest tuned M." + (f" Not tuned (budget ran out, or no candidate passed): {skipped}; their "
                                              f"families keep the base plan." if skipped else "")
             + (f" Tuned only at M={settings.only_m}: each of those M is dispatched by its own one-M entry, every "
                f"other M keeps plan {settings.base_plan!r}'s entry." if settings.only_m else ""))
    return make_plan(decisions, METHODS, workload, base, gpu, committed_run_path(run_path), notes, name,
                     only_m=settings.only_m)
