"""`python -m profiler run|probe|tune|explain|survey|step`: check, time, probe and tune projection kernels on the GPU.

Every subcommand writes a run file (datasets/runs/, never overwritten) and says with one line and exit status 2
what is wrong with bad input (a workload, a shape selection, a plan that does not fit the workload) before anything
needs a GPU. `python -m profiler <cmd> --help` describes each; the dashboard reads and scores the run files
(`python -m dashboard summarize RUN.json`).
"""
from __future__ import annotations

import argparse
import datetime as dt
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from datasets import RUNS_DIR, noise_model
from datasets.cli import EXIT_BAD_INPUT, OneLineParser, positive_float
from datasets.runfile import RunFileError, WriteError, run_filename
from datasets.shapes import SHAPE_ID_FIELDS
from datasets.text import escape_strings, escaped_output
from kernels.candidate import check_spec
from profiler.backends.open import ClusterError
from profiler.cli import survey as survey_cli
from profiler.cli import step as step_cli
from profiler.cli import tune as tune_cli
from profiler.cli.explain import cmd_explain
from profiler.cli.explain import DESCRIPTION as EXPLAIN_DESCRIPTION
from profiler.cli.explain import add_arguments as explain_arguments
from profiler.cli.options import (add_isolation_arguments, add_seed_argument, add_workload_argument,
                                  cluster_address, cuda_or_exit, label_of, missing_dask, new_run_path,
                                  workload_or_exit)
from profiler.commands.runlife import interrupt_on_sigterm, interrupted_line
from profiler.commands.sweep import SweepInputError, SweepSettings, WorkerStartError, run_sweep, select_shapes
from profiler.measure.policy import SWEEP
from profiler.measure.telemetry import cuda_device_name
from profiler.worker.process import WorkerDied, WorkerError


def _cuda_or_exit(cmd: str) -> None:
    """Exit 2 with one line (no traceback) where torch or CUDA is missing (options.cuda_or_exit)."""
    cuda_or_exit(cmd)


