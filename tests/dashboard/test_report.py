"""dashboard.documents.report: whole-run and per-shape reports in four formats; HTML works offline; the CLI."""
import base64
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dashboard.documents import report
from dashboard.model import runs
from datasets import load_official, load_seed_probes, load_workload
from dashboard_cli import run_main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "app"
RUN = FIXTURES / "synthetic_a.json"


@pytest.fixture(scope="module")
def run_report():
    return report.build_from_path(RUN)


def test_whole_run_summary_matches_the_scorer(run_report):
    data = runs.load_run_data(RUN)
    score = runs.run_score(data, "baseline", "seed036").score
    assert run_report.summary["score"] == pytest.approx(score)
    assert run_report.summary["score_ci_low"] < score < run_report.summary["score_ci_high"]
    assert run_report.summary["gpu"].startswith("SYNTHETIC")
    assert set(run_report.tables) >= {"loads", "shapes", "environment", "local vs official"}
    assert len(run_report.tables["shapes"]) == 30


def _embedded_plotly(html: str) -> bytes:
    blobs = re.findall(r"atob\('([A-Za-z0-9+/=]+)'\)", html)
    assert len(blobs) == 1, f"{len(blobs)} copies of plotly.js"
    return gzip.decompress(base64.b64decode(blobs[0]))


def test_html_is_standalone_with_one_compressed_plotly(run_report):
    from plotly.offline import get_plotlyjs

    html = run_report.html()
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]+src=", html)  # nothing fetched: no CDN, no file next to it
    assert _embedded_plotly(html) == get_plotlyjs().encode()  # the whole library, once
    assert len(html) < 2_500_000  # 4.8 MB of plotly.js travels as 2.0 MB of gzip+base64
    assert html.count("Plotly.newPlot(") == len(run_report.figures) >= 4
    assert "measured (run file)" in html


def test_report_facts_are_formatted_with_units(run_report):
    facts = dict(run_report.facts)
    score = run_report.summary["score"]
    assert facts["Score (derived)"].startswith(f"{score:.4f}×")
    assert facts["Score 95% CI (derived)"].startswith(
        f"{run_report.summary['score_ci_low']:.4f}–{run_report.summary['score_ci_high']:.4f}")
    assert facts["Time saved (derived)"].endswith("% of the aggregate time")
    assert all(v.endswith(" µs") for k, v in facts.items() if k.startswith("Score-equivalent"))
    html = run_report.html()
    body = html[html.index("<body>"):]
    assert not re.search(r"\d\.\d{7,}", re.sub(r"<script.*?</script>", "", body, flags=re.S))  # no 3.456000005826354
    assert "score_equivalent_baseline_us" not in body  # raw keys stay in the JSON


def test_report_per_shape_table_is_compact_and_the_csv_complete(run_report):
    shown = next(df for name, df in run_report.display.items() if name.startswith("Per shape"))
    assert list(shown.columns) == ["shape", "method", "baseline µs", "candidate µs", "ratio ×",
                                   "paired ratio [95% CI]", "floor µs", "SOL", "correct"]
    assert len(shown) == 30
    csv = pd.read_csv(pd.io.common.StringIO(run_report.csv()))
    assert {"bytes", "flops", "memory_floor_us", "compute_floor_us", "ratio_ci_low", "sol_baseline"} <= set(csv)


def test_report_draws_a_candidate_in_one_colour_and_a_floor_on_every_bar(run_report):
    seen: dict[str, set] = {}
    for fig in run_report.figures:
        for t in fig.data:
            if t.name in ("baseline", "seed036"):
                seen.setdefault(t.name, set()).add(t.marker.color)
    assert seen and all(len(c) == 1 for c in seen.values()), seen
    assert seen["baseline"] != seen["seed036"]
    vs_floor = next(f for f in run_report.figures if f.layout.title.text.startswith("Time vs floor"))
    bars = [t.offsetgroup for t in vs_floor.data if t.type == "bar"]
    ticks = [t.offsetgroup for t in vs_floor.data if t.type == "scatter"]
    assert bars == ticks == ["baseline", "seed036"]
    per_load = run_report.figures[0]
    assert per_load.data[-1].name == "Σ floor (derived)" and len(per_load.data[-1].y) == 6 * 2


def test_report_explains_the_idle_clock_and_the_terms(run_report):
    notes = {n.heading: n.text for n in run_report.notes}
    clock = notes["Clock and throttling (measured)"]
    assert "gpu_idle" in clock and "idle GPU" in clock and "MHz" in clock
    assert "SOL" in notes["Terms"] and "AMBIGUOUS" in notes["Terms"]
    md = run_report.markdown()
    assert "## Clock and throttling (measured)" in md and "gpu_idle" in md  # intraword: no emphasis, no escape


