"""`python -m profiler step`: the whole decode step of a workload's declared decoder layer, per candidate.

What it answers: how much faster one decode step of the model runs with a candidate's projections, measured, beside
what Amdahl predicts from the same run's per-shape ratios (`python -m dashboard step RUN.json` prints both; the app's
Step page draws them). Every bad input is one line and exit status 2 before any worker starts.
"""
from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from datasets import RUNS_DIR
from datasets.cli import EXIT_BAD_INPUT, OneLineParser, positive_float, positive_int
from datasets.layer_spec import MAX_CONTEXT
from datasets.runfile import RunFileError, WriteError, run_filename
from datasets.workload_spec import MAX_M
from kernels.candidate import check_spec
from profiler.cli.options import (add_seed_argument, add_workload_argument, cuda_or_exit, device_name, label_of,
                                  new_run_path, workload_or_exit)
from profiler.commands.runlife import interrupt_on_sigterm
from profiler.commands.step import StepInputError, check_step_input, run_step
from profiler.commands.sweep import SweepInputError, SweepSettings, WorkerStartError
from profiler.measure.policy import SWEEP
from profiler.measure.telemetry import cuda_device_name
from profiler.worker.process import WorkerDied, WorkerError

MAX_STEP_LAYERS = 64   # distinct layers in one measured step (each holds its own weights on the device)


def _int_list(name: str, limit: int):
    def parse(text: str) -> list[int]:
        try:
            values = [int(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}") from None
        if not values or any(v <= 0 or v > limit for v in values) or len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"expected distinct comma-separated integers from 1 to {limit:,}, "
                                             f"got {text!r}")
        return values

    parse.__name__ = name
    return parse


DESCRIPTION = """Measure the whole decode step of the workload's declared decoder layer (the workload file's "layer")
per candidate: --layers distinct layers (weights not shared), a KV cache of each context length, the step captured
as one CUDA graph and timed cold (L2 flushed before every replay) and warm (back to back) in paired, alternating
rounds with the shapes' stopping rule; every other operation (RMSNorm, rotary, attention over the KV cache,
SiLU-and-mul, residual adds) is the same code for all candidates. Each candidate's step is checked against the
step with exact projections and against the baseline's step. Where the step's time goes per projection family, attention, norms and activations and
the rest comes from a Kineto trace of the step (on --device cpu: the wall clock per segment). The same run times the
layer's projection shapes at each batch (the ordinary sweep), so `python -m dashboard step RUN.json` sets the
measured step speedup beside Amdahl's prediction from the per-shape ratios."""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m profiler step", description=DESCRIPTION,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", action="append", help="plan name or .json path (repeatable; the first is the baseline)")
    p.add_argument("--candidate", action="append",
                   help="a module .py with prepare(weight), run(state, family, x); or file.py:Class; or "
                        "method:NAME[:{json config}] (as in `profiler run`)")
    add_workload_argument(p)
    p.add_argument("--batches", type=_int_list("batches", MAX_M), default=None,
                   help="decode batch sizes (sequences, one token each), e.g. 1,8,32 (default: the M of every load "
                        "of the workload)")
    p.add_argument("--contexts", type=_int_list("contexts", MAX_CONTEXT), default=None,
                   help="KV-cache lengths in tokens, e.g. 1024,4096 (default: the layer's declared context)")
    p.add_argument("--layers", type=positive_int, default=4,
                   help=f"distinct decoder layers in the measured step (default 4, at most {MAX_STEP_LAYERS}); the "
                        "model's own count is recorded beside it")
    p.add_argument("--max-seconds-per-step", type=positive_float, default=1.0,
                   help="time cap of each point's paired timing, per mode (cold, warm); default 1 s")
    p.add_argument("--max-seconds-per-shape", type=positive_float, default=SWEEP.max_seconds,
                   help=f"time cap of each projection shape's paired timing (default {SWEEP.max_seconds:g} s)")
    p.add_argument("--step-timeout-s", type=positive_float, default=300.0,
                   help="watchdog: a phase of a step point (a candidate's prepare, check, capture or breakdown, or "
                        "the timing) that makes no progress for this many seconds is stopped and blamed")
    add_seed_argument(p)
    p.add_argument("--device", type=device_name, default="cuda",
                   help="cuda (default) or cpu: the same step, eager and wall-clock timed (plumbing and checks at a "
                        "small workload; never compared with a GPU run)")
    p.add_argument("--trace", default=None, metavar="PREFIX",
                   help="keep each point's Kineto trace as PREFIX.b<batch>.c<context>.json (CUDA only)")
    p.add_argument("--trust-candidate", action="store_true",
                   help="skip the source screen of candidate modules (as in `profiler run`)")
    p.add_argument("--out", help="run file (default datasets/runs/<date>_<device>_<label>.json; never overwritten)")
    p.add_argument("--label", help="run label (default: step- and the candidate names joined by -vs-)")
    return p


