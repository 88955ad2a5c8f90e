"""Every name from outside is shown as text on every page: a run whose candidate, GPU and label carry a markdown
link, an image, HTML, a bare URL and Streamlit's colour and icon directives is opened on every page (and named in
the address), and no element that renders markdown (markdown, captions, alerts, headings, widget labels, expander
and tab labels, tooltips) holds any of it as live markup: everything from the run goes through ui.widgets.md_text."""
import json
import re

import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.testing.v1 import AppTest

EVIL = "x[link](http://evil.test/l) ![pixel](http://evil.test/p.png) <img src=http://evil.test/i> www.evil.test :red[boo] :material/home: **b** `c` $m$ # h"
NAME = "hostile.json"
# Live markup in a markdown source: an unescaped '[...](', an HTML tag, a URL or a www. name (GFM links both), a
# Streamlit directive.
LIVE = [re.compile(r"(?<!\\)\[[^\]\\]*(?:\\.[^\]\\]*)*(?<!\\)\]\("), re.compile(r"(?<!\\)<(img|a)\b", re.I),
        re.compile(r"https?://evil", re.I), re.compile(r"(?<!\\)www\.evil"), re.compile(r"(?<!\\):red(?<!\\)\["),
        re.compile(r"(?<!\\):material/")]
MARKDOWN_FIELDS = {"body", "label", "help", "captions"}


@pytest.fixture
def hostile_run(app, tmp_path, monkeypatch):
    run = json.loads((app.FIXTURES / "synthetic_a.json").read_text())
    for record in run["results"] + run["pairs"] + run.get("failures", []):
        if record.get("candidate") == "seed036":
            record["candidate"] = EVIL
    run["environment"]["settings"]["candidates"] = ["baseline", EVIL]
    run["environment"]["gpu"] = EVIL
    path = tmp_path / NAME
    path.write_text(json.dumps(run))
    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", str(path))
    return path


def _markdown_strings(node, where=""):
    """(where, text) for every string an element renders as markdown, found in its protobuf message."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in MARKDOWN_FIELDS:
                for text in (value if isinstance(value, list) else [value]):
                    if isinstance(text, str):
                        yield f"{where}.{key}", text
            elif key not in ("options", "spec", "data", "arrowData", "defaultValue", "value", "formattedValue"):
                yield from _markdown_strings(value, f"{where}.{key}")
    elif isinstance(node, list):
        for item in node:
            yield from _markdown_strings(item, where)


def _nodes(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _nodes(child)


CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`).+?(?<!`)\1(?!`)")   # inside a code span nothing is markup


def live_markup(at: AppTest) -> list[str]:
    found = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None:
            continue
        for where, text in _markdown_strings(MessageToDict(proto)):
            if any(p.search(CODE_SPAN.sub("", text)) for p in LIVE):
                found.append(f"{type(node).__name__}{where}: {text!r}")
    return found


def test_the_check_finds_a_name_drawn_as_markdown():
    at = AppTest.from_string(f"import streamlit as st\nst.caption({EVIL!r})\nst.expander({EVIL!r})")
    at.run()
    assert len(live_markup(at)) == 2


@pytest.mark.parametrize("page", ["overview", "where_time_goes", "shapes", "roofline", "planner", "reports",
                                  "compare", "probes", "kernels"])
def test_no_page_draws_a_name_from_a_run_as_markup(app, hostile_run, page):
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"source": NAME, "candidate": EVIL, "runs": NAME})
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    if any(s.key == "source" for s in at.sidebar.selectbox):
        assert at.sidebar.selectbox(key="source").value == f"run: {NAME}"
    assert not live_markup(at), live_markup(at)


def test_an_address_naming_markup_is_shown_as_text(app):
    """A link's ?source= / ?candidate= / ?series= values are outside input too: the warning naming them is text."""
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"source": EVIL, "candidate": EVIL, "series": EVIL, "baseline": EVIL})
    at.switch_page("app_pages/overview.py")
    at.run()
    assert not at.exception
    assert any("x\\[link\\]" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not live_markup(at), live_markup(at)
    at.switch_page("app_pages/compare.py")
    at.run()
    assert not at.exception and not live_markup(at), live_markup(at)


def test_an_uploaded_run_with_markup_in_its_names_is_shown_as_text(app, hostile_run):
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    at.switch_page("app_pages/overview.py")
    at.run()
    app.upload(at, "upload_overview", "[x](http://evil.test) up.json", hostile_run.read_bytes())
    assert not at.exception
    assert at.sidebar.selectbox(key="source").value.startswith("upload: ")
    assert not live_markup(at), live_markup(at)


def test_an_uploaded_plan_with_markup_in_its_fields_is_shown_as_text(app, tmp_path):
    plan = json.loads((app.ROOT / "kernels" / "plans" / "best.json").read_text())
    plan.update(name=EVIL, description=EVIL, gpu=EVIL + " `x`", tuned_from=EVIL)
    path = tmp_path / "evil_plan.json"
    path.write_text(json.dumps(plan))
    at = app.open_page("dispatch", source=None)
    app.upload_plan(at, path)
    assert not at.exception
    assert any("x\\[link\\]" in m.value for m in at.markdown), [m.value for m in at.markdown][:5]
    assert not live_markup(at), live_markup(at)
