"""Every page renders (published table and a synthetic run), shows its key numbers, reacts to widgets, and turns
bad input into an st.error that names the problem — never a traceback."""
import json
import subprocess
import sys
import textwrap

import pytest

from app_page_list import PAGES, SOURCE_PAGES
from dashboard.model import runs



@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_on_the_published_table(app, page):
    at = app.open_page(page)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title, f"{page} shows no title"


@pytest.mark.parametrize("page", SOURCE_PAGES)
def test_every_source_page_renders_on_a_run(app, page):
    at = app.open_page(page, app.RUN_A)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_overview_shows_the_official_score_labelled_published(app):
    at = app.open_page("overview")
    label, value = next((k, v) for k, v in app.figures(at).items() if k.startswith("Score"))
    assert value == "1.3012×"
    assert "published" in label
    assert app.figures(at)["Aggregate time saved (derived)"] == "23.15%"


def test_overview_shows_the_run_score_and_its_ci(app):
    expected = runs.run_score(runs.load_run_data(app.FIXTURES / "synthetic_a.json"), "baseline", "seed036").score
    at = app.open_page("overview", app.RUN_A)
    label, value = next((k, v) for k, v in app.figures(at).items() if k.startswith("Score"))
    assert value == f"{expected:.4f}×"
    assert "measured" in label
    text = app.text_of(at)
    assert "95% bootstrap CI" in text
    assert "SYNTHETIC" in text  # the environment block names the GPU the run claims
    import json

    sm = [t["sm_mhz"] for t in json.loads((app.FIXTURES / "synthetic_a.json").read_text())["telemetry"]]
    clock = app.figures(at)["SM clock while measuring"]
    assert clock == f"{min(sm):.0f}–{max(sm):.0f} MHz"  # the clock while measuring, not the idle start


def test_overview_draws_the_telemetry_chart_when_its_expander_opens(app):
    at = app.open_page("overview", app.RUN_A)
    charts = len(at.get("plotly_chart"))
    assert any(e.label.startswith("SM clock, power and temperature") for e in at.get("expander"))
    app.open_expander(at, "telemetry_chart")
    assert not at.exception
    assert len(at.get("plotly_chart")) == charts + 1   # SM clock, power and temperature, drawn on request


def test_overview_lists_every_environment_field_when_its_expander_opens(app):
    at = app.open_page("overview", app.RUN_A)
    tables = len(at.dataframe)   # closed: the per-load table only
    app.open_expander(at, "environment_fields")
    assert not at.exception
    assert len(at.dataframe) == tables + 1
    expected = runs.load_run_data(app.FIXTURES / "synthetic_a.json").environment.astype(str)
    assert at.dataframe[-1].value.reset_index(drop=True).equals(expected.reset_index(drop=True))


def test_overview_draws_the_uploader_when_its_expander_opens(app):
    at = app.open_page("overview")
    assert not any(u.key == "upload_overview" for u in at.get("file_uploader"))   # closed: nothing drawn
    app.open_expander(at, "upload_open")
    assert not at.exception
    assert any(u.key == "upload_overview" for u in at.get("file_uploader"))
    assert any("At most 16 MB per file" in c.value for c in at.caption)   # the size limit, written on the page


def test_overview_target_changes_the_gap(app):
    at = app.open_page("overview")
    gap = lambda: app.figures(at)["Aggregate time to remove (derived)"]
    assert gap() == "1.424%"  # 1 - 1.301203/1.32
    at.number_input(key="target").set_value(1.35).run()
    assert gap() == "3.615%"  # 1 - 1.301203/1.35
    loads = at.dataframe[0].value.set_index("load")
    need = loads["ratio_if_alone_reaches_target"] / loads["ratio"]  # (1.35 / 1.301203)^6 for every load
    assert need.to_numpy() == pytest.approx([(1.35 / 1.3012028) ** 6] * 6, rel=1e-5)


def test_partial_shape_set_is_explained_not_crashed(app):
    at = app.open_page("overview", "run: synthetic_decode_only.json")
    assert not at.exception
    assert any("no score:" in w.value and "has no time for 15 scored shapes" in w.value for w in at.warning), \
        [w.value for w in at.warning]


