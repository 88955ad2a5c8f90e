"""`python -m profiler explain`: what each checked call launches, per kernel, written as a run file.

    run_explain(specs, shapes, out_path, *, label, settings, tool, log, device, worker_init, cluster)
        -> dict (the run, as written)

This process only orchestrates; everything runs in the isolation worker of `python -m profiler run`
(profiler.worker, task kinds in profiler/worker/explain_task.py), one task per shape with all its candidates:
probes (HBM read + compute: the analysis's floors); then per shape the "explain_check" task checks every candidate
with the correctness contract and records one CUDA-graph replay of each passing call under torch.profiler; then
ncu launches a worker of its own (Worker's `prefix`) and per shape the "explain_ncu" task profiles one call of
every passing candidate, a chunk of shapes per ncu process (its report is exported when the process ends).
When a worker dies, hangs or breaks its CUDA context, the worker protocol names the candidate and phase: that
job gets a failure record with the cause and a fresh worker carries on with the rest (a check is redone without
the culprit; a Kineto replay that takes the worker down costs the shape's sequences, not its verdicts; under ncu
the jobs after the culprit go on in a new ncu process). The run file is flushed (status "partial") after the
probes and after every shape or chunk, finalized "complete" at the end; it is never overwritten. `cluster`: the
same tasks on dask workers (profiler.backends.dask; one run file per GPU model).

Run-file additions (profiler/README.md, 'Explain run'): `calls` (one per shape x candidate: check verdict,
Kineto sequence, ncu launch count and summed kernel time), `kernels` (one per shape x candidate x kernel, from
ncu), `failures`; environment.ncu_version / ncu_command / ncu_export_command / ncu_metrics.
"""
from __future__ import annotations

import tempfile
import time
from copy import deepcopy
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from datasets import load_workload
from datasets.runfile import RunWriter, new_run, slug
from datasets.shapes import SHAPE_ID_FIELDS, shape_identity
from datasets.shapes import shape_key_of as shape_key
from datasets.text import escape_strings
from datasets.workload import workload_from_dict
from profiler.backends.base import Task, for_each
from profiler.backends.isolate import LOAD, loaded_names, without_culprits
from profiler.backends.open import open_backends
from profiler.commands.fanout import default_run, model_paths, on_each_backend
from profiler.commands.runlife import RunLife
from profiler.commands.sweep import record_probes
from profiler.measure import ncu as ncu_mod
from profiler.worker.process import Worker, WorkerDied, WorkerError

NCU_EXIT_TIMEOUT_S = 600.0   # ncu writes its report after the profiled worker exits: wait for it, never kill it


@dataclass
class ExplainSettings:
    shapes: str = "official"
    only: list = field(default_factory=list)     # shape keys ("decode 16/router"); empty = every shape
    seed: int = 0
    probes: bool = True
    probe_rounds: int = 24
    trace_dir: str | None = None
    keep_dir: str | None = None                  # keep ncu reports and raw CSVs here
    shapes_per_ncu: int = 10                     # shapes per ncu process (the run file is flushed after each)
    step_timeout_s: float = 600.0                # watchdog: a candidate step (check, replay, profiled call) that
                                                 # makes no progress this long is stopped (ncu replays each kernel)
    command: str = ""
    candidates: list = field(default_factory=list)
    kind: str = "explain"
    input_salt: int | None = None               # None: each check task draws its own (inputs.fresh_salt); tests: an int
    # The workload's JSON object (Workload.to_dict), sent with every worker task; the run file embeds it at its
    # top level ("workload"), not in environment.settings (recorded()).
    workload: dict | None = None

    def recorded(self) -> dict:
        """What environment.settings records: everything but the workload (the run holds it once, at the top)."""
        return {k: v for k, v in asdict(self).items() if k != "workload"}


@dataclass
class Job:
    job: int
    shape: dict
    cand: int
    name: str


def _base(shape) -> dict:
    return shape_identity(shape)


def shape_slug(shape) -> str:
    """'decode 16/router' -> 'decode-16_router' (file names of per-shape traces)."""

    return "_".join(slug(part) for part in shape_key(shape).split("/"))


def make_jobs(shapes: list[dict], names: list[str]) -> list[tuple[dict, list[Job]]]:
    out, n = [], 0
    for shape in shapes:
        jobs = []
        for j, name in enumerate(names):
            jobs.append(Job(n, shape, j, name))
            n += 1
        out.append((shape, jobs))
    return out


