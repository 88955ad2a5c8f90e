"""datasets.lt_search: the cuBLASLt search files, read strictly (one error naming the file and the field)."""
import json

import pytest

from datasets.errors import DatasetError
from datasets.lt_search import read_search, search_files

CFG = {"algo_id": 66, "tile_id": 18, "stages_id": 35, "split_k": 1, "reduction": 0, "swizzle": 0, "custom": 0,
       "inner_shape_id": 0, "cluster_shape_id": 2}


def _final(name, us, cfg=CFG, ratio=None):
    out = {"name": name, "config": {} if name == "torch_linear" else dict(cfg), "median_us": us}
    if ratio is not None:
        out["ratio_vs_best_heuristic"] = ratio
    return out


def _report(**change):
    report = {"cublaslt_version": 130100, "gpu": "NVIDIA H200", "commit": "", "shapes": [
        {"M": 256, "N": 4096, "K": 8192, "finals": [_final("torch_linear", 30.0), _final("heuristic nk", 28.0),
                                                    _final("found kn", 24.0, dict(CFG, tile_id=17), 1.19)]}]}
    report.update(change)
    return report


def test_a_search_file_reads_into_shapes_and_finals(tmp_path):
    path = tmp_path / "2026-12-04_x.json"
    path.write_text(json.dumps(_report()))
    got = read_search(path)
    assert (got.cublaslt_version, got.gpu, got.commit) == (130100, "NVIDIA H200", None)
    shape = got.shape(256, 4096, 8192)
    assert got.shape(128, 4096, 8192) is None
    assert [(f.kind, f.orient) for f in shape.finals] == [("torch_linear", None), ("heuristic", "nk"), ("found", "kn")]
    assert shape.best("found").config["tile_id"] == 17 and shape.best("found").vs_heuristic == 1.19
    assert shape.best("heuristic").median_us == 28.0 and shape.best("nothing") is None


@pytest.mark.parametrize("change, field, words", [
    (dict(cublaslt_version="13.1"), "cublaslt_version", "non-negative integer"),
    (dict(shapes={}), "shapes", "expected a list"),
    (dict(shapes=[{"M": 256, "N": 4096, "K": -1, "finals": []}]), "shapes[0].K", "non-negative integer"),
    (dict(shapes=[{"M": 256, "N": 4096, "K": 8192, "finals": [_final("best kn", 1.0)]}]), "shapes[0].finals[0].name",
     "'found <orient>'"),
    (dict(shapes=[{"M": 256, "N": 4096, "K": 8192, "finals": [_final("found xy", 1.0)]}]),
     "shapes[0].finals[0].name", "orient one of nk, kn, swap"),
    (dict(shapes=[{"M": 256, "N": 4096, "K": 8192, "finals": [_final("found kn", float("nan"))]}]),
     "shapes[0].finals[0].median_us", "positive number"),
    (dict(shapes=[{"M": 256, "N": 4096, "K": 8192, "finals": [_final("found kn", 1.0, dict(CFG, tile_id=1.5))]}]),
     "shapes[0].finals[0].config.tile_id", "non-negative integer"),
])
def test_a_bad_field_is_named_with_its_file(tmp_path, change, field, words):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_report(**change)))
    with pytest.raises(DatasetError) as err:
        read_search(path)
    assert err.value.field == field and words in str(err.value) and str(err.value).startswith("bad.json: ")
    assert "\n" not in str(err.value)


def test_not_json_and_the_committed_files(tmp_path):
    (tmp_path / "b.json").write_text("{not json")
    with pytest.raises(DatasetError, match=r"^b.json: file, field 'file': not JSON \(JSONDecodeError"):
        read_search(tmp_path / "b.json")
    committed = search_files()
    assert committed and all(read_search(p).shapes for p in committed)
