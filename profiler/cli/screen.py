"""`python -m profiler screen`: the arguments of the screening bench (profiler.commands.screen does the work)."""
from __future__ import annotations

import argparse
import sys

from profiler.cli.options import add_seed_argument, add_workload_argument, workload_or_exit
from profiler.commands import screen as screen_command


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m profiler screen", description=screen_command.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--methods", nargs="+", required=True, help="methods whose every config is screened")
    p.add_argument("--plan", default=None, help="whose pick is timed alongside ('' for none; default: best for the "
                                                "default workload, the plan named after another workload if any)")

    add_workload_argument(p)
    p.add_argument("--shapes", default="official", choices=["official", "none"],
                   help="the workload's scored shapes, or none (only --extra-m)")
    p.add_argument("--extra-m", nargs="*", type=int, default=[], help="more M per family (load 'nearby')")
    p.add_argument("--families", nargs="+", default=None, help="restrict to these families")
    p.add_argument("--label", default="screen", help="run label (default screen)")
    p.add_argument("--out-run", default=None, help="default datasets/runs/<date>_<gpu>_<label>.json")
    p.add_argument("--compile-workers", type=int, default=16,
                   help="processes that compile the candidates' Triton kernels first (0: compile in the worker)")
    p.add_argument("--budget-s", type=float, default=300.0, help="stop starting new shapes after this long")
    add_seed_argument(p)
    return p


def parse_args(argv):
    return build_parser().parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    workload = workload_or_exit("screen", args.workload)
    import torch   # only here: --help and a bad workload need no torch

    if not torch.cuda.is_available():
        print("profiler screen: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    return screen_command.screen(args, workload, argv)
