"""The sidebar's state: it survives page switches and reloads, lives in the URL (?source=&baseline=&candidate=),
follows a shared link, warns on a bad one, never shows a stale candidate, and lists an upload at once."""
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.model import runs

R2 = "2026-11-30_nvidia-h200_baseline-seed036-best-r2.json"
BVB = "2026-11-30_nvidia-h200_baseline-vs-baseline-a-r2.json"
TUNE = "2026-11-30_nvidia-h200_tune-r3.json.gz"


def _sidebar(at: AppTest) -> dict:
    return {s.key: s.value for s in at.sidebar.selectbox}


def _score(at: AppTest, app) -> str:
    return next(v for k, v in app.figures(at).items() if k.startswith("Score"))


def _expected(app, name: str, base: str, cand: str) -> str:
    data = runs.load_run_data(app.ROOT / "datasets" / "runs" / name)
    return f"{runs.run_score(data, base, cand).score:.4f}×"


def test_source_survives_page_switches(app):
    """Overview → pick R2 → Roofline → Shapes → Compare (no sidebar) → Shapes: still R2, and in the URL."""
    at = app.open_page("overview", f"run: {R2}")
    for page in ("roofline", "shapes", "compare", "shapes", "overview"):
        at.switch_page(f"app_pages/{page}.py")
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        if page != "compare":
            assert _sidebar(at)["source"] == f"run: {R2}", page
    assert at.query_params["source"] == R2
    assert _score(at, app) == _expected(app, R2, "baseline", "best")


def test_a_reload_or_a_shared_link_reproduces_the_view(app):
    at = app.open_page("overview", f"run: {R2}")
    at.sidebar.selectbox(key="candidate").set_value("seed036").run()
    link = dict(at.query_params)
    assert link == {"source": R2, "baseline": "baseline", "candidate": "seed036"}
    fresh = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)  # a new session: only the URL
    fresh.query_params.update(link)
    fresh.switch_page("app_pages/overview.py")
    fresh.run()
    assert _sidebar(fresh) == {"source": f"run: {R2}", "baseline": "baseline", "candidate": "seed036"}
    assert _score(fresh, app) == _score(at, app) == _expected(app, R2, "baseline", "seed036")


def test_query_parameters_drive_the_view_in_a_running_session(app):
    at = app.open_page("shapes")
    at.query_params.update({"source": "synthetic_b.json", "baseline": "seed036", "candidate": "baseline"})
    at.run()
    assert _sidebar(at) == {"source": "run: synthetic_b.json", "baseline": "seed036", "candidate": "baseline"}
    wide = at.dataframe[0].value
    assert (wide["ratio"] == wide["baseline_us"] / wide["candidate_us"]).all()  # seed036 ÷ baseline


@pytest.mark.parametrize("params, words", [({"source": "nope.json"}, "source 'nope.json'"),
                                           ({"source": R2, "candidate": "ghost"}, "candidate 'ghost'"),
                                           ({"source": R2, "baseline": "../../etc"}, "baseline '../../etc'")])
def test_a_bad_link_warns_and_falls_back(app, params, words):
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    at.query_params.update(params)
    at.switch_page("app_pages/overview.py")
    at.run()
    assert not at.exception and not at.error
    assert any(words in w.value and "not available" in w.value for w in at.warning), [w.value for w in at.warning]
    side = _sidebar(at)
    assert side["source"] != "nope.json" and side.get("candidate") != "ghost"
    assert at.query_params["source"] != "nope.json"  # the address now says what is shown
    at.run()
    assert not any("not available" in w.value for w in at.warning)  # said once, not on every rerun


def test_the_sidebar_candidate_is_never_stale(app):
    """A paired sweep shows best; a repeatability run has no best: the sidebar must show what the page computes."""
    at = app.open_page("overview", f"run: {R2}")
    assert _sidebar(at)["candidate"] == "best"
    at.sidebar.selectbox(key="source").set_value(f"run: {BVB}").run()
    assert _sidebar(at) == {"source": f"run: {BVB}", "baseline": "baseline", "candidate": "baseline#2"}
    assert at.query_params["candidate"] == "baseline#2"
    assert _score(at, app) == _expected(app, BVB, "baseline", "baseline#2")
    at.sidebar.selectbox(key="source").set_value(f"run: {TUNE}").run()
    side = _sidebar(at)
    options = at.sidebar.selectbox(key="candidate").options
    assert side["baseline"] == "torch_linear" and side["candidate"] in options and side["candidate"] != "best"
    assert any(side["candidate"] in e.value for e in [*at.warning, *at.error])  # the notice names the same pair


