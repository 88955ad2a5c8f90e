"""`python -m profiler explain`: its arguments and the command line (profiler/cli/main.py hooks it in)."""
from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import time
from pathlib import Path

from datasets import RUNS_DIR
from datasets.cli import EXIT_BAD_INPUT, positive_int
from datasets.runfile import RunFileError, WriteError, run_filename
from kernels.candidate import check_spec
from profiler.backends.open import ClusterError
from profiler.cli.options import (add_seed_argument, add_workload_argument, cluster_address, label_of, missing_dask,
                                  new_run_path, workload_or_exit)
from profiler.commands.explain import ExplainSettings, format_explain, run_explain
from profiler.commands.runlife import interrupted_line
from profiler.commands.sweep import SweepInputError, WorkerStartError, select_shapes, shape_key
from profiler.measure.ncu import NcuError, ncu_tool
from profiler.measure.telemetry import cuda_device_name
from profiler.worker.process import WorkerDied, WorkerError

EXIT_MISSING = 2
DESCRIPTION = """What each checked call launches, per kernel, as a run file: probes, then per shape every candidate
checked with the correctness contract and one CUDA-graph replay of each passing call recorded under torch.profiler
(Kineto: the kernel sequence), then one call of each profiled by Nsight Compute (duration, DRAM bytes, launch
configuration per kernel). Needs a CUDA GPU and ncu; says with one line what is missing. Read the run with
`python -m dashboard explain RUN.json`."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan", action="append", help="plan name or .json path (repeatable)")
    p.add_argument("--candidate", action="append", help="a user's module .py with prepare(weight), run(state, family, x)")
    p.add_argument("--shapes", default="official", help="a selection as for `profiler run --shapes` (official, nearby, all, FAMILY:M,..., M=..., joined by +)")

    add_workload_argument(p)
    p.add_argument("--shape", action="append", metavar="KEY",
                   help="only this shape (repeatable), e.g. 'decode 16/router' or 'nearby/router/M9'")
    p.add_argument("--out", help="run file (default datasets/runs/<date>_<gpu>_<label>.json; never overwritten)")
    p.add_argument("--label", help="run label (default: explain- and the plan names)")
    p.add_argument("--trace", metavar="DIR", help="write one Chrome/Perfetto trace JSON per shape (Kineto) here")
    p.add_argument("--keep", metavar="DIR", help="keep ncu reports, raw CSVs and child logs here")
    p.add_argument("--shapes-per-ncu", type=positive_int, default=10,
                   help="shapes per ncu process; the run file is flushed after each (default 10)")
    p.add_argument("--no-probes", action="store_true", help="skip the HBM/compute probes (no floors in the run)")
    add_seed_argument(p)
    p.add_argument("--cluster", default=None, metavar="ADDRESS", type=cluster_address,
                   help="run the shapes on dask workers: 'local' (one per visible GPU), 'local:N', or a scheduler "
                        "address tcp://HOST:8786 (one run file per GPU model)")


def _missing_tools() -> tuple[list[str], object]:
    """What explain needs and this machine lacks, each in words that say where it looked."""

    problems = []
    try:
        import torch

        if not torch.cuda.is_available():
            problems.append(f"a CUDA GPU (torch {torch.__version__}: torch.cuda.is_available() is False)")
    except Exception as exc:
        problems.append(f"torch with CUDA (importing torch failed: {type(exc).__name__}: {exc})")
    try:
        tool = ncu_tool()
    except NcuError as exc:
        problems.append(str(exc).removeprefix("needs "))
        tool = None
    return problems, tool


def _select(shapes: list[dict], keys: list[str] | None) -> list[dict]:
    if not keys:
        return shapes
    known = {shape_key(s): s for s in shapes}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ValueError(f"unknown --shape {unknown}; known e.g. {list(known)[:4]}")
    return [known[k] for k in dict.fromkeys(keys)]


def cmd_explain(args, argv) -> int:
    specs = list(args.plan or []) + [str(Path(c).resolve()) for c in (args.candidate or [])]
    if not specs:
        print("profiler explain: give at least one --plan or --candidate", file=sys.stderr)
        return EXIT_BAD_INPUT

    workload = workload_or_exit("explain", args.workload)
    try:
        for spec in specs:
            check_spec(spec, workload)   # names a bad spec without running candidate code (the worker loads them)
        shapes = _select(select_shapes(args.shapes, workload), args.shape)
    except Exception as exc:  # PlanError / CandidateError / an unknown shape key: bad input, one line naming it
        print(f"profiler explain: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for flag, folder in (("--trace", args.trace), ("--keep", args.keep)):
        if folder is not None and Path(folder).exists() and not Path(folder).is_dir():
            print(f"profiler explain: {flag} {folder} is a file; give a folder (created if missing)", file=sys.stderr)
            return EXIT_BAD_INPUT
    label = label_of("explain", args.label or ("explain-" + "-".join(Path(s).stem for s in specs))[:80])
    if args.out:
        new_run_path("explain", args.out)
    remote = args.cluster is not None and not args.cluster.startswith("local")
    problems, tool = ([], None) if remote else _missing_tools()   # a remote cluster: each host's own CUDA + ncu
    if problems:
        print(f"profiler explain: needs {' and '.join(problems)}", file=sys.stderr)
        return EXIT_MISSING

    # On a cluster the default name takes each GPU model's name (one run file per model).
    out = Path(args.out) if args.out else None
    if out is None and not args.cluster:
        gpu = cuda_device_name() or "unknown-gpu"
        out = new_run_path("explain", Path(RUNS_DIR) / run_filename(dt.date.today(), gpu, label))
    settings = ExplainSettings(shapes=args.shapes, only=list(args.shape or []), seed=args.seed,
                               probes=not args.no_probes, trace_dir=args.trace, keep_dir=args.keep,
                               shapes_per_ncu=args.shapes_per_ncu,
                               command="python -m profiler " + " ".join(shlex.quote(a) for a in argv))
    t0 = time.perf_counter()
    try:
        run = run_explain(specs, shapes, out, label=label, settings=settings, tool=tool, cluster=args.cluster,
                          log=lambda m: print(m, file=sys.stderr, flush=True), workload=workload)
    except KeyboardInterrupt as exc:
        print(interrupted_line("explain", exc), file=sys.stderr)
        return 130
    except ImportError as exc:
        return missing_dask("explain", exc, args.cluster)
    except WriteError as exc:   # a full disk or a read-only folder: the message says where the measured run went
        print(f"profiler explain: {exc}", file=sys.stderr)
        return 2
    except (SweepInputError, WorkerStartError, RunFileError, WorkerError, WorkerDied, ClusterError) as exc:
        print(f"profiler explain: {exc}", file=sys.stderr)
        return 1
    print(format_explain(run))
    print(f"\nwrote {out}  (status {run['status']}; {len(run['kernels'])} kernel records, "
          f"{len(run['failures'])} failures) in {time.perf_counter() - t0:.1f} s")
    print(f"analysis: python -m dashboard explain {out}")
    return 0
