"""`python -m dashboard explain` and `python -m dashboard report` on the committed H200 explain run (main() in this
process, dashboard_cli.py; the host without plotly in a subprocess): the printed table carries the run's numbers, bad
input is one line with exit status 2."""
import json
import subprocess
import sys
from pathlib import Path

from dashboard_cli import run_main

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "datasets" / "runs" / "2026-12-01_nvidia-h200_explain-baseline-best.json"


def cli(*args):
    return run_main(*args)   # in this process (dashboard_cli.py)


def test_explain_prints_every_kernel_of_a_candidate():
    out = cli("explain", str(RUN), "--candidate", "best")
    assert out.returncode == 0, out.stderr
    run = json.loads(RUN.read_text())
    best = [k for k in run["kernels"] if k["candidate"] == "best"]
    rows = [l for l in out.stdout.splitlines() if l[:22].strip() and " best " in l[:40] and "/" in l[:22]]
    assert len(rows) == len(best)
    router = next(l for l in rows if l.startswith("decode 16/router") and "router_hilo_atomic_kernel" in l)
    k = next(k for k in best if k["load"] == "decode 16" and k["family"] == "router" and k["index"] == 1)
    assert f"{(k['dram_read_bytes'] + k['dram_write_bytes']) / 1e6:.2f}" in router and f" {k['grid']} " in router
    assert "Gap to the floor per load" in out.stdout and "baseline" not in out.stdout.split("Gap to the floor")[1]


def test_explain_one_shape_shows_both_candidates_and_findings():
    out = cli("explain", str(RUN), "--shape", "verify 1/unpooler")
    assert out.returncode == 0, out.stderr
    assert "grid of 48 programs leaves 84 of 132 SMs idle" in out.stdout
    assert "  baseline:" in out.stdout and "  best:" in out.stdout


def test_explain_bad_input_is_one_line():
    for args, needle in [((str(RUN), "--candidate", "nope"), "no profiled candidate 'nope'"),
                         ((str(RUN), "--shape", "decode 9/o"), "no profiled shape 'decode 9/o'"),
                         (("datasets/runs/2026-11-30_nvidia-h200_tune.json.gz",), "not an explain run"),
                         (("missing.json",), "missing.json: no run file (.json / .json.gz) by that name")]:
        out = cli("explain", *args)
        assert out.returncode == 2, args
        assert needle in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_report_of_an_explain_run_is_its_kernel_breakdown(tmp_path):
    out = cli("report", str(RUN), "--out", str(tmp_path), "--candidate", "best", "--format", "md,csv")
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "explain-baseline-best_kernels_best.md").read_text()
    assert "## kernels" in md and "## gap per load" in md and "router_hilo_atomic_kernel" in md
    csv = (tmp_path / "explain-baseline-best_kernels_best.csv").read_text().splitlines()
    assert len(csv) - 1 == sum(1 for k in json.loads(RUN.read_text())["kernels"] if k["candidate"] == "best")


# plotly is hidden from the child's imports, as on a GPU host that has the profiler's packages and not the app's
_WITHOUT_PLOTLY = """
import runpy, sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'plotly':
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
sys.argv = ['dashboard'] + sys.argv[1:]
runpy.run_module('dashboard', run_name='__main__')
"""


def test_without_plotly_the_tables_print_and_the_figure_commands_say_what_is_missing(tmp_path):
    sweep = ROOT / "datasets" / "runs" / "2026-12-02_nvidia-h200_baseline-seed036-seed039-best-fixup.json"

    def run(*args):
        return subprocess.run([sys.executable, "-c", _WITHOUT_PLOTLY, *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)

    for args in (("summarize", str(sweep)), ("table", str(sweep))):
        out = run(*args)
        assert out.returncode == 0 and "best" in out.stdout and not out.stderr.strip(), (args, out.stderr[-500:])
    for args in (("explain", str(RUN)), ("report", str(RUN), "--out", str(tmp_path / "r"))):
        out = run(*args)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (args, out.stderr[-500:])
        assert out.stderr.strip() == (f"error: python -m dashboard {args[0]} needs the Python package 'plotly', "
                                      "which is not installed here (pip install -r requirements.txt)")


def test_explain_prints_no_negative_zero():
    """A gap part that rounds to zero (a residue like -0.001 µs between kernels) prints 0.00, not -0.00."""
    out = run_main("explain", "2026-12-01_nvidia-h200_explain-baseline-best-r12")
    assert out.returncode == 0, out.stderr
    assert "between 0.00" in out.stdout and "-0.00" not in out.stdout
