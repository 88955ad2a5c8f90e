"""dashboard.model.library_ceiling: per shape, the cuBLASLt search's torch_linear, heuristic and library-best times, from
the newest file covering the shape on the run's GPU; BF16 shapes only; bad files named, never fatal."""
import json

import pandas as pd
import pytest

from dashboard.model import library_ceiling as L
from datasets import load_workload


def _file(folder, name, gpu, finals, M=32, N=4096, K=8192):
    (folder / name).write_text(json.dumps({"cublaslt_version": 130100, "gpu": gpu, "shapes": [
        {"M": M, "N": N, "K": K, "finals": finals}]}))


def _f(name, us, ratio=None, **cfg):
    out = {"name": name, "config": {} if name == "torch_linear" else {"tile_id": 13, "split_k": 1, **cfg},
           "median_us": us}
    if ratio:
        out["ratio_vs_best_heuristic"] = ratio
    return out


SHAPES = L.with_dtypes(load_workload().shapes[["load", "family", "M", "N", "K"]], load_workload())


def test_the_newest_file_of_the_gpu_gives_each_covered_shape(tmp_path):
    _file(tmp_path, "2026-12-01_a.json", "NVIDIA H200", [_f("torch_linear", 21.0), _f("found nk", 20.0, 1.01)])
    _file(tmp_path, "2026-12-04_b.json", "NVIDIA H200", [_f("torch_linear", 21.6), _f("heuristic kn", 20.3),
                                                         _f("found nk", 18.2, 1.115, custom=1)])
    _file(tmp_path, "2026-12-05_c.json", "NVIDIA H100", [_f("torch_linear", 30.0), _f("found nk", 10.0)])
    table, notes = L.ceiling(SHAPES, gpu="NVIDIA H200", folder=tmp_path)
    assert list(table["shape"]) == ["decode 32/pooler"]
    row = table.iloc[0]
    assert row["source"] == "2026-12-04_b.json" and row["library_route"] == "found nk"
    assert row["ceiling_x"] == pytest.approx(21.6 / 18.2) and row["over_heuristic"] == 1.115
    assert (row["heuristic_orient"], row["heuristic_us"]) == ("kn", 20.3) and "custom=1" in row["library_config"]
    assert notes == ["left out: 2026-12-05_c.json was measured on NVIDIA H100, not NVIDIA H200"]
    # no GPU named (a published table): the newest file of any GPU
    assert L.ceiling(SHAPES, folder=tmp_path)[0].iloc[0]["source"] == "2026-12-05_c.json"


def test_torch_linear_fastest_is_a_ceiling_of_one_and_fp32_weights_never_match(tmp_path):
    _file(tmp_path, "a.json", None, [_f("torch_linear", 8.6), _f("heuristic nk", 8.8)], M=256, N=8192, K=1024)
    _file(tmp_path, "b.json", None, [_f("torch_linear", 9.0), _f("found nk", 5.0)], M=16, N=256, K=8192)
    table, _ = L.ceiling(SHAPES, folder=tmp_path)
    assert list(table["shape"]) == ["verify 32/o"]                  # the router (FP32 weights) at M=16 is not BF16
    assert table.iloc[0]["library_route"] == "torch_linear" and table.iloc[0]["ceiling_x"] == 1.0
    assert pd.isna(table.iloc[0]["over_heuristic"])


def test_a_bad_file_is_left_out_with_one_line(tmp_path):
    (tmp_path / "bad.json").write_text('{"cublaslt_version": 1, "shapes": "x"}')
    table, notes = L.ceiling(SHAPES, folder=tmp_path)
    assert table.empty and notes == ["left out: bad.json: file, field 'shapes': expected a list, got 'x'"]
    assert "No cuBLASLt search covers these shapes" in L.caption(table)
