"""One run: probes, then per shape: correctness of every candidate, paired timing of the correct ones, records.

    run_sweep(specs, shapes, out_path, *, label, settings=SweepSettings(), device="cuda", progress=None,
              log=print, measure_shapes=True, worker_init=None, cluster=None, workload=None) -> dict (the run)

`workload`: the datasets.workload.Workload the shapes come from (None: the default, muse_bf16_proj). It is
embedded in the run file (top-level "workload") and sent with every task, so the worker loads plans and takes the
contract's numbers from it, never from its own default.

`specs`: candidate specs (kernels.candidate: plan name, plan .json, module .py, file.py:Class,
method:NAME:{config}); the first is the baseline of every pair. Repeated names get "#2", "#3".
`shapes`: dicts with load, family, M, N, K, x_dtype, w_dtype, y_dtype, rel_l2_tol (select_shapes()).

This process only orchestrates: every candidate is loaded, prepared, checked and timed in a worker process
(profiler.worker), one shape per task (profiler.backends.isolate.SHAPE), on the backends open_backends gives. When
the worker dies or hangs, the candidate it was running gets a failure record with the cause, and the shape is
measured again in a fresh worker without it; a candidate that took a worker down at `max_incidents` shapes is not
run at the remaining ones. The run file is flushed after probes and after every shape (status "partial"); finalized
"complete" at the end. Ctrl-C leaves a valid partial file and re-raises KeyboardInterrupt.

In the worker, profiler.worker.shape_task.measure_one_shape() is the shape task's body.
"""
from __future__ import annotations

import os
import threading
import time
from copy import deepcopy
from dataclasses import asdict, replace
from pathlib import Path
from typing import Callable, Sequence

from datasets import load_workload
from datasets.runfile import RunFileError, RunWriter, new_run
from datasets.selection import select_shapes as select
from datasets.shapes import shape_bytes
from datasets.shapes import shape_key_of as shape_key
from kernels.candidate import resolve_spec
from kernels.methods_library import tunableop_folder
from profiler.backends.base import for_each
from profiler.backends.isolate import LOAD, PROBES, SHAPE, SweepInputError, loaded_names  # noqa: F401
from profiler.backends.open import open_backends
from profiler.backends.pool import WorkerStartError  # noqa: F401  (what run_sweep raises: the CLI and app catch it)
from profiler.check.source_screen import screen_spec
from profiler.commands.canary import needs_repeat, record_canary, repeat_canary, time_canary
from profiler.commands.fanout import default_run, model_paths, on_each_backend
from profiler.commands.runlife import RunLife
from profiler.worker.records import failure_record
from profiler.worker.sandbox import ImportPathWatch
from profiler.worker.settings import SweepSettings


def select_shapes(selection: str, workload=None) -> list[dict]:
    """The shape rows a --shapes selection names (datasets.select_shapes: 'official', 'nearby', 'all',
    'qkv_gate:1,64', 'M=3,17', parts joined by '+'); ShapeSelectionError (a ValueError) names a bad one."""
    return select(selection, workload or load_workload())


def floor_lookup(probe_records: list[dict]) -> dict[int, dict]:
    """{bytes: the exact-bytes read probe's floor} -- the `floor_us` a result records and `below_floor` uses."""
    return {int(p["bytes"]): {"us": float(p["us"]), "ci_low_us": p.get("ci_low_us"), "ci_high_us": p.get("ci_high_us")}
            for p in probe_records if p.get("kind", "read") == "read"}


def record_probes(life: RunLife, shapes: Sequence[dict], rounds: int) -> float:
    """Run the HBM read and compute probes at the shapes' byte counts on the lifecycle's backend, put them in its
    run and write it; returns the probes' seconds. One place for run and explain."""
    run = life.run
    res = life.backend.call(PROBES, {"kind": "probes", "rounds": rounds,
                                     "shape_bytes": {shape_key(s): shape_bytes(s) for s in shapes}})
    run["probes"], run["compute_probe"] = res["probes"], res["compute_probe"]
    run["compute_peak_tflops"] = res["compute_probe"]["tflops"]
    run["environment"]["probe_seconds"] = res["seconds"]
    life.writer.flush(run)
    return res["seconds"]


