"""`python -m profiler survey` (old name `screen`, kept as an alias): the arguments of the config survey
(profiler.commands.survey does the work)."""
from __future__ import annotations

import argparse
import sys

from datasets.cli import EXIT_BAD_INPUT, OneLineParser, non_negative_int, positive_float, positive_int
from datasets.runfile import WriteError
from datasets.workload_spec import MAX_M
from kernels.method import PlanError
from kernels.plans import load_plan
from kernels.registry import METHODS
from profiler.cli.options import add_seed_argument, cuda_or_exit, add_workload_argument, label_of, new_run_path, workload_or_exit
from profiler.commands import survey as survey_command
from profiler.commands.runlife import interrupted_line


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m profiler survey", description=survey_command.__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--methods", nargs="+", required=True, help="methods whose every config is surveyed")
    p.add_argument("--plan", default=None, help="whose pick is timed alongside ('' for none; default: best for the "
                                                "default workload, the plan named after another workload if any)")

    add_workload_argument(p)
    p.add_argument("--shapes", default="official", choices=["official", "none"],
                   help="the workload's scored shapes, or none (only --extra-m)")
    p.add_argument("--extra-m", nargs="*", type=positive_int, default=[], help="more M per family (load 'nearby')")
    p.add_argument("--families", nargs="+", default=None, help="restrict to these families")
    p.add_argument("--label", default="survey", help="run label (default survey)")
    p.add_argument("--out-run", default=None, help="default datasets/runs/<date>_<gpu>_<label>.json")
    p.add_argument("--compile-workers", type=non_negative_int, default=16,
                   help="processes that compile the candidates' Triton kernels first (0: compile in the worker)")
    p.add_argument("--budget-s", type=positive_float, default=300.0, help="stop starting new shapes after this long")
    add_seed_argument(p)
    return p


def parse_args(argv):
    return build_parser().parse_args(argv)


def _input_problem(args, workload) -> str | None:
    """The first thing wrong with the arguments, in one line, or None (checked before CUDA)."""
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        return f"--methods: unknown method(s) {unknown}; known: {sorted(METHODS)}"
    unknown = [f for f in args.families or () if f not in workload.families]
    if unknown:
        return f"--families: unknown family {unknown[0]!r}; {workload.name} has {', '.join(workload.family_order)}"
    if args.extra_m and max(args.extra_m) > MAX_M:
        return f"--extra-m: M={max(args.extra_m)} is over the limit {MAX_M:,}"
    if args.plan:
        try:
            load_plan(args.plan, workload)
        except PlanError as exc:
            return f"--plan: {exc}"
    return None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    workload = workload_or_exit("survey", args.workload)
    if args.plan is None:
        args.plan = survey_command.default_plan(workload)
    problem = _input_problem(args, workload)
    if problem:
        print(f"profiler survey: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args.label = label_of("survey", args.label)
    if args.out_run is not None:
        new_run_path("survey", args.out_run, "--out-run")
    cuda_or_exit("survey")   # only here: --help and bad input need no torch
    try:
        return survey_command.survey(args, workload, argv)
    except KeyboardInterrupt as exc:
        print(interrupted_line("survey", exc), file=sys.stderr)
        return 130
    except WriteError as exc:   # a full disk or a read-only folder: the message says where the measured run went
        print(f"profiler survey: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
