"""CPU: the cublaslt method's record -- its configs are algorithm identities (never list positions), validated
field by field; its shape check keeps a config to the M its list was read at; without a GPU it has no configs and
prepare() says in one line what is missing; nothing touches CUDA here."""
import pytest

from kernels.method import BF16
from kernels.methods_library import CUBLASLT_KEYS, cublaslt_config_reason
from kernels.registry import get_method

IDENTITY = {"orient": "swap", "M": 128, "algo_id": 66, "tile_id": 17, "stages_id": 20, "split_k": 1,
            "reduction": 0, "swizzle": 0, "custom": 0, "inner_shape_id": 0, "cluster_shape_id": 2}


def test_identity_config_is_valid_and_every_field_is_checked():
    assert set(IDENTITY) == set(CUBLASLT_KEYS)
    assert cublaslt_config_reason(IDENTITY) is None
    assert "unknown ['index']" in cublaslt_config_reason({**IDENTITY, "index": 3})     # a list position: refused
    assert "missing ['algo_id']" in cublaslt_config_reason({k: v for k, v in IDENTITY.items() if k != "algo_id"})
    assert "orient='tn'" in cublaslt_config_reason({**IDENTITY, "orient": "tn"})
    assert "split_k=0" in cublaslt_config_reason({**IDENTITY, "split_k": 0})
    assert "algo_id=True" in cublaslt_config_reason({**IDENTITY, "algo_id": True})
    assert "tile_id='TILE_64x128'" in cublaslt_config_reason({**IDENTITY, "tile_id": "TILE_64x128"})


def test_shape_check_dispatches_the_listed_m_only():
    m = get_method("cublaslt")
    assert m.supports(BF16, 128, 4096, 8192, IDENTITY) is None
    assert "at M=128" in m.supports(BF16, 129, 4096, 8192, IDENTITY)
    assert "N % 8" in m.supports(BF16, 128, 4100, 8192, IDENTITY)
    assert "no default config" in m.supports(BF16, 128, 4096, 8192)
    assert "computes x bfloat16" in m.supports(("bfloat16", "float32", "float32"), 128, 256, 8192, IDENTITY)


def test_plan_entry_with_an_identity_validates_on_cpu():
    from datasets import load_workload
    from kernels.plans import plan_from_dict

    wl = load_workload()
    plan = {"name": "t", "families": {f: [{"M": [1, 1048576], "method": "torch_linear", "config": {}}]
                                      for f in wl.family_order}}
    plan["families"]["pooler"] = [{"M": [1, 127], "method": "torch_linear", "config": {}},
                                  {"M": [128, 128], "method": "cublaslt", "config": IDENTITY},
                                  {"M": [129, 1048576], "method": "torch_linear", "config": {}}]
    plan_from_dict(plan, "t.json", wl)
    plan["families"]["pooler"][1]["M"] = [128, 129]
    with pytest.raises(Exception, match="rejects M=129"):
        plan_from_dict(plan, "t.json", wl)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the CPU-host messages")
def test_without_gpu_no_configs_and_a_clear_prepare_message():
    from kernels.launch.cublaslt import unavailable_reason

    m = get_method("cublaslt")
    with pytest.warns(UserWarning, match="needs a CUDA GPU"):
        assert m.configs_for(128, 4096, 8192) == ()
    assert "needs a CUDA GPU" in unavailable_reason()
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        m.prepare(None, IDENTITY)


def test_tuner_candidates_come_from_configs_for():
    # The tuner asks each method for its space at the shape; cublaslt's fixed table is empty by design.
    m = get_method("cublaslt")
    assert m.configs == ()
    assert get_method("torch_linear").configs_for(1, 8, 8) == get_method("torch_linear").configs


def test_enumeration_keeps_identities_per_orientation_and_skips_a_failing_one(monkeypatch):
    # A fake library: 'swap' fails (as an odd M's swapped output can), 'nk' lists one algorithm twice.
    from kernels.launch import cublaslt as L

    class FakeProblem:
        def __init__(self, orient, M, N, K):
            self.orient = orient

        def heuristic(self):
            if self.orient == "swap":
                raise RuntimeError("cublaslt: MatmulAlgoGetHeuristic returned cuBLAS status 7")
            return [("a17", 0), ("a17", 0)] if self.orient == "nk" else [("a17", 0), ("a20", 4096)]

    ids = {"a17": {**{k: 0 for k in L.IDENTITY_KEYS}, "algo_id": 66, "tile_id": 17, "split_k": 1},
           "a20": {**{k: 0 for k in L.IDENTITY_KEYS}, "algo_id": 66, "tile_id": 20, "split_k": 2}}
    monkeypatch.setattr(L, "_lib", lambda: None)
    monkeypatch.setattr(L, "library_version", lambda: 130100)
    monkeypatch.setattr(L, "searched", lambda M, N, K, version: [])
    monkeypatch.setattr(L, "Problem", FakeProblem)
    monkeypatch.setattr(L, "identity", lambda algo: dict(ids[algo]))
    with pytest.warns(UserWarning, match="orient swap at M=7 .* left out: .*status 7"):
        configs = L.enumerate_configs.__wrapped__(7, 4096, 8192)
    assert [(c["orient"], c["tile_id"]) for c in configs] == [("nk", 17), ("kn", 17), ("kn", 20)]
    assert all(c["M"] == 7 and cublaslt_config_reason(c) is None for c in configs)
    assert all(get_method("cublaslt").supports(BF16, 7, 4096, 8192, c) is None for c in configs)