def run_sweep(specs: Sequence[str], shapes: Sequence[dict], out_path, *, label: str,
              settings: SweepSettings | None = None, device="cuda", progress: Callable | None = None,
              log: Callable[[str], None] = print, measure_shapes: bool = True, worker_init: str | None = None,
              cluster: str | None = None, workload=None) -> dict:
    """Probes, then every shape, all in a worker process; returns the run dict (also written to out_path).
    measure_shapes=False: probes only (`python -m profiler probe`); the shapes only give byte counts.
    worker_init: 'file.py:function' run in every worker before its first task (tests: a fake timer).
    cluster: a dask scheduler address or "local" / "local:N" (profiler.backends.open; one run file per GPU model,
    the returned run is the first model's); None: this host's one worker (dask never imported)."""
    workload = workload or load_workload()
    settings = settings or SweepSettings()
    given = [str(s) for s in specs]
    resolved = [resolve_spec(s) for s in given]  # the worker runs in the repository root: file paths made absolute
    side = tunableop_folder(Path(out_path).resolve()) if out_path else None
    config = worker_config(device, settings, out_path, resolved, worker_init, side)
    made_side = side is not None and not side.exists()
    if made_side:
        try:
            side.mkdir(parents=True, exist_ok=True)   # before any worker: the sandbox binds it writable
        except OSError:
            made_side = False   # an unwritable --out folder: the run file's own write says so, in one line
    try:
        with open_backends(cluster, config, log) as backends:
            paths = model_paths(out_path, list(backends), default_run(label))
            writers = {m: RunWriter(p) for m, p in paths.items()}   # refuse an existing file before any work
            runs = on_each_backend(backends, lambda m, backend, bar: sweep_on(
                backend, resolved, given, shapes, writers[m], label=label,
                settings=deepcopy(settings) if backends.cluster else settings, progress=bar, log=log,
                measure_shapes=measure_shapes, workload=workload), progress)
            if backends.cluster:
                for model, run in runs.items():
                    log(f"{model}: run file {paths[model]} ({run['status']}, {len(run['results'])} results)")
    finally:
        if made_side:
            try:
                side.rmdir()   # only when empty: no method wrote a side file
            except OSError:   # it holds a method's files, written by the sandboxed worker's uid: the parent's again
                for path in [side, *side.rglob("*")]:
                    try:
                        os.chown(path, os.geteuid(), os.getegid(), follow_symlinks=False)
                    except OSError:
                        pass
    return next(iter(runs.values()))


def worker_config(device, settings: SweepSettings, out_path, resolved: Sequence[str], worker_init: str | None,
                  side: Path | None = None) -> dict:
    """What every worker of a command is started with: the device, timing mode, flush, init hook; the run's side
    folder (a method's per-run files: TunableOp's results) and the sandbox's folders -- what a sandboxed worker must
    read besides the project and the interpreter (the run's folder, the candidates' modules) and may write."""
    return {"device": str(device), "mode": settings.mode, "flush_bytes": settings.flush_bytes, "init": worker_init,
            "side_folder": str(side) if side else None, "unprivileged": settings.unprivileged,
            "read": sorted({str(Path(out_path).resolve().parent)} if out_path else set()) + module_folders(resolved),
            "writable": [str(side)] if side else []}


def module_folders(specs: Sequence[str]) -> list[str]:
    """The folders of the candidate modules among `specs` (`path.py:Name`): a sandboxed worker must read them."""
    found = set()
    for spec in specs:
        path = Path(str(spec).split(":", 1)[0])
        if path.suffix == ".py" and path.is_file():
            found.add(str(path.resolve().parent))
    return sorted(found)


SCREEN_SHOWN = 4   # findings named per refused module (the count of the rest follows)


def screen_refusals(specs: Sequence[str]) -> dict[str, str]:
    """{spec: why} for every candidate module whose source the screen refuses (profiler.check.source_screen): it
    is never imported, in any process."""
    refused = {}
    for spec in specs:
        findings = screen_spec(spec)
        if findings:
            more = f" (+{len(findings) - SCREEN_SHOWN} more)" if len(findings) > SCREEN_SHOWN else ""
            refused[spec] = ("refused by the source screen: " + "; ".join(f.text() for f in findings[:SCREEN_SHOWN])
                             + more + " -- a kernel does not need this (--trust-candidate skips the screen)")
    return refused


def live_candidates(shape: dict, candidates: list[dict], refused: dict, incidents: dict,
                    settings: SweepSettings) -> tuple[list[dict], list[dict]]:
    """(candidates to run at this shape, failure records of those that will not: refused at load, or past
    max_incidents)."""
    live, skipped = [], []
    for c in candidates:
        if c["spec"] in refused:
            skipped.append(failure_record(shape, c["name"], "load", "load", [refused[c["spec"]]]))
        elif incidents.get(c["name"], 0) >= settings.max_incidents:
            skipped.append(failure_record(shape, c["name"], "skipped", "none", [
                f"not run: its worker died or hung at {incidents[c['name']]} shapes already "
                f"(max_incidents {settings.max_incidents})"]))
        else:
            live.append(c)
    return live, skipped


