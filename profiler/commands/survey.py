"""Config survey (not a timed test): chosen methods x every admitted config against torch_linear and a plan's
pick, per shape, written as a schema-v1 run file. (`python -m profiler screen` is its old name, kept as an alias;
the source screen is another thing: profiler/check/source_screen.py.)

    python -m profiler survey --methods splitk_atomic streamk router_hilo_fused [--plan best] [--workload NAME|FILE]
                              [--shapes official] [--extra-m 4 12 64 200] [--families qkv_gate o ...]
                              [--out-run datasets/runs/<date>_<gpu>_<label>.json] [--label survey]
                              [--compile-workers 16]

Per shape the candidates are torch_linear, every config of --methods that admits the shape, and the --plan's
own pick there. They are checked and timed by the tuner's measure step
(profiler.commands.tune_measure.WorkerMeasure: one shape task in the isolation worker; the contract's quick check --
one call on fresh inputs with probe rows vs the FP64 reference; failures are recorded, never timed -- then
profiler.measure.timing.measure_shape, the one sampler of run/tune/bench, all candidates of a shape paired
together).

The run file holds every timed candidate ("correct": true), each one's paired ratio vs torch_linear, the
rejected ones under "failures", and which candidate was the plan's pick ("plan_pick" on that result). Its
settings name the tool "screen", the identifier every committed survey run carries (dashboard.model.runs.run_kind
tells the kind by "plan_pick"). Survey numbers: one pass, the plan is not re-tuned; `python -m profiler tune` decides, `python -m profiler
run` compares plans.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from datasets import RUNS_DIR
from datasets.runfile import RunWriter, new_run, run_filename, utc_now
from kernels.method import format_config
from kernels.plans import PLANS_DIR, load_plan
from kernels.registry import METHODS
from profiler.backends.local import LocalBackend
from profiler.commands.runlife import RunLife
from profiler.commands.tune import default_plan_name, precompile
from profiler.commands.tune_measure import WorkerMeasure
from profiler.measure.policy import SURVEY as SURVEY_POLICY
from profiler.measure.telemetry import cuda_device_name
from profiler.worker.settings import SweepSettings
from profiler.commands.tune_rules import (BASELINE, Point, Records, Timed, candidates, pair_record, result_records,
                                         scored_points, shape_fields, skipped)

# One pass per shape with every candidate paired (profiler.measure.policy.SURVEY), as the run records it.
TIMING = SURVEY_POLICY.stage()


def default_plan(workload) -> str:
    """The plan whose pick is timed when --plan is not given: the one named after the workload
    (commands.tune.default_plan_name) where that file exists, else none ('')."""
    default = default_plan_name(workload)
    return default if (PLANS_DIR / f"{default}.json").is_file() else ""


def points(workload, shapes: str, extra_m, families) -> list[Point]:
    """The workload's scored shapes (or none), then the extra M per family at the workload's N for that M."""

    out = scored_points(workload, families) if shapes == "official" else []
    for fam, spec in workload.families.items():
        if families and fam not in families:
            continue
        out += [Point(fam, M, workload.n_at(fam, M), int(spec["K"]), "nearby", spec) for M in extra_m]
    return out


def candidates_at(pt: Point, methods: dict, names, plan) -> tuple[list, tuple | None]:
    """torch_linear, every admitted config of `names`, and the plan's pick (None without a plan)."""

    cands = candidates(methods, pt.spec, pt.M, pt.N, pt.K, only=names)
    pick = None
    if plan is not None:
        pick = plan.select(pt.family, pt.M, pt.N)
        if pick not in cands:
            cands.append(pick)
    return cands, pick


def line(pt: Point, timed_rows: list[dict], pick_key: str | None, n_rejected: int, methods=()) -> str:
    """One table row: torch_linear, the plan's pick, the fastest config of each surveyed method (us and
    speed-up vs torch_linear), and the fastest candidate."""
    by = {r["candidate"]: r["median_us"] for r in timed_rows}
    base = by.get(_key(BASELINE, {}))
    head = f"{pt.load:>9} {pt.family:<9} M={pt.M:<4} N={pt.N:<5}"
    if base is None:
        return head + f" torch_linear not timed ({n_rejected} rejected)"
    best = min(by, key=by.get)
    text = f"{head} torch_linear {base:7.2f}"
    if pick_key in by:
        text += f" | plan {by[pick_key]:7.2f} x{base / by[pick_key]:.3f}"
    for m in methods:
        mine = [k for k in by if k.split(" ", 1)[0] == m]
        if mine:
            k = min(mine, key=by.get)
            text += f" | {m} {by[k]:7.2f} x{base / by[k]:.3f}"
    return text + f" | best x{base / by[best]:.3f} {best}"


