"""`python -m dashboard summarize|table|compare|explain|step|report|results|noise|index|validate`: scores, per-shape
tables, verdicts, kernel breakdowns, reports, RESULTS.md, the noise bands, the run index and workload checks.

Exit status: 0 when every pair shown was scored (or only lacks unfinished shapes: a partial run, whose complete
loads are shown); 3 when the correctness gate refused a pair — a scored shape incorrect, failed, or below the
measured HBM floor (left out unless --include-below-floor) — with a 'no score: …' line on stderr naming the side
and the shapes; 2 for bad input, one line on stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path


from datasets import RUNS_DIR, WORKLOADS_DIR, DatasetError, load_workload
from datasets.cli import OneLineParser
from datasets.paths import PROJECT_DIR, find_run_file, missing_file_hint, no_run_file, run_paths
from dashboard.model import peers, runs, scoring, sources, views, workloads
from dashboard.documents.files import write_files
from dashboard.model.kernels import ExplainError
from dashboard.cli.summary import device_lines, format_breakdown, format_loads, format_shape_table, format_unscored_pairs
from datasets.runfile import RunFileError
from datasets.text import escaped_output


EXIT_BAD_INPUT = 2
EXIT_NO_SCORE = 3
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE   # what a shell reports for `cat` cut off by `| head`
FLOOR_HINT = " (--include-below-floor scores them)"


class CliError(Exception):
    """A user-facing problem: printed as one line, exit status 2."""


def _hint(gate: scoring.Gate) -> str:
    return FLOOR_HINT if gate.below_floor and not gate.include_below_floor else ""


def summarize_table(path: Path) -> tuple[str, list[str]]:
    """A per-shape table in the official format: published only when it is the committed official table."""
    workload = load_workload()
    src = sources.table_source(path)
    data = sources.load(src, workload)
    breakdown = runs.run_score(data, "baseline", sources.table_candidate(src), workload)
    text = format_breakdown(breakdown, f"{path.name}: {src.words} — per-shape timings; score derived from them\n"
                                       f"  workload: {workloads.describe(workload)} (the official table's format)")
    if src.provenance == sources.PUBLISHED:
        text += ("\n  note: recomputed from the displayed 3-decimal times; the published figures (score "
                 "1.301203, 4,830.8 / 3,712.56 µs) come from the evaluator's paired-ratio estimates")
    else:
        text += "\n  note: not the published official table (its content differs); its times are taken as given"
    return text, []


def _load(path: Path) -> runs.RunData:
    """The run with its own workload (embedded; an older run: muse_bf16_proj assumed, with a note)."""
    return runs.load_run_data(path)


def _workload_line(data: runs.RunData) -> str:
    """The header line naming the run's workload; for an older run, a second line with the assumed-workload note."""
    line = f"  workload: {workloads.describe(data.workload)}"
    line = "\n".join([line, *device_lines(data.run, data.results)])
    return f"{line}\n  note: {data.workload_note}" if data.workload_note else line


def _score_pair(data, base: str, cand: str, workload, include: bool) -> tuple[list[str], bool, str | None]:
    """(text blocks, something shown, refusal message or None) for one pair of a run."""
    try:
        breakdown = runs.run_score(data, base, cand, workload, include)
    except scoring.NoScore as exc:
        gate = exc.gate
        blocks = [f"{cand} vs {base}: {exc}{_hint(gate)}"]
        if gate.refused:
            return blocks, False, blocks[0]
        loads = scoring.complete_loads(runs.status_rows(data), base, cand, workload, include)
        if len(loads):
            blocks.append(format_loads(loads, "  complete loads only (no overall score):"))
        return blocks, bool(len(loads)), None
    except scoring.ScoringError as exc:
        return [f"{cand} vs {base}: no score: {exc}"], False, None
    text = format_breakdown(breakdown, f"{cand} vs {base}")
    if breakdown.below_floor_included:
        text += (f"\n  note: includes {len(breakdown.below_floor_included)} result(s) below the measured HBM floor "
                 f"({', '.join(breakdown.below_floor_included[:3])}): an artifact, scored because you asked")
    return [text], True, None


