"""A workload's decoder layer (datasets/layer_spec.py): Llama-3.1-8B's validates and gives the config's sizes; every
bad layer is refused in one line naming the file, the field and the value; the layer leaves the fingerprint (what
plans record) alone."""
import copy
import json

import pytest

from datasets import DatasetError, load_workload
from datasets.layer_spec import layer_of
from datasets.paths import PROJECT_DIR
from datasets.workload import workload_from_dict

TINY = PROJECT_DIR / "tests" / "fixtures" / "workloads" / "tiny_layer.json"


@pytest.fixture(scope="module")
def llama():
    return load_workload("llama31_8b_decode")


@pytest.fixture
def tiny_spec():
    return json.loads(TINY.read_text())


def _refusal(spec, tmp_path) -> str:
    path = tmp_path / "my.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(DatasetError) as info:
        load_workload(str(path))
    text = str(info.value)
    assert "\n" not in text and text.startswith("my.json: ")
    return text


def test_llama_layer_is_the_public_config(llama):
    layer = layer_of(llama)
    assert (layer.hidden, layer.model_layers, layer.heads, layer.kv_heads, layer.head_dim) == (4096, 32, 32, 8, 128)
    assert (layer.intermediate, layer.norm_eps, layer.rope_theta, layer.mlp) == (14336, 1e-5, 500000.0, "gated")
    assert layer.contexts == (1024, 4096)
    # each projection family is the layer's matmul of that role, with the sizes the layer gives it
    assert llama.family(layer.family("qkv"))["N"] == (32 + 2 * 8) * 128
    assert llama.family(layer.family("gate_up"))["N"] == 2 * 14336
    assert llama.family(layer.family("down"))["K"] == 14336


def test_muse_declares_no_layer():
    assert layer_of(load_workload()) is None


def test_the_layer_leaves_the_fingerprint_alone(llama):
    """Plans record the workload's fingerprint: declaring a layer must not make the llama plan's record stale."""
    bare = copy.deepcopy(llama.spec)
    del bare["layer"]
    assert workload_from_dict(bare, "bare").fingerprint == llama.fingerprint
    from kernels.plans import load_plan

    assert load_plan(str(PROJECT_DIR / "kernels" / "plans" / "llama31_8b_decode.json"), llama).name


@pytest.mark.parametrize("path, value, field, words", [
    (("attention", "kv_heads"), 3, "layer.attention.kv_heads", "does not divide heads 4"),
    (("attention", "heads"), 0, "layer.attention.heads", "expected a positive integer, got 0"),
    (("attention", "context"), [], "layer.attention.context", "context lengths"),
    (("attention", "context"), [16, 16], "layer.attention.context[1]", "duplicate context length 16"),
    (("mlp", "activation"), "gelu", "layer.mlp.activation", "got 'gelu'"),
    (("mlp", "kind"), "moe", "layer.mlp.kind", "got 'moe'"),
    (("norm", "eps"), 2, "layer.norm.eps", "below 1"),
    (("norm", "kind"), "layernorm", "layer.norm.kind", "got 'layernorm'"),
    (("projections", "o"), "nope", "layer.projections.o", "'nope' is not a family of the workload"),
    (("projections", "o"), "qkv", "layer.projections.o", "already the qkv projection"),
    (("hidden",), 65, "layer.projections.qkv", "N=128 K=64, but the layer's sizes make the qkv projection N=128 K=65"),
    (("attention", "rope_theta"), "big", "layer.attention.rope_theta", "got 'big'"),
    (("attention", "head_dim"), 15, "layer.attention.head_dim", "15 is odd"),
])
def test_a_bad_layer_is_one_line_naming_field_and_value(tiny_spec, tmp_path, path, value, field, words):
    node = tiny_spec["layer"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    text = _refusal(tiny_spec, tmp_path)
    assert f"field {field!r}" in text and words in text


def test_unknown_and_missing_layer_fields_are_named(tiny_spec, tmp_path):
    tiny_spec["layer"]["attention"]["kv_head"] = 2
    del tiny_spec["layer"]["norm"]
    text = _refusal(tiny_spec, tmp_path)
    assert "field 'layer.attention.kv_head': unknown field" in text and "field 'layer.norm': missing" in text


def test_a_family_the_layer_cannot_be_is_refused(tiny_spec, tmp_path):
    tiny_spec["families"]["o"]["N_by_M"] = {"1": 32}
    assert "has N_by_M: a layer's o projection has one N" in _refusal(tiny_spec, tmp_path)
    tiny_spec["families"]["o"].pop("N_by_M")
    tiny_spec["families"]["o"]["y_dtype"] = "float32"
    assert "one activation dtype" in _refusal(tiny_spec, tmp_path)


def test_routed_experts_validate_with_their_router(tiny_spec, tmp_path):
    layer = tiny_spec["layer"]
    layer["mlp"] = {"kind": "routed", "experts": 8, "top_k": 2, "intermediate": 96, "activation": "silu"}
    assert "field 'layer.projections.router': missing" in _refusal(tiny_spec, tmp_path)
    tiny_spec["families"]["router"] = {"N": 8, "K": 64, "w_dtype": "float32", "y_dtype": "float32"}
    layer["projections"]["router"] = "router"
    wl = workload_from_dict(tiny_spec, "routed")
    assert layer_of(wl).mlp == "routed" and layer_of(wl).experts == 8
    layer["mlp"]["top_k"] = 9
    assert "9 is more than the 8 experts" in _refusal(tiny_spec, tmp_path)


def test_every_problem_at_once(tiny_spec, tmp_path):
    tiny_spec["layer"]["attention"]["head_dim"] = -1
    tiny_spec["layer"]["norm"]["eps"] = 0
    text = _refusal(tiny_spec, tmp_path)
    assert "2 problems" in text and "layer.attention.head_dim" in text and "layer.norm.eps" in text


def test_checkable_without_a_gpu_through_the_dashboard_cli(tiny_spec, tmp_path, capsys):
    """`python -m dashboard validate FILE` (no torch): a good layer passes, a bad one is one line, exit 2."""
    from dashboard.cli.main import main

    good = tmp_path / "good.json"
    good.write_text(json.dumps(tiny_spec))
    assert main(["validate", str(good)]) == 0
    tiny_spec["layer"]["attention"]["kv_heads"] = 3
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(tiny_spec))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.json" in err and "'layer.attention.kv_heads': 3 does not divide" in err