def _key(method: str, config: dict) -> str:

    return format_config(method, config)


def survey(args, workload, argv: list[str]) -> int:
    """The config survey of `python -m profiler survey` (profiler.cli.survey parses `args`): every config of
    args.methods, torch_linear and the plan's pick per shape, into one run file. Returns the exit status."""
    t0 = time.perf_counter()   # args are checked by profiler.cli.survey (methods, families, plan, paths)
    if args.plan is None:
        args.plan = default_plan(workload)
    plan = load_plan(args.plan, workload) if args.plan else None
    out = Path(args.out_run or Path(RUNS_DIR) / run_filename(utc_now(), cuda_device_name() or "unknown-gpu",
                                                             args.label))
    writer = RunWriter(out)
    pts = points(workload, args.shapes, args.extra_m, args.families)
    cand_lists = [candidates_at(pt, METHODS, args.methods, plan) for pt in pts]
    picks = [{"method": m, "config": c, "family": pt.family, "M": pt.M, "N": pt.N, "K": pt.K,
              "w_dtype": pt.spec["w_dtype"]} for pt, (_, pick) in zip(pts, cand_lists) if pick for m, c in [pick]]
    skip = precompile(METHODS, pts, args.methods, args.compile_workers, extra_jobs=picks)
    backend = LocalBackend({"device": "cuda", "mode": "cold", "flush_bytes": None, "init": None}, print)
    with RunLife(backend, writer, "survey run") as life:
        env = backend.environment()
        env.update(settings={"mode": "cold", "tool": "screen", "check": "quick", "workload": workload.name,
                             "methods": args.methods,
                             "plan": args.plan, "shapes": args.shapes, "extra_m": args.extra_m, "timing": TIMING,
                             "flush_bytes": env.pop("flush_bytes", None), "seed": args.seed,
                             "command": "python -m profiler survey " + " ".join(argv or sys.argv[1:])},
                   workers=backend.records())
        run = life.start(new_run(args.label, env, workload=workload))
        measure = WorkerMeasure(backend, SweepSettings(seed=args.seed), print, workload=workload)
        records, lines, info = Records(), [], {}
        print(f"# {env.get('gpu')} torch {env.get('torch')}; replay overhead {env.get('replay_overhead_us', 0):.2f} "
              f"us (subtracted, in the worker); {len(pts)} shapes; setup {time.perf_counter() - t0:.1f} s", flush=True)
        for pt, (cands, pick) in zip(pts, cand_lists):
            if time.perf_counter() - t0 > args.budget_s:
                print(f"# budget {args.budget_s:.0f} s spent: stopped before {pt.load}/{pt.family} M={pt.M}")
                break
            cands, left_out = skipped(cands, pt.family, skip)
            got = measure(pt.shape(), cands, TIMING)
            got["rejected"].update(left_out)
            rows = _record(pt, got, pick, records)
            info[f"{pt.load}/{pt.family}/M{pt.M}"] = got["info"]
            lines.append(line(pt, rows, _key(*pick) if pick else None, len(got["rejected"]), args.methods))
            print(lines[-1], flush=True)
            run.update(results=records.results, pairs=records.pairs, failures=records.failures, shape_info=info,
                       telemetry=list(measure.telemetry))
            life.flush()
        life.finalize()
    print("\n".join(["", f"# summary (us, cold, overhead subtracted; x = speed-up vs torch_linear): run -> {out}",
                     *lines]))
    print(f"# survey elapsed {time.perf_counter() - t0:.1f} s")
    return 0


def _record(pt: Point, got: dict, pick, records: Records) -> list[dict]:
    """Add one shape's results, pairs vs torch_linear and rejections to `records`; returns its results."""
    import numpy as np


    timed = [Timed(r["method"], r["config"], np.asarray(r["samples_us"], dtype=np.float64), "screen")
             for r in got["timed"]]
    ok = [t for t in timed if np.isfinite(t.median) and t.median > 0]
    for t in timed:
        if t not in ok:
            records.failures.append({**shape_fields(pt), "candidate": t.key,
                                     "reasons": [f"no usable timing: median {t.median} us"]})
    rows = result_records(pt, ok)
    pick_key = _key(*pick) if pick else None
    for r in rows:
        if r["candidate"] == pick_key:
            r["plan_pick"] = True
    records.results += rows
    base = next((t for t in ok if t.method == BASELINE), None)
    if base is not None:
        records.pairs += [pair_record(pt, base, t) for t in ok if t is not base]
    records.failures += list(got.get("failures", []))
    records.failures += [{**shape_fields(pt), "candidate": k, "reasons": v} for k, v in got["rejected"].items()]
    return rows