def summarize_run(path: Path, baseline: str | None, candidate: str | None,
                  include_below_floor: bool = False) -> tuple[str, list[str]]:
    """Every pair of the run (or the one asked for): score, or why not. Returns (text, refusals)."""
    data = _load(path)
    workload = data.workload
    pairs = [sources.resolve_pair(data, baseline, candidate)] if baseline or candidate else runs.candidate_pairs(data)
    if not pairs:
        raise CliError(f"{path.name}: needs results for two candidates to score (found {data.candidates()})")
    blocks = [f"{path.name}: run file, label {data.label!r}, status {data.status}, "
              f"gpu {data.run['environment'].get('gpu') or '?'}", _workload_line(data)]
    shown, refused = 0, []
    for base, cand in pairs:
        text, ok, refusal = _score_pair(data, base, cand, workload, include_below_floor)
        blocks += text
        shown += ok
        refused += [refusal] if refusal else []
    if not shown and not refused and len(data.pairs) and not data.pairs["load"].isin(workload.load_order).any():
        gates = {(b, c): runs.pair_gate(data, b, c, workload, include_below_floor, scored_only=False)
                 for b, c in dict.fromkeys(zip(data.pairs["baseline"], data.pairs["candidate"]))}
        refused = [f"{c} vs {b}: {g.message()}{_hint(g)}" for (b, c), g in gates.items() if g.refused]
        routes = {pair: views.same_route(data.results, *pair) for pair in gates}
        same = {pair: set(r.index[r]) for pair, r in routes.items()}
        return "\n".join(blocks[:2] + [format_unscored_pairs(data.pairs, gates,
                                                              "nearby shapes only (never scored; no score):",
                                                              same)]), refused
    if not shown and not refused:
        raise CliError(f"{path.name}: no candidate pair could be scored ({blocks[-1]})")
    blocks += _peer_block(data, candidate)
    return "\n".join(blocks), refused


def _peer_block(data, candidate: str | None) -> list[str]:
    """`best` (or the candidate asked for) against the best of the run's peers, where the run has peers."""
    pc = peers.peer_comparison(data, candidate or "best")
    return [peers.format_peer_comparison(pc)] if pc is not None else []


def _finish(text: str, refused: list[str]) -> int:
    print(text)
    for line in refused:
        print(line, file=sys.stderr)
    return EXIT_NO_SCORE if refused else 0


def _run_file(text: str) -> Path:
    """The run file a command's argument names (datasets.paths.find_run_file: every subcommand finds it the same
    way), or one line saying there is none."""
    path = find_run_file(text)
    if path is None and Path(text).is_file():
        raise CliError(f"{Path(text).name}: expected an official .csv or a run .json / .json.gz")
    if path is None:
        raise CliError(no_run_file(text))
    return path


def cmd_summarize(args) -> int:
    if args.path.lower().endswith(".csv"):
        path = Path(args.path)
        if not path.is_file():
            raise CliError(f"{args.path}: no such file{missing_file_hint(path)}")
        if args.baseline or args.candidate:
            raise CliError(f"{path.name}: a per-shape table has one pair (baseline, candidate); "
                           "--baseline/--candidate are for run files")
        return _finish(*summarize_table(path))
    return _finish(*summarize_run(_run_file(args.path), args.baseline, args.candidate, args.include_below_floor))


def cmd_table(args) -> int:
    path = _run_file(args.path)
    data = _load(path)
    workload = data.workload
    base, cand = sources.resolve_pair(data, args.baseline, args.candidate)
    shapes = runs.shape_table(data, workload)
    scored = data.results["load"].isin(workload.load_order).any()
    gate = runs.pair_gate(data, base, cand, workload, args.include_below_floor, scored_only=False)
    wide = views.wide_shapes(shapes, data.pairs, base, cand, gate)
    wide = wide[wide["load"].isin(workload.load_order)] if scored else wide
    load_sol = views.load_sol(wide, scoring.family_weights(workload))   # per load, in the workload's order
    wide = sort_shapes(wide, args.sort)                                  # --sort orders the shape rows only
    methods = shapes[shapes["candidate"] == cand].set_index("shape")["method"].to_dict()
    text = format_shape_table(wide, methods, load_sol,
                              f"{path.name}: {cand} vs {base} (measured times; ratios, floors, SOL derived)\n"
                              f"{_workload_line(data)}" + (f"\n  {runs.screen_note(data)}" if runs.screen_note(data)
                                                           else ""))
    verdict = runs.pair_gate(data, base, cand, workload, args.include_below_floor, scored_only=scored)
    if verdict.ok:
        return _finish(text, [])
    line = f"{cand} vs {base}: {verdict.message()}{_hint(verdict)}"
    return _finish(f"{text}\n  {line}", [line] if verdict.refused else [])


def cmd_compare(args) -> int:
    """Side B against side A: per load and overall ratio, interval, verdict and band (dashboard.cli.compare_cli)."""
    from dashboard.cli import compare_cli

    try:
        return _finish(*compare_cli.run(args.a, args.b, args.shapes, args.include_below_floor))
    except compare_cli.SideError as exc:
        raise CliError(str(exc)) from exc


