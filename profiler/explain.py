"""`python -m profiler explain`: what each checked call launches, per kernel, written as a run file.

    run_explain(specs, shapes, out_path, *, label, settings, tool, log) -> dict (the run, as written)

Order: HBM read probes + compute probe (in this process, the same code as `profiler run`), so the analysis has
floors; then a child process (profiler.explain_target, mode "check") checks every (shape, candidate) with the
correctness contract and records one CUDA-graph replay of each passing call under torch.profiler; then ncu
launches the child again (mode "ncu") and profiles one call of every passing job, in chunks of shapes.
A child that crashes or breaks its CUDA context costs the job it was on (recorded in `failures`), and a new
child carries on with the rest. The run file is flushed (status "partial") after the probes and after every
stage, finalized "complete" at the end; it is never overwritten.

Run-file additions (profiler/README.md, 'Explain run'): `calls` (one per shape × candidate: check verdict,
Kineto sequence, ncu launch count and summed kernel time), `kernels` (one per shape × candidate × kernel, from
ncu), `failures`; environment.ncu_version / ncu_command / ncu_export_command / ncu_metrics.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from profiler import ncu as ncu_mod

ROOT = Path(__file__).resolve().parents[1]
SHAPE_FIELDS = ("load", "family", "M", "N", "K")
MAX_RESTARTS = 8          # child processes started after a crash, per stage (each crash costs one job)
STDERR_TAIL = 400         # characters of a crashed child's stderr kept in the failure reason


@dataclass
class ExplainSettings:
    shapes: str = "official"
    only: list = field(default_factory=list)     # shape keys ("decode 16/router"); empty = every shape
    seed: int = 0
    probes: bool = True
    probe_rounds: int = 24
    trace_dir: str | None = None
    keep_dir: str | None = None                  # keep ncu reports, raw CSVs and child logs here
    shapes_per_ncu: int = 10                     # shapes per ncu process (the run file is flushed after each)
    child_timeout_s: float = 900.0
    command: str = ""
    candidates: list = field(default_factory=list)
    kind: str = "explain"


@dataclass
class Job:
    job: int
    shape: dict
    cand: int
    name: str


def _base(shape) -> dict:
    return {"load": shape["load"], "family": shape["family"], "M": int(shape["M"]), "N": int(shape["N"]),
            "K": int(shape["K"])}


def shape_slug(shape) -> str:
    """'decode 16/router' → 'decode-16_router' (file names of per-shape traces)."""
    from profiler.runfile import slug
    from profiler.sweep import shape_key

    return "_".join(slug(part) for part in shape_key(shape).split("/"))


# --- child processes ----------------------------------------------------------------------------------------------
def read_status(path: Path) -> list[dict]:
    """Events a child wrote; a torn last line (the child died mid-write) is ignored."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def unfinished_start(events: list[dict]) -> dict | None:
    """The last "start" event with no matching "done"/"check"/"error" after it: where a child died."""
    open_: dict | None = None
    for e in events:
        if e.get("event") == "start":
            open_ = e
        elif open_ is not None and _closes(e, open_):
            open_ = None
    return open_


def _closes(event: dict, start: dict) -> bool:
    stage = start["stage"]
    if stage == "check":
        return event.get("event") == "check" and event.get("job") == start.get("job")
    if stage == "kineto":
        return event.get("event") == "done" and event.get("stage") == "kineto" and event.get("shape") == start["shape"]
    return (event.get("stage") == stage and event.get("job") == start.get("job")
            and event.get("event") in ("done", "error"))


def _tail(text: str) -> str:
    lines = [l for l in (text or "").strip().splitlines() if l.strip() and not l.startswith("==PROF==")]
    return " | ".join(lines[-3:])[-STDERR_TAIL:]


@dataclass
class ChildOutcome:
    events: list = field(default_factory=list)
    crashes: list = field(default_factory=list)   # {"start": event, "reason": str}
    attempts: int = 0
    logs: list = field(default_factory=list)      # (attempt, returncode, stdout tail, stderr tail)