def test_shapes_filters_and_columns(app):
    at = app.open_page("shapes")
    assert "30 of 30 shapes shown" in app.text_of(at)
    at.multiselect(key="shapes_loads").set_value(["decode 1"]).run()
    assert "5 of 30 shapes shown" in app.text_of(at)
    df = at.dataframe[0].value
    assert {"bytes", "flops", "floor_us", "bound", "ratio", "sol_candidate", "official_036_us", "method"} <= set(df)


def test_shapes_on_a_run_shows_the_ci_with_the_paired_median(app):
    at = app.open_page("shapes", app.RUN_A)
    df = at.dataframe[0].value
    assert len(df) == 30 and df["ratio_ci_low"].notna().all()
    assert ((df["ratio_ci_low"] <= df["ratio_paired"]) & (df["ratio_paired"] <= df["ratio_ci_high"])).all()
    assert df["ratio"].to_numpy() == pytest.approx((df["baseline_us"] / df["candidate_us"]).to_numpy())
    assert "belongs to the median paired ratio" in app.text_of(at)


def test_partial_run_table_shows_the_paired_median_next_to_its_ci(app):
    at = app.open_page("overview", "run: synthetic_decode_only.json")
    df = at.dataframe[0].value
    assert list(df.columns[3:7]) == ["ratio", "ratio_paired", "ratio_ci_low", "ratio_ci_high"]


def test_the_roofline_pages_time_chart_says_times_are_measured_not_roofs(app):
    at = app.open_page("roofline", app.RUN_A)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert "measured roofs" in specs[0] and "roofs" not in specs[1] and "times measured" in specs[1]


def test_planner_what_if_moves_the_score(app):
    at = app.open_page("planner")
    metric = lambda: next(m for m in at.metric if m.label.startswith("New score"))
    before = metric().value
    assert not metric().delta   # nothing touched: no change to show (the slider starts at the rounded ratio)
    next(s for s in at.slider if s.key.startswith("agg_ratio_decode 1_False|")).set_value(2.5).run()
    assert metric().value != before and metric().delta.startswith("+")
    at.number_input(key="tile_M").set_value(16).run()
    assert next(m.value for m in at.metric if m.label.startswith("Blocks")) == "128"  # pooler 16x32 tiles


def test_where_time_goes_load_picker(app):
    at = app.open_page("where_time_goes")
    at.selectbox(key="wtg_load").set_value("verify 32").run()
    assert not at.exception
    amdahl = next(d.value for d in at.dataframe if "load_speedup" in d.value)
    assert set(amdahl["load"]) == {"verify 32"}


def test_compare_two_runs_with_intersection_note(app):
    at = app.open_page("compare")
    app.compare(at, [f"{app.RUN_A} · baseline", f"{app.RUN_A} · seed036",
                                                "run: synthetic_decode_only.json · seed036"])
    assert not at.exception
    assert any("intersection of 15 shapes" in w.value for w in at.warning)
    shapes = at.dataframe[2].value
    assert len(shapes) == 2 * 15  # two series against the reference, on the 15 shapes in common
    raw = shapes[shapes["mode"] != "across_rr"]   # a ratio of ratios is relative to each run's baseline
    assert 0 < len(raw) < len(shapes)
    assert raw["ratio"].to_numpy() == pytest.approx((raw["reference_us"] / raw["series_us"]).to_numpy())
    from dashboard.model.noise import SAME_ROUTE, verdict
    assert list(shapes["verdict"]) == [SAME_ROUTE if same else verdict(lo, hi, band) for lo, hi, band, same in
                                       zip(shapes["ci_low"], shapes["ci_high"], shapes["band"], shapes["same_route"])]
    assert (shapes["ci_low"] <= shapes["ratio"]).all() and (shapes["ratio"] <= shapes["ci_high"]).all()