def _task_jobs(jobs: list[Job], specs: list[str]) -> list[dict]:
    return [{"job": j.job, "spec": specs[j.cand], "name": j.name} for j in jobs]


# --- the tasks (run on a profiler.backends.pool.WorkerPool: here, or on a dask worker) ---------------------------
def check_task(pool, shape: dict, jobs: list[dict], settings: ExplainSettings) -> dict:
    """Check + Kineto for one shape's jobs ({"job", "spec", "name"}) in the pool's worker, again in a fresh one
    without the job that took it down -> {"calls", "kineto", "kineto_errors", "failures": {job: reason}}."""
    failures, state = {}, {"replay": True, "lost": None}
    trace = str(Path(settings.trace_dir) / f"{shape_slug(shape)}.json") if settings.trace_dir else None

    def check(live: list[dict]) -> dict:
        task = {"kind": "explain_check", "shape": shape, "candidates": live, "seed": settings.seed,
                "input_salt": settings.input_salt, "trace": trace,
                "kineto": state["replay"], "workload": settings.workload}
        try:
            return pool.call(task, settings.step_timeout_s, shape_key(shape))
        except WorkerError as exc:
            failures.update({j["job"]: f"check: harness error: {exc}" for j in live})
            return None

    def blame(exc: WorkerDied, culprits: list[str]) -> list[str]:
        if exc.phase == "kineto":   # the replays took it down: verdicts again, without sequences
            state["replay"], state["lost"] = False, f"kineto: worker {exc.kind}: {exc.message}"
            return []
        for j in jobs:
            if j["name"] in culprits and j["job"] not in failures:
                failures[j["job"]] = f"check: worker {exc.kind} in {exc.phase or 'start-up'}: {exc.message}"
        return culprits

    res = without_culprits(pool, list(jobs), check, blame) or {"calls": [], "kineto": {}, "kineto_errors": {}}
    kineto = {int(k): v for k, v in res["kineto"].items()}
    errors = {int(k): v for k, v in res["kineto_errors"].items()}
    if state["lost"]:
        errors.update({c["job"]: state["lost"] for c in res["calls"] if c["ok"]})
    return {"calls": res["calls"], "kineto": kineto, "kineto_errors": errors, "failures": failures}


def ncu_task(pool, tool_path: str | None, chunk: list[tuple[dict, list[dict]]], workdir: str | None, tag: str,
             settings: ExplainSettings) -> dict:
    """One chunk of shapes profiled in a worker started under ncu, a new ncu process after a death (the jobs
    after the culprit go on there) -> {"records": {job: [kernel records]}, "errors": {job: reason},
    "export_errors": [...], "ncu_processes": n}. tool_path None: this host's ncu (profiler.measure.ncu.ncu_tool)."""

    tool_path = tool_path or ncu_mod.ncu_tool().path
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="projlab-explain-"))
    work.mkdir(parents=True, exist_ok=True)
    pending = [(shape, list(jobs)) for shape, jobs in chunk if jobs]
    records, errors, export_errors, attempt = {}, {}, [], 0
    while pending:
        attempt += 1
        report = work / f"{tag}-{attempt}.ncu-rep"
        cmd = ncu_mod.profile_command(tool_path, report, [])
        worker = Worker(pool.worker.config, log=pool.log, prefix=cmd[:1] + ["--log-file", "stderr"] + cmd[1:],
                        exit_timeout_s=NCU_EXIT_TIMEOUT_S)
        try:
            pending = _profile_shapes(worker, pending, errors, settings)
        finally:
            worker.close()
        _export(tool_path, report, work, records, export_errors, attempt)
    return {"records": records, "errors": errors, "export_errors": export_errors, "ncu_processes": attempt}


