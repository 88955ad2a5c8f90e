"""Every page works with a run of a workload that is not muse_bf16_proj (the SYNTHETIC tiny_bf16_synthetic run,
its workload embedded): its families and loads are shown, muse-only data says so, Compare refuses to pair it with a
muse run shape by shape; an older run (no workload recorded) says muse was assumed."""
import math
import os

import pytest

from app_page_list import PAGES, SOURCE_PAGES

TINY_FILE = "2000-01-03_synthetic_synthetic-tiny-workload.json"
TINY = f"run: {TINY_FILE}"
MUSE_ONLY = "the official table is for muse_bf16_proj; this run is tiny_bf16_synthetic"


@pytest.fixture
def tiny(app, monkeypatch):
    """The tiny run and a muse run (synthetic_a.json, which records no workload) on the source list."""
    paths = [app.ROOT / "tests" / "fixtures" / "runs" / TINY_FILE, app.FIXTURES / "synthetic_a.json"]
    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", os.pathsep.join(map(str, paths)))
    return app


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_with_a_run_of_another_workload(tiny, page):
    at = tiny.open_page(page, TINY)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title


@pytest.mark.parametrize("page", SOURCE_PAGES)
def test_the_sidebar_names_the_runs_workload(tiny, page):
    at = tiny.open_page(page, TINY)
    text = " ".join(c.value for c in at.sidebar.caption)
    assert "Workload: **tiny_bf16_synthetic** — 2 families (up, down), 2 loads (step 1, step 4)" in text
    assert not any("does not record its workload" in i.value for i in at.info)


def test_overview_scores_the_run_with_its_own_loads(tiny):
    at = tiny.open_page("overview", TINY)
    score = next(v for k, v in tiny.figures(at).items() if k.startswith("Score"))
    assert score == f"{math.sqrt(2):.4f}×"
    loads = at.dataframe[0].value
    assert list(loads["load"]) == ["step 1", "step 4"]
    assert loads["ratio_if_alone_reaches_target"].notna().all()
    text = tiny.text_of(at)
    assert f"No official reference score: {MUSE_ONLY}" in text and "1.3012" not in text


def test_where_time_goes_and_planner_use_the_runs_loads(tiny):
    at = tiny.open_page("where_time_goes", TINY)
    assert at.selectbox(key="wtg_load").options == ["step 1", "step 4"]
    assert f"Not shown: {MUSE_ONLY}." in [i.value for i in at.info]
    at = tiny.open_page("planner", TINY)
    assert "geometric mean of the two, so it moves by r^(1/2)" in tiny.text_of(at)


def test_shapes_has_no_official_columns_and_says_why(tiny):
    at = tiny.open_page("shapes", TINY)
    df = at.dataframe[0].value
    assert set(df["shape"]) == {"step 1/up", "step 1/down", "step 4/up", "step 4/down"}
    assert "official_036_us" not in df
    assert f"No official-time columns: {MUSE_ONLY}." in tiny.text_of(at)


def test_shapes_workload_picker_lists_any_workload(tiny):
    at = tiny.open_page("shapes", TINY)
    at.selectbox(key="shapes_workload").set_value("llama31_8b_decode").run()
    assert not at.exception and not at.error
    spec = at.dataframe[-1].value
    assert list(dict.fromkeys(spec["family"])) == ["qkv", "o", "gate_up", "down"]
    assert sorted(set(spec["M"])) == [1, 8, 32, 128]
    assert spec["floor_us"].gt(0).all(), "the picked workload's shapes show floors (the tiny run's probes)"


def test_compare_refuses_two_workloads_in_one_line_and_shows_each_score(tiny):
    at = tiny.open_page("compare", None)
    tiny.compare(at, [f"{TINY} · baseline", "run: synthetic_a.json · seed036"])
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert errors[0].startswith("cannot compare shape by shape:")
    assert "workload tiny_bf16_synthetic" in errors[0] and "workload muse_bf16_proj" in errors[0]
    own = at.dataframe[0].value.set_index("workload")
    assert own.loc["tiny_bf16_synthetic", "score"] == pytest.approx(math.sqrt(2))
    assert own.loc["muse_bf16_proj", "score"] > 0


def test_compare_within_the_other_workload_works(tiny):
    at = tiny.open_page("compare", None)
    tiny.compare(at, [f"{TINY} · baseline", f"{TINY} · fast"])
    assert not at.exception and not at.error, [e.value for e in at.error]
    overall = at.dataframe[0].value
    assert float(overall["score"].iloc[0]) == pytest.approx(math.sqrt(2), rel=1e-6)
    shapes = at.dataframe[2].value
    assert set(shapes["family"]) == {"up", "down"}


