"""`python -m profiler tune`: the arguments and the command line of the tuner (profiler.commands.tune does the work).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from datasets.cli import EXIT_BAD_INPUT, OneLineParser, non_negative_int, positive_float, positive_int
from datasets.runfile import WriteError, check_writable
from datasets.workload_spec import MAX_M
from kernels.method import PlanError
from kernels.plans import load_plan
from kernels.registry import METHODS
from profiler.cli.options import (add_isolation_arguments, add_seed_argument, add_workload_argument, cluster_address,
                                  cuda_or_exit, device_name, missing_dask, new_run_path, workload_or_exit)
from profiler.commands import tune as tune_command
from profiler.commands.runlife import interrupted_line
from profiler.commands.tune import (DEFAULT_BUDGET_S, TuneError, TuneSettings, default_plan_name, extend_plan,
                                    tune_sweep)
from profiler.commands.tune_rules import FINALISTS, scored_points


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m profiler tune", description=tune_command.__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="official", choices=["official"], help="which shapes to tune (scored)")

    add_workload_argument(p)
    p.add_argument("--families", nargs="+", default=None, help="restrict to these families")
    p.add_argument("--m", nargs="+", type=positive_int, default=None, metavar="M",
                   help="tune only the scored points at these M; the plan re-dispatches exactly those M (one-M "
                        "entries) and every other M of the family keeps the base plan's entry")
    p.add_argument("--methods", nargs="+", default=None, help="restrict to these methods (baseline always in)")
    p.add_argument("--out-plan", default=None,
                   help="default kernels/plans/best.json (default workload), kernels/plans/<workload>.json otherwise")
    p.add_argument("--out-run", default=None, help="default datasets/runs/<date>_<gpu>_tune.json")
    p.add_argument("--base-plan", default="baseline", help="entries for families not tuned")
    p.add_argument("--budget-s", type=positive_float, default=DEFAULT_BUDGET_S,
                   help="soft wall-clock budget; points left when it runs out keep the base plan's entries")
    p.add_argument("--finalists", type=positive_int, default=FINALISTS,
                   help=f"configs per point that go from the screen to the finals (default {FINALISTS})")
    p.add_argument("--compile-workers", type=non_negative_int, default=min(16, os.cpu_count() or 1),
                   help="processes that compile the candidates' Triton kernels first (0: compile in the sweep)")
    add_seed_argument(p)
    p.add_argument("--device", default="cuda", type=device_name,
                   help="the worker's torch device (default cuda; cpu: tests only)")
    add_isolation_arguments(p, "candidate config")
    p.add_argument("--cluster", default=None, metavar="ADDRESS", type=cluster_address,
                   help="fan the points out over dask workers: 'local' (one worker per visible GPU), 'local:N', or "
                        "a scheduler address tcp://HOST:8786; one plan and run file per GPU model")
    p.add_argument("--extend-plan", default=None, metavar="PLAN",
                   help="only rewrite PLAN with the library fallback above its ranges (no GPU, nothing measured)")
    return p


def parse_args(argv):
    return build_parser().parse_args(argv)


def _bad(problem: str) -> int:
    print(f"profiler tune: {problem}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _input_problem(args, workload) -> str | None:
    """The first thing wrong with the arguments, in one line, or None: everything is checked here, before CUDA and
    before hours of tuning (the base plan is read again only when the tuned plan is written)."""
    if args.families:
        unknown = [f for f in args.families if f not in workload.families]
        if unknown:
            return (f"--families: unknown family {unknown[0]!r}; {workload.name} has "
                    f"{', '.join(workload.family_order)}")
    unknown = sorted(set(args.methods or ()) - set(METHODS))
    if unknown:
        return f"--methods: unknown method(s) {unknown}; known: {sorted(METHODS)}"
    if args.m and max(args.m) > MAX_M:
        return f"--m: M={max(args.m)} is over the limit {MAX_M:,}"
    try:
        load_plan(args.base_plan, workload)
    except PlanError as exc:
        return f"--base-plan: {exc}"
    if args.out_plan is not None and Path(args.out_plan).suffix != ".json":
        return f"--out-plan {args.out_plan} must end in .json"
    if args.out_plan is not None and Path(args.out_plan).is_dir():
        return f"--out-plan {args.out_plan} is a folder"
    out_plan = args.out_plan or f"kernels/plans/{default_plan_name(workload)}.json"
    try:   # before hours of tuning: the plan is written at the end
        check_writable(out_plan)
    except WriteError as exc:
        return f"--out-plan: {exc}"
    return None


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    workload = workload_or_exit("tune", args.workload)
    problem = _input_problem(args, workload)
    if problem:
        return _bad(problem)
    if args.extend_plan:
        return extend_plan(args.extend_plan, workload)
    points = [p for p in scored_points(workload, args.families) if args.m is None or p.M in args.m]
    if not points:
        return _bad(f"--m: no scored point of {workload.name} at M={args.m} in families "
                    f"{args.families or workload.family_order}")
    if args.out_run is not None:
        new_run_path("tune", args.out_run, "--out-run")
    if args.cluster is None or args.cluster.startswith("local"):
        cuda_or_exit("tune")
    out_plan = args.out_plan or f"kernels/plans/{default_plan_name(workload)}.json"
    settings = TuneSettings(shapes=args.shapes, workload=workload.name, families=args.families,
                            methods=args.methods, only_m=sorted(set(args.m)) if args.m else None,
                            base_plan=args.base_plan, budget_s=args.budget_s, finalists=args.finalists,
                            compile_workers=args.compile_workers, seed=args.seed,
                            shape_timeout_s=args.shape_timeout_s, max_incidents=args.max_incidents,
                            command="python -m profiler tune " + " ".join(argv or sys.argv[1:]))
    try:
        outcomes = tune_sweep(points, args.out_run, out_plan,
                              settings=settings, device=args.device, workload=workload, cluster=args.cluster,
                              progress=_progress)
    except KeyboardInterrupt as exc:
        print(interrupted_line("tune", exc) + " (the plan was not written)", file=sys.stderr)
        return 130
    except ImportError as exc:
        return missing_dask("tune", exc, args.cluster)
    except TuneError as exc:
        print(f"profiler tune: {exc}", file=sys.stderr)
        return 1
    except WriteError as exc:   # a full disk or a read-only folder: the message says where the measured run went
        print(f"profiler tune: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for out in outcomes:
        print(f"\nplan -> {out['plan_path']}\nrun  -> {out['run_path']} ({out['run']['status']})")
    return 0


def _progress(stage: str, i: int, n: int, detail: str | None = None) -> None:
    """Points done (over every GPU model on a cluster), with the tasks done per worker."""
    print(f"{stage}: {i}/{n}" + (f"  ({detail})" if detail else ""), file=sys.stderr, flush=True)