def _spec_label(spec: str) -> str:
    if spec.startswith("method:"):
        return spec.split(":")[1]
    _, _, attr = spec.partition(".py:")
    return attr if attr else Path(spec).stem


def _bad(text: str) -> int:
    print(f"profiler step: {text}", file=sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    specs = list(args.plan or []) + list(args.candidate or [])
    if not specs:
        return _bad("give at least one --plan (the first is the baseline of every pair)")
    if args.layers > MAX_STEP_LAYERS:
        return _bad(f"--layers {args.layers} is over the limit {MAX_STEP_LAYERS}")
    workload = workload_or_exit("step", args.workload)
    batches = args.batches or list(workload.load_m.values())
    try:
        contexts = check_step_input(workload, batches, args.contexts)
    except StepInputError as exc:
        return _bad(str(exc))
    for spec in specs:
        try:
            check_spec(spec, workload)
        except Exception as exc:   # PlanError / CandidateError name the file and the problem
            return _bad(f"cannot load candidate {spec!r}: {exc}")
    label = label_of("step", args.label or ("step-" + "-vs-".join(_spec_label(s) for s in specs))[:80])
    device = "cpu" if args.device == "cpu" else (cuda_device_name() or "unknown-gpu")
    out = new_run_path("step", Path(args.out) if args.out else Path(RUNS_DIR) / run_filename(dt.date.today(), device,
                                                                                             label))
    if args.device != "cpu":
        cuda_or_exit("step")
    settings = SweepSettings(seed=args.seed, timing=replace(SWEEP, max_seconds=args.max_seconds_per_shape),
                             probes=False, canary="off", screened=not args.trust_candidate, unprivileged=True,
                             command="python -m profiler step " + " ".join(shlex.quote(a) for a in argv))
    t0 = time.perf_counter()
    try:
        with interrupt_on_sigterm():
            run = run_step(specs, workload, batches, contexts, out, label=label, layers=args.layers,
                           settings=settings, step_seconds=args.max_seconds_per_step,
                           step_timeout_s=args.step_timeout_s, device=args.device,
                           log=lambda m: print(m, file=sys.stderr), trace=args.trace)
    except KeyboardInterrupt:
        print(f"profiler step: interrupted; partial run in {out}", file=sys.stderr)
        return 130
    except (WriteError, SweepInputError, StepInputError) as exc:
        return _bad(str(exc))
    except (WorkerStartError, RunFileError, WorkerError) as exc:
        print(f"profiler step: {exc}", file=sys.stderr)
        return 1
    except WorkerDied as exc:
        print(f"profiler step: the worker process was lost in {exc.phase or 'start-up'} ({exc.kind}): {exc.message}; "
              f"partial run (if any) in {out}", file=sys.stderr)
        return 1
    print(format_points(run))
    print(f"\nwrote {out}  (status {run.get('status')}; {time.perf_counter() - t0:.1f} s)")
    print(f"Amdahl predicted vs measured, the breakdown per family: python -m dashboard step {out}")
    return 0


def _us(rec: dict | None) -> str:
    return "-" if not rec or rec.get("median_us") is None else f"{rec['median_us']:.1f}"


def format_points(run: dict) -> str:
    """One line per (point, candidate): the measured step times (no analysis: that is the dashboard's)."""
    lines = [f"{'batch':>6} {'context':>8}  {'candidate':<28} {'ok':<4} {'cold µs':>10} {'warm µs':>10}"]
    for rec in run.get("step", {}).get("points", []):
        pt = rec["point"]
        for c in rec["candidates"]:
            lines.append(f"{pt['batch']:>6} {pt['context']:>8}  {c['candidate'][:28]:<28} "
                         f"{'yes' if c['correct'] else 'NO':<4} {_us(c.get('cold')):>10} {_us(c.get('warm')):>10}")
        for f in rec["failures"]:
            lines.append(f"FAILED batch {pt['batch']} context {pt['context']} {f['candidate']} ({f['kind']}, "
                         f"{f.get('phase', '?')}): {'; '.join(f['reasons'])[:300]}")
    return "\n".join(lines)