def plan_candidates(spec_of: dict, workload) -> dict:
    """{name: PlanCandidate} for the specs that are plans (a plan name or .json path: data, never a candidate's
    code -- a module, `file.py:Name` or `method:` spec is left alone and never imported here)."""
    from kernels.candidate import METHOD_PREFIX, PlanCandidate
    from kernels.plans import load_plan

    out = {}
    for name, spec in spec_of.items():
        text = str(spec)
        if name is None or text.startswith(METHOD_PREFIX) or text.endswith(".py") or ".py:" in text:
            continue
        try:
            out[name] = PlanCandidate(load_plan(text, workload))
        except Exception:   # a plan that did not load failed at load already, with its reason
            continue
    return out


def record_plan_devices(run: dict, plans: dict) -> None:
    """environment.plans_tuned_on: {plan: the GPU it records it was tuned on}, for every plan candidate that records
    one -- the pages and summaries say so where that is not the run's device (dashboard.cli.summary.plan_device_notes)."""
    tuned = {name: cand.plan.gpu for name, cand in plans.items() if cand.plan.gpu}
    if tuned:
        run["environment"]["plans_tuned_on"] = tuned


def record_host_dispatch(run: dict, plans: dict, calls: int = 400) -> None:
    """On a CPU device every timed call is an eager Python call, so a plan pays its routing (entry lookup and shape
    check, kernels.candidate.PlanCandidate.route) inside each time, where a module calling the same product does
    not. Each plan candidate's result gets `dispatch_us`: that routing timed apart, here, without a launch -- what
    the tables show beside its time. Other candidates get none (their whole call is their own)."""
    cache: dict = {}
    for r in run.get("results", []):
        cand = plans.get(r.get("candidate"))
        if cand is None:
            continue
        key = (r["candidate"], r["family"], int(r["M"]), int(r["N"]), int(r["K"]))
        if key not in cache:
            try:
                cache[key] = round(cand.routing_us(r["family"], int(r["M"]), int(r["N"]), int(r["K"]), calls), 3)
            except Exception:   # a route that raises was a failure at that shape already
                cache[key] = None
        if cache[key] is not None:
            r["dispatch_us"] = cache[key]


def _shape_records(run: dict, done: dict, shapes: Sequence[dict]) -> None:
    """Rebuild results, pairs, failures, shape_info and per-shape telemetry from the finished shapes, in shape
    order (tasks may finish in any order on several workers; the file reads the same as a one-worker run's)."""
    run["results"], run["pairs"], run["failures"], run["shape_info"], telemetry = [], [], [], {}, []
    for i in sorted(done):
        merged, skipped = done[i]
        run["results"] += merged["results"]
        run["pairs"] += merged["pairs"]
        run["failures"] += skipped + merged["failures"]
        run["shape_info"][shape_key(shapes[i])] = merged["info"] | (
            {"worker": merged["worker"]} if merged.get("worker") is not None else {})
        if merged["telemetry"]:
            telemetry.append(merged["telemetry"])
    run["telemetry"] = telemetry