def _profile_shapes(worker, pending: list, errors: dict, settings: ExplainSettings) -> list:
    """Run explain_ncu tasks until one kills the worker -> the jobs still to profile (in a new ncu process)."""

    while pending:
        shape, jobs = pending[0]
        try:
            res = worker.call({"kind": "explain_ncu", "shape": shape, "candidates": jobs, "seed": settings.seed,
                               "workload": settings.workload}, settings.step_timeout_s)
        except WorkerDied as exc:
            names = [j["name"] for j in jobs]
            if exc.candidate not in names:   # ncu or the worker could not start: nothing more can be profiled
                for _, js in pending:
                    errors.update({j["job"]: f"ncu: worker {exc.kind} in {exc.phase or 'start-up'}: {exc.message}"
                                   for j in js})
                return []
            k = names.index(exc.candidate)
            errors[jobs[k]["job"]] = f"ncu: worker {exc.kind} in {exc.phase}: {exc.message}"
            return ([(shape, jobs[k + 1:])] if jobs[k + 1:] else []) + pending[1:]
        except WorkerError as exc:
            errors.update({j["job"]: f"ncu: harness error: {exc}" for j in jobs})
        else:
            errors.update({int(k): v for k, v in res["errors"].items()})
        pending = pending[1:]
    return []


def _export(tool_path: str, report: Path, work: Path, records: dict, export_errors: list, attempt: int) -> None:
    """Export one ncu process's report (raw CSV kept next to it) into `records` by job."""
    if not report.exists():
        export_errors.append(f"ncu wrote no report in attempt {attempt}")
        return
    try:
        text = ncu_mod.export_csv(tool_path, report)
        csv = report.with_suffix(".csv")
        csv.write_text(text)
        records.update(ncu_mod.kernel_records(ncu_mod.parse_raw_csv(text, csv.name)))
    except ncu_mod.NcuError as exc:
        export_errors.append(str(exc))


def _check_lost(args: tuple, why: str) -> dict:
    """A check task lost with its worker: every job it carried has no verdict, for that reason."""
    return {"calls": [], "kineto": {}, "kineto_errors": {}, "failures": {j["job"]: f"check: {why}" for j in args[1]}}


def _ncu_lost(args: tuple, why: str) -> dict:
    """An ncu task lost with its worker: every job of its chunk is unprofiled, for that reason."""
    return {"records": {}, "errors": {j["job"]: f"ncu: {why}" for _, jobs in args[1] for j in jobs},
            "export_errors": [], "ncu_processes": 0}


CHECK = Task("explain check", check_task, lost=_check_lost)
NCU = Task("explain ncu", ncu_task, lost=_ncu_lost)


# --- records -----------------------------------------------------------------------------------------------------
def shape_calls(jobs: list[Job], got: dict) -> tuple[list[dict], list[dict]]:
    """calls records (one per job that got a verdict) and failures of one shape's check task."""
    checks = {c["job"]: c for c in got["calls"]}
    calls, failures = [], []
    for j in jobs:
        base = _base(j.shape) | {"candidate": j.name}
        chk = checks.get(j.job)
        if chk is None:
            why = got["failures"].get(j.job, "check: no verdict (the worker stopped before this job)")
            failures.append(base | {"stage": "check", "reasons": [why]})
            continue
        error = chk.get("error") or {}
        calls.append(base | {"method": chk.get("method"), "correct": bool(chk["ok"]), "error": error,
                             "kineto": got["kineto"].get(j.job), "launches": None, "ncu_us": None}
                     | ({"setup": chk["setup"]} if chk.get("setup") else {}))   # a peer's compile/tuning record
        if not chk["ok"]:
            failures.append(base | {"stage": "check", "reasons": list(error.get("reasons", [])) or ["incorrect"]})
        elif j.job not in got["kineto"]:
            why = got["kineto_errors"].get(j.job, "kineto: no sequence recorded")
            failures.append(base | {"stage": "kineto", "reasons": [why]})
    return calls, failures


def collect_ncu(jobs: list[Job], got: dict, calls: list[dict]) -> tuple[list[dict], list[dict]]:
    """kernels records and failures of one ncu chunk; fills launches / ncu_us into the matching calls."""
    index = {tuple(_base(c).values()) + (c["candidate"],): c for c in calls}
    kernels, failures = [], []
    for j in jobs:
        base = _base(j.shape) | {"candidate": j.name}
        call = index.get(tuple(base.values()))
        recs = got["records"].get(j.job)
        if recs:
            method = call.get("method") if call else None
            kernels += [base | {"method": method} | r for r in recs]
            if call is not None:
                call["launches"] = len(recs)
                call["ncu_us"] = round(sum(r["duration_us"] for r in recs), 4)
            continue
        reason = (got["errors"].get(j.job)
                  or ("ncu: " + "; ".join(got["export_errors"]) if got["export_errors"] else None)
                  or "ncu: no kernel profiled inside the call's NVTX range")
        failures.append(base | {"stage": "ncu", "reasons": [reason]})
    return kernels, failures