def test_an_upload_is_listed_and_selected_at_once(app):
    at = app.open_page("overview")
    data = (app.FIXTURES / "synthetic_b.json").read_bytes()
    app.upload(at, "upload_overview", "my kernels run.json", data)
    assert not at.exception
    source = at.sidebar.selectbox(key="source")
    assert source.value == "upload: my kernels run.json" and "Upload · upload: my kernels run.json" in source.options
    assert any("now the selected source" in s.value for s in at.success)
    expected = runs.run_score(runs.load_run_data(app.FIXTURES / "synthetic_b.json"), "baseline", "seed036").score
    assert _score(at, app) == f"{expected:.4f}×"   # this very rerun shows it: no second refresh


@pytest.mark.parametrize("name, data, words", [
    ("deep.json", b"[" * 1000 + b"]" * 1000, "nested 1000 levels deep"),
    ("../../x y.json", b"{}", "schema_version"),
    ("dup.csv", b"load,family,M,M,N,K,baseline_us,candidate_us\n", "column 'M' appears twice"),
])
def test_a_rejected_upload_is_named_deleted_and_never_listed(app, name, data, words, upload_dir):
    at = app.open_page("overview")
    before = at.sidebar.selectbox(key="source").options
    app.upload(at, "upload_overview", name, data)
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("rejected" in e and words in e for e in errors), errors
    assert all("../" not in e for e in errors)   # the name shown is the sanitised one
    assert at.sidebar.selectbox(key="source").options == before
    assert not upload_dir.is_dir() or not any(upload_dir.iterdir())


def test_an_upload_keeps_its_own_name_and_reaches_compare(app):
    """An upload on Compare is a source like any other for its browser session: shown under the user's file name (not
    a sanitised one) and chosen on Compare without clearing anything by hand, while the other pages keep the source
    they showed (it is listed in the sidebar, not switched to)."""
    at = app.open_page("compare", source=None)
    before = at.multiselect(key="cmp_runs").value
    data = (app.FIXTURES / "synthetic_b.json").read_bytes()
    app.upload(at, "upload_compare", "résumé run 1.json", data)
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs_box = at.multiselect(key="cmp_runs")
    upload = next(n for n in runs_box.value if n.startswith("upload-"))
    assert [n for n in runs_box.value if n != upload] == before
    series = at.multiselect(key="cmp_series").value
    assert any(s.startswith("upload: résumé run 1.json · ") for s in series), series
    assert any("other pages keep their source" in s.value for s in at.success)
    at.switch_page("app_pages/overview.py")
    at.run()
    assert _sidebar(at)["source"] != "upload: résumé run 1.json"
    assert any(o.endswith("upload: résumé run 1.json") for o in at.sidebar.selectbox(key="source").options)


def _fresh(app, link: dict) -> AppTest:
    """Another browser (or the same tab reloaded) on the same server: only the URL."""
    fresh = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    fresh.query_params.update(link)
    fresh.switch_page("app_pages/overview.py")
    fresh.run()
    return fresh


def test_a_reload_or_a_link_to_an_upload_brings_it_back_on_the_same_server(app, upload_dir):
    at = app.open_page("overview")
    app.upload(at, "upload_overview", "mine.json", (app.FIXTURES / "synthetic_b.json").read_bytes())
    link = dict(at.query_params)
    assert link["source"].startswith("upload-") and (upload_dir / link["source"]).is_file()
    fresh = _fresh(app, link)
    assert not fresh.exception
    assert not [w.value for w in fresh.warning if link["source"] in w.value]
    assert _sidebar(fresh)["source"] == "upload: mine.json"
    expected = runs.run_score(runs.load_run_data(app.FIXTURES / "synthetic_b.json"), "baseline", "seed036").score
    assert _score(fresh, app) == f"{expected:.4f}×"
    (upload_dir / link["source"]).unlink()   # gone from the server (pruned): the link says so
    gone = _fresh(app, link)
    texts = [w.value for w in gone.warning]
    assert any("not on this server" in t and link["source"] in t for t in texts), texts


def test_the_upload_folder_keeps_the_newest_within_its_limits(app, upload_dir, monkeypatch):
    from ui import uploads

    monkeypatch.setattr(uploads, "MAX_UPLOADS", 2)
    at = app.open_page("overview")
    data = (app.FIXTURES / "synthetic_b.json").read_bytes()
    for i in range(3):   # three different files (a different name inside each: a different content hash)
        app.upload(at, "upload_overview", f"run{i}.json", data + b" " * i)
    names = sorted(p.name.split("-", 2)[-1] for p in upload_dir.glob("upload-*"))
    assert names == ["run1.json", "run2.json"], names
    monkeypatch.setattr(uploads, "MAX_UPLOADS", 100)
    monkeypatch.setattr(uploads, "MAX_STORE_MB", len(data) * 1.5 / 2**20)   # room for one
    app.upload(at, "upload_overview", "run3.json", data + b"   ")
    assert [p.name.split("-", 2)[-1] for p in upload_dir.glob("upload-*")] == ["run3.json"]


