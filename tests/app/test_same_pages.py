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

from dashboard.documents import run_index

_SPEC = importlib.util.spec_from_file_location("page_text", __file__.rsplit("/tests/", 1)[0]
                                               + "/tests/fixtures/app/page_text.py")
PAGE_TEXT = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(PAGE_TEXT)
BEFORE = json.loads(gzip.decompress(PAGE_TEXT.FIXTURE.read_bytes()))


# Text changed on purpose since the capture, until it is taken again: (case, or "*" for every case; what it said;
# what it says).
INTENDED: list[tuple[str, str, str]] = [
    ("*", 'dashboard/kernel_findings.py', 'dashboard/model/kernel_findings.py'),   # dashboard/ split into sub-packages by job
    ("*", 'dashboard/kernels.py', 'dashboard/model/kernels.py'),   # dashboard/ split into sub-packages by job
    ("*", 'dashboard/noise.py', 'dashboard/model/noise.py'),   # dashboard/ split into sub-packages by job
    ("*", 'dashboard.noise', 'dashboard.model.noise'),   # dashboard/ split into sub-packages by job
    # The upload folder's quotas (ui/uploads.py): per browser session, and a server cap that refuses.
    ("*", "An upload is kept on this server (the newest 100 uploads, 256 MB in all), so a reload or a link to it on "
          "this server shows it again.",
     "An upload is kept on this server, so a reload or a link to it on this server shows it again: 20 uploads "
     "(64 MB) per browser session, your oldest replaced first; 100 uploads (256 MB) on the server, refused when "
     "full."),
    # One markdown escape for pages and reports (dashboard.documents.report_render.md_escape): an underscore inside a word is
    # not markup and stays as it is; a ':' before a letter is escaped (a Streamlit directive).
    ("*", "less\\_accurate", "less_accurate"), ("*", "\n- at::", "\n- at:\\:"),
    # ... and a '#' in a name is escaped on pages too, as it always was in reports.
    ("*", "**baseline#2**", "**baseline\\#2**"), ("*", "baseline#2 (derived) |", "baseline\\#2 (derived) |"),
    # the glossary says where a measurement comes from on any device, and the verdict a device without evidence gets
    ("*", "timed on an H200 by `python -m profiler`",
     "timed on a device (the committed runs: an H200; a CPU or another GPU is named in its run) by "
     "`python -m profiler`"),
    ("*", "SAME ROUTE · NO SAMPLES", "SAME ROUTE · NO SAMPLES · NO VERDICT"),
    ("*", "so no CI and no verdict.", "so no CI and no verdict. **NO VERDICT**: no repeat evidence on the run's "
     "device (a band comes only from the same kind of device: its committed repeats, or the run's own repeat such "
     "as `baseline#2`)."),
    ("*", "(`dashboard/model/noise.py`) gives every verdict", "(`datasets/noise_model.py`, derived by `dashboard/model/noise.py`) "
     "gives every verdict"),
    # the Run page names --device cpu for a machine without a GPU
    ("run|", "Other useful forms: `--shapes", "Other useful forms: `--device cpu` (no GPU: checks a candidate and "
     "times it on this machine's CPU, its own floors and verdicts; a CPU time ranks candidates here, it says nothing "
     "about a GPU's), `--shapes"),
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


# Kinds renamed on purpose since the capture: the runs of `python -m profiler survey` (its old name `screen`, which
# the source screen also bears) are of kind "survey".
RENAMED_KINDS = {"screen": "survey"}


def test_the_run_index_classifies_every_committed_run_as_before():
    index = {name: meta for name, (_, meta) in run_index.read().items()}
    assert set(BEFORE["metas"]) <= set(index)   # runs committed since are new entries, never changed ones
    for name, old in BEFORE["metas"].items():
        meta = index[name]
        now = {"kind": meta.kind, "created_utc": meta.created_utc, "workload": meta.workload,
               "candidates": list(meta.candidates), "cluster": meta.cluster, "scored": meta.scored}
        assert now == old | {"kind": RENAMED_KINDS.get(old["kind"], old["kind"])}, name
