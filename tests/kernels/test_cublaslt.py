"""CPU: the cublaslt method's record -- its configs are algorithm identities (never list positions), validated
field by field; its guard keeps a config to the M its list was read at; without a GPU it has no configs and
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


def test_guard_dispatches_the_listed_m_only():
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
        m.prepare(None, "pooler", IDENTITY)


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
    monkeypatch.setattr(L, "Problem", FakeProblem)
    monkeypatch.setattr(L, "identity", lambda algo: dict(ids[algo]))
    with pytest.warns(UserWarning, match="orient swap at M=7 .* left out: .*status 7"):
        configs = L.enumerate_configs.__wrapped__(7, 4096, 8192)
    assert [(c["orient"], c["tile_id"]) for c in configs] == [("nk", 17), ("kn", 17), ("kn", 20)]
    assert all(c["M"] == 7 and cublaslt_config_reason(c) is None for c in configs)
    assert all(get_method("cublaslt").supports(BF16, 7, 4096, 8192, c) is None for c in configs)
