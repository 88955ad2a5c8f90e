"""`python -m dashboard summarize <official csv | run file>`, `table`, `explain RUN` and `report ...`.

Bad input ends with one line on stderr and exit status 2 — never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from datasets import DatasetError, load_official, load_workload
from dashboard import runs, scoring, views
from dashboard.kernels import ExplainError
from dashboard.summary import format_shape_table, format_unscored_pairs, format_breakdown, format_loads
from profiler.runfile import RunFileError

EXIT_BAD_INPUT = 2


class CliError(Exception):
    """A user-facing problem: printed as one line, exit status 2."""


def summarize_official(path: Path) -> str:
    workload = load_workload()
    breakdown = scoring.score_official(load_official(path, workload), workload)
    text = format_breakdown(breakdown, f"{path.name} (published per-shape timings; score derived from them)")
    return text + ("\n  note: recomputed from the displayed 3-decimal times; the published figures (score "
                   "1.301203, 4,830.8 / 3,712.56 µs) come from the evaluator's paired-ratio estimates")


def summarize_run(path: Path, baseline: str | None, candidate: str | None) -> str:
    data = runs.load_run_data(path)
    pairs = [(baseline, candidate)] if baseline and candidate else runs.candidate_pairs(data)
    if not pairs:
        raise CliError(f"{path.name}: needs results for two candidates to score (found {data.candidates()})")
    blocks = [f"{path.name}: run file, label {data.label!r}, status {data.status}, "
              f"gpu {data.run['environment'].get('gpu') or '?'}"]
    shown = 0
    for base, cand in pairs:
        try:
            blocks.append(format_breakdown(runs.run_score(data, base, cand), f"{cand} vs {base}"))
            shown += 1
        except scoring.ScoringError as exc:
            loads = scoring.complete_loads(data.results, base, cand, load_workload()) if len(data.results) else []
            blocks.append(f"{cand} vs {base}: no score: {exc}")
            if len(loads):
                blocks.append(format_loads(loads, "  complete loads only (no overall score):"))
                shown += 1
    if not shown and len(data.pairs) and not data.pairs["load"].isin(load_workload().load_order).any():
        return "\n".join(blocks[:1] + [format_unscored_pairs(data.pairs, data.results,
                                                              "nearby shapes only (never scored; no score):")])
    if not shown:
        raise CliError(f"{path.name}: no candidate pair could be scored ({blocks[-1]})")
    return "\n".join(blocks)


def cmd_summarize(args) -> int:
    path = Path(args.path)
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    if path.suffix.lower() == ".csv":
        text = summarize_official(path)
    elif path.suffix.lower() == ".json":
        text = summarize_run(path, args.baseline, args.candidate)
    else:
        raise CliError(f"{path.name}: expected an official .csv or a run .json")
    print(text)
    return 0


def cmd_table(args) -> int:
    path = Path(args.path)
    if not path.is_file() or path.suffix.lower() != ".json":
        raise CliError(f"{path}: expected an existing run .json")
    data = runs.load_run_data(path)
    cands = data.candidates()
    cand = args.candidate or (cands[-1] if cands else None)
    for name in (args.baseline, cand):
        if name not in cands:
            raise CliError(f"{path.name}: no candidate {name!r} (found {cands})")
    workload = load_workload()
    shapes = runs.shape_table(data, workload)
    wide = views.wide_shapes(shapes, data.pairs, args.baseline, cand)
    wide = wide[wide["load"].isin(workload.load_order)] if wide["load"].isin(workload.load_order).any() else wide
    methods = shapes[shapes["candidate"] == cand].set_index("shape")["method"].to_dict()
    print(format_shape_table(wide, methods, views.load_sol(wide, scoring.family_weights(workload)),
                             f"{path.name}: {cand} vs {args.baseline} (measured times; ratios, floors, SOL derived)"))
    return 0


def cmd_explain(args) -> int:
    """The kernel breakdown of an explain run (python -m profiler explain), as terminal tables."""
    from dashboard import kernel_report, kernels

    path = Path(args.path)
    if not path.is_file() or path.suffix.lower() != ".json":
        raise CliError(f"{path}: expected an existing explain run .json")
    data = kernels.from_run_data(runs.load_run_data(path))
    print(kernel_report.format_text(data, kernel_report.tables(data, load_workload(), args.candidate, args.shape)))
    return 0


# --- report hook: dashboard/report.py is written by another engineer ----------------------------------------
def cmd_report(args) -> int:
    try:
        report = importlib.import_module("dashboard.report")
    except ModuleNotFoundError as exc:
        if exc.name != "dashboard.report":
            raise
        raise CliError("the report command is not available (dashboard/report.py is missing)") from None
    return report.main(args.report_args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dashboard", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    summ = sub.add_parser("summarize", help="per-load ratios, score, time saved, score-equivalent times")
    summ.add_argument("path", help="datasets/official_036.csv or a run file datasets/runs/*.json")
    summ.add_argument("--baseline", help="baseline candidate name in a run file (default: from its pairs)")
    summ.add_argument("--candidate", help="candidate name in a run file (default: every pair present)")
    summ.set_defaults(func=cmd_summarize)
    table = sub.add_parser("table", help="per-shape benchmark table of a run: method, µs, ratio [CI], floor, SOL")
    table.add_argument("path", help="a run file datasets/runs/*.json")
    table.add_argument("--baseline", default="baseline")
    table.add_argument("--candidate", help="default: the last candidate in the run")
    table.set_defaults(func=cmd_table)
    expl = sub.add_parser("explain", help="per-kernel breakdown of an explain run: time, bytes vs ideal, grid, findings")
    expl.add_argument("path", help="an explain run datasets/runs/*_explain-*.json (python -m profiler explain)")
    expl.add_argument("--candidate", help="only this candidate")
    expl.add_argument("--shape", help="only this shape key, e.g. 'decode 16/router'")
    expl.set_defaults(func=cmd_explain, baseline=None)
    # Listed for --help only: main() hands everything after 'report' to dashboard.report.main untouched.
    sub.add_parser("report", help="write a report (dashboard/report.py); arguments are passed through")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["report"]:
        args = argparse.Namespace(command="report", report_args=argv[1:], func=cmd_report)
    else:
        args = build_parser().parse_args(argv)
        if args.command != "explain" and (args.baseline is None) != (args.candidate is None):
            print("error: give both --baseline and --candidate, or neither", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        return int(args.func(args) or 0)
    except (CliError, DatasetError, RunFileError, scoring.ScoringError, ExplainError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
