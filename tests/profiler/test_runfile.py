"""Run-file schema: validation names file + JSON path; atomic, never-overwriting writes; incremental writer."""
import copy
import datetime as dt
import json
from pathlib import Path

import pytest

from datasets import runfile
from datasets.runfile import RunFileError, RunWriter, load_run, new_run, run_filename, write_run_atomic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
COMPLETE = FIXTURES / "2000-01-01_synthetic_synthetic-complete.json"


@pytest.fixture()
def run():
    return json.loads(COMPLETE.read_text())


def _write(tmp_path, run, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(run))
    return path


def _load_error(tmp_path, run) -> str:
    with pytest.raises(RunFileError) as info:
        load_run(_write(tmp_path, run))
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_fixture_loads(run):
    loaded = load_run(COMPLETE)
    assert loaded == run
    assert loaded["schema_version"] == runfile.SCHEMA_VERSION == 1
    assert loaded["label"].startswith("synthetic")


def test_bad_number_names_the_json_path(tmp_path, run):
    run["results"][3]["median_us"] = "abc"
    assert _load_error(tmp_path, run) == "r.json: results[3].median_us: expected number, got 'abc'"


@pytest.mark.parametrize("mutate, expected", [
    (lambda r: r.pop("results"), "r.json: results: missing"),
    (lambda r: r.__setitem__("schema_version", 2), "r.json: schema_version: expected 1, got 2"),
    (lambda r: r.__setitem__("status", "done"), "r.json: status: expected one of ('complete', 'partial')"),
    (lambda r: r.__setitem__("label", "a b/c"), "r.json: label: expected letters"),
    (lambda r: r["results"][0].pop("candidate"), "r.json: results[0].candidate: missing"),
    (lambda r: r["results"][1].__setitem__("M", 1.5), "r.json: results[1].M: expected integer, got 1.5"),
    (lambda r: r["results"][1].__setitem__("M", True), "r.json: results[1].M: expected integer, got True"),
    (lambda r: r["results"][2].__setitem__("median_us", -1.0),
     "r.json: results[2].median_us: expected a time in us with 0.01 <= t <= 1e+06 (at least 10 ns, at most 1 s per call), got -1.0"),
    (lambda r: r["results"][2].__setitem__("median_us", 0), "r.json: results[2].median_us: expected a time in us"),
    (lambda r: r["results"][2].__setitem__("median_us", 5e-324), "r.json: results[2].median_us: expected a time in us"),
    (lambda r: r["results"][1].__setitem__("samples_us", [10.0, 1e-300]),
     "r.json: results[1].samples_us: expected times in us with 0.01 <= t"),
    (lambda r: r["results"][2].__setitem__("median_us", 2.5e6),
     "r.json: results[2].median_us: expected a time in us with 0.01 <= t <= 1e+06 (at least 10 ns, at most 1 s per call), got 2500000.0"),
    (lambda r: r["results"][1].__setitem__("samples_us", [10.0, 0.0]),
     "r.json: results[1].samples_us: expected times in us with 0.01 <= t <= 1e+06"),
    (lambda r: r["results"][1].__setitem__("ci_low_us", -3.0), "r.json: results[1].ci_low_us: expected a time"),
    (lambda r: r["probes"][0].__setitem__("us", 1.5e6), "r.json: probes[0].us: expected a time in us"),
    (lambda r: r.__setitem__("compute_peak_tflops", -780.0),
     "r.json: compute_peak_tflops: expected positive number or null, got -780.0"),
    (lambda r: r.__setitem__("failures", [{"load": "decode 1"}]), "r.json: failures[0].family: missing"),
    (lambda r: r.__setitem__("failures", [{"load": "decode 1", "family": "o", "M": 1, "N": 2, "K": 3,
                                           "candidate": "x", "reasons": "boom"}]),
     "r.json: failures[0].reasons: expected list of strings, got 'boom'"),
    (lambda r: r["results"][0].__setitem__("correct", "yes"), "r.json: results[0].correct: expected boolean"),
    (lambda r: r["results"][0].__setitem__("samples_us", [1.0, "x"]),
     "r.json: results[0].samples_us: expected list of numbers"),
    (lambda r: r["results"][0].__setitem__("flags", "slow"), "r.json: results[0].flags: expected list of strings"),
    (lambda r: r["pairs"][0].__setitem__("ratio_median", None), "r.json: pairs[0].ratio_median: expected number"),
    (lambda r: r["probes"][1].__setitem__("bytes", "4 MB"), "r.json: probes[1].bytes: expected integer"),
    (lambda r: r["environment"].__setitem__("sm_count", "132"), "r.json: environment.sm_count: expected integer"),
    (lambda r: r.__setitem__("environment", []), "r.json: environment: expected object, got []"),
    (lambda r: r.__setitem__("compute_probe", {"M": 8192}), "r.json: compute_probe.N: missing"),
    # numbers a float cannot hold, sizes past the workload files' limits, counts and ratios below zero
    (lambda r: r["results"][0].__setitem__("median_us", 10 ** 400), "r.json: results[0].median_us: expected number"),
    (lambda r: r["results"][0].__setitem__("M", 10 ** 30),
     "r.json: results[0].M: expected an integer at most 65,536 (the workload files' limit)"),
    (lambda r: r["results"][0].__setitem__("N", 1 << 21),
     "r.json: results[0].N: expected an integer at most 1,048,576 (the workload files' limit)"),
    (lambda r: r["results"][0].__setitem__("n_samples", -3), "r.json: results[0].n_samples: expected non-negative"),
    (lambda r: r["results"][0].__setitem__("throttled_samples", -1),
     "r.json: results[0].throttled_samples: expected non-negative integer"),
    (lambda r: r["results"][0].__setitem__("samples_us", []),
     "r.json: results[0].samples_us: expected a non-empty list of times"),
    (lambda r: r["results"][0].update(ci_low_us=100.0, ci_high_us=1.0),
     "r.json: results[0].ci_low_us: the interval's low end 100.0 is above its high end ci_high_us 1.0"),
    (lambda r: r["pairs"][0].update(ratio_ci_low=-1.0), "r.json: pairs[0].ratio_ci_low: expected positive number"),
    (lambda r: r["pairs"][0].update(ratios=[2.0, -1.0]), "r.json: pairs[0].ratios: expected list of positive"),
    (lambda r: r["pairs"][0].update(rse=-0.1), "r.json: pairs[0].rse: expected non-negative number or null"),
    (lambda r: r["probes"][0].update(designs_us={"a": "fast"}), "r.json: probes[0].designs_us: expected object of "
                                                                "times"),
    (lambda r: r["probes"][0].update(ci_low_us=5.0, ci_high_us=1.0), "r.json: probes[0].ci_low_us: the interval"),
    (lambda r: r.__setitem__("telemetry", [{"t_s": 0.0, "sm_mhz": "x"}]),
     "r.json: telemetry[0].sm_mhz: expected number or null, got 'x'"),
    (lambda r: r.__setitem__("telemetry", [{"t_s": 0.0, "throttle": "hot"}]), "r.json: telemetry[0].throttle: "),
    (lambda r: r["environment"].__setitem__("clocks", {"sm_max_mhz": "fast"}),
     "r.json: environment.clocks.sm_max_mhz: expected number or null"),
    (lambda r: r["environment"].__setitem__("settings", {"candidates": 5}),
     "r.json: environment.settings.candidates: expected list of strings or null, got 5"),
    # the verdict: a well-formed error record that agrees with `correct`
    (lambda r: r["results"][0].__setitem__("error", {"rel_l2": "small", "reasons": []}),
     "r.json: results[0].error.rel_l2: expected number or null, got 'small'"),
    (lambda r: r["results"][0].__setitem__("error", {"reasons": 5}),
     "r.json: results[0].error.reasons: expected list of strings, got 5"),
    (lambda r: r["results"][0].__setitem__("error", {"reasons": ["rel-L2 error 3e-2 > tolerance 1e-2"]}),
     "r.json: results[0].correct: true, but error.reasons holds 1 reason(s) against it"),
    (lambda r: r["results"][0].__setitem__("error", {"pair_ratio": 7.5, "reasons": []}),
     "r.json: results[0].correct: true, but error.pair_ratio is 7.5 (over 1 fails the pair rule)"),
])
def test_schema_errors(tmp_path, run, mutate, expected):
    mutate(run)
    assert _load_error(tmp_path, run).startswith(expected)


