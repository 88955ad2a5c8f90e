"""An explain run's kernels / calls / failures are validated by the run-file loader: the committed H200 runs pass,
and malformed records (SYNTHETIC edits of a copy of one) are rejected with the JSON path of the bad field."""
import copy
import json
from pathlib import Path

import pytest

from datasets.runfile import RunFileError, load_run, validate_run

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted((ROOT / "datasets" / "runs").glob("*_explain-*.json"))


@pytest.fixture(scope="module")
def real():
    return json.loads(RUNS[0].read_text())


def test_the_committed_explain_runs_validate():
    assert len(RUNS) >= 2
    for path in RUNS:
        run = load_run(path)
        assert run["kernels"] and run["calls"]


def _broken(real, edit):
    run = copy.deepcopy(real)  # SYNTHETIC: a real run with one field broken on purpose
    edit(run)
    return run


@pytest.mark.parametrize("edit,message", [
    (lambda r: r["kernels"][4].update(duration_us="fast"), r"kernels\[4\].duration_us: expected number, got 'fast'"),
    (lambda r: r["kernels"][0].pop("grid"), r"kernels\[0\].grid: missing"),
    (lambda r: r["kernels"][1].update(dram_read_bytes=-5), r"kernels\[1\].dram_read_bytes: expected a count >= 0"),
    (lambda r: r["kernels"][0].update(index=2), r"kernels\[0\].index: index 2 is not below the call's launches"),
    (lambda r: r["kernels"].append(dict(r["kernels"][0])), r"kernels\[\d+\]: duplicate kernel index 0 of 'baseline'"),
    (lambda r: r["calls"][3].update(correct="yes"), r"calls\[3\].correct: expected boolean, got 'yes'"),
    (lambda r: r["calls"][0]["kineto"].pop("span_us"), r"calls\[0\].kineto.span_us: missing"),
    (lambda r: r["calls"][0]["kineto"]["kernels"][0].update(duration_us=None),
     r"calls\[0\].kineto.kernels\[0\].duration_us: expected number, got None"),
    (lambda r: r.update(failures=[{"load": "decode 1", "family": "o", "M": 1, "N": 8192, "K": 1024,
                                    "candidate": "x", "stage": "ncu", "reasons": "crashed"}]),
     r"failures\[0\].reasons: expected list of strings, got 'crashed'"),
    (lambda r: r.update(kernels={}), r"kernels: expected list, got dict"),
])
def test_malformed_records_are_named(real, edit, message):
    with pytest.raises(RunFileError, match=message):
        validate_run(_broken(real, edit), source="explain.json")


def test_a_loader_names_the_file(real, tmp_path):
    path = tmp_path / "2000-01-01_synthetic_explain-broken.json"
    path.write_text(json.dumps(_broken(real, lambda r: r["kernels"][2].update(registers=1.5))))
    with pytest.raises(RunFileError, match=r"^2000-01-01_synthetic_explain-broken.json: kernels\[2\].registers"):
        load_run(path)
