"""The `--workload NAME|FILE` option of `python -m profiler run|probe|tune|explain|screen`: one argument, one exit.

A bad name, path or file is one line (the DatasetError's text, naming the file and field) and exit status 2,
before anything needs a GPU.
"""
from __future__ import annotations

import sys
from datasets import DatasetError, load_workload

WORKLOAD_HELP = ("the workload: a name in datasets/workloads/ (e.g. llama31_8b_decode) or a .json file "
                 "(default muse_bf16_proj)")


def add_workload_argument(parser) -> None:
    parser.add_argument("--workload", default=None, metavar="NAME|FILE", help=WORKLOAD_HELP)


def workload_or_exit(cmd: str, ref):
    """datasets.load_workload(ref), or exit 2 with one line naming what is wrong."""

    try:
        return load_workload(ref)
    except DatasetError as exc:
        print(f"profiler {cmd}: --workload: {exc}", file=sys.stderr)
        raise SystemExit(2)