def run_child(spec: dict, workdir: Path, finished: Callable[[list, int, dict], bool], *, tag: str | None = None,
              wrap: Callable[[list, int], list] | None = None, timeout_s: float = 900.0,
              after: Callable[[int], None] | None = None, log: Callable[[str], None] = print) -> ChildOutcome:
    """Run profiler.explain_target on `spec` until it exits cleanly, restarting after a crash without the job it
    was on. `finished(events, job, start)` says whether a job needs no more work; `wrap(cmd, attempt)` wraps the
    command (ncu); `after(attempt)` runs after every attempt (export that attempt's ncu report)."""
    out = ChildOutcome()
    skip = set(spec.get("skip", []))
    mode = spec["mode"]
    tag = tag or mode
    all_jobs = [job for entry in spec["shapes"] for job, _ in entry["jobs"]]
    while True:
        out.attempts += 1
        attempt = out.attempts
        job_path, status_path = workdir / f"{tag}-{attempt}.json", workdir / f"{tag}-{attempt}.jsonl"
        job_path.write_text(json.dumps(spec | {"skip": sorted(skip)}))
        cmd = [sys.executable, "-m", "profiler.explain_target", str(job_path), str(status_path)]
        cmd = wrap(cmd, attempt) if wrap else cmd
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
            rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc = "timeout"
            stdout = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        (workdir / f"{tag}-{attempt}.log").write_text(f"$ {' '.join(cmd)}\nexit {rc}\n--- stdout\n{stdout}\n"
                                                       f"--- stderr\n{stderr}\n")
        out.logs.append((attempt, rc, _tail(stdout), _tail(stderr)))
        events = read_status(status_path)
        out.events += events
        if after:
            after(attempt)
        if rc == 0:
            return out
        why = (f"child timed out after {timeout_s:.0f} s" if rc == "timeout" else f"child exited {rc}")
        why += f": {_tail(stderr)}" if _tail(stderr) else ""
        start = unfinished_start(events)
        if start is None:
            out.crashes.append({"start": None, "reason": why})
            log(f"explain {mode}: {why} (outside any job; remaining jobs recorded as failed)")
            return out
        out.crashes.append({"start": start, "reason": why})
        log(f"explain {mode}: {why} during {start['stage']} of "
            f"{'job ' + str(start['job']) if 'job' in start else 'shape ' + str(start['shape'])}; restarting")
        skip |= {j for j in all_jobs if finished(out.events, j, start)} | _culprits(spec, start)
        if set(all_jobs) <= skip or attempt > MAX_RESTARTS:
            return out


def _culprits(spec: dict, start: dict) -> set[int]:
    if "job" in start:
        return {start["job"]}
    entry = spec["shapes"][start["shape"]]  # a Kineto crash: every job of that shape loses its sequence
    return {job for job, _ in entry["jobs"]}


# --- the two passes ----------------------------------------------------------------------------------------------
def _check_spec(jobs_by_shape, specs, names, settings) -> dict:
    trace_dir = Path(settings.trace_dir) if settings.trace_dir else None
    shapes = []
    for shape, jobs in jobs_by_shape:
        trace = str(trace_dir / f"{shape_slug(shape)}.json") if trace_dir else None
        shapes.append({"shape": shape, "jobs": [[j.job, j.cand] for j in jobs], "trace": trace})
    return {"mode": "check", "candidates": specs, "names": names, "seed": settings.seed, "skip": [],
            "shapes": shapes}


def _check_finished(events, job, start) -> bool:
    checked = [e for e in events if e.get("event") == "check" and e.get("job") == job]
    if not checked:
        return False
    if not checked[-1]["ok"]:
        return True
    return any(e.get("job") == job and (e.get("event") == "kineto" or
                                        (e.get("event") == "error" and e.get("stage") == "kineto")) for e in events)