def cmd_noise(args) -> int:
    """dashboard/model/noise_bands.json from the committed sweeps (dashboard.model.noise.derive): printed, or written atomically."""
    from dashboard.model import noise

    text = noise.render(noise.derive(noise.sweeps(Path(args.runs))))
    if args.out is None:
        print(text, end="")
        return 0
    write_files(Path(args.out).parent, {Path(args.out).name: text})
    print(f"wrote {args.out}")
    return 0


# `table --sort KEY`: (column of dashboard.model.views.wide_shapes, ascending); "shape" keeps the workload's order.
SORT_KEYS = {"shape": None, "ratio": ("ratio", False), "base-us": ("baseline_us", False),
             "cand-us": ("candidate_us", False), "sol": ("sol", True), "gap-us": ("gap_us", False)}
SORT_HELP = ("row order: shape (the workload's loads and families; default), ratio (largest speed-up first), "
             "base-us / cand-us (slowest first), sol (furthest below the floor first), gap-us (most µs above the "
             "floor first)")


def sort_shapes(wide, key: str):
    """The table's rows in `key`'s order (SORT_KEYS); rows without a value (no ratio: kept out) last."""
    if SORT_KEYS[key] is None:
        return wide
    column, ascending = SORT_KEYS[key]
    values = {"sol": wide["floor_us"] / wide["candidate_us"],
              "gap_us": wide["candidate_us"] - wide["floor_us"]}.get(column)
    values = wide[column] if values is None else values
    order = values.sort_values(ascending=ascending, na_position="last", kind="stable").index
    return wide.loc[order]


def cmd_explain(args) -> int:
    """The kernel breakdown of an explain run (python -m profiler explain), as terminal tables."""
    from dashboard.documents import kernel_report
    from dashboard.model import kernels

    path = _run_file(args.path)
    run = _load(path)
    data = kernels.from_run_data(run)
    print(_workload_line(run).strip())
    print(kernel_report.format_text(data, kernel_report.tables(data, run.workload, args.candidate, args.shape)))
    setups = peers.format_setups([c for c in run.run.get("calls", []) if args.candidate in (None, c.get("candidate"))])
    if setups:
        print(setups)
    return 0


def cmd_step(args) -> int:
    """A step run (python -m profiler step): Amdahl predicted vs measured, in-step vs isolated per family."""
    from dashboard.model import step

    path = _run_file(args.path)
    data = _load(path)
    if not step.has_step(data.run):
        raise CliError(f"{path.name}: not a step run (no \"step\" object); `python -m profiler step` makes one")
    print(step.format_step_table(data, args.mode))
    return 0


def cmd_results(args) -> int:
    """RESULTS.md from the committed run files (dashboard/documents/results_doc.py): printed, or written atomically."""
    from dashboard.documents import results_doc   # as cmd_explain and cmd_report: the kernel tables load plotly

    runs_dir = Path(args.runs)   # a mistyped folder must not turn into an empty RESULTS.md
    if not runs_dir.is_dir():
        raise CliError(f"--runs {runs_dir}: no such folder; nothing written")
    if not run_paths(runs_dir):
        raise CliError(f"--runs {runs_dir}: no run files (*.json, *.json.gz) in it; nothing written")
    if args.readme is not None:   # checked before anything is built or written: a bad target costs nothing
        readme = Path(args.readme)
        if not _inside_project(readme):
            raise CliError(f"--readme {readme}: not a file inside the project ({PROJECT_DIR})")
        if not readme.is_file():
            raise CliError(f"--readme {readme}: no such file")
        results_doc.splice(readme.read_text(encoding="utf-8"), "", str(readme))
    files = results_doc.RunFiles(runs_dir)   # read once for both documents
    for line in files.skipped:
        print(f"dashboard results: {line}", file=sys.stderr)
    text = results_doc.build(files)
    if args.out is None and args.readme is None:
        print(text, end="")
    if args.out is not None:
        write_files(Path(args.out).parent, {Path(args.out).name: text})
        print(f"wrote {args.out}")
    if args.readme is not None:
        block = results_doc.per_load_block(files)
        write_files(readme.parent, {readme.name: results_doc.splice(readme.read_text(encoding="utf-8"), block,
                                                                    str(readme))})
        print(f"wrote the per-load table into {readme}")
    return 0


