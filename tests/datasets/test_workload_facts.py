"""The one place for workload facts: N at (family, M), shape rows and keys, dtype and shape bytes; muse's numbers
unchanged, every committed run's shapes reproduced, and Llama-3.1-8B's shapes derived from its public config."""
import json
from pathlib import Path

import pandas as pd
import pytest

from datasets import (DTYPE_BYTES, NEARBY_LOAD, RUNS_DIR, dtype_bytes, is_scored_load, load_seed_probes,
                      load_workload, shape_bytes, shape_key, shape_key_of)
from datasets.shapes import SHAPE_COLUMNS, weight_bytes
from datasets.workload import workload_of_run
from datasets.jsonfile import read_json
from datasets.paths import run_paths

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "workloads" / "tiny.json"


@pytest.fixture(scope="module")
def muse():
    return load_workload()


def test_muse_n_at_every_m(muse):
    assert [muse.n_at("unpooler", M) for M in (1, 8, 3, 9, 16, 256)] == [1024, 1024, 8192, 8192, 8192, 8192]
    for row in muse.shapes.itertuples():
        assert muse.n_at(row.family, row.M) == row.N
    for row in muse.nearby.itertuples():
        assert muse.n_at(row.family, row.M) == row.N       # nearby M are never a load's M: the general N


def test_unknown_family_is_one_clear_error(muse):
    with pytest.raises(ValueError, match="unknown family 'qkv'; muse_bf16_proj has qkv_gate, o, pooler"):
        muse.n_at("qkv", 1)


def test_rows_are_the_frames_as_plain_python(muse):
    assert pd.DataFrame(muse.scored_rows(), columns=SHAPE_COLUMNS).equals(muse.shapes)
    assert pd.DataFrame(muse.nearby_rows(), columns=SHAPE_COLUMNS).equals(muse.nearby)
    assert all(type(v) in (int, float, str) for row in muse.scored_rows() for v in row.values())


def test_shape_at_any_m(muse):
    assert muse.shape("unpooler", 8)["load"] == "verify 1" and muse.shape("unpooler", 8)["N"] == 1024
    row = muse.shape("qkv_gate", 64)                      # not a load's M, not in the nearby list
    assert (row["load"], row["N"], row["K"]) == (NEARBY_LOAD, 2304, 8192)
    assert not muse.is_scored(row["load"]) and not is_scored_load(row["load"])
    assert muse.load_at(128) == "verify 16" and muse.load_at(64) is None
    assert muse.load_m == {"decode 1": 1, "decode 16": 16, "decode 32": 32, "verify 1": 8, "verify 16": 128,
                           "verify 32": 256}


def test_shape_keys(muse):
    assert shape_key("decode 1", "o", 1) == "decode 1/o" == muse.shape_key("decode 1", "o", 1)
    assert shape_key("nearby", "o", 9) == "nearby/o/M9"
    assert shape_key_of(muse.shape("qkv_gate", 64)) == "nearby/qkv_gate/M64"
    keys = [shape_key_of(r) for r in muse.scored_rows() + muse.nearby_rows()]
    assert len(set(keys)) == 85


def test_every_committed_run_shape_is_the_workloads_shape():
    """Each (load, family, M, N, K) measured on the H200 is exactly Workload.shape(family, M) of the run's own
    workload (embedded, or muse_bf16_proj for runs written before runs embedded one), including the tuner's M±1
    neighbours (M=127, 257) that are not in the nearby list."""
    runs = run_paths(RUNS_DIR)
    assert runs
    seen, names = set(), set()
    for path in runs:
        run = read_json(path)
        workload, _ = workload_of_run(run, path.name)
        names.add(workload.name)
        for record in run["results"] + run["pairs"]:
            row = workload.shape(record["family"], record["M"])
            assert {k: row[k] for k in ("load", "N", "K")} == {k: record[k] for k in ("load", "N", "K")}, path.name
            seen.add((workload.name, record["M"]))
    assert {("muse_bf16_proj", 127), ("muse_bf16_proj", 257)} <= seen
    assert {"muse_bf16_proj", "llama31_8b_decode"} <= names


