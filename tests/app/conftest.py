"""AppTest helpers: open a page of app.py with the app's synthetic run fixtures on the source list."""
import importlib.util
import os
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app_page_list import PAGES, SOURCE_PAGES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "app"
RUN_A = "run: synthetic_a.json"


@pytest.fixture(autouse=True)
def upload_dir(tmp_path, monkeypatch):
    """Every test's uploads in a folder of its own (ui.uploads keeps them on the server, by content hash)."""
    folder = tmp_path / "uploads"
    monkeypatch.setenv("PROJLAB_UPLOAD_DIR", str(folder))
    return folder


@pytest.fixture
def extra_runs(monkeypatch):
    """Put fixture runs on the source list (as $PROJLAB_EXTRA_RUNS, read at every rerun)."""
    def use(*names):
        monkeypatch.setenv("PROJLAB_EXTRA_RUNS", os.pathsep.join(str(FIXTURES / n) for n in names))
    use("synthetic_a.json", "synthetic_b.json", "synthetic_decode_only.json")
    return use


OFFICIAL = "Official 036 table (published)"


def _open_page(page: str, source: str | None = OFFICIAL, timeout: float = 60) -> AppTest:
    """Open a page and pick `source` in the sidebar (explicitly: the app defaults to the newest committed run)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    if source is not None and any(s.key == "source" for s in at.sidebar.selectbox):
        at.sidebar.selectbox(key="source").set_value(source).run()
    return at


def _text_of(at: AppTest) -> str:
    """Everything a reader sees as text: markdown, captions, metrics, alerts, table cells."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    parts += [a.value for kind in ("error", "warning", "info", "success") for a in at.get(kind)]
    for df in at.dataframe:
        parts.append(df.value.to_string())
    return "\n".join(map(str, parts))


def _shown(markdown: str) -> str:
    """What a reader sees of an element's markdown source: its backslash escapes (ui.widgets.md_text) resolved."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _cells(line: str) -> list[str]:
    """A markdown table row's cells as shown: split on unescaped pipes, escapes and bold markers removed."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [re.sub(r"\\(.)", r"\1", c.strip().removeprefix("**").removesuffix("**")) for c in cells]


def _figure_elements(at: AppTest) -> list:
    """The markdown elements that are figure tables (ui.widgets.figure_table: labels in the head row, values
    in the row below)."""
    return [m for m in at.markdown if re.match(r"\| .*\n\|( --- \|)+\n\| ", m.value)]


def _figures(at: AppTest) -> dict[str, str]:
    """Every figure a page shows, label → value as the reader sees it: its metrics and its figure tables."""
    out = {m.label: m.value for m in at.metric}
    for element in _figure_elements(at):
        head, _, values = element.value.split("\n")[:3]
        out.update(zip(_cells(head), _cells(values)))
    return out


def _figure_element(at: AppTest, label: str):
    """The figure table that shows `label` (its .value: the table and its note; its .proto.help: the tooltip)."""
    return next(m for m in _figure_elements(at) if label in _cells(m.value.split("\n")[0]))


def _upload_plan(at: AppTest, path: Path, name: str | None = None) -> AppTest:
    """On the Dispatch page: choose '(upload a plan JSON)' and upload `path` (its bytes, under `name`)."""
    at.selectbox(key="dispatch_plan").set_value("(upload a plan JSON)").run()
    at.file_uploader(key="dispatch_upload").set_value((name or path.name, Path(path).read_bytes(),
                                                       "application/json")).run()
    return at


# Uploaders drawn only inside an expander that is open (uploader key -> the expander's key): open it first, as a
# visitor clicks it.
_UPLOAD_EXPANDERS = {"upload_overview": "upload_open"}


def _open_expander(at: AppTest, key: str) -> AppTest:
    """Open the expander `key` (one created with on_change="rerun", whose content is drawn only while open)."""
    at.session_state[key] = True
    at.run()
    return at


def _upload(at: AppTest, key: str, name: str, data: bytes, mime: str = "application/json") -> AppTest:
    """Upload `data` as `name` through the uploader `key` (e.g. 'upload_overview' inside Overview's expander)."""
    if key in _UPLOAD_EXPANDERS and not any(u.key == key for u in at.get("file_uploader")):
        _open_expander(at, _UPLOAD_EXPANDERS[key])
    at.file_uploader(key=key).set_value((name, data, mime)).run()
    return at


def _compare(at: AppTest, series: list[str]) -> AppTest:
    """On Compare: choose the runs the series come from ('run: NAME · cand' → NAME), then the series."""
    names = {"Official 036 table (published)": "official_036.csv"}
    chosen = list(dict.fromkeys(names.get(s.rsplit(" · ", 1)[0], s.rsplit(" · ", 1)[0].split(": ", 1)[-1])
                                for s in series))
    at.multiselect(key="cmp_runs").set_value(chosen).run()
    at.multiselect(key="cmp_series").set_value(series).run()
    return at


class _Helpers:
    """Handed to tests as the `app` fixture (importlib mode: tests cannot import conftest directly)."""
    FIXTURES, PAGES, ROOT, RUN_A, SOURCE_PAGES = FIXTURES, PAGES, ROOT, RUN_A, SOURCE_PAGES
    open_page = staticmethod(_open_page)
    text_of = staticmethod(_text_of)
    figures = staticmethod(_figures)
    figure_element = staticmethod(_figure_element)
    upload_plan = staticmethod(_upload_plan)
    upload = staticmethod(_upload)
    open_expander = staticmethod(_open_expander)
    compare = staticmethod(_compare)
    shown = staticmethod(_shown)


@pytest.fixture
def app(extra_runs):
    return _Helpers


_SPEC = importlib.util.spec_from_file_location("edit_runs", ROOT / "tests" / "fixtures" / "runs" / "edit_runs.py")
EDIT = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(EDIT)


@pytest.fixture
def edited(tmp_path, extra_runs, monkeypatch):
    """Write an edited copy of the committed paired sweep edit_runs.R3 (tests/fixtures/runs/edit_runs.py: TEST
    DATA, labelled EDITED-) and put it alone on the source list; returns (path, the module for more edits)."""
    def make(change, tag):
        path = EDIT.write(change(EDIT.r3()), tmp_path, tag)
        monkeypatch.setenv("PROJLAB_EXTRA_RUNS", str(path))
        return path
    make.EDIT = EDIT
    return make