def collect_checks(by_shape: list[tuple[dict, list[Job]]], outcome: ChildOutcome) -> tuple[list[dict], list[dict]]:
    """calls records (one per job that got a verdict; the last event wins) and failures of the check pass."""
    jobs = [j for _, js in by_shape for j in js]
    checks, seqs, kin_err = {}, {}, {}
    for e in outcome.events:
        if e.get("event") == "check":
            checks[e["job"]] = e
        elif e.get("event") == "kineto":
            seqs[e["job"]] = e["sequence"]
        elif e.get("event") == "error" and e.get("stage") == "kineto":
            kin_err[e["job"]] = e["reason"]
    crash_of = {}  # job -> (stage, reason) of the crash that cost it
    for c in outcome.crashes:
        start = c["start"]
        if start is None:
            hit, stage = [j.job for j in jobs if j.job not in checks], "check"
        elif "job" in start:
            hit, stage = [start["job"]], start["stage"]
        else:
            hit, stage = [j.job for j in by_shape[start["shape"]][1]], start["stage"]
        for job in hit:
            crash_of.setdefault(job, (stage, c["reason"]))
    calls, failures = [], []
    for j in jobs:
        base = _base(j.shape) | {"candidate": j.name}
        chk = checks.get(j.job)
        if chk is None:
            stage, why = crash_of.get(j.job, ("check", "no verdict (the child stopped before this job)"))
            failures.append(base | {"stage": "check", "reasons": [f"{stage}: {why}"]})
            continue
        error = chk.get("error") or {}
        calls.append(base | {"method": chk.get("method"), "correct": bool(chk["ok"]), "error": error,
                             "kineto": seqs.get(j.job), "launches": None, "ncu_us": None})
        if not chk["ok"]:
            failures.append(base | {"stage": "check", "reasons": list(error.get("reasons", [])) or ["incorrect"]})
        elif j.job not in seqs:
            crash = crash_of.get(j.job)
            why = kin_err.get(j.job) or (f"{crash[0]}: {crash[1]}" if crash else "kineto: no sequence recorded")
            failures.append(base | {"stage": "kineto", "reasons": [why]})
    return calls, failures


def _ncu_finished(events, job, start) -> bool:
    return any(e.get("stage") == "ncu" and e.get("job") == job and e.get("event") in ("done", "error")
               for e in events)


def _profile_chunk(tool, chunk_spec, workdir: Path, settings, log) -> tuple[ChildOutcome, dict[int, list[dict]], list]:
    """One ncu process (plus restarts) over a chunk of shapes → outcome, kernel records by job, export errors."""
    records: dict[int, list[dict]] = {}
    errors: list[str] = []
    tag = chunk_spec["tag"]

    def wrap(cmd, attempt):
        return ncu_mod.profile_command(tool.path, workdir / f"{tag}-{attempt}.ncu-rep", cmd)

    def after(attempt):
        rep = workdir / f"{tag}-{attempt}.ncu-rep"
        if not rep.exists():
            errors.append(f"ncu wrote no report in attempt {attempt}")
            return
        try:
            text = ncu_mod.export_csv(tool.path, rep)
            (workdir / f"{tag}-{attempt}.csv").write_text(text)
            records.update(ncu_mod.kernel_records(ncu_mod.parse_raw_csv(text, f"{tag}-{attempt}.csv")))
        except ncu_mod.NcuError as exc:
            errors.append(str(exc))

    spec = {k: v for k, v in chunk_spec.items() if k != "tag"}
    outcome = run_child(spec, workdir, _ncu_finished, tag=tag, wrap=wrap, after=after, timeout_s=settings.child_timeout_s,
                        log=log)
    return outcome, records, errors