def test_markdown_escapes_what_it_embeds(tmp_path):
    """Candidate names, methods and the GPU string are free text in a run file: none may become markup."""
    evil = "x *b* | <script>y</script> [l](u) #1"
    run = json.loads(RUN.read_text())
    run["environment"]["gpu"] = "GPU <i>9</i> | *fast*"
    for record in run["results"] + run["pairs"]:
        for role in ("candidate", "baseline"):
            if record.get(role) == "seed036":
                record[role] = evil
        if record.get("candidate") == evil and "method" in record:
            record["method"] = "m | *n* `c`"
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(run))
    rep = report.build_from_path(path, "baseline", evil)
    md = rep.markdown()
    for raw in ("<script>", "*b*", "[l](u)", "<i>", "*fast*", "*n*", "`c`", "| <"):
        assert raw not in md, raw
    assert "x \\*b\\* \\| \\<script\\>y\\</script\\> \\[l\\](u) \\#1" in md
    assert "m \\| \\*n\\* \\`c\\`" in md and "GPU \\<i\\>9\\</i\\> \\| \\*fast\\*" in md
    rows = [line for line in md.splitlines() if line.startswith("| decode 1/o |")]
    assert rows and all(line.count(" | ") == rows[0].count(" | ") for line in rows)  # no cell split by a '|'
    html = rep.html()
    assert "<script>y</script>" not in html and "&lt;script&gt;y&lt;/script&gt;" in html


def test_markdown_csv_json_carry_the_numbers(run_report):
    md = run_report.markdown()
    assert md.startswith("# projlab report — synthetic-a")
    assert f"{run_report.summary['score']:.4f}" in md
    assert "| decode 1 |" in md
    csv = pd.read_csv(pd.io.common.StringIO(run_report.csv()))
    assert len(csv) == 30 and {"baseline_us", "candidate_us", "ratio", "floor_us"} <= set(csv)
    js = json.loads(run_report.json())
    assert js["summary"]["score"] == pytest.approx(run_report.summary["score"])
    assert len(js["tables"]["shapes"]) == 30


def test_official_csv_report_is_published_and_reproduces_1_3012():
    rep = report.build_from_path(ROOT / "datasets" / "official_036.csv")
    assert rep.source == "published"
    assert f"{rep.summary['score']:.4f}" == "1.3012"
    assert "score_ci_low" not in rep.summary  # no samples, no CI
    assert "published (write-up, official run)" in rep.markdown()


def test_per_shape_report():
    rep = report.build_from_path(RUN, shape="decode 1/router")
    s = rep.summary
    assert (s["M"], s["N"], s["K"]) == (1, 256, 8192)
    # the SYNTHETIC fixture's device has no repeat evidence: the interval, and no verdict from another device's band
    assert s["verdict"] == "NO VERDICT" and s["ratio_ci_low"] < s["ratio"] < s["ratio_ci_high"]
    assert set(rep.tables["candidates"]["candidate"]) == {"baseline", "seed036"}
    assert rep.figures[0].data[0].type == "box"
    with pytest.raises(ValueError, match="no results for shape"):
        report.build_from_path(RUN, shape="decode 1/nope")


def test_partial_run_report_says_not_scored():
    wl = load_workload()
    data = runs.load_run_data(FIXTURES / "synthetic_decode_only.json")
    rep = report.build(data, "baseline", "seed036", wl, load_official(), "measured")
    assert str(rep.summary["score"]).startswith("no score: baseline has no time for 15 scored shapes")
    assert len(rep.tables["shapes"]) == 15


def test_write_all_formats(tmp_path, run_report):
    paths = run_report.write(tmp_path)
    assert sorted(p.suffix for p in paths) == [".csv", ".html", ".json", ".md"]
    assert all(p.stat().st_size > 0 for p in paths)


UMASKS = [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)]
# One fresh process writes the report under each umask in turn (the umask a shell would give it, set before each
# `dashboard report`): one interpreter start instead of one per umask.
UMASK_WRITER = """
import os, sys
from dashboard.cli.main import main
run, out = sys.argv[1], sys.argv[2]
for umask in map(int, sys.argv[3:]):
    os.umask(umask)
    code = main(["report", run, "--out", os.path.join(out, oct(umask)), "--format", "md,csv"])
    if code:
        sys.exit(f"umask {oct(umask)}: exit {code}")
"""


