"""The Kernels page on the committed H200 explain run (AppTest): it opens on the call furthest from its floor, a
?shape= link picks the shape, the findings and tables carry the run's numbers; a broken explain run is named."""

import pytest

from dashboard.model import kernels
from dashboard.model import runs as runs_mod
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
    return kernels.call_table(kernels.from_run_data(runs_mod.load_run_data(path)), load_workload())


SWEEP = "2026-12-01_nvidia-h200_baseline-seed036-best-r28.json"
LLAMA_SWEEP = "2026-12-01_nvidia-h200_baseline-vs-llama31_8b_decode-r5.json"
LLAMA_EXPLAIN = "2026-12-01_nvidia-h200_explain-llama31_8b_decode-r5.json"


def _methods(path, key):
    import json

    doc = json.loads(path.read_text())
    return {(r["load"], r["family"], r["M"], r["candidate"]): r["method"] for r in doc[key]}, doc


def _option_names(box) -> list[str]:
    """The file names of the explain-run picker's options, which show dashboard.model.sources.run_text (date, label,
    candidates); each option must name one explain run file (the broken fixture: its own name)."""
    from dashboard.documents import run_index
    from dashboard.model import run_kinds, runs, sources

    files = [*runs.list_runs(), *app_fixtures()]
    metas = run_index.metas(files, run_index.read())
    texts = {sources.run_text(p, m): p.name for p, m in metas.items() if m.kind == run_kinds.EXPLAIN}
    assert set(box.options) <= set(texts), set(box.options) - set(texts)
    return [texts[o] for o in box.options]


def app_fixtures() -> list:
    from pathlib import Path

    return sorted((Path(__file__).resolve().parents[1] / "fixtures" / "app").glob("*explain*.json"))


def test_opens_the_explain_run_of_the_sidebars_source_and_its_worst_call(app):
    """A link from a run's page (?source=...&shape=...) opens that run's own explain data: the same workload, the
    same methods at every (shape, candidate) both have, the newest of those; never another workload's run."""
    from pathlib import Path

    runs = Path(__file__).resolve().parents[2] / "datasets" / "runs"
    at = _open(app, {"source": SWEEP}, pin=False)
    assert not at.exception and not at.error, [e.value for e in at.error]
    box = at.sidebar.selectbox(key="kernels_source")
    options = _option_names(box)
    swept, sweep_doc = _methods(runs / SWEEP, "results")
    for name in options:
        profiled, doc = _methods(runs / name, "calls")
        assert doc.get("workload", {}).get("name", "muse_bf16_proj") == sweep_doc["workload"]["name"]  # no record: muse
        shared = swept.keys() & profiled.keys()
        assert shared and all(swept[k] == profiled[k] for k in shared), name
    assert LLAMA_EXPLAIN not in options and "2026-12-01_nvidia-h200_explain-baseline-best-r23.json" \
        not in options   # r23's best dispatched other methods at verify 16 than r28's
    created = {n: _methods(runs / n, "calls")[1]["created_utc"] for n in options}
    with_both = [n for n in options if {"baseline", "best"} <= {k[3] for k in _methods(runs / n, "calls")[0]}]
    assert box.value == max(with_both, key=created.get)
    data = kernels.from_run_data(runs_mod.load_run_data(runs / box.value))
    calls = kernels.call_table(data, load_workload())
    assert at.selectbox(key="kernels_shape").value == calls.sort_values("sol").iloc[0]["shape"]

    at = _open(app, {"source": LLAMA_SWEEP, "shape": "verify 32/router"}, pin=False)
    assert at.sidebar.selectbox(key="kernels_source").value == LLAMA_EXPLAIN
    at = _open(app, pin=True)
    assert at.sidebar.selectbox(key="kernels_source").value == RUN_NAME   # an explicit ?explain= still opens


def test_a_source_without_an_explain_run_says_so_and_gives_the_command(app):
    at = _open(app, {"source": "synthetic_a.json"}, pin=False)
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    assert "No explain run of run: synthetic_a.json" in text and "python -m profiler explain --plan" in text, text
    assert not at.dataframe   # no other run's kernels shown


def test_a_shape_link_picks_the_shape_and_the_page_shows_its_numbers(app, calls):
    at = _open(app, {"shape": "verify 1/unpooler"})
    assert at.selectbox(key="kernels_shape").value == "verify 1/unpooler"
    here = calls[calls["shape"] == "verify 1/unpooler"]
    # one floor per (run, shape): the sidebar's sweep's floor and SOL, as `dashboard table` and Shapes show them;
    # the explain run's own floor is named beside them
    from dashboard.model import run_kinds, runs as drun
    sweep = drun.load_run_data(run_kinds.default_run(drun.list_runs()))
    own = kernels.sweep_sol(sweep, "verify 1/unpooler").set_index("candidate")
    floor = next(m for m in at.metric if m.label.startswith("Floor"))
    assert floor.label == "Floor (sweep)" and floor.value == f"{own['floor_us'].iloc[0]:.2f} µs"
    sol = next(m for m in at.metric if m.label.startswith("SOL"))
    assert sol.value == " / ".join(f"{own.loc[c, 'sol']:.0%}" for c in ("baseline", "best"))
    text = app.text_of(at)
    assert f"explain run `{RUN_NAME}`" in text and f"sweep `{sweep.path.name}`" in text
    assert f"In {RUN_NAME}'s own probes" in text and f"floor {here['floor_us'].iloc[0]:.2f} µs" in text
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
    warn = [app.shown(w.value) for w in at.sidebar.warning]
    assert any("synthetic_explain_broken.json" in w and "kernels[1].duration_us" in w for w in warn), warn
    assert "synthetic_explain_broken.json" not in _option_names(at.sidebar.selectbox(key="kernels_source"))


def test_tables_and_metrics_read_as_words_not_snake_case(app):
    import json

    at = _open(app, {"shape": "decode 16/router"})
    assert not at.exception and not at.error
    shown = 0
    for frame in at.dataframe:
        config = json.loads(frame.proto.columns or "{}")
        for column in frame.proto.column_order or frame.value.columns:
            if column in config or frame.proto.column_order:
                label = config.get(column, {}).get("label", column)
                assert "_" not in label, (column, label)
                shown += 1
    assert shown > 20
    for metric in at.metric:
        assert len(metric.label) <= 20 and len(metric.value) <= 16, (metric.label, metric.value)