def test_compare_marks_where_both_candidates_of_a_run_ran_the_same_route(app):
    name = "2026-12-01_nvidia-h200_baseline-vs-best-b-r17.json"   # best runs F.linear at some of its 30 shapes
    raw = json.loads((app.ROOT / "datasets" / "runs" / name).read_text())
    method = {(r["candidate"], r["load"], r["family"]): r["method"] for r in raw["results"]}
    n_same = sum(method[("baseline", *key)] == method[("best", *key)]
                 for key in {(r["load"], r["family"]) for r in raw["results"]})
    assert 0 < n_same < 30
    run = f"run: {name}"
    at = app.open_page("compare")
    app.compare(at, [f"{run} · baseline", f"{run} · best"])
    assert not at.exception
    shapes = at.dataframe[2].value
    same = shapes[shapes["same_route"]]
    assert len(shapes) == 30 and len(same) == n_same
    assert any(f"{n_same} of 30 shape rows" in c.value and "identical route" in c.value for c in at.caption)
    assert (same["verdict"] == "SAME ROUTE").all()


def test_compare_published_table_has_no_samples(app):
    at = app.open_page("compare")
    app.compare(at, ["Official 036 table (published) · baseline",
                                                "Official 036 table (published) · 036"])
    overall = at.dataframe[0].value
    assert round(float(overall["score"].iloc[0]), 4) == 1.3012
    assert overall["verdict"].iloc[0] == "NO SAMPLES"


def test_dispatch_slider_changes_the_methods(app):
    at = app.open_page("dispatch")
    at.selectbox(key="dispatch_plan").set_value("seed036").run()
    at.slider(key="dispatch_M").set_value(1).run()
    m1 = at.dataframe[0].value.set_index("family")["method"].to_dict()
    at.slider(key="dispatch_M").set_value(128).run()
    m128 = at.dataframe[0].value.set_index("family")["method"].to_dict()
    assert m1 != m128


def test_dispatch_passes_the_workloads_n_and_shows_it(app):
    """An N-specific plan entry (unpooler N=1024 at M 1..8) runs at M=8 (N=1024) but not at M=7 (N=8192)."""
    at = app.upload_plan(app.open_page("dispatch"), app.FIXTURES / "plan_n_specific.json")
    assert not at.exception and not at.error, [e.value for e in at.error]

    def unpooler_at(M):
        at.slider(key="dispatch_M").set_value(M).run()
        assert not at.exception
        return at.dataframe[0].value.set_index("family").loc["unpooler"]

    row = unpooler_at(8)
    assert (int(row["N"]), row["method"], row["entry N"], row["range"]) == (1024, "splitk", "1024", "2–8")
    row = unpooler_at(7)
    assert (int(row["N"]), row["method"], row["entry N"]) == (8192, "torch_linear", "any")
    assert int(unpooler_at(1)["N"]) == 1024 and unpooler_at(1)["method"] == "gemv"
    assert unpooler_at(256)["method"] == "torch_linear"
    whole = at.dataframe[1].value
    assert "N" in whole.columns
    assert sorted(whole[whole["family"] == "unpooler"]["N"]) == ["1024", "1024", "any"]
    shapes = at.dataframe[2].value.set_index(["load", "family"])
    assert shapes.loc[("verify 1", "unpooler"), "N"] == 1024
    assert shapes.loc[("verify 1", "unpooler"), "method"].startswith("splitk")
    assert shapes.loc[("decode 16", "unpooler"), "method"] == "torch_linear"


def test_dispatch_renders_shipped_plans_with_n(app):
    from kernels.plans import load_plan

    at = app.open_page("dispatch")
    for name in ("baseline", "seed036", "best"):
        at.selectbox(key="dispatch_plan").set_value(name).run()
        assert not at.exception and not at.error
        plan = load_plan(name)
        specific = {str(r["N"]) for r in plan.table() if r["N"] is not None}
        assert "N" in at.dataframe[0].value.columns
        assert set(at.dataframe[1].value["N"]) == {"any"} | specific   # the whole-plan table shows every entry's N


def test_ledger_filter(app):
    at = app.open_page("ledger")
    total = len(at.dataframe[0].value)
    at.multiselect[0].set_value(["scored"]).run()
    assert 0 < len(at.dataframe[0].value) < total
    assert "1.3234" in app.text_of(at) or "1.32343" in app.text_of(at)