def test_the_upload_folder_is_never_inside_datasets(monkeypatch):
    from ui import uploads

    monkeypatch.setenv("PROJLAB_UPLOAD_DIR", str(uploads.DATA_DIR / "runs"))
    assert uploads.store_dir() == uploads.DEFAULT_UPLOAD_DIR
    assert ".uploads/" in (uploads.PROJECT_DIR / ".gitignore").read_text()


def test_an_oversized_upload_is_refused_before_it_is_read(app, monkeypatch):
    from ui import uploads

    monkeypatch.setattr(uploads, "MAX_UPLOAD_BYTES", 1000)
    at = app.open_page("overview")
    app.upload(at, "upload_overview", "big.json", (app.FIXTURES / "synthetic_b.json").read_bytes())
    assert any("big.json" in e.value and "over the 1,000-byte" in e.value for e in at.error)


def test_compare_series_live_in_the_url(app):
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    a, b = f"{app.RUN_A} · baseline", f"{app.RUN_A} · seed036"
    at.query_params["series"] = [a, b]
    at.query_params["reference"] = b
    at.switch_page("app_pages/compare.py")
    at.run()
    assert at.multiselect(key="cmp_series").value == [a, b] and at.selectbox(key="cmp_ref").value == b
    assert set(at.dataframe[0].value["series"]) == {a}   # ratios are the reference (seed036) ÷ baseline


def test_dispatch_offers_only_project_plans_and_uploads(app):
    from kernels.plans import list_plans

    at = app.open_page("dispatch")
    assert at.selectbox(key="dispatch_plan").options == list_plans() + ["(upload a plan JSON)"]
    assert not at.text_input   # no free path: the server's files are not the user's to name
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=60)
    at.query_params["plan"] = "/etc/passwd"
    at.switch_page("app_pages/dispatch.py")
    at.run()
    assert any("plan '/etc/passwd'" in w.value for w in at.warning) and not at.error
    assert at.selectbox(key="dispatch_plan").value == "best"


def test_dispatch_upload_errors_are_one_line(app):
    at = app.upload_plan(app.open_page("dispatch"), app.FIXTURES / "corrupt.json", name="deep plan.json")
    at.file_uploader(key="dispatch_upload").set_value(("../deep plan.json", b"[" * 1000 + b"]" * 1000,
                                                       "application/json")).run()
    assert not at.exception
    assert any("deep_plan.json" in e.value and "nested 1000 levels" in e.value for e in at.error), \
        [e.value for e in at.error]


def test_the_source_picker_groups_by_kind_newest_first_and_marks_the_default(app, monkeypatch):
    from dashboard.documents import run_index
    from dashboard.model import run_kinds

    monkeypatch.delenv("PROJLAB_EXTRA_RUNS", raising=False)
    at = AppTest.from_file(str(app.ROOT / "app.py"), default_timeout=90)
    at.switch_page("app_pages/overview.py")
    at.run()
    box = at.sidebar.selectbox(key="source")
    default = run_kinds.default_run(list(run_index.metas(runs.list_runs(), run_index.read()).values()))
    assert box.value == f"run: {default.name}"
    marked = [o for o in box.options if "★" in o]
    meta = run_index.read()[default.name][1]
    date, label = default.name.split("_")[0], default.name.split("_", 2)[2].split(".json")[0]
    assert marked == [f"Plan sweep · {date} {label} · {len(meta.candidates)} candidates  ★ default"]
    # readable: what tells runs apart comes first, so no two options of a sidebar's width look alike
    assert len(set(box.options)) == len(box.options)
    assert default.name in at.sidebar.markdown[0].value.replace("\\", "")   # the whole file name beside it
    groups = list(dict.fromkeys(o.split(" · ", 1)[0] for o in box.options))
    assert groups[:2] == ["Published", "Plan sweep"] and {"Repeatability", "Tune", "Survey", "Explain"} <= set(groups)
    at.switch_page("app_pages/compare.py")
    at.run()
    assert not at.exception
    assert at.multiselect(key="cmp_runs").value == [default.name]          # the sidebar's source
    series = at.multiselect(key="cmp_series").options
    assert series and all(s.startswith(f"run: {default.name} · ") for s in series)   # its candidates, no more


def test_the_upload_limit_is_on_the_page_and_a_wrong_typed_upload_is_a_short_line(app):
    import json

    # the limit is written beside the uploader, on the page, once a visitor opens the upload expander
    at = app.open_expander(app.open_page("overview"), "upload_open")
    assert any("At most 16 MB per file" in c.value for c in at.caption)
    run = json.loads((app.FIXTURES / "synthetic_b.json").read_text())
    run["results"] = {"all": run["results"]}
    app.upload(at, "upload_overview", "moved.json", json.dumps(run).encode())
    errors = [e.value for e in at.error]
    assert errors and all(len(e) < 400 for e in errors), [len(e) for e in errors]
    assert any("moved.json" in e and "results: expected list" in e for e in errors), errors
