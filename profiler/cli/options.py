"""Options several commands of `python -m profiler` share: `--workload NAME|FILE` (one argument, one exit), `--seed`,
the worker watchdog's `--shape-timeout-s` / `--max-incidents`, `--cluster`, `--device`, a new run file's path and
its label.

Bad input (a name, path or file, a number out of range, an address that is none) is one line and exit status 2,
before anything needs a GPU: numbers and addresses are checked where argparse parses them (datasets.cli), files
by the functions here.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from datasets import DatasetError, load_workload
from datasets.cli import EXIT_BAD_INPUT, positive_float, positive_int, seed_int
from datasets.runfile import WriteError, check_writable, safe_label
from profiler.backends.dask import ClusterError, parse_cluster

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


def cuda_or_exit(cmd: str) -> None:
    """Exit 2 with one line (no traceback) where torch or CUDA is missing."""
    try:
        import torch
    except Exception as exc:
        print(f"profiler {cmd}: needs torch with CUDA; importing torch failed ({type(exc).__name__}: {exc}) "
              f"(check a workload file on any machine: python -m datasets validate FILE)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)
    if not torch.cuda.is_available():
        print(f"profiler {cmd}: needs a CUDA GPU, and torch.cuda.is_available() is False on this machine "
              f"(torch {torch.__version__}); run it on a GPU host"
              + (", or pass --device cpu to check and time on this machine's CPU" if cmd in ("run", "tune") else ""),
              file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def add_seed_argument(parser) -> None:
    parser.add_argument("--seed", type=seed_int, default=0, help="seed of the weights and inputs (default 0)")


def cluster_address(text: str) -> str:
    """argparse type of --cluster: 'local', 'local:N' or a scheduler address (profiler.backends.dask.parse_cluster),
    checked before anything starts."""
    try:
        parse_cluster(text)
    except ClusterError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--cluster {text!r}: ")) from None
    return text


def device_name(text: str) -> str:
    """argparse type of --device: 'cuda', 'cuda:N' or 'cpu' (what torch.device takes and a worker can time on)."""
    if not re.fullmatch(r"cuda(:[0-9]+)?|cpu", text):
        raise argparse.ArgumentTypeError(f"expected cuda, cuda:N or cpu, got {text!r}")
    return text


def new_run_path(cmd: str, path, flag: str = "--out") -> Path:
    """`path` as a new run file, or exit 2 with one line: it must end in .json (a run file is written plain; only
    committed tune and survey logs are compressed afterwards), must not exist (runs are never overwritten; a
    dangling link counts as existing), its folder, where it exists, must be a folder, and a file must be creatable
    there (datasets.runfile.check_writable)."""
    path = Path(path)
    problem = None
    if path.suffix != ".json":
        problem = "must end in .json"
    elif os.path.lexists(path):
        problem = "exists; runs are never overwritten (pick another path or --label)"
    elif any(parent.exists() and not parent.is_dir() for parent in path.parents):
        problem = f"cannot be written: {next(q for q in path.parents if q.exists() and not q.is_dir())} is not a folder"
    if problem is None:
        try:   # before any worker starts: a read-only or full folder must not cost a sweep
            check_writable(path)
        except WriteError as exc:
            problem = f"cannot be written: {str(exc).split(': ', 1)[-1]}"
    if problem:
        print(f"profiler {cmd}: {flag} {path} {problem}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)
    return path


def label_of(cmd: str, raw: str) -> str:
    """A label usable in a file name (datasets.runfile.safe_label); says so when it had to change
    (`my kernels` -> `my-kernels`)."""
    label = safe_label(raw)
    if label != raw:
        print(f"profiler {cmd}: label {raw!r} -> {label!r} (letters, digits, '.', '_', '-' only)", file=sys.stderr)
    return label


def add_isolation_arguments(parser, unit: str) -> None:
    """The worker watchdog and the incident limit; `unit`: what is stopped and left out ("candidate", "candidate
    config")."""
    parser.add_argument("--shape-timeout-s", type=positive_float, default=120.0,
                        help=f"watchdog: a step of a shape in the worker (a {unit}'s prepare, check or capture, or the "
                             f"paired timing) that makes no progress for this many seconds is stopped and blamed")
    parser.add_argument("--max-incidents", type=positive_int, default=2,
                        help=f"a {unit} whose worker died or hung at this many shapes is not run at the others")


def missing_dask(cmd: str, exc: ImportError, cluster) -> int:
    """A command's answer to an ImportError raised while it ran: exit 2 with one line when `--cluster` was asked
    for and dask.distributed is what is missing; any other ImportError is a bug and is raised again."""
    if cluster is None or (exc.name or "").split(".")[0] not in ("dask", "distributed"):
        raise exc
    print(f"profiler {cmd}: --cluster needs dask.distributed (pip install -r requirements-scale.txt): {exc}",
          file=sys.stderr)
    return 2