def cmd_validate(args) -> int:
    """A workload file (and candidate modules or plans) checked on any machine: no torch, no GPU, nothing imported
    or run from a candidate (kernels.candidate.check_spec reads its source). Every problem found is reported, one
    line each on stderr (every field of the workload, every candidate), then exit 2."""
    from datasets.workload_spec import WorkloadSpecError
    from kernels.candidate import CandidateError, check_spec   # as cmd_explain: only this command needs kernels
    from kernels.method import PlanError

    try:
        workload = load_workload(args.workload)
    except WorkloadSpecError as exc:
        name = Path(args.workload).name
        problems = [f"{name}: field {field!r}: {problem}" for field, problem in exc.problems]
        if args.candidate:
            problems.append(f"--candidate: not checked ({len(args.candidate)} given): the workload does not load")
        return _problems(problems)
    problems = []
    for spec in args.candidate or []:
        try:
            check_spec(spec, workload)
        except (CandidateError, PlanError) as exc:
            problems.append(f"--candidate {spec}: {exc}")
    if problems:
        return _problems(problems)
    loads = ", ".join(f"{load} M={M}" for load, M in workload.load_m.items())
    lines = [f"{args.workload}: a valid workload {workload.name!r} (fingerprint {workload.fingerprint}): "
             f"{len(workload.family_order)} families ({', '.join(workload.family_order)}), "
             f"{len(workload.load_order)} loads ({loads}); {len(workload.shapes)} scored shapes, "
             f"{len(workload.nearby)} nearby"]
    if Path(args.workload).suffix == ".json" and Path(args.workload).resolve().parent != WORKLOADS_DIR.resolve():
        lines.append(f"  note: the app lists only the workloads in {WORKLOADS_DIR.relative_to(PROJECT_DIR)}/: save it as "
                     f"{WORKLOADS_DIR.relative_to(PROJECT_DIR) / (workload.name + '.json')} (then --workload "
                     f"{workload.name} names it too)")
    for spec in args.candidate or []:
        lines.append(f"{spec}: follows the candidate protocol for {workload.name} (read from its source or plan "
                     f"file; nothing imported or run)")
    print("\n".join(lines))
    return 0


def _problems(lines: list[str]) -> int:
    """Every problem a check found, one 'error:' line each on stderr; exit 2."""
    for line in lines:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_BAD_INPUT


def cmd_index(args) -> int:
    """dashboard/documents/run_index.json from the run files (dashboard/documents/run_index.py): printed, or written atomically."""
    from dashboard.documents import run_index

    runs_dir = Path(args.runs)
    if not runs_dir.is_dir():
        raise CliError(f"--runs {runs_dir}: no such folder")
    text = run_index.render(run_index.build(runs_dir))
    if args.out is None:
        print(text, end="")
    else:
        write_files(Path(args.out).parent, {Path(args.out).name: text})
        print(f"wrote {args.out}")
    return 0


def _inside_project(path: Path) -> bool:
    try:
        path.resolve().relative_to(PROJECT_DIR.resolve())
        return True
    except ValueError:
        return False


