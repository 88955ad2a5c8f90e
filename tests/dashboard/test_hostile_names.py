"""Names reach terminals and reports escaped: control characters, ANSI codes, CR, NUL and bidi overrides show as
escapes wherever a run is read (datasets.jsonfile), and no name adds markup to an HTML report or a chart label
(dashboard.plots.figures.html_labels)."""
import json
import re
from pathlib import Path

import pytest

from dashboard.plots import figures
from dashboard.cli.main import main

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "2000-01-01_synthetic_synthetic-complete.json"
HOSTILE = "fa\x1b[31mst\r\nFAKE: score 9.9\x00\u202eevil<a href=http://x.test>link</a>"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202e]")   # what must never reach a terminal raw (\t, \n are layout)
LINK = re.compile(r"(<|\\u003c)a href=http://x\.test", re.IGNORECASE)


@pytest.fixture
def hostile_run(tmp_path) -> Path:
    run = json.loads(FIXTURE.read_text())
    for record in run["results"] + run["pairs"] + run.get("failures", []):
        if record.get("candidate") == "fast":
            record["candidate"] = HOSTILE
    settings = run["environment"].get("settings") or {}
    if settings.get("candidates"):
        settings["candidates"] = [HOSTILE if c == "fast" else c for c in settings["candidates"]]
    path = tmp_path / FIXTURE.name
    path.write_text(json.dumps(run))
    return path


@pytest.mark.parametrize("verb", ["summarize", "table"])
def test_the_terminal_sees_escapes(hostile_run, capsys, verb):
    assert main([verb, str(hostile_run)]) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert not RAW.search(text)
    assert "fa\\x1b[31mst\\r\\nFAKE: score 9.9\\x00\\u202eevil" in text
    assert not any(line.startswith("FAKE") for line in text.splitlines())


def test_reports_escape_names_in_markdown_and_html(hostile_run, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(hostile_run), "--out", str(out), "--format", "md,html"]) == 0
    md = next(out.glob("*.md")).read_text()
    html = next(out.glob("*.html")).read_text()
    assert not RAW.search(md) and "x1b" in md and "u202eevil" in md   # shown escaped (markdown-escaped too)
    assert not LINK.search(html), "a name became a link in the HTML report"
    assert not RAW.search(html.replace("\n", "").replace("\t", ""))


def test_chart_labels_cannot_carry_links_but_keep_the_builders_own_tags():
    import pandas as pd

    fig = figures.ratio_bars(pd.DataFrame({"label": ["<a href=http://x.test>x</a>"], "ratio": [1.2]}),
                             "measured <b>run</b>")
    assert fig.data[0].x == ("&lt;a href=http://x.test>x&lt;/a>",)
    assert "<br><sup>measured <b>run</b></sup>" in fig.layout.title.text
    assert not LINK.search(fig.to_json())