class _Progress:
    """tqdm bar when tqdm is importable, else one plain line per 10%."""

    def __init__(self):
        try:
            from tqdm import tqdm
        except Exception:
            tqdm = None
        self._tqdm, self._bars, self._last = tqdm, {}, {}

    def __call__(self, stage: str, i: int, n: int, detail: str | None = None) -> None:
        """`detail`: a cluster's tasks done per worker ("projlab-0-gpu0:12 projlab-1-gpu1:11"), shown beside."""
        if self._tqdm is not None:
            bar = self._bars.get(stage)
            if bar is None:
                bar = self._bars[stage] = self._tqdm(total=n, desc=stage, unit="", file=sys.stderr)
            if detail:
                bar.set_postfix_str(detail, refresh=False)
            bar.update(i - bar.n)
            if i >= n:
                bar.close()
            return
        step = max(1, n // 10)
        if i == n or i % step == 0:
            print(f"{stage}: {i}/{n}" + (f" ({detail})" if detail else ""), file=sys.stderr, flush=True)


def _default_out(label: str, device: str = "cuda") -> Path:
    # The GPU's name from the driver: this process never creates a CUDA context (the worker does).
    name = "cpu" if device == "cpu" else cuda_device_name() or "unknown-gpu"
    return Path(RUNS_DIR) / run_filename(dt.date.today(), name, label)


def _out_path(cmd: str, out: str | None, label: str, device: str = "cuda") -> Path:
    """--out or the default run path, as a new run file (options.new_run_path: exit 2 otherwise)."""
    return new_run_path(cmd, Path(out) if out else _default_out(label, device))




def _check_specs(specs: list[str], workload) -> None:
    """Exit 2 with one line per spec that cannot name a candidate for `workload` (a plan tuned for another
    workload, a method that computes none of its dtypes, a missing file...): bad input; runs none of the
    candidates' code."""

    bad = []
    for spec in specs:
        try:
            check_spec(spec, workload)
        except Exception as exc:  # PlanError / CandidateError name the file and the problem
            bad.append(f"profiler run: cannot load candidate {spec!r}: {exc}")
    if bad:
        print("\n".join(bad), file=sys.stderr)
        raise SystemExit(2)


def _spec_label(spec: str) -> str:
    if spec.startswith("method:"):
        return spec.split(":")[1]
    _, _, attr = spec.partition(".py:")
    return attr if attr else Path(spec).stem


def _shapes(cmd: str, selection: str, workload) -> list[dict]:
    """The --shapes selection's rows in `workload`, or exit 2 with one line naming what is wrong with it."""

    try:
        return select_shapes(selection, workload)
    except ValueError as exc:
        print(f"profiler {cmd}: --shapes: {exc}", file=sys.stderr)
        raise SystemExit(2)


def cmd_run(args, argv) -> int:
    specs = list(args.plan or []) + list(args.candidate or [])
    if not specs:
        print("profiler run: give at least one --plan (the first is the baseline of every pair)", file=sys.stderr)
        return EXIT_BAD_INPUT

    workload = workload_or_exit("run", args.workload)
    _check_specs(specs, workload)
    shapes = _shapes("run", args.shapes, workload)
    label = label_of("run", args.label or "-vs-".join(_spec_label(s) for s in specs)[:80])
    # On a cluster the default file name takes each GPU model's name (one run file per model), known once the
    # workers report; an explicit --out is checked now.
    out = _out_path("run", args.out, label, args.device) if args.out or not args.cluster else None
    if _local(args.cluster) and args.device == "cuda":
        _cuda_or_exit("run")

    settings = SweepSettings(mode=args.mode, shapes=args.shapes, seed=args.seed,
                             timing=replace(SWEEP, max_seconds=args.max_seconds_per_shape),
                             probes=not args.no_probes, shape_timeout_s=args.shape_timeout_s,
                             max_incidents=args.max_incidents, canary=args.canary, eager=args.eager,
                             command="python -m profiler " + " ".join(shlex.quote(a) for a in argv),
                             screened=not args.trust_candidate, unprivileged=True)
    t0 = time.perf_counter()
    run = _sweep("run", specs, shapes, out, label, settings, cluster=args.cluster, workload=workload,
                 device=args.device)
    print(format_run(run))
    out = out or "the run file of each GPU model (named above)"
    print(f"\nwrote {out}  (status {run.get('status', 'complete')})")
    print(f"wall time: {time.perf_counter() - t0:.1f} s total, {run['environment'].get('sweep_seconds')} s for "
          f"{len(shapes)} shapes x {len(specs)} candidates (correctness + timing)")
    print(f"overall score: python -m dashboard summarize {out}")
    return 0


def _local(cluster: str | None) -> bool:
    """No cluster, or a local one: this machine needs CUDA (a remote scheduler's workers bring their own)."""
    return cluster is None or cluster.startswith("local")


def _sweep(cmd, specs, shapes, out, label, settings, measure_shapes=True, cluster=None, workload=None,
           device="cuda") -> dict:
    """run_sweep; every user-facing problem is one line and an exit (130 after Ctrl-C or SIGTERM, 2 for a
    candidate that cannot be loaded or a file that cannot be written (the message says where what was measured
    went), 1 otherwise)."""

    try:
        with interrupt_on_sigterm():
            return run_sweep(specs, shapes, out, label=label, settings=settings, progress=_Progress(),
                             log=lambda m: print(m, file=sys.stderr), measure_shapes=measure_shapes,
                             cluster=cluster, workload=workload, device=device)
    except ImportError as exc:
        raise SystemExit(missing_dask(cmd, exc, cluster)) from None
    except KeyboardInterrupt as exc:
        print(interrupted_line(cmd, exc), file=sys.stderr)
        raise SystemExit(130)
    except WriteError as exc:
        print(f"profiler {cmd}: {exc}", file=sys.stderr)
        raise SystemExit(2)
    except SweepInputError as exc:   # a candidate module that fails at import: bad input
        print(f"profiler {cmd}: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)
    except (ClusterError, WorkerStartError, RunFileError, WorkerError) as exc:
        print(f"profiler {cmd}: {exc}", file=sys.stderr)
        raise SystemExit(1)
    except WorkerDied as exc:  # outside a shape (probes, harness code): nothing to blame a candidate for
        print(f"profiler {cmd}: the worker process was lost in {exc.phase or 'start-up'} ({exc.kind}): {exc.message}; "
              f"partial run (if any) in {out}", file=sys.stderr)
        raise SystemExit(1)


def cmd_probe(args, argv) -> int:
    workload = workload_or_exit("probe", args.workload)
    shapes = _shapes("probe", args.shapes, workload)
    label = label_of("probe", args.label or "probes")
    out = _out_path("probe", args.out, label)
    _cuda_or_exit("probe")

    settings = SweepSettings(shapes=args.shapes, command="python -m profiler " + " ".join(argv))
    # Probes only: the shapes give the byte counts to probe, no candidate is run.
    run = _sweep("probe", [], shapes, out, label, settings, measure_shapes=False, workload=workload)
    print(format_probes(run))
    print(f"\nwrote {out}")
    return 0


def cmd_summarize(args, argv) -> int:
    """The dashboard reads and scores run files; this name only says so (one summarize command)."""
    print("profiler summarize: use `python -m dashboard summarize RUN.json` (the dashboard reads and scores run "
          "files)", file=sys.stderr)
    return 2


def _fmt(v, spec=".2f", none="-"):
    return none if v is None else format(v, spec)


def format_run(run: dict) -> str:
    """Per-shape table: median us per candidate, paired ratio [95% CI] vs the first candidate, correct, flags.
    No overall score here: that is the dashboard's job (`python -m dashboard summarize`). Every name and reason is
    escaped whole (escape_strings: a newline in a candidate's error cannot start a line of its own)."""
    run = escape_strings(run)
    names = list(run["environment"].get("settings", {}).get("candidates") or
                 dict.fromkeys(r["candidate"] for r in run["results"]))
    by_shape: dict[tuple, dict] = {}
    for r in run["results"]:
        key = tuple(r[f] for f in SHAPE_ID_FIELDS)
        by_shape.setdefault(key, {})[r["candidate"]] = r
    pairs = {tuple(p[f] for f in SHAPE_ID_FIELDS) + (p["candidate"],): p for p in run["pairs"]}
    env = run["environment"]
    lines = [f"run {run['label']} ({run['status']}) on {env.get('gpu')}  mode {env.get('settings', {}).get('mode')}  "
             f"replay overhead {_fmt(env.get('replay_overhead_us'))} us subtracted"]
    head = f"{'shape':<24}{'M':>5}" + "".join(f"{n[:18]:>20}" for n in names)
    head += "".join(f"{'ratio ' + n[:14]:>30}" for n in names[1:]) + "  ok    flags"
    lines += [head, "-" * len(head)]
    for key, recs in by_shape.items():
        row = f"{key[0] + '/' + key[1]:<24}{key[2]:>5}"
        row += "".join(f"{_fmt(recs[n]['median_us'], '.2f') if n in recs else '-':>20}" for n in names)
        for n in names[1:]:
            p = pairs.get(key + (n,))
            cell = (f"{p['ratio_median']:.4f} [{_fmt(p.get('ratio_ci_low'), '.4f')},"
                    f"{_fmt(p.get('ratio_ci_high'), '.4f')}]") if p else "-"
            row += f"{cell:>30}"
        ok = all(r["correct"] for r in recs.values())
        flags = sorted({f"{r['candidate']}:{f}" for r in recs.values() for f in r.get("flags", [])})
        lines.append(row + f"  {'yes' if ok else 'NO':<5} {' '.join(flags)}")
    for f in run.get("failures", []):
        how = f" ({f['kind']}, {f.get('phase', '?')})" if "kind" in f else ""
        lines.append(f"FAILED {f['load']}/{f['family']} M={f['M']} {f['candidate']}{how}: "
                     f"{'; '.join(f['reasons'])[:300]}")
    bad = [r for r in run["results"] if not r["correct"]]
    for r in bad:
        lines.append(f"INCORRECT {r['load']}/{r['family']} M={r['M']} {r['candidate']}: "
                     f"{'; '.join(r.get('error', {}).get('reasons', []))[:200]}")
    canary = run.get("canary")
    if canary:
        moved = ", ".join(f"{d['key']} {d['ratio']:.3f}x" for d in canary["shapes"])
        ratios = list(canary.get("ratios", {}).values())
        spread = f"; paired/clean {min(ratios):.3f}-{max(ratios):.3f}" if ratios else ""
        band = (f"band {noise_model.band_words(canary['band'])}" if isinstance(canary.get("band"), (int, float))
                else (canary.get("band_evidence") or {}).get("source") or "no band")
        lines.append(f"canary ({canary.get('sample')}, {canary['compared']} shapes, {band}"
                     f"{spread}): {canary['verdict']}" + (f" at {moved} -- the pair has no score" if moved else ""))
    return "\n".join(lines)


def format_probes(run: dict) -> str:
    run = escape_strings(run)
    lines = [f"{'bytes':>12} {'us':>9} {'TB/s':>6}  {'design':<18} for"]
    for p in sorted(run.get("probes", []), key=lambda p: p["bytes"]):
        lines.append(f"{p['bytes']:>12} {p['us']:>9.2f} {_fmt(p.get('tbps')):>6}  {p.get('design', ''):<18} "
                     f"{p.get('for_shape', '')[:60]}")
    if run.get("compute_peak_tflops"):
        lines.append(f"compute probe: {run['compute_peak_tflops']:.0f} TFLOP/s bf16 "
                     f"({run['compute_probe']['M']}^3 in {run['compute_probe']['us']:.0f} us)")
    return "\n".join(lines)


def _add_shapes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shapes", default="official",
                   help="official | nearby | all | FAMILY[,FAMILY]:M,M,... | M=M,M,... ; parts joined by + "
                        "(e.g. nearby+M=2,384); default official, the workload's scored shapes")


def _add_out(p: argparse.ArgumentParser, label: str) -> None:
    p.add_argument("--out", help="run file (default datasets/runs/<date>_<gpu>_<label>.json; never overwritten)")
    p.add_argument("--label", help=f"run label, used in the default file name (default: {label})")


def _add_cluster(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", default=None, metavar="ADDRESS", type=cluster_address,
                   help="run the shapes on dask workers: 'local' (one per visible GPU, pinned), 'local:N', or a "
                        "scheduler address tcp://HOST:8786; one run file per GPU model (needs requirements-scale.txt)")


SURVEY_NAMES = ("survey", "screen")   # the config survey's subcommand and its old name, kept as an alias

RUN_DESCRIPTION = """Check every candidate with the correctness contract and time the correct ones together, per shape:
probes (HBM read at each shape's bytes, a compute probe) first, then per shape one task in a worker process that
checks every candidate and times the passing ones in paired, alternating rounds (CUDA graphs, L2 flushed by a
read, replay overhead subtracted). The first --plan is the baseline of every pair. A candidate that crashes, hangs
or breaks its CUDA context costs a failure record, not the run. The run file is written after every shape;
Ctrl-C keeps the partial file."""

PROBE_DESCRIPTION = """HBM read probes at the byte counts of the selected shapes (and the write-up's sizes) plus the bf16
compute probe, into a run file: the floors the dashboard's roofline and `below_floor` use. No candidate runs."""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m profiler", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="correctness + paired timing of plans/candidates over a shape set",
                       description=RUN_DESCRIPTION)
    r.add_argument("--plan", action="append", help="plan name or .json path (repeatable; first = baseline)")
    r.add_argument("--candidate", action="append",
                   help="a module .py with prepare(weight), run(state, family, x); or file.py:Class (the Candidate "
                        "protocol, e.g. profiler/wrong/output.py:StaleOutput); or method:NAME[:{json config}]")
    _add_shapes(r)
    add_workload_argument(r)
    r.add_argument("--mode", choices=("cold", "stream"), default="cold",
                   help="cold: L2 flushed before every timed call (the write-up's judge; default); stream: "
                        "back-to-back calls rotating through copies of the weights larger than L2")
    _add_out(r, "the plan names joined by -vs-")
    r.add_argument("--max-seconds-per-shape", type=positive_float, default=SWEEP.max_seconds,
                   help=f"time cap of one shape's paired timing (default {SWEEP.max_seconds:g} s; it stops earlier "
                        f"once every ratio's RSE is <= {SWEEP.rse_target * 100:.1f}%% after >= {SWEEP.min_pairs} pairs)")
    add_seed_argument(r)
    r.add_argument("--no-probes", action="store_true", help="skip the HBM/compute probes (no below_floor flag)")
    add_isolation_arguments(r, "candidate")
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda (default): the GPU, CUDA graphs and events; cpu: the same sweep on this machine's CPU "
                        "(wall-clock timer, floors from a CPU read probe, labelled CPU in the run file, never "
                        "scored with GPU runs) -- for trying checks and trust mechanisms without a GPU")
    r.add_argument("--trust-candidate", action="store_true",
                   help="skip the source screen (by default a candidate module that imports the lab's modules or the "
                        "interpreter's internals, starts processes or threads, registers dispatcher kernels or "
                        "changes torch's global settings is refused with the line that does it; docs/trust.md); "
                        "the run records it and every score shows \"unscreened\"")
    r.add_argument("--canary", choices=("sample", "all", "off"), default="all",
                   help="before the paired shapes, time the baseline alone in the sweep's first worker, before any "
                        "candidate is loaded, and compare it with the paired baseline (a pair whose baseline moved "
                        "beyond the device's canary band has no score): at every shape (all; default), at the "
                        "smallest and largest M of every family (sample), or not")
    r.add_argument("--eager", action="store_true",
                   help="also time each correct candidate eagerly, host included (eager_us beside the graph "
                        "time; do_bench's budget: +0.125 s per candidate and shape)")
    _add_cluster(r)
    pr = sub.add_parser("probe", help="HBM read probes + compute probe only, into a run file",
                        description=PROBE_DESCRIPTION)
    _add_shapes(pr)
    add_workload_argument(pr)
    _add_out(pr, "probes")
    s = sub.add_parser("summarize", help="moved: use python -m dashboard summarize RUN.json",
                       description="Moved: `python -m dashboard summarize RUN.json` reads and scores a run file.")
    s.add_argument("run", nargs="?", help="a run file (ignored: see the description)")
    sub.add_parser("tune", help="tune a plan: every method x config per scored point (python -m profiler tune -h)",
                   add_help=False)
    sub.add_parser(SURVEY_NAMES[0], aliases=list(SURVEY_NAMES[1:]), add_help=False,
                   help="config survey: every config of chosen methods per shape (python -m profiler survey -h; "
                        "'screen' is its old name, kept as an alias)")
    sub.add_parser("step", help="the whole decode step of a workload's declared layer, per candidate "
                                "(python -m profiler step -h)", add_help=False)
    explain_arguments(sub.add_parser("explain", help="per-kernel breakdown of each call (Nsight Compute + Kineto)",
                                     description=EXPLAIN_DESCRIPTION))
    return p


def main(argv: list[str] | None = None) -> int:
    """Every line the command prints (its own, a worker's forwarded ones, a traceback) goes through
    datasets.text.escape_controls (escaped_output): no name or output line from outside reaches the terminal raw."""
    with escaped_output():
        try:
            return _main(argv)
        except KeyboardInterrupt as exc:   # Ctrl-C anywhere else (parsing, importing torch): one line too
            verb = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), "")
            print(interrupted_line(verb, exc), file=sys.stderr)
            return 130


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "tune":  # everything after `tune` belongs to profiler.cli.tune (it checks its input,
        return int(tune_cli.main(argv[1:]) or 0)   # then CUDA where the tune needs it)
    if argv and argv[0] in SURVEY_NAMES:  # everything after `survey` belongs to profiler.cli.survey
        return int(survey_cli.main(argv[1:]) or 0)
    if argv and argv[0] == "step":  # everything after `step` belongs to profiler.cli.step
        return int(step_cli.main(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    return {"run": cmd_run, "probe": cmd_probe, "summarize": cmd_summarize, "explain": cmd_explain}[args.cmd](
        args, argv)
