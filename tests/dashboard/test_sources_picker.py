"""The source picker: run files grouped by what they are (dashboard.model.run_kinds), newest first by the time they ran
(not the file name's text), the default marked; uploads under the user's own file name; a link to an upload that
this session does not have says why."""
from pathlib import Path

from datasets.jsonfile import read_json
from dashboard.documents import run_index
from dashboard.model import run_kinds, runs, sources

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "datasets" / "runs"


def test_committed_runs_are_grouped_by_kind_and_newest_first():
    srcs = sources.list_sources(RUNS, extra_runs=[])
    metas = run_index.metas(runs.list_runs(RUNS), run_index.read())   # the index: test_run_index.py checks it
    default = run_kinds.default_run(list(metas.values()))
    ordered, shown = sources.picker(srcs, metas, default.name)
    assert len(ordered) == len(srcs)
    groups = [shown[s.label].split(" · ", 1)[0] for s in ordered]
    assert groups[0] == "Published"
    order = list(dict.fromkeys(groups))
    assert order == [g for g in sources.GROUPS.values() if g in order]        # each group once, in GROUPS order
    for group in order:
        created = [metas[s.path].created_utc for s, g in zip(ordered, groups) if g == group and s.kind == "run"]
        assert created == sorted(created, reverse=True), group
    # kinds from the file's content: the tune logs are tunes, the explain runs explains
    for s, g in zip(ordered, groups):
        doc = read_json(s.path) if s.kind == "run" else None
        if doc is not None and "tune" in doc:
            assert g == "Tune", s.name
        if doc is not None and "kernels" in doc:
            assert g == "Explain", s.name
    marked = [s.name for s in ordered if sources.DEFAULT_MARK in shown[s.label]]
    assert marked == [default.name]
    best = metas[default]
    assert best.kind == run_kinds.SWEEP and best.shipped_pair and best.workload == "muse_bf16_proj"
    assert best.device == run_kinds.HOME_DEVICE   # the write-up's device first (another GPU's sweep is never it)
    assert all(m.created_utc <= best.created_utc for m in metas.values()
               if m.kind == run_kinds.SWEEP and m.shipped_pair and m.scored >= best.scored
               and m.device == run_kinds.HOME_DEVICE)


def test_r12_sorts_after_r2_only_when_it_ran_earlier():
    r2, r12 = RUNS / "2026-12-01_nvidia-h200_tune-r7.json.gz", RUNS / "2026-12-01_nvidia-h200_tune-r12.json.gz"
    srcs = [sources.run_source(r2), sources.run_source(r12)]
    ordered, _ = sources.picker(srcs, {p: run_kinds.run_meta(p) for p in (r2, r12)})
    assert [s.path for s in ordered] == [r12, r2]     # r12 ran later: it comes first, though "r12" < "r7" as text


def test_an_upload_keeps_the_users_file_name_and_a_link_to_one_explains():
    assert sources.display_name("../../résumé run 1.json") == "résumé run 1.json"
    assert sources.display_name("a\x00b\u202e.json") == "ab.json"
    name = sources.upload_name("résumé run 1.json", "0123456789abcdef")
    assert name == "upload-0123456789-r_sum_run_1.json"
    src = sources.run_source(Path("/tmp") / name, uploaded=True, shown="résumé run 1.json")
    assert src.label == "upload: résumé run 1.json" and src.name == name and src.uploaded
    assert "not on this server" in sources.missing_upload(name) and sources.missing_upload("r.json") is None
    twice = sources.list_sources(RUNS, extra_runs=[], uploaded_runs=["/tmp/upload-1-a.json", "/tmp/upload-2-a.json"],
                                 shown={"/tmp/upload-1-a.json": "a.json", "/tmp/upload-2-a.json": "a.json"})
    labels = [s.label for s in twice if s.uploaded]
    assert labels == ["upload: a.json", "upload: a.json (upload-2-a.json)"]