def test_an_old_run_says_muse_was_assumed(tiny):
    at = tiny.open_page("overview", "run: synthetic_a.json")
    assert not at.exception
    notes = [i.value for i in at.sidebar.info]
    assert any("synthetic_a.json does not record its workload" in n and "muse_bf16_proj" in n for n in notes), notes
    assert "Workload: **muse_bf16_proj**" in " ".join(c.value for c in at.sidebar.caption)


def test_ledger_says_it_is_muse_only(tiny):
    at = tiny.open_page("ledger", None)
    assert "belongs to the write-up's workload, muse_bf16_proj" in tiny.text_of(at)


def test_report_page_builds_the_other_workloads_report(tiny):
    at = tiny.open_page("reports", TINY)
    assert not at.exception and not at.error
    assert any("synthetic-tiny-workload: fast vs baseline" in m.value for m in at.markdown)



def test_dispatch_reads_the_workload_a_plan_records(tiny, tmp_path):
    """A plan is read against the workload it records ({"name", "fingerprint"}): the shipped best (muse) and a plan
    recording llama31_8b_decode show that workload's families and loads; a fingerprint that differs is one error."""
    import json

    from datasets import load_workload

    at = tiny.open_page("dispatch", None)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not any("does not record its workload" in i.value for i in at.info)
    assert list(at.dataframe[0].value["family"]) == ["qkv_gate", "o", "pooler", "unpooler", "router"]

    llama = load_workload("llama31_8b_decode")
    every_m = [{"M": [1, 1 << 20], "method": "torch_linear", "config": {}}]
    plan = {"name": "llama_fixture", "description": "SYNTHETIC test plan for llama31_8b_decode", "gpu": None,
            "tuned_from": None, "families": {f: every_m for f in llama.family_order}, "workload": llama.ref}
    path = tmp_path / "llama_plan.json"
    path.write_text(json.dumps(plan))
    at = tiny.upload_plan(tiny.open_page("dispatch", None), path)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert list(at.dataframe[0].value["family"]) == ["qkv", "o", "gate_up", "down"]
    assert list(at.dataframe[2].value["load"].unique()) == ["decode 1", "decode 8", "decode 32", "prefill 128"]

    path.write_text(json.dumps({**plan, "workload": {**llama.ref, "fingerprint": "000000000000"}}))
    at = tiny.upload_plan(tiny.open_page("dispatch", None), path)
    assert not at.exception and len(at.error) == 1 and "fingerprint 000000000000" in at.error[0].value


def test_dispatch_reads_a_generic_plan_against_the_picked_workload(tiny):
    at = tiny.open_page("dispatch", None)
    at.selectbox(key="dispatch_plan").set_value("baseline").run()
    assert at.selectbox(key="dispatch_workload").value == "muse_bf16_proj"
    at.selectbox(key="dispatch_workload").set_value("llama31_8b_decode").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert list(at.dataframe[0].value["family"]) == ["qkv", "o", "gate_up", "down"]
    assert set(at.dataframe[0].value["method"]) == {"torch_linear"}


def test_dispatch_says_when_a_plan_records_no_workload(tiny, tmp_path):
    import json

    best = json.loads((tiny.ROOT / "kernels" / "plans" / "best.json").read_text())
    best.pop("workload")
    path = tmp_path / "old_best.json"
    path.write_text(json.dumps(best))
    at = tiny.upload_plan(tiny.open_page("dispatch", None), path)
    assert not at.exception and not at.error
    assert any("does not record its workload; assuming the default muse_bf16_proj" in i.value for i in at.info)


def test_fleet_scores_a_sweep_of_another_workload(tiny):
    at = tiny.open_page("fleet", None)
    at.selectbox(key="fleet_label").set_value("synthetic-tiny-workload").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert list(table["status"]) == ["scored"] and float(table["score"].iloc[0]) == pytest.approx(math.sqrt(2))
    assert any("Workload: **tiny_bf16_synthetic**" in c.value for c in at.caption)


def test_probes_page_labels_the_write_up_probes_for_another_workload(tiny):
    at = tiny.open_page("probes", TINY)
    assert not at.exception and not at.error
    assert "overlaid as a hardware reference only" in tiny.text_of(at)
    at = tiny.open_page("probes", "run: synthetic_a.json")
    assert "hardware reference only" not in tiny.text_of(at)