def test_unknown_environment_facts_may_be_null(tmp_path, run):
    run["environment"].update({"gpu": None, "sm_count": None, "git_dirty": None})
    assert load_run(_write(tmp_path, run))["environment"]["gpu"] is None


def test_pairs_must_reference_results(tmp_path, run):
    run["pairs"][0]["candidate"] = "ghost"
    msg = _load_error(tmp_path, run)
    assert msg.startswith("r.json: pairs[0].candidate: no result for 'ghost' at decode 1/qkv_gate M=1")


def test_a_pair_whose_result_moved_names_the_result(tmp_path, run):
    """A result edited to another N leaves its pair without a result: the message points at the result."""
    run["results"][0]["N"] = 999
    msg = _load_error(tmp_path, run)
    assert msg == ("r.json: pairs[0].baseline: no result for 'baseline' at decode 1/qkv_gate M=1 N=2304 K=8192; "
                   "results[0] has it at M=1 N=999 K=8192"), msg



def test_duplicate_results_rejected(tmp_path, run):
    run["results"].append(copy.deepcopy(run["results"][0]))
    msg = _load_error(tmp_path, run)
    assert f"results[{len(run['results']) - 1}]: duplicate result for candidate 'baseline'" in msg


@pytest.mark.parametrize("where, value", [("median_us", float("inf")), ("median_us", float("nan")),
                                          ("samples_us", [1.0, float("inf")])])