def collect_ncu(jobs: list[Job], outcome: ChildOutcome, records: dict, export_errors: list,
                calls: list[dict]) -> tuple[list[dict], list[dict]]:
    """kernels records and failures of one ncu chunk; fills launches / ncu_us into the matching calls."""
    errs = {e["job"]: e["reason"] for e in outcome.events if e.get("event") == "error" and e.get("stage") == "ncu"}
    crashed = {c["start"]["job"]: c["reason"] for c in outcome.crashes if c["start"] and "job" in c["start"]}
    lost = next((c["reason"] for c in outcome.crashes if c["start"] is None), None)
    index = {tuple(_base(c).values()) + (c["candidate"],): c for c in calls}
    kernels, failures = [], []
    for j in jobs:
        base = _base(j.shape) | {"candidate": j.name}
        call = index.get(tuple(base.values()))
        recs = records.get(j.job)
        if recs:
            method = call.get("method") if call else None
            kernels += [base | {"method": method} | r for r in recs]
            if call is not None:
                call["launches"] = len(recs)
                call["ncu_us"] = round(sum(r["duration_us"] for r in recs), 4)
            continue
        reason = (errs.get(j.job) or (f"ncu: {crashed[j.job]}" if j.job in crashed else None)
                  or (f"ncu: {lost}" if lost else None) or ("ncu: " + "; ".join(export_errors) if export_errors else None)
                  or "ncu: no kernel profiled inside the call's NVTX range")
        failures.append(base | {"stage": "ncu", "reasons": [reason]})
    return kernels, failures


# --- orchestration -----------------------------------------------------------------------------------------------
def _probes(run, shapes, settings, device, log) -> None:
    import torch

    from datasets import load_seed_probes
    from profiler.probes import log_sweep_bytes, probe_plan, run_compute_probe, run_read_probes
    from profiler.sweep import shape_bytes, shape_key
    from profiler.timing import ColdTimer

    t0 = time.perf_counter()
    cold = ColdTimer(device)
    seed = load_seed_probes()
    plan = probe_plan({shape_key(s): shape_bytes(s) for s in shapes}, zip(seed["label"], seed["bytes"]),
                      log_sweep_bytes())
    run["probes"] = run_read_probes(cold, plan, n_rounds=settings.probe_rounds)
    run["compute_probe"] = run_compute_probe(cold)
    run["compute_peak_tflops"] = run["compute_probe"]["tflops"]
    env = run["environment"]
    env["replay_overhead_us"] = cold.overhead_us
    env["replay_overhead_ci_us"] = [float(v) for v in cold.overhead_ci_us]
    env["probe_seconds"] = round(time.perf_counter() - t0, 2)
    del cold
    torch.cuda.empty_cache()
    log(f"probes: {len(run['probes'])} sizes in {env['probe_seconds']} s")


def make_jobs(shapes: list[dict], names: list[str]) -> list[tuple[dict, list[Job]]]:
    out, n = [], 0
    for shape in shapes:
        jobs = []
        for j, name in enumerate(names):
            jobs.append(Job(n, shape, j, name))
            n += 1
        out.append((shape, jobs))
    return out