# --- orchestration -----------------------------------------------------------------------------------------------
def run_explain(specs: list[str], shapes: list[dict], out_path, *, label: str,
                settings: ExplainSettings, tool: ncu_mod.NcuTool | None, log: Callable[[str], None] = print,
                device="cuda", worker_init: str | None = None, cluster: str | None = None, workload=None) -> dict:
    """Probes, check + Kineto pass, ncu pass, all in worker processes; returns the run (also written to out_path,
    never overwritten; on a cluster one run file per GPU model, the first model's run returned). `tool`: this
    host's ncu (a remote cluster's workers use their host's own). `workload`: the Workload the shapes come from
    (None: the default); every task carries it, the run file embeds it."""
    workload = workload or load_workload()
    settings.workload = workload.to_dict()
    config = {"device": str(device), "mode": "cold", "flush_bytes": None, "init": worker_init}
    with open_backends(cluster, config, log) as backends:
        paths = model_paths(out_path, list(backends), default_run(label))
        writers = {m: RunWriter(p) for m, p in paths.items()}   # refuse an existing file before any work
        here = tool if backends.on_this_host else None
        runs = on_each_backend(backends, lambda m, backend, bar: explain_on(
            backend, specs, shapes, writers[m], label=label,
            settings=deepcopy(settings) if backends.cluster else settings, tool=here, log=log, workload=workload))
        if backends.cluster:
            for model, run in runs.items():
                log(f"{model}: run file {paths[model]} ({run['status']}, {len(run['kernels'])} kernel records)")
    return next(iter(runs.values()))


def _ncu_environment(tool: ncu_mod.NcuTool | None) -> dict:
    path = tool.path if tool else "ncu"
    return {"ncu_version": tool.version if tool else None, "ncu_path": tool.path if tool else None,
            "ncu_metrics": list(ncu_mod.METRICS),
            "ncu_command": " ".join(ncu_mod.profile_command(path, "<report>.ncu-rep",
                                                            ["python3", "-m", "profiler.worker"])),
            "ncu_export_command": " ".join(ncu_mod.export_command(path, "<report>.ncu-rep"))}


def explain_on(backend, specs: list[str], shapes: list[dict], writer, *, label: str, settings: ExplainSettings,
               tool: ncu_mod.NcuTool | None, log: Callable[[str], None] = print, workload=None) -> dict:
    """One explain run on `backend` (profiler.backends.base.Backend). The candidates are loaded in the worker first
    (names; a broken spec is a SweepInputError before any file)."""
    if workload is None:
        workload = (workload_from_dict(settings.workload, "settings", "workload") if settings.workload
                    else load_workload())
    settings.workload = workload.to_dict()
    t_start = time.perf_counter()
    if settings.trace_dir:
        Path(settings.trace_dir).mkdir(parents=True, exist_ok=True)
    with RunLife(backend, writer, "explain run") as life:
        env = backend.environment()
        loaded, refused = backend.call(LOAD, specs, settings.step_timeout_s, settings.workload)
        names = loaded_names(loaded)
        settings.candidates = list(names)
        env |= {k: v for k, v in _ncu_environment(tool).items() if v is not None}
        env["settings"] = settings.recorded()
        env["workers"] = backend.records()
        run = life.start(new_run(label, env, workload=workload))
        run |= {"calls": [], "kernels": [], "failures": []}
        if settings.probes:
            seconds = record_probes(life, shapes, settings.probe_rounds)
            log(f"probes: {len(run['probes'])} sizes in {seconds} s")
        by_shape = make_jobs(shapes, names)
        _check_pass(life, by_shape, specs, refused, settings)
        log(f"check + kineto: {sum(c['correct'] for c in run['calls'])}/{len(by_shape) * len(names)} calls passed "
            f"in {run['environment']['check_seconds']} s")
        _ncu_pass(life, by_shape, specs, settings, tool, log)
        run["environment"]["wall_seconds"] = round(time.perf_counter() - t_start, 2)
        life.finalize()
    return run


