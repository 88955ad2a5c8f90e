"""Write a run's report (or an official-format per-shape table's): standalone HTML with interactive figures and
plotly.js inline, so it opens offline, plus Markdown, CSV and JSON; an explain run gets its kernel breakdown.

`python -m dashboard report RUN.json|official.csv --out DIR [--candidate NAME] [--shape KEY]`. Bad input is one
line and exit 2; a pair the correctness gate refuses still gets its report (which says why), and exit 3.

The only module that knows both report kinds: dashboard.documents.report (runs and tables) and dashboard.documents.kernel_report
(explain runs, built on dashboard.documents.report's Report), so imports between them go one way.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from datasets import DatasetError
from datasets.cli import OneLineParser
from datasets.paths import find_run_file, is_run_name, missing_file_hint, no_run_file
from dashboard.documents import kernel_report, report
from dashboard.model import kernels, runs, scoring
from dashboard.model.runs import RunFileError

EXIT_BAD_INPUT = 2
EXIT_NO_SCORE = 3  # the correctness gate refused the pair (as `python -m dashboard summarize|table`)


def build_any(path, baseline: str | None = None, candidate: str | None = None, shape: str | None = None,
              include_below_floor: bool = False) -> report.Report:
    """The report of `path`: an explain run's kernel breakdown (dashboard.documents.kernel_report), else
    dashboard.documents.report.build_from_path (a run or a per-shape table)."""
    path = Path(path)
    if is_run_name(path.name):
        data = runs.load_run_data(path)
        if kernels.is_explain_run(data.run):
            return kernel_report.build_report(kernels.from_run_data(data), data.workload, candidate, shape)
    return report.build_from_path(path, baseline, candidate, shape, include_below_floor=include_below_floor)


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m dashboard report", description=__doc__.split("\n\n")[0].replace(
        "\n", " "))
    p.add_argument("path", help="a run file (a path, or a name in datasets/runs/; .json / .json.gz optional) or an "
                                "official-format per-shape CSV")
    p.add_argument("--out", required=True, help="output folder (created if missing; never inside datasets/)")
    p.add_argument("--baseline", help="baseline candidate in the run (default: the one the candidate was paired "
                                      "with, 'baseline')")
    p.add_argument("--candidate", help="candidate in the run (default: the last one paired with the baseline)")
    p.add_argument("--shape", help="write a per-shape report for this key, e.g. 'decode 1/router'")
    p.add_argument("--format", default="html,md,csv,json", help="comma-separated subset of html,md,csv,json")
    p.add_argument("--include-below-floor", action="store_true",
                   help="score results flagged below the measured HBM floor (artifacts, left out by default)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Write the report in every format asked; bad input → exit 2; a refused pair → the report and exit 3."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    bad = sorted(set(formats) - {"html", "md", "csv", "json"})
    try:
        if bad:
            raise ValueError(f"unknown format(s) {bad}; choose from html, md, csv, json")
        if args.path.lower().endswith(".csv"):
            path = Path(args.path)
            if not path.is_file():
                raise ValueError(f"{args.path}: no such file{missing_file_hint(path)}")
        else:
            path = find_run_file(args.path)
            if path is None:
                raise ValueError(no_run_file(args.path))
        rep = build_any(path, args.baseline, args.candidate, args.shape, args.include_below_floor)
        paths = rep.write(args.out, formats, inputs=[path])
    except (DatasetError, RunFileError, scoring.ScoringError, ValueError, KeyError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in paths:
        print(path)
    if rep.gate is not None and rep.gate.refused:
        hint = " (--include-below-floor scores them)" if rep.gate.below_floor and not args.include_below_floor \
            else ""
        print(f"{rep.gate.candidate} vs {rep.gate.baseline}: {rep.gate.message()}{hint}", file=sys.stderr)
        return EXIT_NO_SCORE
    return 0


if __name__ == "__main__":
    sys.exit(main())