@pytest.fixture(scope="module")
def umask_reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("umask")
    proc = subprocess.run([sys.executable, "-c", UMASK_WRITER, str(RUN), str(out), *(str(u) for u, _ in UMASKS)],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    return out, proc


@pytest.mark.parametrize("umask, mode", UMASKS)
def test_reports_get_the_umasks_mode_not_the_temp_files(umask_reports, umask, mode):
    out, proc = umask_reports
    assert proc.returncode == 0, proc.stderr
    folder = out / oct(umask)
    modes = {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()}
    assert modes and set(modes.values()) == {mode}, {k: oct(v) for k, v in modes.items()}


def _cli(*args):
    return run_main("report", *args)   # in this process (dashboard_cli.py)


def test_cli_writes_reports(tmp_path):
    out = _cli(RUN, "--out", tmp_path, "--format", "md,json")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synthetic-a_seed036_vs_baseline.json",
                                                          "synthetic-a_seed036_vs_baseline.md"]
    out = _cli(RUN, "--out", tmp_path, "--shape", "verify 32/o", "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "synthetic-a_verify_32_o.csv").exists()


@pytest.mark.parametrize("args, words", [((FIXTURES / "corrupt.json",), "not valid JSON"),
                                         ((FIXTURES / "bad_columns.csv",), "baseline_us"),
                                         ((FIXTURES / "nope.json",), "nope.json: no run file"),
                                         ((RUN, "--format", "pdf"), "unknown format")])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, words):
    out = _cli(*args, "--out", tmp_path)
    assert out.returncode == 2
    assert words in out.stderr and "Traceback" not in out.stderr


# --- the README's form, unknown names, where a report may be written ------------------------------------------------
R3 = ROOT / "datasets/runs/2026-11-30_nvidia-h200_baseline-seed036-best-r3.json"


def test_candidate_alone_picks_its_pair(tmp_path):
    out = _cli(R3, "--candidate", "best", "--out", tmp_path, "--format", "json")
    assert out.returncode == 0, out.stderr
    js = json.loads((tmp_path / "baseline-seed036-best-r3_best_vs_baseline.json").read_text())
    data = runs.load_run_data(R3)
    assert (js["summary"]["candidate"], js["summary"]["baseline"]) == ("best", "baseline")
    assert js["summary"]["score"] == pytest.approx(runs.run_score(data, "baseline", "best").score)


def test_unknown_candidate_is_exit_2_and_writes_nothing(tmp_path):
    out = _cli(R3, "--candidate", "ghost", "--baseline", "baseline", "--out", tmp_path / "out")
    assert out.returncode == 2 and "no candidate 'ghost'" in out.stderr
    assert not (tmp_path / "out").exists()


def test_never_writes_into_datasets_or_over_a_run_or_an_input(tmp_path):
    before = sorted(p.name for p in (ROOT / "datasets" / "runs").iterdir())
    for out_dir in (ROOT / "datasets" / "runs", ROOT / "datasets"):
        out = _cli(R3, "--out", out_dir, "--format", "md")
        assert out.returncode == 2 and "refusing to write into datasets/" in out.stderr
    assert sorted(p.name for p in (ROOT / "datasets" / "runs").iterdir()) == before
    rep = report.build_from_path(RUN)
    victim = tmp_path / f"{rep.stem}.json"
    victim.write_text(RUN.read_text())             # a run file where the JSON report would go
    with pytest.raises(ValueError, match="refusing to overwrite a run file"):
        rep.write(tmp_path, ("md", "json"))
    assert victim.read_text() == RUN.read_text() and not (tmp_path / f"{rep.stem}.md").exists()  # nothing written
    table = tmp_path / "t.csv"
    table.write_text((ROOT / "datasets" / "official_036.csv").read_text())
    rep = report.build_from_path(table)
    rep.stem = "t"                                  # a report whose CSV would land on its own input
    with pytest.raises(ValueError, match="refusing to overwrite the report's own input"):
        rep.write(tmp_path, ("csv",), inputs=[table])


