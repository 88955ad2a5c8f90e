"""Every page's text on the committed data, against a capture: tests/fixtures/app/page_text.json.gz, written by
tests/fixtures/app/page_text.py from the app. The capture was first taken before the app's data layer moved from
app_pages/common.py into ui/ (the move kept every page's text but the changes listed in the commit that made it);
it is taken again, by that script, whenever a page's text changes on purpose or a committed run is added, so an
unintended change to what a page shows fails here. The sidebar's "Source:" line is left out (the picker's option
text: tests/dashboard/test_sources_picker.py)."""
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


# Text changed on purpose since the capture, until it is taken again: (case, or "*" for every case; what it said;
# what it says).
INTENDED: list[tuple[str, str, str]] = [
    ("*", "(tolerances).. Floors (derived)", "(tolerances). Floors (derived)"),   # one full stop after the source
]


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
        assert now == old, name
