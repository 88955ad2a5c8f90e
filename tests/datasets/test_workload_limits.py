"""Reading a workload costs time linear in its file and bounded: families, loads and nearby M are capped (scored
shapes are loads x families), and a run file's records are capped, each with one line naming the field."""
import json
import time
from pathlib import Path

import pytest

from datasets import DatasetError, load_workload, workload_from_dict
from datasets.runfile import MAX_RESULTS, RunFileError, validate_run
from datasets.workload_spec import MAX_FAMILIES, MAX_LOADS

RUN = Path(__file__).parents[1] / "fixtures" / "runs" / "2000-01-01_synthetic_synthetic-complete.json"
# The bounds below are this process's CPU time (time.process_time), not wall time: what they catch is a quadratic
# scan (tens of seconds), and other work on the machine slows the wall clock, not the CPU time spent here.


def _spec(n_families: int, n_loads: int) -> dict:
    return {"families": {f"f{i}": {"N": 64, "K": 64} for i in range(n_families)},
            "loads": [{"load": f"l{j}", "M": j + 1} for j in range(n_loads)]}


def test_a_150_kb_workload_of_2000_families_and_loads_is_refused_at_once():
    spec = _spec(2000, 2000)
    assert 100_000 < len(json.dumps(spec)) < 200_000
    t0 = time.process_time()
    with pytest.raises(DatasetError) as info:
        workload_from_dict(spec, "big.json", name="big")
    assert time.process_time() - t0 < 2.0
    text = str(info.value)
    assert "2,000 families is over the limit 64" in text and "2,000 loads is over the limit 64" in text


def test_a_run_embedding_that_workload_is_refused_quickly_naming_the_field(tmp_path):
    run = json.loads(RUN.read_text())
    run["workload"] = dict(_spec(2000, 2000), name="big")
    t0 = time.process_time()
    with pytest.raises(RunFileError, match="families is over the limit"):
        validate_run(run, "big-run.json")
    assert time.process_time() - t0 < 2.0


def test_a_workload_at_the_limits_reads_quickly():
    """64 x 64 = 4,096 scored shapes: the load of each shape's M is looked up once per row, not by a scan."""
    t0 = time.process_time()
    workload = workload_from_dict(_spec(MAX_FAMILIES, MAX_LOADS), "edge.json", name="edge")
    assert len(workload.shapes) == MAX_FAMILIES * MAX_LOADS
    assert time.process_time() - t0 < 2.0
    assert workload.load_at(MAX_LOADS) == f"l{MAX_LOADS - 1}" and workload.load_at(MAX_LOADS + 1) is None


def test_run_records_are_capped():
    run = dict(json.loads(RUN.read_text()), results=[{}] * (MAX_RESULTS + 1))
    with pytest.raises(RunFileError, match=f"results: {MAX_RESULTS + 1:,} records is over the limit"):
        validate_run(run, "r.json")


def test_the_committed_workloads_are_inside_the_limits():
    for name in ("muse_bf16_proj", "llama31_8b_decode"):
        load_workload(name)