def cmd_report(args) -> int:
    from dashboard.cli import report_cli   # as cmd_explain: the figures load plotly

    return report_cli.main(args.report_args)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m dashboard", description=" ".join(__doc__.split("\n\n")[0].split()))
    sub = parser.add_subparsers(dest="command", required=True)
    floor = dict(action="store_true", help="score results flagged below the measured HBM floor (artifacts, left "
                                           "out by default)")
    summ = sub.add_parser("summarize", help="per-load ratios, score, time saved, score-equivalent times")
    summ.add_argument("path", help="datasets/official_036.csv, or a run file: a path, or a name in datasets/runs/ (.json / .json.gz optional)")
    summ.add_argument("--baseline", help="baseline candidate name in a run file (default: the candidate's pair, "
                                         "else every pair present)")
    summ.add_argument("--candidate", help="candidate name in a run file (default: every pair present)")
    summ.add_argument("--include-below-floor", **floor)
    summ.set_defaults(func=cmd_summarize)
    table = sub.add_parser("table", help="per-shape benchmark table of a run: method, µs, ratio [CI], floor, SOL")
    table.add_argument("path", help="a run file: a path, or a name in datasets/runs/ (.json / .json.gz optional)")
    table.add_argument("--baseline", help="default: the baseline the candidate was paired with ('baseline')")
    table.add_argument("--candidate", help="default: the last candidate paired with the baseline (e.g. best)")
    table.add_argument("--include-below-floor", **floor)
    table.add_argument("--sort", choices=list(SORT_KEYS), default="shape", help=SORT_HELP)
    table.set_defaults(func=cmd_table)
    cmp = sub.add_parser("compare", help="is B faster than A? per load and overall: ratio, interval, verdict, the "
                                         "band it used and its source, identical routes")
    cmp.add_argument("a", metavar="RUN_A[:CANDIDATE]", help="a run file (path or name in datasets/runs/); "
                                                            "candidate default: best")
    cmp.add_argument("b", metavar="RUN_B[:CANDIDATE]", help="the other side (the same run file with another "
                                                            "candidate compares within the run)")
    cmp.add_argument("--shapes", action="store_true", help="also one line per shape")
    cmp.add_argument("--include-below-floor", **floor)
    cmp.set_defaults(func=cmd_compare)
    expl = sub.add_parser("explain", help="per-kernel breakdown of an explain run: time, bytes vs ideal, grid, findings")
    expl.add_argument("path", help="an explain run (python -m profiler explain): a path, or a name in datasets/runs/ (.json / .json.gz optional)")
    expl.add_argument("--candidate", help="only this candidate")
    expl.add_argument("--shape", help="only this shape key, e.g. 'decode 16/router'")
    expl.set_defaults(func=cmd_explain, baseline=None)
    stp = sub.add_parser("step", help="a step run: the decode step per candidate, Amdahl predicted vs measured, "
                                      "in-step vs isolated per projection family")
    stp.add_argument("path", help="a step run file (python -m profiler step)")
    stp.add_argument("--mode", choices=("cold", "warm"), default="cold",
                     help="which timing of the step (cold: L2 flushed before each replay; warm: back to back)")
    stp.set_defaults(func=cmd_step)
    res = sub.add_parser("results", help="RESULTS.md from the run files: scores, SOL per load, kernel findings, "
                                         "repeatability, each row linking its run file")
    res.add_argument("--out", help="write here (e.g. RESULTS.md) instead of printing")
    res.add_argument("--runs", default=str(RUNS_DIR), help="folder of run files (default: datasets/runs)")
    res.add_argument("--readme", help="also rewrite the generated per-load table of the shipped plan inside this "
                                      "markdown file, between its markers (kernels/README.md)")
    res.set_defaults(func=cmd_results)
    nz = sub.add_parser("noise", help="the noise bands (dashboard/model/noise_bands.json) from the committed sweeps")
    nz.add_argument("--out", help="write here (dashboard/model/noise_bands.json) instead of printing")
    nz.add_argument("--runs", default=str(RUNS_DIR), help="folder of run files (default: datasets/runs)")
    nz.set_defaults(func=cmd_noise)
    val = sub.add_parser("validate", help="check a workload file (and candidate modules or plans) on any machine: "
                                          "no torch, no GPU, no candidate code run")
    val.add_argument("workload", help="a workload .json file, or a name in datasets/workloads/")
    val.add_argument("--candidate", action="append",
                     help="a candidate for it (repeatable): my_kernels.py (prepare(weight), run(state, family, x)), "
                          "file.py:Class, a plan name or .json file")
    val.set_defaults(func=cmd_validate)
    idx = sub.add_parser("index", help="the run index (dashboard/documents/run_index.json): what each run file is, so the app "
                                       "lists the committed runs without reading each one")
    idx.add_argument("--out", help="write here (e.g. dashboard/documents/run_index.json) instead of printing")
    idx.add_argument("--runs", default=str(RUNS_DIR), help="folder of run files (default: datasets/runs)")
    idx.set_defaults(func=cmd_index)
    # Listed for --help only: main() hands everything after 'report' to dashboard.cli.report_cli.main untouched.
    sub.add_parser("report", help="write a report (HTML, MD, CSV, JSON); see `python -m dashboard report -h`")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Every line printed goes through datasets.text.escape_controls (escaped_output): nothing read from a file or
    given on the command line reaches the terminal raw."""
    with escaped_output():
        try:
            return _main(argv)
        except KeyboardInterrupt:
            print("dashboard: interrupted", file=sys.stderr)
            return 130


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["report"]:
        args = argparse.Namespace(command="report", report_args=argv[1:], func=cmd_report)
    else:
        args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:   # `| head` closed the pipe: stop quietly, as `cat` would
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except ModuleNotFoundError as exc:   # a host without the app's requirements (e.g. a GPU host without plotly)
        print(f"error: python -m dashboard {args.command} needs the Python package {exc.name!r}, which is not "
              f"installed here (pip install -r requirements.txt)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (CliError, DatasetError, RunFileError, scoring.ScoringError, sources.SourceError, ExplainError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as exc:  # anything else a file's content can trigger: still one line, never a traceback
        print(f"error: {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not hit the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