def test_non_finite_times_rejected_in_memory(run, where, value):
    """JSON cannot hold them, but a run dict about to be written can: validate_run rejects them first."""
    run["results"][0][where] = value
    with pytest.raises(RunFileError, match=rf"results\[0\]\.{where}: expected (number|list of numbers)"):
        runfile.validate_run(run, "r.json")


def test_duplicate_pairs_rejected(tmp_path, run):
    run["pairs"].append(copy.deepcopy(run["pairs"][0]))
    msg = _load_error(tmp_path, run)
    assert f"pairs[{len(run['pairs']) - 1}]: duplicate pair 'baseline' vs " in msg and "(first at pairs[0])" in msg


def test_same_candidate_at_two_n_rejected(tmp_path, run):
    twin = copy.deepcopy(run["results"][0])
    twin["N"] += 1
    run["results"].append(twin)
    msg = _load_error(tmp_path, run)
    i = len(run["results"]) - 1
    assert msg.startswith(f"r.json: results[{i}].N: candidate 'baseline' at decode 1/qkv_gate M=1 has "
                          f"N={twin['N']} here and N={twin['N'] - 1} at results[0]"), msg


def test_failures_and_workers_accepted(tmp_path, run):
    run["failures"] = [{"load": "decode 1", "family": "o", "M": 1, "N": 8192, "K": 1024, "candidate": "x",
                        "kind": "died", "phase": "check", "reasons": ["exit code 7"], "worker": 0}]
    run["environment"]["workers"] = [{"index": 0, "started_for": "load", "ended": "died: exit code 7"}]
    assert load_run(_write(tmp_path, run))["failures"][0]["kind"] == "died"
    run["environment"]["workers"] = [{"ended": "x"}]
    assert _load_error(tmp_path, run).startswith("r.json: environment.workers[0].index: missing")


