"""The correctness gate in the app: a run with one incorrect (or failed, or below-floor) shape gets no score on any
page, an st.error names the side and the shape, and the shape is red in tables and charts. Bad files (deeply
nested JSON) give one st.error on every page while the good runs still open. Fixtures are edited copies of the
committed paired sweep of 2026-11-30 (edit_runs.R3; TEST DATA, labelled EDITED-)."""
import re

import pytest
from streamlit.testing.v1 import AppTest

from app_page_list import SOURCE_PAGES
from dashboard.model import runs

MESSAGE = "best vs baseline: no score: best is incorrect at 1 scored shape (decode 1/o"


def _open(app, page, path):
    return app.open_page(page, f"run: {path.name}")


def _red_rows(df_element) -> set[int]:
    """Row numbers the table's pandas Styler paints red (dashboard gate's kept-out rows)."""
    styles = df_element.proto.arrow_data.styler.styles
    return {int(m) for m in re.findall(r"row(\d+)_col0[^{]*\{[^}]*#d62728", styles)}


@pytest.fixture
def incorrect(edited):
    return edited(lambda r: edited.EDIT.incorrect(r, "best", "decode 1", "o"), "inc")


@pytest.mark.parametrize("page", SOURCE_PAGES)
def test_every_source_page_says_no_score_for_an_incorrect_candidate(app, incorrect, page):
    at = _open(app, page, incorrect)
    assert not at.exception, [e.value for e in at.exception]
    assert any(MESSAGE in app.shown(e.value) for e in at.error), [e.value for e in at.error]
    assert not any(label.startswith("Score") for label in app.figures(at))
    if page == "planner":
        assert not at.tabs  # no what-if from a pair without a score


def test_overview_and_shapes_paint_the_incorrect_shape_red(app, incorrect):
    for page in ("overview", "shapes"):
        at = _open(app, page, incorrect)
        table = at.dataframe[0]
        df = table.value
        row = df.index[df["shape"] == "decode 1/o"][0]
        assert _red_rows(table) == {int(row)}, page
        assert df.loc[row, "status_candidate"] == "incorrect" and not df.loc[row, "usable"]
        assert df["ratio"].isna().sum() == 1


def test_roofline_marks_the_incorrect_point(app, incorrect):
    at = _open(app, "roofline", incorrect)
    crosses = [t for chart in at.get("plotly_chart") for t in __import__("json").loads(chart.proto.spec)["data"]
               if t.get("name", "").startswith("not scored")]
    assert crosses and all(t["marker"]["color"] == "#d62728" for t in crosses)


def test_compare_gives_incorrect_no_verdict_and_an_error(app, incorrect):
    at = app.open_page("compare")
    label = f"run: {incorrect.name}"
    app.compare(at, [f"{label} · baseline", f"{label} · seed036", f"{label} · best"])
    assert not at.exception
    assert any(f"{label} · best vs {label} · baseline: no score: {label} · best is incorrect at 1 shape"
               in app.shown(e.value) for e in at.error), [e.value for e in at.error]
    overall = at.dataframe[0].value.set_index("series")
    assert overall.loc[f"{label} · best", "verdict"] == "NO SCORE"
    assert overall.loc[f"{label} · seed036", "verdict"] != "NO SCORE"
    shapes = at.dataframe[2].value
    bad = shapes[(shapes["series"] == f"{label} · best") & (shapes["family"] == "o") & (shapes["load"] == "decode 1")]
    assert list(bad["verdict"]) == ["INCORRECT"] and bad["ratio"].isna().all()
    assert len(_red_rows(at.dataframe[2])) == 1


def test_a_failed_baseline_is_named(app, edited):
    path = edited(lambda r: edited.EDIT.failed(r, "baseline", "verify 16", "qkv_gate"), "basefail")
    at = _open(app, "overview", path)
    assert any("no score: baseline failed at 1 scored shape (verify 16/qkv_gate: run() raised"
               in app.shown(e.value) for e in at.error), [e.value for e in at.error]


def test_below_floor_is_left_out_until_the_toggle_includes_it(app, edited):
    path = edited(lambda r: edited.EDIT.below_floor(r, "best", "decode 1", "qkv_gate"), "floor")
    at = _open(app, "overview", path)
    assert any("below the measured HBM floor at 1 scored shape (decode 1/qkv_gate" in e.value for e in at.error)
    assert not any(label.startswith("Score") for label in app.figures(at))
    at.sidebar.toggle(key="below_floor_toggle").set_value(True).run()
    expected = runs.run_score(runs.load_run_data(path), "baseline", "best", include_below_floor=True).score
    assert next(v for k, v in app.figures(at).items() if k.startswith("Score")) == f"{expected:.4f}×"
    assert any("below the measured HBM floor" in w.value and "as asked" in w.value for w in at.warning)
    assert at.query_params["below_floor"] == "include"


# --- bad files: one line each, the good runs still open ----------------------------------------------------------
@pytest.fixture
def deep(tmp_path, extra_runs, app):
    path = tmp_path / "2026-11-30_nvidia-h200_deep.json"
    path.write_text("[" * 1000 + "]" * 1000)
    extra_runs("synthetic_a.json", str(path))
    return path


@pytest.mark.parametrize("page", SOURCE_PAGES)
def test_a_deeply_nested_run_file_is_one_error_on_every_page(app, deep, page):
    at = _open(app, page, deep)
    assert not at.exception, [e.value for e in at.exception]
    assert [e.value for e in at.error] == [f"Cannot use run: {deep.name}: {deep.name}: JSON nested 1000 levels deep "
                                           "(at most 64 accepted)"]
    at.sidebar.selectbox(key="source").set_value(app.RUN_A).run()  # the good runs still open
    assert not at.exception and not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", ["compare", "dispatch", "ledger", "run"])
def test_pages_without_a_source_still_open_next_to_a_deep_file(app, deep, page):
    at = app.open_page(page, None)
    assert not at.exception, [e.value for e in at.exception]
    if page == "compare":
        assert any(o.endswith(app.RUN_A) for o in at.multiselect(key="cmp_runs").options)
        at.multiselect(key="cmp_runs").set_value([deep.name, "synthetic_a.json"]).run()   # chosen: named, not read
        assert not at.exception
        assert any(deep.name in e.value and "nested 1000 levels" in e.value for e in at.error)


def test_the_app_opens_with_a_deep_file_among_the_committed_runs(app, deep, monkeypatch):
    import shutil

    from ui import loaders

    folder = deep.parent / "runs"
    folder.mkdir()
    shutil.copy(app.FIXTURES / "synthetic_a.json", folder / "2026-11-01_nvidia-h200_good.json")
    shutil.copy(deep, folder / "2026-11-02_nvidia-h200_deep.json")  # newer, but unreadable
    monkeypatch.setattr(loaders, "RUNS_DIR", folder)
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    at.switch_page("app_pages/overview.py")
    at.run()
    assert not at.exception and not at.error
    assert at.sidebar.selectbox(key="source").value == "run: 2026-11-01_nvidia-h200_good.json"