def _check_pass(life: RunLife, by_shape, specs, refused, settings) -> None:
    """Check + Kineto per shape; a candidate refused at load is not run (its jobs fail with the reason)."""
    backend, run = life.backend, life.run
    t0, done = time.perf_counter(), {}

    def work(i):
        jobs = [j for j in by_shape[i][1] if specs[j.cand] not in refused]
        got = backend.call(CHECK, by_shape[i][0], _task_jobs(jobs, specs), settings) if jobs else {
            "calls": [], "kineto": {}, "kineto_errors": {}, "failures": {}}
        got["failures"].update({j.job: f"check: refused at load: {refused[specs[j.cand]]}" for j in by_shape[i][1]
                                if specs[j.cand] in refused})
        return got

    def finished(i, got):
        done[i] = shape_calls(by_shape[i][1], got)
        run["calls"] = [c for k in sorted(done) for c in done[k][0]]
        run["failures"] = [f for k in sorted(done) for f in done[k][1]]
        life.flush()

    for_each(range(len(by_shape)), work, finished, backend.parallel, backend.cancel)
    run["environment"]["check_seconds"] = round(time.perf_counter() - t0, 2)


def _ncu_pass(life: RunLife, by_shape, specs, settings, tool, log) -> None:
    backend, run = life.backend, life.run
    passed = {(tuple(_base(c).values()), c["candidate"]) for c in run["calls"] if c["correct"]}
    step = max(1, settings.shapes_per_ncu or len(by_shape))
    chunks = []
    for k in range(0, len(by_shape), step):
        chunk = [(shape, [j for j in js if (tuple(_base(shape).values()), j.name) in passed])
                 for shape, js in by_shape[k:k + step]]
        chunks.append([(s, js) for s, js in chunk if js])
    chunks = [(k, c) for k, c in enumerate(chunks) if c]
    t0, check_failures, done = time.perf_counter(), list(run["failures"]), {}
    run["environment"]["ncu_processes"] = 0

    def work(k_chunk):
        k, chunk = k_chunk
        return backend.call(NCU, tool.path if tool else None,
                            [(shape, _task_jobs(js, specs)) for shape, js in chunk], settings.keep_dir,
                            f"ncu-{k}", settings)

    def finished(k_chunk, got):
        k, chunk = k_chunk
        done[k] = collect_ncu([j for _, js in chunk for j in js], got, run["calls"])
        run["kernels"] = [r for i in sorted(done) for r in done[i][0]]
        run["failures"] = check_failures + [f for i in sorted(done) for f in done[i][1]]
        run["environment"]["ncu_processes"] += got["ncu_processes"]
        life.writer.flush(run)
        log(f"ncu: chunk {k + 1} ({len(chunk)} shapes), {len(done[k][0])} kernels "
            f"({time.perf_counter() - t0:.0f} s so far)")

    for_each(chunks, work, finished, backend.parallel, backend.cancel)
    run["environment"]["ncu_seconds"] = round(time.perf_counter() - t0, 2)


def format_explain(run: dict) -> str:
    """Per call: launches, summed ncu kernel time, DRAM bytes, the Kineto replay span; then the failures (every
    name and reason escaped: datasets.text.escape_strings)."""
    run = escape_strings(run)
    by_call: dict[tuple, list] = {}
    for k in run.get("kernels", []):
        by_call.setdefault(tuple(k[f] for f in SHAPE_ID_FIELDS) + (k["candidate"],), []).append(k)
    head = (f"{'shape':<26}{'M':>5}  {'candidate':<12}{'kernels':>8}{'ncu µs':>9}{'DRAM MB':>9}{'replay µs':>11}"
            "  main kernel")
    lines = [head, "-" * len(head)]
    for c in run.get("calls", []):
        key = tuple(c[f] for f in SHAPE_ID_FIELDS) + (c["candidate"],)
        ks = by_call.get(key, [])
        mb = sum(k["dram_read_bytes"] + k["dram_write_bytes"] for k in ks) / 1e6
        main = max(ks, key=lambda k: k["duration_us"])["kernel"][:40] if ks else "-"
        span = (c.get("kineto") or {}).get("span_us")
        lines.append(f"{c['load'] + '/' + c['family']:<26}{c['M']:>5}  {c['candidate'][:12]:<12}{len(ks) or '-':>8}"
                     f"{c['ncu_us'] if c['ncu_us'] is not None else '-':>9}{mb:>9.2f}"
                     f"{span if span is not None else '-':>11}  {main}")
    for f in run.get("failures", []):
        lines.append(f"FAILED {f['load']}/{f['family']} M={f['M']} {f['candidate']} ({f['stage']}): "
                     f"{'; '.join(f['reasons'])[:200]}")
    return "\n".join(lines)
