"""The Kernels page on the committed H200 explain run (AppTest): it opens on the call furthest from its floor, a
?shape= link picks the shape, the findings and tables carry the run's numbers; a broken explain run is named."""

import pytest

from dashboard import kernels
from datasets import load_workload

RUN_NAME = "2026-12-01_nvidia-h200_explain-baseline-best.json"


def _open(app, query=None, pin=True):
    """The Kernels page; pin=True opens RUN_NAME through its ?explain= link (the default run changes as runs are
    committed)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=90)
    params = {"explain": RUN_NAME} if pin else {}
    params.update(query or {})
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page("app_pages/kernels.py")
    at.run()
    return at


@pytest.fixture(scope="module")
def calls():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "datasets" / "runs" / RUN_NAME
    return kernels.call_table(kernels.load_explain(path), load_workload())


def test_opens_on_a_richest_run_and_the_worst_call(app, calls):
    """Without a link: an explain run with the most candidates (the newest of those); with one: that run, opened on
    its call furthest from the floor."""
    import json
    from pathlib import Path

    at = _open(app, pin=False)
    assert not at.exception and not at.error, [e.value for e in at.error]
    box = at.sidebar.selectbox(key="kernels_source")
    runs = Path(__file__).resolve().parents[2] / "datasets" / "runs"
    n_cands = {name: len({c["candidate"] for c in json.loads((runs / name).read_text())["calls"]})
               for name in box.options if (runs / name).is_file()}
    assert n_cands[box.value] == max(n_cands.values()) >= 2
    at = _open(app)
    assert at.sidebar.selectbox(key="kernels_source").value == RUN_NAME
    assert at.selectbox(key="kernels_shape").value == calls.sort_values("sol").iloc[0]["shape"]


def test_a_shape_link_picks_the_shape_and_the_page_shows_its_numbers(app, calls):
    at = _open(app, {"shape": "verify 1/unpooler"})
    assert at.selectbox(key="kernels_shape").value == "verify 1/unpooler"
    here = calls[calls["shape"] == "verify 1/unpooler"]
    floor = next(m for m in at.metric if m.label.startswith("Floor"))
    assert floor.value == f"{here['floor_us'].iloc[0]:.2f} µs"
    text = app.text_of(at)
    assert "grid of 48 programs leaves 84 of 132 SMs idle" in text
    table = at.dataframe[0].value
    assert set(table["candidate"]) == {"baseline", "best"} and len(table) == int(here["launches"].sum())
    assert {"kernel", "dram_read_bytes", "grid", "registers", "shared_bytes", "time_us"} <= set(table.columns)
    labels = [b.proto.label for b in at.get("download_button")]
    assert {"HTML", "MD", "CSV", "JSON"} <= set(labels) and len(labels) == 6, labels


def test_candidate_filter(app):
    at = _open(app, {"shape": "decode 16/router"})
    at.multiselect(key=f"kernels_cands|{RUN_NAME}").set_value(["best"]).run()
    assert set(at.dataframe[0].value["candidate"]) == {"best"}
    assert "**baseline**" not in app.text_of(at)


def test_a_broken_explain_run_is_named_not_offered(app, monkeypatch):
    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", str(app.FIXTURES / "synthetic_explain_broken.json"))
    at = _open(app)
    assert not at.exception
    warn = [w.value for w in at.sidebar.warning]
    assert any("synthetic_explain_broken.json" in w and "kernels[1].duration_us" in w for w in warn), warn
    assert "synthetic_explain_broken.json" not in at.sidebar.selectbox(key="kernels_source").options