def test_run_page_without_cuda_gives_the_cli(app):
    at = app.open_page("run")
    assert not at.exception
    assert any("python -m profiler run --plan baseline --plan best --shapes official" in c.value for c in at.code)


def test_reports_offers_all_formats(app):
    at = app.open_page("reports", app.RUN_A)
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["HTML (interactive, offline)", "Markdown", "CSV", "JSON"]
    at.radio(key="rep_scope").set_value("One shape").run()
    at.selectbox(key="rep_shape").set_value("decode 1/router").run()
    assert not at.exception
    assert "decode 1/router" in app.text_of(at)


# --- bad input ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, words", [("corrupt.json", "not valid JSON"),
                                         ("bad_schema_version.json", "schema_version"),
                                         ("missing.json", "cannot read"),
                                         ("unknown_family.json", "router_v2")])
def test_bad_run_file_is_an_error_naming_it(app, extra_runs, name, words):
    extra_runs(name)
    at = app.open_page("overview", f"run: {name}")
    assert not at.exception
    assert any(name in e.value and words in e.value for e in at.error), [e.value for e in at.error]


def test_bad_uploaded_csv_is_an_error_naming_the_field(app):
    at = app.open_page("overview")
    at.session_state["uploaded_tables"] = [str(app.FIXTURES / "bad_columns.csv")]
    at.run()
    at.sidebar.selectbox(key="source").set_value("upload: bad_columns.csv").run()
    assert not at.exception
    assert any("bad_columns.csv" in e.value and "baseline_us" in e.value for e in at.error), \
        [e.value for e in at.error]


def test_plan_with_unknown_method_is_an_error(app):
    at = app.upload_plan(app.open_page("dispatch"), app.FIXTURES / "plan_unknown_method.json")
    assert not at.exception
    assert any("unknown method 'warp_drive'" in e.value for e in at.error), [e.value for e in at.error]


