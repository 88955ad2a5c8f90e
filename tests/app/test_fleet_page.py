"""The Fleet page: one sweep's run files (one per GPU model) side by side, each scored alone through the gate; the
page shows dashboard.fleet's numbers, never its own. Fixture runs: the SYNTHETIC app fixtures under two made-up GPU
names (not measurements)."""
import pytest

from dashboard import runs


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


def test_a_gpu_model_whose_run_fails_the_gate_shows_why_and_the_others_keep_their_score(fleet_app):
    at, _ = fleet_app(break_b=True)
    assert not at.exception
    table = at.dataframe[0].value.set_index("gpu")
    a, b = (f"SYNTHETIC GPU {g} (test fixture, not a measurement)" for g in "AB")
    assert table.loc[a, "status"] == "scored" and table.loc[a, "score"] > 0
    assert table.loc[b, "status"] == "no score" and "incorrect" in table.loc[b, "reason"]
    assert any("SYNTHETIC GPU B" in w.value and "no score" in w.value for w in at.warning)
