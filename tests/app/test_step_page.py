"""The Decode step page (AppTest) on a step run made by `python -m profiler step --device cpu`: it lists the step
runs, shows the Amdahl table, the three charts and the failures, with no None or nan anywhere; without a step run it
says how to make one."""
import pytest


def _open(app, monkeypatch, runs):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", ":".join(str(app.FIXTURES / n) for n in runs))
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=90)
    at.switch_page("app_pages/step.py")
    at.run()
    return at


def test_the_page_renders_a_step_run(app, monkeypatch):
    at = _open(app, monkeypatch, ["step_cpu_tiny.json"])
    assert not at.exception and not at.error
    at.selectbox(key="step_run").set_value("step_cpu_tiny.json").run()   # the committed step runs are listed too
    assert not at.exception and not at.error
    text = app.text_of(at)
    assert "linear_module" in text and "predicted" in text and "scaled_2pct" in text   # an inner _ is not markup
    assert "nan" not in text.lower() and "None" not in text
    assert len(at.get("plotly_chart")) == 3
    # another point and the warm timing
    at.selectbox(key="step_point").set_value("batch 4, context 48").run()
    at.selectbox(key="step_mode").set_value("warm (steps back to back)").run()
    assert not at.exception and "nan" not in app.text_of(at).lower()


def test_without_a_step_run_it_says_how_to_make_one(app, monkeypatch):
    at = _open(app, monkeypatch, ["synthetic_a.json"])
    assert not at.exception
    infos = " ".join(i.value for i in at.info)
    if "No step run" in infos:   # the committed runs hold no step run yet
        assert "python -m profiler step" in infos


def test_a_step_run_is_a_source_like_any_run(app, monkeypatch):
    """Its shapes are an ordinary sweep's: the sidebar lists it (grouped as a decode step) and a page reads it."""
    from dashboard.model import run_kinds, sources

    assert run_kinds.STEP in sources.GROUPS
    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", str(app.FIXTURES / "step_cpu_tiny.json"))
    at = app.open_page("shapes", source=None)
    options = at.sidebar.selectbox(key="source").options
    label = next(o for o in options if o.startswith("Decode step") and "step_cpu_tiny" in o)
    at.sidebar.selectbox(key="source").set_value(label).run()
    assert not at.exception and not at.error
