"""`python -m dashboard summarize` output and one-line errors. The command's main() runs in the test process (what
it prints, its exit code); the published table's summary, the usage error and a closed pipe go through a real
`python -m dashboard` process (the entry point, the interpreter's exit)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard_cli import run_main as cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "runs"


def cli_process(*args):
    return subprocess.run([sys.executable, "-m", "dashboard", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_summarize_official():
    out = cli_process("summarize", "datasets/official_036.csv")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for load, ratio in [("decode 1", "1.5116"), ("decode 16", "1.2339"), ("decode 32", "1.2345"),
                        ("verify 1", "1.5855"), ("verify 16", "1.1923"), ("verify 32", "1.1150")]:
        line = next(l for l in text.splitlines() if l.strip().startswith(load + " "))
        assert line.split()[-1] == ratio
    assert "score (geometric mean of load ratios): 1.30120" in text
    assert "time saved: 23.15%" in text
    assert "4,827.58 µs" in text and "3,710.09 µs" in text
    assert "4,830.8" in text  # the note that points at the published aggregate


def test_summarize_run_file():
    out = cli("summarize", str(FIXTURES / "2000-01-01_synthetic_synthetic-complete.json"))
    assert out.returncode == 0, out.stderr
    assert "fast vs baseline" in out.stdout
    assert "score (geometric mean of load ratios): 1.122462" in out.stdout  # 2^(1/6)
    assert "status complete" in out.stdout


def test_summarize_partial_run_shows_complete_loads():
    out = cli("summarize", str(FIXTURES / "2000-01-02_synthetic_synthetic-partial.json"))
    assert out.returncode == 0, out.stderr
    assert "no score" in out.stdout and "complete loads only" in out.stdout
    assert "2.0000" in out.stdout


def test_explicit_pair_and_unknown_candidate():
    run = str(FIXTURES / "2000-01-01_synthetic_synthetic-complete.json")
    ok = cli("summarize", run, "--baseline", "baseline", "--candidate", "fast")
    assert ok.returncode == 0 and "fast vs baseline" in ok.stdout
    bad = cli("summarize", run, "--baseline", "baseline", "--candidate", "nope")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "'nope'" in bad.stderr
    half = cli("summarize", run, "--baseline", "baseline")  # the candidate comes from the run's pairs
    assert half.returncode == 0 and "fast vs baseline" in half.stdout, half.stderr
    only = cli("summarize", run, "--candidate", "fast")      # and the baseline from the pair of the candidate
    assert only.returncode == 0 and "fast vs baseline" in only.stdout, only.stderr


@pytest.mark.parametrize("name, content, expected", [
    ("missing.csv", None, "missing.csv: no such file"),
    ("bad.csv", "load,family,M\n", "bad.csv: row 1, field 'N': column missing"),
    ("bad.json", "{oops", "bad.json: not valid JSON"),
    ("schema.json", json.dumps({"schema_version": 1}), "schema.json: status: missing"),
    ("notes.txt", "hello", "notes.txt: expected an official .csv or a run .json"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, name, content, expected):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    out = cli("summarize", str(path))
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: ") and expected in out.stderr


def test_report_hook_passes_arguments_through(monkeypatch):
    # `python -m dashboard report ...` hands everything after 'report' to dashboard.cli.report_cli.main untouched.
    from dashboard.cli import main as cli_main
    import dashboard.cli.report_cli as report_cli

    seen = {}

    def fake_main(args):
        seen["args"] = args
        return 0

    monkeypatch.setattr(report_cli, "main", fake_main)
    assert cli_main.main(["report", "--format", "md", "x.json"]) == 0
    assert seen["args"] == ["--format", "md", "x.json"]


def test_no_command_is_a_usage_error():
    out = cli_process()
    assert out.returncode == 2 and "usage" in out.stderr


def test_summarize_nearby_only_run_reports_spread_without_a_score(tmp_path, capsys):
    import json

    from dashboard.cli.main import main

    run = json.loads((ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-vs-best-nearby.json").read_text())
    assert main(["summarize", str(ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-vs-best-nearby.json")]) == 0
    out = capsys.readouterr().out
    assert "never scored" in out and "score (geometric" not in out
    n_best = sum(1 for r in run["results"] if r["candidate"] == "best")
    assert f"{n_best} shapes" in out


def test_table_prints_method_ratio_ci_floor_and_sol_per_shape(capsys):
    import json

    from dashboard.cli.main import main

    path = ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-seed036-best-r2.json"  # a committed H200 run
    run = json.loads(path.read_text())
    cands = []
    for r in run["results"]:
        if r["candidate"] not in cands:
            cands.append(r["candidate"])
    assert main(["table", str(path), "--baseline", cands[0], "--candidate", cands[-1]]) == 0
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if l.startswith("  decode") or l.startswith("  verify")]
    assert len(rows) == 30
    method = next(r["method"] for r in run["results"] if r["candidate"] == cands[-1])
    assert method[:20] in out and "SOL per load" in out
    assert all("[" in row for row in rows)  # every shape has a paired CI in a paired run
    assert main(["table", str(path), "--candidate", "nope"]) == 2


# --- which pair: --candidate alone, defaults, unknown names ---------------------------------------------------------
R3 = ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-seed036-best-r3.json"


def test_table_without_candidate_uses_the_default_pair():
    out = cli("table", str(R3))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{R3.name}: best vs baseline")   # the last candidate paired with 'baseline'
    seed = cli("table", str(R3), "--candidate", "seed036")
    assert seed.returncode == 0 and seed.stdout.startswith(f"{R3.name}: seed036 vs baseline")
    ghost = cli("table", str(R3), "--candidate", "ghost")
    assert ghost.returncode == 2 and ghost.stderr == (f"error: {R3.name}: no candidate 'ghost' "
                                                      "(found 'baseline', 'seed036', 'best')\n")


def test_repeatability_run_defaults_to_its_second_baseline():
    run = ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-vs-baseline-a-r2.json"
    out = cli("table", str(run))
    assert out.returncode == 0 and out.stdout.startswith(f"{run.name}: baseline#2 vs baseline"), out.stderr


def test_an_edited_copy_of_the_official_table_is_not_called_published(tmp_path):
    lines = (ROOT / "datasets/official_036.csv").read_text().splitlines()
    lines[2] = lines[2].replace("6.784", "9.999")  # decode 1/o baseline
    edited = tmp_path / "official_036.csv"          # even under the official file's name
    edited.write_text("\n".join(lines) + "\n")
    out = cli("summarize", str(edited))
    assert out.returncode == 0, out.stderr
    assert "published (write-up" not in out.stdout and "1.301203" not in out.stdout
    assert "uploaded table (as given)" in out.stdout and "not the published official table" in out.stdout
    copy = tmp_path / "copy.csv"
    copy.write_text((ROOT / "datasets/official_036.csv").read_text())
    same = cli("summarize", str(copy))          # a byte-identical copy is the published data
    assert "published (write-up, official run)" in same.stdout and "1.30120" in same.stdout


# --- run files the schema accepts but the dashboard cannot tabulate: one line, exit 2 -----------------------------
def _r3_with(tmp_path, change):
    run = json.loads(R3.read_text())
    change(run)
    path = tmp_path / "2026-11-30_test_EDITED-r3.json"  # test data: an edited copy of a committed run
    path.write_text(json.dumps(run))
    return path


def _family(run):
    for rec in run["results"] + run["pairs"]:
        if rec["family"] == "router":
            rec["family"] = "router_v2"


def _two_n(run):
    rec = dict(next(r for r in run["results"] if r["candidate"] == "best" and r["load"] == "decode 1"
                    and r["family"] == "unpooler"))
    rec.update(candidate="best#2", N=8192)  # decode 1/unpooler M=1 is N=1024: the same shape at a second N
    run["results"].append(rec)


@pytest.mark.parametrize("change, words", [
    (_family, "results[12].family: 'router_v2' is not a family of the workload (qkv_gate, o, pooler, unpooler, router)"),
    (_two_n, "results[90].N: decode 1/unpooler M=1 appears at two N (1024 at results[9], 8192 here)"),
    (lambda run: run.update(compute_peak_tflops=-800.0),
     "compute_peak_tflops: expected positive number or null, got -800.0"),
])
@pytest.mark.parametrize("verb", ["table", "summarize", "report"])
def test_untabulable_run_is_one_line(tmp_path, change, words, verb):
    path = _r3_with(tmp_path, change)
    out = cli(verb, str(path), *(["--out", str(tmp_path / "out")] if verb == "report" else []))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    assert words in out.stderr, out.stderr


@pytest.mark.parametrize("verb", ["summarize", "table", "report"])
def test_deeply_nested_json_is_one_line_for_every_verb(tmp_path, verb):
    path = tmp_path / "deep.json"
    path.write_text("[" * 1000 + "]" * 1000)
    out = cli(verb, str(path), *(["--out", str(tmp_path / "out")] if verb == "report" else []))
    assert out.returncode == 2 and out.stderr == "error: deep.json: JSON nested 1000 levels deep (at most 64 accepted)\n"


def _edited(tmp_path, name, change):
    run = json.loads((ROOT / "tests" / "fixtures" / "app" / "synthetic_a.json").read_text())
    change(run)
    path = tmp_path / name
    path.write_text(json.dumps(run))
    return path, run


def test_nan_in_a_run_file_names_the_field_and_the_shape(tmp_path):
    path, run = _edited(tmp_path, "nan.json", lambda r: r["results"][3].__setitem__("median_us", float("nan")))
    rec = run["results"][3]
    out = cli("summarize", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    shape = f"{rec['load']}/{rec['family']}"   # the shape key of an unscaled M: load/family
    assert f"NaN" in out.stderr and f"at results[3].median_us ({shape}, {rec['candidate']})" in out.stderr, \
        out.stderr


def test_a_wrong_typed_field_shows_an_excerpt_not_the_whole_object(tmp_path):
    path, run = _edited(tmp_path, "moved.json", lambda r: r.__setitem__("results", {"all": r["results"]}))
    assert len(json.dumps(run["results"])) > 20000
    out = cli("summarize", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "results: expected list, got {'all': [{" in out.stderr and "(dict, 1 item)" in out.stderr
    assert len(out.stderr) < 300, len(out.stderr)


def test_a_csv_with_an_excel_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (ROOT / "datasets" / "official_036.csv").read_bytes())
    plain = cli("summarize", str(ROOT / "datasets" / "official_036.csv"))
    marked = cli("summarize", str(path))
    assert marked.returncode == 0, marked.stderr
    # the same numbers (an edited copy is a table, not the published one, so its candidate is named 'candidate')
    numbers = lambda text: re.findall(r"\d[\d,]*\.\d+", text)
    assert set(numbers(marked.stdout)) <= set(numbers(plain.stdout)) and "1.3012" in marked.stdout
    (tmp_path / "latin.csv").write_bytes(b"load,family\xe9\n")
    bad = cli("summarize", str(tmp_path / "latin.csv"))
    assert bad.returncode == 2 and "latin.csv" in bad.stderr and "not UTF-8" in bad.stderr, bad.stderr


def test_report_help_describes_the_command_in_whole_sentences():
    out = cli("report", "--help")
    assert out.returncode == 0
    described = out.stdout.split("\n\n")[1].replace("\n", " ")
    assert described.startswith("Write a run's report") and described.rstrip().endswith("its kernel breakdown.")
    assert "Markdown, CSV and JSON" in described


def test_report_and_kernel_report_import_one_way():
    """kernel_report builds on report's Report; report never reaches back (the CLI routes explain runs)."""
    import ast

    def imported(module):
        tree = ast.parse((ROOT / "dashboard" / "documents" / f"{module}.py").read_text())
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names |= {node.module or ""} | {f"{node.module}.{a.name}" for a in node.names}
        return names

    assert not any("kernel_report" in n for n in imported("report"))
    assert "dashboard.documents.report.Report" in imported("kernel_report")


