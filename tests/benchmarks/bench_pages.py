"""Render-time benchmark (a script, not a test): every page through Streamlit's AppTest on the committed data, then
the size of a whole-run report.

    python3 tests/benchmarks/bench_pages.py [--repeat 3] [--run PATH]

Sources: the published official table, and the committed run the app opens on (dashboard.model.run_kinds.default_run; else the
app's synthetic fixture, said so in the output). The process first renders the Overview once (a warm server: its
imports done, nothing else computed), then prints, per page and source, the page's first visit (a new session, as a
new browser tab: the page's own loading and deriving, including picking the source) and the median of the next
renders (warm). Targets on a 2-core machine: a first visit <= 3 s, a warm render < 1 s.
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from app_page_list import PAGES, SOURCE_PAGES  # noqa: E402

NO_SOURCE = tuple(p for p in PAGES if p not in SOURCE_PAGES)  # no sidebar source picker
TARGET_S = 1.0          # a warm render
FIRST_TARGET_S = 3.0    # a page's first visit on a warm server
_SERVER: dict = {}      # what a server does once at its start and its sessions share (see _render)


def _render(page: str, source: str | None, repeat: int) -> tuple[float, float, bool]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    # A server scans the installed packages for custom components once, at its start; each AppTest does it again on
    # its first run (1-3 s on 2 cores), so every render after the first shares the first one's scan, as sessions of
    # one server do.
    at._bidi_component_manager = _SERVER.get("components")
    at.switch_page(f"app_pages/{page}.py")
    times = []
    for i in range(1 + repeat):
        t0 = time.perf_counter()
        at.run()
        if source and i == 0 and any(s.key == "source" for s in at.sidebar.selectbox):
            at.sidebar.selectbox(key="source").set_value(source)
            at.run()  # counted in the first render: opening a page on a source takes both runs
        times.append(time.perf_counter() - t0)
    _SERVER.setdefault("components", at._bidi_component_manager)
    return times[0], statistics.median(times[1:]) if repeat else times[0], not at.exception


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="warm renders per page (default 3)")
    ap.add_argument("--run", help="a run file to use as the measured source")
    ap.add_argument("--pages", nargs="+", choices=PAGES, default=PAGES, help="only these pages (default: all)")
    args = ap.parse_args()
    from dashboard.documents import run_index
    from dashboard.model.run_kinds import default_run
    from dashboard.model.runs import list_runs

    run = Path(args.run) if args.run else default_run(list(run_index.metas(list_runs(), run_index.read()).values()))
    note = "committed run"
    if run is None:
        run, note = ROOT / "tests" / "fixtures" / "app" / "synthetic_a.json", "synthetic fixture (no committed run)"
    if args.run or note.startswith("synthetic"):
        os.environ["PROJLAB_EXTRA_RUNS"] = str(run)
    sources = [("Official 036 table (published)", "official table (published)"),
               (f"run: {run.name}", f"{run.name} ({note})")]
    print(f"cpus: {os.cpu_count()}  python {sys.version.split()[0]}  targets: first visit <= {FIRST_TARGET_S:.0f} s, "
          f"warm < {TARGET_S:.1f} s per page")
    t0 = time.perf_counter()
    _render("overview", None, 0)   # the server's start: imports and the default run's first page
    print(f"warm-up (a fresh process's first page: imports, the default run): {time.perf_counter() - t0:.2f} s\n")
    print(f"{'page':<18}{'source':<52}{'first s':>9}{'warm s':>9}  ok")
    worst, worst_first = 0.0, 0.0
    for page in args.pages:
        for source, label in sources:
            if page in NO_SOURCE and source.startswith("run:"):
                continue  # these pages do not use the sidebar source
            first, warm, ok = _render(page, source, args.repeat)
            worst, worst_first = max(worst, warm), max(worst_first, first)
            flag = "" if warm < TARGET_S and first <= FIRST_TARGET_S else "  SLOW"
            print(f"{page:<18}{label[:50]:<52}{first:>9.3f}{warm:>9.3f}  {'yes' if ok else 'EXCEPTION'}{flag}")
    verdict = "meets" if worst < TARGET_S else "MISSES"
    print(f"\nslowest first visit on a warm server: {worst_first:.3f} s "
          f"({'meets' if worst_first <= FIRST_TARGET_S else 'MISSES'} the {FIRST_TARGET_S:.0f} s target)")
    print(f"slowest warm render: {worst:.3f} s ({verdict} the {TARGET_S:.1f} s target)")
    _report_size(run)
    return 0


def _report_size(run: Path) -> None:
    """The whole-run report of `run` (its first pair, as `python -m dashboard report RUN` writes it): HTML size and
    build time."""
    from dashboard.documents import report

    t0 = time.perf_counter()
    rep = report.build_from_path(run)
    html = rep.html()
    took = time.perf_counter() - t0
    print(f"report HTML for {run.name} ({rep.summary.get('candidate')} vs {rep.summary.get('baseline')}): "
          f"{len(html.encode()) / 1e6:.2f} MB, {len(rep.figures)} figures, built in {took:.2f} s")


if __name__ == "__main__":
    sys.exit(main())