# --- no torch at start-up ------------------------------------------------------------------------------------------
def test_no_page_imports_torch(app):
    """Every page except Run must never import torch; Run too, as long as nothing is run (it asks the driver)."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(app.ROOT)!r})
        os.environ["PROJLAB_EXTRA_RUNS"] = {str(app.FIXTURES / 'synthetic_a.json')!r}
        from streamlit.testing.v1 import AppTest
        for page in {PAGES!r}:
            for source in (None, "run: synthetic_a.json"):
                at = AppTest.from_file({str(app.ROOT / 'app.py')!r}, default_timeout=60)
                at.switch_page(f"app_pages/{{page}}.py")
                at.run()
                if source and any(s.key == "source" for s in at.sidebar.selectbox):
                    at.sidebar.selectbox(key="source").set_value(source).run()
                assert not at.exception, (page, [e.value for e in at.exception])
        print("TORCH" if "torch" in sys.modules else "NO-TORCH")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "NO-TORCH"


def test_app_opens_on_the_most_complete_committed_run(app, monkeypatch, tmp_path):
    import shutil

    from ui import loaders

    for day in ("2026-11-01", "2026-11-02"):
        shutil.copy(app.FIXTURES / "synthetic_a.json", tmp_path / f"{day}_nvidia-h200_test.json")
    monkeypatch.setattr(loaders, "RUNS_DIR", tmp_path)
    at = app.open_page("overview", source=None)
    assert at.sidebar.selectbox(key="source").value == "run: 2026-11-02_nvidia-h200_test.json"
    assert "official 036 table (published) scores 1.3012×" in app.text_of(at)


def test_probe_only_run_shows_probes_and_explains_elsewhere(app, extra_runs):
    extra_runs("probe_only.json")
    at = app.open_page("probes", "run: probe_only.json")
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 1 and len(at.dataframe) == 2  # run probes + write-up probes
    at = app.open_page("overview", "run: probe_only.json")
    assert not at.exception
    assert any("no results" in e.value and "Probes page" in e.value for e in at.error)


def test_shapes_shows_eager_beside_graph_and_flags_host_bound_shapes(app, monkeypatch):
    """The SYNTHETIC eager fixture (made-up eager times): each side's eager µs next to its graph µs, a host > kernel
    tick where eager − graph > graph, and one warning naming those shapes; a run without eager times says so."""
    eager_run = app.ROOT / "tests" / "fixtures" / "runs" / "2000-01-04_synthetic_synthetic-eager.json"
    monkeypatch.setenv("PROJLAB_EXTRA_RUNS", f"{eager_run}:{app.FIXTURES / 'synthetic_a.json'}")
    at = app.open_page("shapes", f"run: {eager_run.name}")
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[0]
    shown = list(table.proto.column_order)
    assert {"eager_candidate_us", "eager_baseline_us", "host_bound_candidate"} <= set(shown)
    assert shown.index("eager_candidate_us") > shown.index("candidate_us")
    df = table.value
    host = df["eager_candidate_us"] - df["candidate_us"]
    assert (df["host_bound_candidate"] == (host > df["candidate_us"])).all() and df["host_bound_candidate"].any()
    warning = next(w.value for w in at.warning if w.value.startswith("Host cost exceeds kernel time"))
    assert f"at {df['host_bound_candidate'].sum()} shape result(s)" in warning
    at.sidebar.selectbox(key="source").set_value(app.RUN_A).run()
    assert "eager_candidate_us" not in list(at.dataframe[0].proto.column_order)
    assert any("records no eager" in c.value for c in at.caption)


def test_shapes_shows_the_library_ceiling_from_the_search_files(app):
    """The committed cuBLASLt search file (measured on the H200) beside the published table's shapes: one row per
    BF16 shape it covers, the ceiling derived from its own two times; a run of another GPU leaves it out, saying so."""
    from dashboard.model import library_ceiling
    from datasets import load_workload

    at = app.open_page("shapes")
    assert not at.exception
    lib = next(df.value for df in at.dataframe if "ceiling_x" in df.value)
    want, _ = library_ceiling.ceiling(library_ceiling.with_dtypes(load_workload().shapes, load_workload()))
    assert len(lib) == len(want) > 0 and set(lib["shape"]) == set(want["shape"])
    assert "router" not in set(lib["family"])                       # FP32 weights: not what the search times
    assert lib["ceiling_x"].to_numpy() == pytest.approx((lib["torch_linear_us"] / lib["library_us"]).to_numpy())
    assert "cuBLASLt search benchmark" in app.text_of(at)
    at = app.open_page("shapes", app.RUN_A)
    assert not any("ceiling_x" in df.value for df in at.dataframe)
    text = app.text_of(at)
    assert "No cuBLASLt search covers these shapes" in text and "was measured on NVIDIA H200, not SYNTHETIC" in text


def test_compare_page_gives_the_numbers_of_python_m_dashboard_compare(app):
    """One function behind both: the page's overall and per-load rows for two runs' `best` are compare_runs' own."""
    from dashboard.model import compare, runs as drun

    a, b = ("2026-12-04_nvidia-h200_baseline-seed036-seed039-best-final.json.gz",
            "2026-12-04_nvidia-h200_baseline-vs-best-b-final.json.gz")
    at = app.open_page("compare")
    app.compare(at, [f"run: {a} · best", f"run: {b} · best"])
    assert not at.exception
    cli = compare.compare_runs(*(x for n in (a, b) for x in (drun.load_run_data(app.ROOT / "datasets" / "runs" / n),
                                                            "best")))
    overall, loads = at.dataframe[0].value.iloc[0], at.dataframe[1].value
    want = cli.overall.iloc[0]
    assert (overall["score"], overall["ci_low"], overall["ci_high"], overall["verdict"], overall["band_source"]) == \
        pytest.approx((want["score"], want["ci_low"], want["ci_high"], want["verdict"], want["band_source"]))
    assert list(loads["verdict"]) == list(cli.loads["verdict"]) and list(loads["band_source"]) == list(
        cli.loads["band_source"])
    assert loads["ratio"].to_numpy() == pytest.approx(cli.loads["ratio"].to_numpy())