BASE = {"algo_id": 66, "tile_id": 18, "stages_id": 35, "split_k": 1, "reduction": 0, "swizzle": 0, "custom": 1,
        "inner_shape_id": 0, "cluster_shape_id": 2}


def test_variants_move_one_attribute_and_pair_split_k_with_an_fp32_reduction():
    from kernels.launch.cublaslt import variants

    space = {"split_k": (1, 2, 4), "reduction": (2, 1), "cluster_shape_id": (0, 2, 3), "tile_id": (18, 20),
             "custom": (0, 1), "swizzle": (0,), "stages_id": (35,)}
    out = variants(BASE, space)
    moved = [{k for k in BASE if v[k] != BASE[k]} for v in out]
    # split-K above 1 brings its reduction scheme (the FP32 one the space lists first); everything else moves alone
    assert moved == [{"split_k", "reduction"}, {"split_k", "reduction"}, {"cluster_shape_id"}, {"cluster_shape_id"},
                     {"tile_id"}, {"custom"}]
    assert [v["reduction"] for v in out[:2]] == [2, 2] and [v["split_k"] for v in out[:2]] == [2, 4]
    assert BASE not in out and len({tuple(v.values()) for v in out}) == len(out)
    # from a split config: the reduction scheme varies, and split_k=1 drops the reduction
    split = dict(BASE, split_k=4, reduction=2)
    out = variants(split, space)
    assert dict(split, reduction=1) in out and dict(split, split_k=1, reduction=0) in out
    # an algorithm without a reduction scheme cannot split
    assert all(v["split_k"] == 1 for v in variants(BASE, dict(space, reduction=())))


def test_searched_reads_found_finals_of_this_library_and_shape(tmp_path):
    import json

    from kernels.launch.cublaslt import searched

    final = lambda name, cfg: {"name": name, "config": cfg, "median_us": 1.0}
    report = {"cublaslt_version": 130100, "shapes": [
        {"M": 256, "N": 4096, "K": 8192, "finals": [final("torch_linear", {}), final("heuristic kn", BASE),
                                                    final("found kn", dict(BASE, tile_id=17)),
                                                    final("found swap", dict(BASE, custom=3))]},
        {"M": 128, "N": 4096, "K": 8192, "finals": [final("found nk", BASE)]}]}
    (tmp_path / "a.json").write_text(json.dumps(report))
    (tmp_path / "b.json").write_text(json.dumps(dict(report, cublaslt_version=120000)))   # another library
    (tmp_path / "c.json").write_text("{not json")
    with pytest.warns(UserWarning, match=r"search file c.json left out: c.json: file, field 'file': not JSON"):
        got = searched(256, 4096, 8192, 130100, folder=tmp_path)
    assert got == [{"orient": "kn", "M": 256, **dict(BASE, tile_id=17)},
                   {"orient": "swap", "M": 256, **dict(BASE, custom=3)}]
    assert all(cublaslt_config_reason(c) is None for c in got)
    (tmp_path / "c.json").unlink()
    assert searched(256, 4096, 8192, 120000, folder=tmp_path)[0]["tile_id"] == 17
    assert searched(64, 4096, 8192, 130100, folder=tmp_path) == []


def test_committed_search_files_read_cleanly():
    import warnings

    from datasets.paths import CUBLASLT_SEARCH_DIR
    from kernels.launch.cublaslt import searched

    assert sorted(CUBLASLT_SEARCH_DIR.glob("*.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = searched(256, 4096, 8192, 130100)
    assert found and all(cublaslt_config_reason(c) is None for c in found)


def test_enumeration_appends_searched_configs_the_library_accepts(monkeypatch):
    from kernels.launch import cublaslt as L

    class FakeProblem:
        def __init__(self, orient, M, N, K):
            self.orient = orient

        def heuristic(self):
            return [("h", 0)]

        def build(self, config):   # the library accepts custom option 3 only
            return ("algo", 0) if config["custom"] == 3 else None

    monkeypatch.setattr(L, "_lib", lambda: None)
    monkeypatch.setattr(L, "library_version", lambda: 130100)
    monkeypatch.setattr(L, "Problem", FakeProblem)
    monkeypatch.setattr(L, "identity", lambda algo: dict(BASE))
    monkeypatch.setattr(L, "searched", lambda M, N, K, version: [
        {"orient": "kn", "M": M, **dict(BASE, custom=3)}, {"orient": "kn", "M": M, **dict(BASE, custom=4)},
        {"orient": "nk", "M": M, **BASE}])
    configs = L.enumerate_configs.__wrapped__(256, 4096, 8192)
    assert [(c["orient"], c["custom"]) for c in configs] == [("nk", 1), ("kn", 1), ("swap", 1), ("kn", 3)]