def sweep_on(backend, specs: list[str], given: list[str], shapes: Sequence[dict], writer, *, label: str,
             settings: SweepSettings, progress: Callable | None = None, log: Callable[[str], None] = print,
             measure_shapes: bool = True, workload=None) -> dict:
    """One run file's sweep on `backend` (profiler.backends.base.Backend): load check, probes, then the shapes --
    `backend.parallel` at a time, each one task -- flushed as each finishes. `workload` (None: the default) is
    embedded in the run and sent with the load and shape tasks."""
    workload = workload or load_workload()
    wl_spec = workload.to_dict()
    t_start = time.perf_counter()

    def wall_time(run: dict) -> None:
        run["environment"]["wall_seconds"] = round(time.perf_counter() - t_start, 2)

    # the source screen before any of a candidate's code is imported, in any process
    screened_out = screen_refusals(specs) if settings.screened else {}
    watch = ImportPathWatch()   # before any worker: what it could leave for the next interpreter to run
    with RunLife(backend, writer, "run", on_interrupt=wall_time) as life:
        env = backend.environment()
        # the canary first: the worker that just started has loaded no candidate yet (profiler.commands.canary)
        canary_times = (time_canary(backend, shapes, specs[0], {"kind": "shape", "settings": asdict(settings),
                                                                "workload": wl_spec}, settings)
                        if measure_shapes and specs and specs[0] not in screened_out else None)
        to_load = [s for s in specs if s not in screened_out]
        loaded, refused = (backend.call(LOAD, to_load, settings.shape_timeout_s, wl_spec) if to_load else ([], {}))
        by_spec = {r["spec"]: r for r in loaded}
        loaded = [by_spec.get(s) or {"spec": s, "name": None, "error": screened_out[s], "refused": True}
                  for s in specs]
        refused |= {s: f"refused at load: {why}" for s, why in screened_out.items()}
        names = loaded_names(loaded)
        settings = replace(settings, candidates=names)   # the caller's settings stay as given
        task_base = {"kind": "shape", "settings": asdict(settings), "workload": wl_spec}
        env["settings"] = asdict(settings) | {"flush_bytes": env.pop("flush_bytes", settings.flush_bytes),
                                              "allow_tf32": False, "specs": given}
        env["workers"] = backend.records()
        ci = env.get("replay_overhead_ci_us", [0, 0])
        log(f"replay overhead {env.get('replay_overhead_us', 0):.2f} us (95% CI {ci[0]:.2f}-{ci[1]:.2f}); "
            f"flush reads {(env['settings']['flush_bytes'] or 0) / 1e6:.0f} MB; candidates run in a worker process")
        run = life.start(new_run(label, env, workload=workload))
        run["failures"], run["shape_info"] = [], {}
        if settings.probes:
            record_probes(life, shapes, settings.probe_rounds)
            if progress:
                progress("probes", 1, 1)
        floors = floor_lookup(run["probes"])
        candidates = [{"spec": s, "name": n} for s, n in zip(specs, names)]
        incidents: dict[str, int] = {}
        counting = threading.Lock()   # shapes may run in several threads (a cluster backend)
        t_shapes = time.perf_counter()
        done: dict[int, tuple[dict, list]] = {}

        def measure(i: int) -> tuple[dict, list]:
            with counting:
                live, skipped = live_candidates(shapes[i], candidates, refused, incidents, settings)
            merged = backend.call(SHAPE, shapes[i], live,
                                  task_base | {"floor": floors.get(shape_bytes(shapes[i]))}, settings)
            with counting:
                for name, n in merged.pop("incidents").items():
                    incidents[name] = incidents.get(name, 0) + n
            return merged, skipped

        def finished(i: int, outcome: tuple[dict, list]) -> None:
            done[i] = outcome
            _shape_records(run, done, shapes)
            refuse_if_import_path_changed(watch, backend, writer)
            life.flush()
            if progress:
                detail = backend.detail()   # per-worker counts on a cluster; the app's progress takes 3 arguments
                progress("shapes", len(done), len(shapes), **({"detail": detail} if detail is not None else {}))

        for_each(range(len(shapes)) if measure_shapes else [], measure, finished, backend.parallel, backend.cancel)
        if canary_times is not None and candidates and candidates[0]["spec"] not in refused:
            again = (repeat_canary(backend, shapes, specs[0], {"kind": "shape", "settings": asdict(settings),
                                                               "workload": wl_spec}, settings)
                     if needs_repeat(env.get("gpu")) else None)
            canary = record_canary(life, canary_times, candidates[0]["name"], settings, again)
            if canary is not None:
                shown = ", ".join(f"{d['key']} {d['ratio']:.2f}x" for d in canary["shapes"][:4])
                log(f"canary ({canary['compared']} shapes timed before any candidate was loaded, {canary['seconds']:.1f} s): "
                    f"{canary['verdict']}" + (f" -- {shown}" if shown else ""))
        env = run["environment"]
        plans = plan_candidates(dict(zip(names, specs)), workload)
        record_plan_devices(run, plans)
        if env.get("device") == "cpu":
            record_host_dispatch(run, plans)
        env["sweep_seconds"] = round(time.perf_counter() - t_shapes, 2)
        wall_time(run)
        if run["telemetry"]:
            env.setdefault("clocks", {})["sm_mhz_end"] = run["telemetry"][-1].get("sm_mhz")
        backend.close()   # every worker gone before the last look
        refuse_if_import_path_changed(watch, backend, writer)
        life.finalize()
    return run


def refuse_if_import_path_changed(watch: ImportPathWatch, backend, writer) -> None:
    """Where a worker ran outside the sandbox (it can write what this user can), a file added or rewritten on the
    interpreter's import path or in the project's modules during the run could run in the next process that starts
    Python (a `.pth`, `sitecustomize`, a patched module): the run is not recorded (its partial file removed) and
    the one line names what changed."""
    if not any(str(r.get("sandbox", "")).startswith("none") for r in backend.records()):
        return
    changed = watch.changed()
    if changed:
        writer.path.unlink(missing_ok=True)
        shown = "; ".join(changed[:3]) + (f" (+{len(changed) - 3} more)" if len(changed) > 3 else "")
        raise RunFileError(f"run not recorded: the interpreter's import path changed while a worker ran without "
                           f"a sandbox ({shown}); code there runs in the next Python process -- remove it before "
                           f"the next run")