def run_explain(specs: list[str], names: list[str], shapes: list[dict], out_path, *, label: str,
                settings: ExplainSettings, tool: ncu_mod.NcuTool, log: Callable[[str], None] = print) -> dict:
    """Probes, check + Kineto pass, ncu pass; returns the run (also written to out_path, never overwritten)."""
    import torch

    from profiler.runfile import RunWriter, new_run
    from profiler.telemetry import Telemetry, environment

    t_start = time.perf_counter()
    device = torch.device("cuda", torch.cuda.current_device())
    writer = RunWriter(out_path)  # refuses an existing file before any GPU work
    pci = getattr(torch.cuda.get_device_properties(device), "pci_bus_id", None)
    telem = Telemetry(device.index or 0, pci)
    env = environment(device, telem)
    settings.candidates = list(names)
    workdir = Path(settings.keep_dir) if settings.keep_dir else Path(tempfile.mkdtemp(prefix="projlab-explain-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if settings.trace_dir:
        Path(settings.trace_dir).mkdir(parents=True, exist_ok=True)
    env |= {"ncu_version": tool.version, "ncu_path": tool.path, "ncu_metrics": list(ncu_mod.METRICS),
            "ncu_command": " ".join(ncu_mod.profile_command(tool.path, "<report>.ncu-rep",
                                                            ["python3", "-m", "profiler.explain_target", "<jobs>",
                                                             "<status>"])),
            "ncu_export_command": " ".join(ncu_mod.export_command(tool.path, "<report>.ncu-rep")),
            "settings": asdict(settings)}
    run = new_run(label, env)
    run |= {"calls": [], "kernels": [], "failures": []}
    if settings.probes:
        _probes(run, shapes, settings, device, log)
        run["telemetry"].append(telem.sample())
        writer.flush(run)
    by_shape = make_jobs(shapes, names)
    jobs = [j for _, js in by_shape for j in js]

    t0 = time.perf_counter()
    outcome = run_child(_check_spec(by_shape, specs, names, settings), workdir, _check_finished,
                        timeout_s=settings.child_timeout_s, log=log)
    run["calls"], run["failures"] = collect_checks(by_shape, outcome)
    run["environment"]["check_seconds"] = round(time.perf_counter() - t0, 2)
    run["environment"]["check_children"] = outcome.attempts
    writer.flush(run)
    log(f"check + kineto: {sum(c['correct'] for c in run['calls'])}/{len(jobs)} calls passed in "
        f"{run['environment']['check_seconds']} s")

    passed = {(tuple(_base(c).values()), c["candidate"]) for c in run["calls"] if c["correct"]}
    t0 = time.perf_counter()
    step = max(1, settings.shapes_per_ncu or len(by_shape))
    for k in range(0, len(by_shape), step):
        chunk = [(shape, [j for j in js if (tuple(_base(shape).values()), j.name) in passed])
                 for shape, js in by_shape[k:k + step]]
        chunk = [(s, js) for s, js in chunk if js]
        if not chunk:
            continue
        spec = {"mode": "ncu", "tag": f"ncu-{k // step}", "candidates": specs, "names": names, "seed": settings.seed,
                "skip": [], "shapes": [{"shape": s, "jobs": [[j.job, j.cand] for j in js], "trace": None}
                                       for s, js in chunk]}
        outcome, records, errors = _profile_chunk(tool, spec, workdir, settings, log)
        kernels, failures = collect_ncu([j for _, js in chunk for j in js], outcome, records, errors, run["calls"])
        run["kernels"] += kernels
        run["failures"] += failures
        run["telemetry"].append(telem.sample())
        writer.flush(run)
        log(f"ncu: shapes {k + 1}-{k + len(chunk)} of {len(by_shape)}, {len(kernels)} kernels "
            f"({time.perf_counter() - t0:.0f} s so far)")
    env = run["environment"]
    env["ncu_seconds"] = round(time.perf_counter() - t0, 2)
    env["wall_seconds"] = round(time.perf_counter() - t_start, 2)
    env.setdefault("clocks", {})["sm_mhz_end"] = telem.sm_mhz()
    writer.finalize(run)
    run["status"] = "complete"
    return run


def format_explain(run: dict) -> str:
    """Per call: launches, summed ncu kernel time, DRAM bytes, the Kineto replay span; then the failures."""
    by_call: dict[tuple, list] = {}
    for k in run.get("kernels", []):
        by_call.setdefault(tuple(k[f] for f in SHAPE_FIELDS) + (k["candidate"],), []).append(k)
    head = (f"{'shape':<26}{'M':>5}  {'candidate':<12}{'kernels':>8}{'ncu µs':>9}{'DRAM MB':>9}{'replay µs':>11}"
            "  main kernel")
    lines = [head, "-" * len(head)]
    for c in run.get("calls", []):
        key = tuple(c[f] for f in SHAPE_FIELDS) + (c["candidate"],)
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
