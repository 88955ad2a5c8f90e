"""Options several commands of `python -m profiler` share: `--workload NAME|FILE` (one argument, one exit), `--seed`,
and the worker watchdog's `--shape-timeout-s` / `--max-incidents`.

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


def add_seed_argument(parser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and inputs (default 0)")


def add_isolation_arguments(parser, unit: str) -> None:
    """The worker watchdog and the incident limit; `unit`: what is stopped and left out ("candidate", "candidate
    config")."""
    parser.add_argument("--shape-timeout-s", type=float, default=120.0,
                        help=f"watchdog: a step of a shape in the worker (a {unit}'s prepare, check or capture, or the "
                             f"paired timing) that makes no progress for this many seconds is stopped and blamed")
    parser.add_argument("--max-incidents", type=int, default=2,
                        help=f"a {unit} whose worker died or hung at this many shapes is not run at the others")


def missing_dask(cmd: str, exc: ImportError, cluster) -> int:
    """A command's answer to an ImportError raised while it ran: exit 2 with one line when `--cluster` was asked
    for and dask.distributed is what is missing; any other ImportError is a bug and is raised again."""
    if cluster is None or (exc.name or "").split(".")[0] not in ("dask", "distributed"):
        raise exc
    print(f"profiler {cmd}: --cluster needs dask.distributed (pip install -r requirements-scale.txt): {exc}",
          file=sys.stderr)
    return 2