# --- run files that used to give a traceback, a line without the file, or an answer --------------------------------
TINY = FIXTURES / "2000-01-03_synthetic_synthetic-tiny-workload.json"


def _tiny_with(tmp_path, change, name="edited.json"):
    run = json.loads(TINY.read_text())
    change(run)
    path = tmp_path / name
    path.write_text(json.dumps(run))
    return path


@pytest.mark.parametrize("change, words", [
    (lambda r: r["environment"].__setitem__("settings", {"candidates": 5}),
     "edited.json: environment.settings.candidates: expected list of strings or null, got 5"),
    (lambda r: r["results"][0].__setitem__("median_us", 10 ** 400),
     "edited.json: results[0].median_us: expected number, got 1000"),
    (lambda r: r.__setitem__("telemetry", [{"t_s": 0.0, "sm_mhz": "x"}]),
     "edited.json: telemetry[0].sm_mhz: expected number or null, got 'x'"),
    (lambda r: r["results"][0].__setitem__("error", {"rel_l2": 0.5, "reasons": ["rel-L2 error 5e-1 > 1e-2"]}),
     "edited.json: results[0].correct: true, but error.reasons holds 1 reason(s) against it"),
    (lambda r: r["workload"]["families"]["up"].__setitem__("N_by_M", {"9" * 5000: 64}),
     "sanity limit 65,536"),
])
@pytest.mark.parametrize("verb", ["summarize", "table", "report"])
def test_a_malformed_run_is_one_line_naming_the_file_and_field(tmp_path, capsys, change, words, verb):
    from dashboard.cli.main import main

    path = _tiny_with(tmp_path, change)
    assert main([verb, str(path), *(["--out", str(tmp_path / "out")] if verb == "report" else [])]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and words in captured.err, captured.err


def test_a_run_with_a_repeated_key_is_refused_naming_the_key(tmp_path, capsys):
    from dashboard.cli.main import main

    text = TINY.read_text().replace('"median_us": 10.0,', '"median_us": 10.0, "median_us": 1.0,', 1)
    (tmp_path / "twice.json").write_text(text)
    assert main(["summarize", str(tmp_path / "twice.json")]) == 2
    err = capsys.readouterr().err
    assert err == ("error: twice.json: not valid JSON: duplicate key 'median_us' in one object (which of its values "
                   "is meant is ambiguous) at results[0].median_us (step 1/up, baseline)\n"), err


@pytest.mark.parametrize("argv, words", [
    (["summarize"], "the following arguments are required: path"),
    (["tabel", "x.json"], "invalid choice: 'tabel'"),
    (["report", "x.json"], "the following arguments are required: --out"),
])
def test_argument_errors_are_one_line_with_the_usage_hint(capsys, argv, words):
    from dashboard.cli.main import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and words in err and "-h)" in err, err


# --- table --sort, a closed pipe, the .json.gz hint, results --runs -------------------------------------------------
def _table_column(out: str, key: str) -> list[float]:
    """One numeric column of `dashboard table`'s fixed-width rows (dashboard.cli.summary.format_shape_table)."""
    from dashboard.cli.summary import METHOD_COLUMN

    start = 2 + 20 + 4 + 2 + METHOD_COLUMN + {"base-us": 0, "cand-us": 9, "ratio": 18}[key]
    width = 7 if key == "ratio" else 9
    rows = [l for l in out.splitlines() if l.startswith(("  decode", "  verify"))]
    return [float(l[start:start + width]) for l in rows]


@pytest.mark.parametrize("key", ["ratio", "cand-us", "base-us"])
def test_table_sort_orders_the_rows(capsys, key):
    from dashboard.cli.main import main

    assert main(["table", str(R3), "--sort", key]) == 0
    values = _table_column(capsys.readouterr().out, key)
    assert len(values) == 30 and values == sorted(values, reverse=True)
    assert main(["table", str(R3)]) == 0
    assert _table_column(capsys.readouterr().out, key) != values   # the default keeps the workload's order


def test_a_closed_pipe_ends_quietly():
    """`| head` closing the pipe: no 'error: [Errno 32] Broken pipe', exit 141 as a shell reports for `cat`."""
    p = subprocess.Popen([sys.executable, "-m", "dashboard", "table", str(R3)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()   # before the table (over a second of loading away) is written
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == ""


@pytest.mark.parametrize("folder", ["no_such_folder", "empty"])
def test_results_from_a_missing_or_empty_runs_folder_writes_nothing(tmp_path, capsys, folder):
    from dashboard.cli.main import main

    (tmp_path / "empty").mkdir()
    target = tmp_path / "RESULTS.md"
    target.write_text("kept\n")
    assert main(["results", "--runs", str(tmp_path / folder), "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing written" in err
    assert target.read_text() == "kept\n"


@pytest.mark.parametrize("verb", ["summarize", "table"])
def test_a_denormal_time_is_refused_by_every_verb(tmp_path, capsys, verb):
    """One validation for every reader: 5e-324 µs is no measurement (table used to print it, summarize to fail)."""
    from dashboard.cli.main import main

    run = json.loads((FIXTURES / "2000-01-01_synthetic_synthetic-complete.json").read_text())
    run["results"][0]["median_us"] = 5e-324
    path = tmp_path / "2000-01-01_x_denormal.json"
    path.write_text(json.dumps(run))
    assert main([verb, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results[0].median_us: expected a time in us with 0.01 <= t" in err


def test_table_sort_orders_the_shape_rows_only(capsys):
    """--sort reorders the per-shape rows; the SOL-per-load block keeps the workload's load order."""
    from dashboard.cli.main import main

    def sol_block(text):
        return text.split("SOL per load", 1)[1].splitlines()[1:7]

    assert main(["table", str(R3)]) == 0
    default = sol_block(capsys.readouterr().out)
    assert [line.split()[0] + " " + line.split()[1] for line in default] == [
        "decode 1", "decode 16", "decode 32", "verify 1", "verify 16", "verify 32"]
    for key in ("ratio", "sol", "gap-us"):
        assert main(["table", str(R3), "--sort", key]) == 0
        assert sol_block(capsys.readouterr().out) == default, key