def test_dtype_bytes_are_torchs_itemsizes():
    torch = pytest.importorskip("torch")
    assert {name: getattr(torch, name).itemsize for name in DTYPE_BYTES} == DTYPE_BYTES
    with pytest.raises(ValueError, match="unknown dtype 'int4'"):
        dtype_bytes("int4")


def test_weight_bytes_are_the_seed_probe_sizes(muse):
    """The write-up's HBM probes read exactly the families' weight bytes (datasets/seed_probes.csv bytes_basis)."""
    assert {weight_bytes(r) for r in muse.scored_rows() if r["N"] != 1024} == set(load_seed_probes().bytes)


def test_shape_bytes_count_weights_input_and_output(muse):
    router = muse.shape("router", 256)                     # FP32 weight and output, BF16 input
    assert shape_bytes(router) == 256 * 8192 * 4 + 256 * 8192 * 2 + 256 * 256 * 4
    unpooler = muse.shape("unpooler", 1)
    assert shape_bytes(unpooler) == 1024 * 4096 * 2 + 4096 * 2 + 1024 * 2


def test_one_byte_count_for_the_profiler_and_the_dashboard(muse):
    """datasets.shapes counts a shape's bytes; the dashboard's per-row counts (numpy columns) are the same
    function, so a probe floor and a table floor are looked up at the same byte count."""
    import numpy as np

    from dashboard.model import metrics
    from datasets.shapes import bytes_moved

    assert metrics.bytes_moved is bytes_moved
    rows = [muse.shape(f, m) for f in ("router", "qkv_gate", "unpooler") for m in (1, 16, 256)]
    for dt in {(r["x_dtype"], r["w_dtype"], r["y_dtype"]) for r in rows}:
        same = [r for r in rows if (r["x_dtype"], r["w_dtype"], r["y_dtype"]) == dt]
        cols = {k: np.array([r[k] for r in same]) for k in ("M", "N", "K")}
        assert list(bytes_moved(cols["M"], cols["N"], cols["K"], *dt)) == [shape_bytes(r) for r in same]


# --- Llama-3.1-8B ----------------------------------------------------------------------------------------------
# Its public config.json: hidden_size, num_attention_heads, num_key_value_heads, intermediate_size.
HIDDEN, HEADS, KV_HEADS, INTERMEDIATE = 4096, 32, 8, 14336
HEAD_DIM = HIDDEN // HEADS


def test_llama_shapes_follow_from_the_public_config():
    w = load_workload("llama31_8b_decode")
    expect = {"qkv": (HEADS * HEAD_DIM + 2 * KV_HEADS * HEAD_DIM, HIDDEN), "o": (HIDDEN, HEADS * HEAD_DIM),
              "gate_up": (2 * INTERMEDIATE, HIDDEN), "down": (HIDDEN, INTERMEDIATE)}
    assert expect == {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}
    assert w.family_order == list(expect)
    assert w.load_m == {"decode 1": 1, "decode 8": 8, "decode 32": 32, "prefill 128": 128}
    assert len(w.shapes) == 16 and w.nearby.empty
    for row in w.shapes.itertuples():
        assert (row.N, row.K) == expect[row.family]
        assert (row.x_dtype, row.w_dtype, row.y_dtype) == ("bfloat16",) * 3
        assert row.rel_l2_tol == 0.01
    assert w.shapes.weight.nunique() == 1                  # equal weights


def test_llama_contract_numbers_are_muses(muse):
    w = load_workload("llama31_8b_decode")
    assert {k: v for k, v in w.contract.items() if k != "note"} == {k: v for k, v in muse.contract.items()
                                                                    if k != "note"}


def test_tiny_fixture_exercises_n_by_m_weights_and_mixed_dtypes():
    w = load_workload(TINY)
    assert "SYNTHETIC" in w.source
    assert [(r["load"], r["family"], r["M"], r["N"]) for r in w.scored_rows()] == [
        ("one", "proj", 1, 32), ("one", "gate", 1, 16), ("four", "proj", 4, 64), ("four", "gate", 4, 16)]
    assert [w.n_at("proj", M) for M in (1, 2, 3, 4)] == [32, 64, 64, 64]
    assert set(w.shapes.weight) == {1, 3}
    assert shape_bytes(w.shape("gate", 4)) == 16 * 64 * 4 + 4 * 64 * 2 + 4 * 16 * 4
