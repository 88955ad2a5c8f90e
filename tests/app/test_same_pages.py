"""The app's data layer moved from app_pages/common.py into ui/ (one in-memory cache per input, a committed run index
instead of reading every run): every page must show the same text on the committed data as before the move.
tests/fixtures/app/page_text.json.gz was captured by tests/fixtures/app/page_text.py from the app before the move;
this renders the same pages now and compares. The sidebar's "Source:" line is left out: the picker's option text was
made readable on purpose (tests/dashboard/test_sources_picker.py checks it)."""
import gzip
import importlib.util
import json
import re

import pytest

from dashboard import run_index

_SPEC = importlib.util.spec_from_file_location("page_text", __file__.rsplit("/tests/", 1)[0]
                                               + "/tests/fixtures/app/page_text.py")
PAGE_TEXT = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(PAGE_TEXT)
BEFORE = json.loads(gzip.decompress(PAGE_TEXT.FIXTURE.read_bytes()))
# Where the old classification differed, and why: its raw-JSON scorer (runs.scored_count_raw, now deleted) counted a
# candidate whose result the gate marks "disturbed" (a candidate changed process-wide state) as scored;
# runs.scored_candidates, the one scorer left, does not. Neither run pairs the baseline with the shipped plan, so the
# run the app opens on is the same.
SCORED_FIXED = {"2026-12-02_nvidia-h200_baseline-vs-known-wrong-own-weights.json": (1, 0),
                "2026-12-02_nvidia-h200_baseline-vs-two-controls-canary-all.json": (3, 2)}


# Text changed on purpose since the capture: (case, or "*" for every case; what it said; what it says).
INTENDED = [("*", "An upload stays in this browser session.", "An upload is kept on this server (the newest 100 "
             "uploads, 256 MB in all), so a reload or a link to it on this server shows it again."),
            ("*", "scored alone through the correctness gate (**measured**)",   # a score is derived from measured times
             "scored alone through the correctness gate (**derived** from its measured times)"),
            # the Planner's what-if slider kept the default run's ratio after a switch to the official table; it now
            # starts at the official table's own ratio, so the untouched score is the table's (1.3012 x, rounded)
            ("planner|Official 036 table (published)", "New score (derived) 1.3058×", "New score (derived) 1.3013×"),
            ("planner|Official 036 table (published)", "new score (derived) 23.42%", "new score (derived) 23.15%")]


def _intended(case: str, text: list[str]) -> list[str]:
    for where, old, new in INTENDED:
        if where in ("*", case):
            text = [t.replace(old, new) for t in text]
    return text


def _without_source_line(sidebar: list[str]) -> list[str]:
    """The sidebar without what names the source: the Source line, and the whole file name now shown under the
    Kernels page's picker (its options show date, label and candidates)."""
    return [re.sub(r"^markdown: Source: \*\*.*?\*\*(  \n:small\[:gray\[[^\n]*\]\])?", "markdown: Source:", t)
            for t in sidebar if not re.fullmatch(r"caption: [\w.-]+\.json(\.gz)?", t)]


@pytest.mark.parametrize("case", sorted(BEFORE["pages"]))
def test_every_page_shows_the_same_text_as_before_the_move(case, monkeypatch):
    monkeypatch.delenv("PROJLAB_EXTRA_RUNS", raising=False)
    page, source = case.split("|")
    now = PAGE_TEXT.render(page, source or None)
    before = BEFORE["pages"][case]
    assert now["exception"] == before["exception"] == []
    assert now["main"] == _intended(case, before["main"])
    assert _without_source_line(now["sidebar"]) == _without_source_line(_intended(case, before["sidebar"]))


def test_the_run_index_classifies_every_committed_run_as_before():
    index = {name: meta for name, (_, meta) in run_index.read().items()}
    assert set(index) == set(BEFORE["metas"])
    for name, old in BEFORE["metas"].items():
        meta = index[name]
        now = {"kind": meta.kind, "created_utc": meta.created_utc, "workload": meta.workload,
               "candidates": list(meta.candidates), "cluster": meta.cluster, "scored": meta.scored}
        if name in SCORED_FIXED:
            assert (old["scored"], now["scored"]) == SCORED_FIXED[name]
            old = {**old, "scored": now["scored"]}
        assert now == old, name