def test_a_kill_mid_write_leaves_the_previous_report_intact(tmp_path):
    """Write once; then a second writer is SIGKILLed right before its rename (everything written to the temp file):
    the report on disk is still the first one, whole."""
    first = report.build_from_path(RUN)
    [path] = first.write(tmp_path, ("md",))
    old = path.read_text()
    script = (
        "import os, signal, sys; sys.path.insert(0, sys.argv[1])\n"
        "from dashboard.documents import files, report\n"
        "rep = report.build_from_path(sys.argv[2], 'seed036', 'baseline')\n"   # another pair: other content
        "rep.stem = sys.argv[4]\n"
        "import datasets.runfile as rf; rf.os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        "rep.write(sys.argv[3], ('md',))\n")
    out = subprocess.run([sys.executable, "-c", script, str(ROOT), str(RUN), str(tmp_path), path.stem],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == -9, out.stderr
    assert path.read_text() == old and old.startswith("# projlab report — synthetic-a: seed036 vs baseline")
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers and all(p.startswith(".") for p in leftovers)  # the half-done file is hidden, never the report


def test_a_failed_write_removes_its_temp_file(tmp_path):
    rep = report.build_from_path(RUN)
    [path] = rep.write(tmp_path, ("md",))
    old = path.read_text()
    rep.markdown = lambda: "# half\n" + "\ud800"   # fails inside the write (a lone surrogate cannot be UTF-8)
    with pytest.raises(UnicodeEncodeError):
        rep.write(tmp_path, ("md",))
    assert path.read_text() == old and sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_report_for_another_workload_names_its_own_families_and_loads(tmp_path):
    """The Terms note speaks of the run's workload, never muse's five families and six loads."""
    llama = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_baseline-vs-llama31_8b_decode-r5.json"
    rep = report.build_from_path(llama)
    terms = rep.markdown().split("Terms", 1)[1]
    assert "In llama31_8b_decode: four families (qkv, o, gate_up, down)" in terms
    assert "four loads, decode 1 (M=1), decode 8 (M=8), decode 32 (M=32), prefill 128 (M=128)" in terms
    assert "muse" not in terms and "five" not in terms and "SGLang" not in terms
    assert "**flags**" in terms and "less_accurate" in terms
    muse = report.build_from_path(RUN)
    assert "In muse_bf16_proj: five families" in muse.markdown().split("Terms", 1)[1]


def test_reports_carry_the_library_ceiling_of_the_runs_gpu():
    """A measured H200 run: the whole-run report has the cuBLASLt search's table (its own file named), a per-shape
    report of a covered shape its ceiling as a fact and in the summary, an uncovered shape (the router) none."""
    run = ROOT / "datasets" / "runs" / "2026-12-04_nvidia-h200_baseline-vs-best-lt-m32-b.json"
    whole = report.build_from_path(run, candidate="best")
    lib = whole.tables["library ceiling"]
    assert "verify 32/pooler" in set(lib["shape"]) and "router" not in set(lib["family"])
    assert set(lib["source"]) == {"2026-12-04_nvidia-h200_cublaslt-130100.json"}
    one = report.build_from_path(run, candidate="best", shape="verify 32/pooler")
    row = lib.set_index("shape").loc["verify 32/pooler"]
    assert one.summary["library_ceiling_x"] == pytest.approx(row["torch_linear_us"] / row["library_us"])
    assert any(label.startswith("Library ceiling") for label, _ in one.facts)
    router = report.build_from_path(run, candidate="best", shape="verify 32/router")
    assert "library_ceiling_x" not in router.summary


def test_html_tables_never_break_a_number_across_lines():
    """Long method names may wrap anywhere; a number ("128", "1,234.5 µs", "1.02 [0.99,1.05]") never does."""
    import pandas as pd

    from dashboard.documents import report_render

    page = report_render._html_table(pd.DataFrame({"shape": ["decode 1/o"], "method": ["gemv{BN:1,num_warps:16}"],
                                                   "M": ["128"], "µs": ["1,234.567"], "ci": ["1.021 [0.990,1.050]"],
                                                   "delta": ["-3.5 µs"]}))
    cells = re.findall(r"<td( class='n')?>([^<]*)</td>", page)
    assert [text for cls, text in cells if cls] == ["128", "1,234.567", "1.021 [0.990,1.050]", "-3.5 µs"]
    assert ".tbl td.n{white-space:nowrap" in report_render.STYLE


def test_a_run_report_is_its_sections_in_order():
    """_run_report only joins the records RUN_SECTIONS return: every fact, table, figure and note of the report
    comes from exactly one section, in the sections' order."""
    from dashboard.model import sources

    data = runs.load_run_data(RUN)
    base, cand = sources.default_pair(data)
    rep = report.build(data, base, cand)
    ctx = report._RunContext(data, base, cand, data.workload, None, "measured", False,
                             data.run.get("label", data.path.stem), runs.shape_table(data, data.workload),
                             rep.tables["shapes"], data.run.get("environment", {}))
    parts = [section(ctx) for section in report.RUN_SECTIONS]
    assert all(isinstance(p, report._Section) for p in parts)
    assert rep.facts == [f for p in parts for f in p.facts]
    assert list(rep.tables) == [name for p in parts for name in p.tables]
    assert list(rep.display) == [name for p in parts for name in p.display]
    assert [n.heading for n in rep.notes] == [n.heading for p in parts for n in p.notes]
    assert len(rep.figures) == sum(len(p.figures) for p in parts)
    assert list(rep.summary) == list(dict.fromkeys(k for p in parts for k in p.summary))