def test_run_page_checks_workload_shapes_and_plans_before_a_worker_starts(app, monkeypatch):
    """With a (faked) CUDA device the Run page offers every workload; a selection the workload lacks and a plan
    tuned for another workload are one st.error each, and the CLI line names the workload."""
    import profiler.measure.telemetry

    monkeypatch.setattr(profiler.measure.telemetry, "cuda_device_name", lambda: "FAKE GPU (test)")
    at = app.open_page("run", None)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "llama31_8b_decode" in at.selectbox(key="run_workload").options
    at.selectbox(key="run_workload").set_value("llama31_8b_decode").run()
    at.multiselect(key="run_plans").set_value(["baseline"]).run()
    at.text_input(key="run_shapes").set_value("qkv:1,64").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("--workload llama31_8b_decode --plan baseline --shapes qkv:1,64" in c.value for c in at.code)
    at.text_input(key="run_shapes").set_value("qkv_gate:64").run()
    assert len(at.error) == 1 and "unknown family 'qkv_gate'" in at.error[0].value
    at.text_input(key="run_shapes").set_value("official").run()
    at.multiselect(key="run_plans").set_value(["baseline", "best"]).run()
    assert len(at.error) == 1 and "tuned for workload muse_bf16_proj" in at.error[0].value


LLAMA_RUN = "run: 2026-12-01_nvidia-h200_baseline-vs-llama31_8b_decode-r5.json"
LLAMA_EXPLAIN = "2026-12-01_nvidia-h200_explain-llama31_8b_decode-r5.json"


@pytest.mark.parametrize("page", [*SOURCE_PAGES, "kernels"])   # every page that reads a run
def test_every_page_opens_the_committed_llama_run(app, page):
    """The committed H200 run of llama31_8b_decode (its workload embedded) opens on every page that reads a run,
    with that workload's families, and no error. Kernels has no source picker: it opens the explain run of the
    sidebar's source (a link carries it as ?source=), the llama run's own."""
    if page == "kernels":
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
        at.query_params["source"] = LLAMA_RUN.split(": ", 1)[1]
        at.switch_page("app_pages/kernels.py")
        at.run()
        assert at.sidebar.selectbox(key="kernels_source").value == LLAMA_EXPLAIN
    else:
        at = app.open_page(page, LLAMA_RUN)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    text = app.text_of(at) + " ".join(c.value for c in at.sidebar.caption)
    assert "gate_up" in text or "llama31_8b_decode" in text


def test_overview_scores_the_committed_llama_run_per_load(app):
    at = app.open_page("overview", LLAMA_RUN)
    loads = [df.value for df in at.dataframe if "load" in getattr(df.value, "columns", [])]
    assert any(list(df["load"]) == ["decode 1", "decode 8", "decode 32", "prefill 128"] for df in loads)
    assert any(v.startswith("1.049") for v in app.figures(at).values())


def test_fleet_scores_the_committed_llama_sweep(app):
    at = app.open_page("fleet", None)
    at.selectbox(key="fleet_label").set_value("baseline-vs-llama31_8b_decode-r5").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert list(at.dataframe[0].value["status"]) == ["scored"]
    assert any("Workload: **llama31_8b_decode**" in c.value for c in at.caption)


def test_roofline_keeps_its_points_when_the_source_changes_to_other_candidates(tiny):
    """The candidate picker belongs to the source: after the tiny run (baseline, fast), the muse run synthetic_a
    (baseline, seed036) opens with both of its candidates drawn (a kept selection would have lost seed036)."""
    import json

    at = tiny.open_page("roofline", TINY)
    at.sidebar.selectbox(key="source").set_value("run: synthetic_a.json").run()
    assert not at.exception
    names = {t.get("name") for chart in at.get("plotly_chart") for t in json.loads(chart.proto.spec)["data"]}
    assert {"baseline", "seed036"} <= names, names


def test_compare_pairs_the_committed_llama_series(app):
    """Compare picks series, not the sidebar's source: the llama run's plan against its baseline, shape by shape."""
    at = app.open_page("compare", None)
    app.compare(at, [f"{LLAMA_RUN} · baseline", f"{LLAMA_RUN} · llama31_8b_decode"])
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = app.text_of(at)
    assert "prefill 128" in text and "gate_up" in text


def test_compare_never_adds_a_series_of_another_workload(tiny):
    """Opened with a run of another workload in the sidebar, Compare offers that run's own pair (not the default
    muse run's `best` beside it, which could only end in an error), and a muse run chosen later brings no series."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(tiny.ROOT / "app.py"), default_timeout=60)
    at.query_params["source"] = TINY_FILE
    at.switch_page("app_pages/compare.py")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    chosen = at.multiselect(key="cmp_series").value
    assert len(chosen) == 2 and all(c.startswith(f"{TINY} · ") for c in chosen), chosen
    runs = at.multiselect(key="cmp_runs").value
    at.multiselect(key="cmp_runs").set_value([*runs, "synthetic_a.json"]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.multiselect(key="cmp_series").value == chosen
