"""The Fleet page: one sweep's run files (one per GPU model) side by side, each scored alone through the gate; the
page shows dashboard.model.fleet's numbers, never its own. Fixture runs: the SYNTHETIC app fixtures under two made-up GPU
names (not measurements)."""
import pytest

from dashboard.model import runs


@pytest.fixture
def fleet_app(app, monkeypatch, fleet_run_files):
    def open_with(break_b=False):
        paths = fleet_run_files(break_b)
        monkeypatch.setenv("PROJLAB_EXTRA_RUNS", ":".join(map(str, paths)))
        return app.open_page("fleet", source=None), paths
    return open_with


def test_fleet_page_shows_each_gpu_models_score_from_its_own_run_file(fleet_app):
    at, paths = fleet_app()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="fleet_label").value == "fleet-demo"       # the set measured on the most GPU models
    table = at.dataframe[0].value
    assert list(table["gpu"]) == [f"SYNTHETIC GPU {g} (test fixture, not a measurement)" for g in "AB"]
    base, cand = at.selectbox(key="fleet_baseline").value, at.selectbox(key="fleet_candidate").value
    for path, score in zip(paths, table["score"]):
        assert score == runs.run_score(runs.load_run_data(path), base, cand).score
    assert table["score"].iloc[0] != table["score"].iloc[1]             # the two files really are scored apart
    assert (table["sol_candidate"] > 0).all() and len(at.get("plotly_chart")) == 1
    spec = at.get("plotly_chart")[0].proto.spec
    assert "score (derived)" in spec and "score (measured)" not in spec   # a score is derived from measured times


def test_a_gpu_model_whose_run_fails_the_gate_shows_why_and_the_others_keep_their_score(fleet_app):
    at, _ = fleet_app(break_b=True)
    assert not at.exception
    table = at.dataframe[0].value.set_index("gpu")
    a, b = (f"SYNTHETIC GPU {g} (test fixture, not a measurement)" for g in "AB")
    assert table.loc[a, "status"] == "scored" and table.loc[a, "score"] > 0
    assert table.loc[b, "status"] == "no score" and "incorrect" in table.loc[b, "reason"]
    assert any("SYNTHETIC GPU B" in w.value and "no score" in w.value for w in at.warning)


def test_fleet_opens_on_a_scored_plan_sweep_and_never_shows_a_table_of_none(app, monkeypatch):
    """On the committed runs: the default set is a plan sweep whose rows are scored (not a tune log whose
    candidate is one config); a set without a score shows why, in words, with no column of empty numbers."""
    monkeypatch.delenv("PROJLAB_EXTRA_RUNS", raising=False)
    at = app.open_page("fleet", source=None)
    assert not at.exception and not at.error, [e.value for e in at.error]
    label = at.selectbox(key="fleet_label").value
    assert "tune" not in label and "screen" not in label
    assert not any(label.startswith(f"tune") for label in at.selectbox(key="fleet_label").options)
    table = at.dataframe[0].value
    assert (table["status"] == "scored").all() and table["score"].notna().all()
    assert not at.warning


def test_a_fleet_set_without_a_score_says_why_once_and_shows_no_empty_numbers(app, monkeypatch, fleet_run_files):
    broken = fleet_run_files(break_b=True)[1]
    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", str(broken))
    at = app.open_page("fleet", source=None)
    at.selectbox(key="fleet_label").set_value("fleet-demo").run()
    assert not at.exception
    texts = [w.value for w in at.warning]
    assert texts and not any("no score: no score" in t for t in texts), texts
    shown = at.dataframe[0].proto.column_order
    assert "score" not in shown and "reason" in shown, shown