def test_invalid_json_and_nan(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(RunFileError, match="bad.json: not valid JSON"):
        load_run(bad)
    nan = tmp_path / "nan.json"
    nan.write_text('{"schema_version": NaN}')
    with pytest.raises(RunFileError, match="nan.json: not valid JSON: non-standard JSON constant NaN"):
        load_run(nan)
    with pytest.raises(RunFileError, match="missing.json: cannot read"):
        load_run(tmp_path / "missing.json")


def test_write_atomic_and_refuse_overwrite(tmp_path, run):
    path = tmp_path / "sub" / "run.json"
    write_run_atomic(run, path)
    assert load_run(path) == run
    with pytest.raises(RunFileError, match="run.json: refusing to overwrite an existing run file"):
        write_run_atomic(run, path)
    run["label"] = "changed"
    write_run_atomic(run, path, overwrite=True)
    assert load_run(path)["label"] == "changed"
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]  # no temp files left behind


def test_write_validates_first(tmp_path, run):
    run["results"][0]["median_us"] = float("nan")
    with pytest.raises(RunFileError, match=r"x.json: results\[0\].median_us: expected number, got nan"):
        write_run_atomic(run, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_new_run_skeleton():
    run = new_run("baseline-a", {"gpu": "NVIDIA H200"}, created_utc="2026-11-30T14:03:00Z")
    assert run["status"] == "partial" and run["results"] == [] and run["pairs"] == []
    assert run["schema_version"] == 1 and run["environment"] == {"gpu": "NVIDIA H200"}
    assert new_run("x", {})["created_utc"].endswith("Z")
    with pytest.raises(RunFileError, match="label"):
        new_run("bad label", {})


def test_run_filename():
    assert run_filename("2026-11-30", "NVIDIA H200", "baseline-a") == "2026-11-30_nvidia-h200_baseline-a.json"
    assert run_filename(dt.date(2026, 1, 2), "NVIDIA H200 NVL", "x") == "2026-01-02_nvidia-h200-nvl_x.json"
    assert run_filename("2026-11-30T14:03:00Z", "H200", "x") == "2026-11-30_h200_x.json"
    with pytest.raises(RunFileError, match="YYYY-MM-DD"):
        run_filename("30/11/2026", "H200", "x")
    with pytest.raises(RunFileError, match="label"):
        run_filename("2026-11-30", "H200", "a/b")


def test_run_writer_flushes_partial_then_completes(tmp_path, run):
    path = tmp_path / "2026-11-30_nvidia-h200_a.json"
    writer = RunWriter(path)
    assert not path.exists()
    progress = {**run, "results": [], "pairs": []}
    for i, result in enumerate(run["results"][:3], start=1):
        progress["results"].append(result)
        writer.flush(progress)
        on_disk = load_run(path)
        assert on_disk["status"] == "partial" and len(on_disk["results"]) == i
    writer.finalize(run)
    final = load_run(path)
    assert final["status"] == "complete" and len(final["results"]) == len(run["results"])
    with pytest.raises(RunFileError, match="already finalized"):
        writer.flush(run)
    with pytest.raises(RunFileError, match="refusing to overwrite"):
        RunWriter(path)


def test_run_writer_refuses_a_file_created_meanwhile(tmp_path, run):
    path = tmp_path / "r.json"
    writer = RunWriter(path)
    path.write_text("{}")  # someone else took the name before the first flush
    with pytest.raises(RunFileError, match="refusing to overwrite"):
        writer.flush(run)
    assert path.read_text() == "{}"


def test_runfile_does_not_mutate_its_input(tmp_path, run):
    before = copy.deepcopy(run)
    RunWriter(tmp_path / "r.json").finalize(run)
    assert run == before


def test_a_run_file_gets_the_umasks_mode_not_the_temp_files(tmp_path, run):
    import os
    old = os.umask(0o022)
    try:
        path = runfile.write_text_atomic(tmp_path / "r.json", "{}", overwrite=False)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
