"""A run file embeds its workload (Workload.to_dict under "workload") and reads it back; older runs fall back to
muse_bf16_proj with a note saying so."""
import json
from pathlib import Path

import pytest

from datasets import DatasetError, RUNS_DIR, load_workload, workload_from_dict, workload_of_run
from datasets.workload import RUN_KEY
from datasets.jsonfile import read_json
from datasets.paths import run_paths

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "workloads" / "tiny.json"
WORKLOADS = ["muse_bf16_proj", "llama31_8b_decode", str(TINY)]


@pytest.mark.parametrize("ref", WORKLOADS)
def test_round_trip_through_json(ref):
    w = load_workload(ref)
    back = workload_from_dict(json.loads(json.dumps(w.to_dict())), "run.json", RUN_KEY)
    assert back.name == w.name and back.fingerprint == w.fingerprint
    assert back.shapes.equals(w.shapes) and back.nearby.equals(w.nearby)
    assert (back.contract, back.load_order, back.family_order) == (w.contract, w.load_order, w.family_order)


def test_to_dict_is_a_copy():
    w = load_workload()
    d = w.to_dict()
    d["families"]["o"]["N"] = 1
    assert w.n_at("o", 1) == 8192 and w.to_dict()["families"]["o"]["N"] == 8192


def test_fingerprint_ignores_prose_but_not_numbers():
    base = load_workload().to_dict()
    reworded = {**base, "source": "another description"}
    changed = json.loads(json.dumps(base))
    changed["families"]["unpooler"]["N_by_M"]["8"] = 2048
    fp = load_workload().fingerprint
    assert workload_from_dict(reworded).fingerprint == fp
    assert workload_from_dict(changed).fingerprint != fp


def test_a_run_with_its_workload_reads_it_back():
    run = {"label": "x", RUN_KEY: load_workload("llama31_8b_decode").to_dict()}
    w, note = workload_of_run(run, "datasets/runs/2027-01-01_nvidia-h200_llama.json")
    assert w.name == "llama31_8b_decode" and note is None
    assert w.origin == "2027-01-01_nvidia-h200_llama.json (embedded)"


def test_the_run_schema_accepts_the_embedded_workload(tmp_path):
    from datasets.runfile import load_run, new_run, write_run_atomic

    run = new_run("x", {"gpu": "SYNTHETIC (not measured)"})
    run[RUN_KEY] = load_workload(TINY).to_dict()
    path = write_run_atomic(run, tmp_path / "run.json")
    w, note = workload_of_run(load_run(path), path.name)
    assert w.name == "tiny_synthetic" and note is None


def test_a_broken_embedded_workload_names_the_run_and_field():
    spec = load_workload().to_dict()
    spec["loads"][0]["M"] = -1
    with pytest.raises(DatasetError, match=r"^r\.json: file, field 'workload\.loads\[0\]\.M': .*-1"):
        workload_of_run({RUN_KEY: spec}, "some/dir/r.json")


def test_committed_runs_without_the_field_fall_back_to_muse_with_a_note():
    older = [p for p in run_paths(RUNS_DIR) if RUN_KEY not in read_json(p)]
    assert older     # the 2026-11-30 H200 runs were written before runs embedded their workload
    for path in older:
        w, note = workload_of_run(read_json(path), str(path))
        assert w.name == "muse_bf16_proj"
        assert note.startswith(f"{path.name} does not record its workload") and "assuming" in note
