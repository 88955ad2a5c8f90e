"""Workload files: each class of bad file gives one DatasetError line naming the file, the field and the value;
names and paths resolve only where documented."""
import copy
import json
import os

import pytest

from datasets import DatasetError, list_workloads, load_workload, resolve_workload, workload_from_dict
from datasets.paths import PROJECT_DIR, WORKLOAD_JSON, WORKLOADS_DIR

MUSE = json.loads(WORKLOAD_JSON.read_text())


def _set(path, value):
    """A mutation: set spec[path...] = value (a str key of a list index)."""
    def apply(spec):
        *parents, last = path
        target = spec
        for key in parents:
            target = target[key]
        target[last] = value
    return apply


def _delete(path):
    def apply(spec):
        *parents, last = path
        target = spec
        for key in parents:
            target = target[key]
        del target[last]
    return apply


# (id, mutation, the field the error must name, words the error must contain)
BAD = [
    ("bad dtype", _set(["families", "o", "x_dtype"], "bf16"), "families.o.x_dtype", ["'bf16'", "bfloat16"]),
    ("zero N", _set(["families", "o", "N"], 0), "families.o.N", ["positive integer", "0"]),
    ("negative K", _set(["families", "pooler", "K"], -8192), "families.pooler.K", ["-8192"]),
    ("fractional N", _set(["families", "o", "N"], 8192.0), "families.o.N", ["8192.0"]),
    ("N as text", _set(["families", "o", "K"], "1024"), "families.o.K", ["'1024'"]),
    ("boolean weight", _set(["families", "o", "weight"], True), "families.o.weight", ["True"]),
    ("tolerance of 150%", _set(["families", "o", "rel_l2_tol"], 1.5), "families.o.rel_l2_tol", ["below 1", "1.5"]),
    ("absurd N", _set(["families", "o", "N"], 10 ** 9), "families.o.N", ["sanity limit"]),
    ("duplicate load", _set(["loads", 1, "load"], "decode 1"), "loads[1].load",
     ["duplicate load 'decode 1'", "loads[0]"]),
    ("two loads at one M", _set(["loads", 1, "M"], 1), "loads[1].M", ["M=1", "'decode 1'"]),
    ("reserved load name", _set(["loads", 0, "load"], "nearby"), "loads[0].load", ["reserved"]),
    ("load name with a slash", _set(["loads", 0, "load"], "decode/1"), "loads[0].load", ["'decode/1'"]),
    ("non-positive load M", _set(["loads", 2, "M"], 0), "loads[2].M", ["positive integer"]),
    ("empty load list", _set(["loads"], []), "loads", ["non-empty list", "[]"]),
    ("loads as an object", _set(["loads"], {"decode 1": 1}), "loads", ["non-empty list"]),
    ("unknown load field", _set(["loads", 0, "tokens"], 1), "loads[0].tokens", ["unknown field"]),
    ("N_by_M key that is no load's M", _set(["families", "unpooler", "N_by_M"], {"4": 1024}),
     "families.unpooler.N_by_M.4", ["M=4 is not the M of any load", "1, 16, 32, 8, 128, 256"]),
    ("N_by_M key that is not an integer", _set(["families", "unpooler", "N_by_M"], {"one": 1024}),
     "families.unpooler.N_by_M.one", ["'one'"]),
    ("N_by_M value", _set(["families", "unpooler", "N_by_M", "8"], -1), "families.unpooler.N_by_M.8", ["-1"]),
    ("unknown top-level field", _set(["colour"], "red"), "colour", ["unknown field", "families"]),
    ("misspelt family field", _set(["families", "o", "N_by_m"], {}), "families.o.N_by_m", ["unknown field"]),
    ("missing family K", _delete(["families", "router", "K"]), "families.router.K", ["missing"]),
    ("missing loads", _delete(["loads"]), "loads", ["missing"]),
    ("no families", _set(["families"], {}), "families", ["non-empty object"]),
    ("family named like a keyword", _set(["families", "all"], MUSE["families"]["o"]), "families.all", ["'all'"]),
    ("family name with a colon", _set(["families", "qkv:gate"], MUSE["families"]["o"]), "families.qkv:gate",
     ["'qkv:gate'"]),
    ("fractional probe spacing", _set(["contract", "sparse_probe_every_rows"], 8.5),
     "contract.sparse_probe_every_rows", ["8.5"]),
    ("input scales that are not integer exponents", _set(["contract", "input_scale_exponents"], [0, 0.5]),
     "contract.input_scale_exponents", ["list of integers", "0.5"]),
    ("nearby M repeated", _set(["nearby", "M"], [2, 3, 2]), "nearby.M[2]", ["duplicate M=2", "nearby.M[0]"]),
    ("nearby M that is scored", _set(["nearby", "M"], [2, 8]), "nearby.M[1]", ["'verify 1'", "never scored"]),
    ("nearby M not a list", _set(["nearby", "M"], 3), "nearby.M", ["list"]),
    ("name with a space", _set(["name"], "my model"), "name", ["'my model'"]),
    ("empty source", _set(["source"], ""), "source", ["non-empty string"]),
    ("score as text", _set(["score"], "geomean"), "score", ["object"]),
    # numbers a float cannot hold or a score cannot use, and names too long for a file name
    ("N too large for a float", _set(["families", "o", "N"], 10 ** 400), "families.o.N",
     ["sanity limit 1,048,576", "..."]),
    ("weight that overflows the load's sum", _set(["families", "o", "weight"], 1e308), "families.o.weight",
     ["at most 1e+06"]),
    ("weight that vanishes in it", _set(["families", "o", "weight"], 1e-320), "families.o.weight", ["at least 1e-06"]),
    ("workload name of 5000 characters", _set(["name"], "a" * 5000), "name", ["over the limit 80"]),
    ("N_by_M key of 5000 digits", _set(["families", "unpooler", "N_by_M"], {"9" * 5000: 1024}),
     "families.unpooler.N_by_M." + "9" * 80 + "...", ["sanity limit 65,536"]),
    ("N_by_M key past the M limit", _set(["families", "unpooler", "N_by_M"], {"70000": 1024}),
     "families.unpooler.N_by_M.70000", ["sanity limit 65,536"]),
    ("probe spacing past every M", _set(["contract", "sparse_probe_every_rows"], 10 ** 30),
     "contract.sparse_probe_every_rows", ["sanity limit 65,536"]),
    ("outlier columns past every K", _set(["contract", "outlier_column_every"], 10 ** 12),
     "contract.outlier_column_every", ["sanity limit 1,048,576"]),
    ("probe tolerance of 100%", _set(["contract", "sparse_probe_rel_tol"], 1.0), "contract.sparse_probe_rel_tol",
     ["below 1"]),
    ("probe noise as large as its entry", _set(["contract", "probe_noise_rel"], 1e300), "contract.probe_noise_rel",
     ["below 1"]),
    ("outlier scale that overflows BF16", _set(["contract", "outlier_column_scale"], 1e300),
     "contract.outlier_column_scale", ["at most 65536"]),
    ("dtype as a list", _set(["families", "o", "y_dtype"], ["bfloat16"]), "families.o.y_dtype", ["['bfloat16']"]),
]


def _error(spec, tmp_path, name="bad.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    with pytest.raises(DatasetError) as info:
        load_workload(path)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("mutate, field, words", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_each_bad_file_names_the_file_field_and_value(tmp_path, mutate, field, words):
    spec = copy.deepcopy(MUSE)
    mutate(spec)
    message = _error(spec, tmp_path)
    assert message.startswith(f"bad.json: file, field {field!r}: "), message
    for word in words:
        assert word in message, message


def test_top_level_must_be_an_object(tmp_path):
    assert "(top level)" in _error([MUSE], tmp_path) and "JSON object" in _error([MUSE], tmp_path)


def test_an_unchanged_copy_loads_from_any_path(tmp_path):
    (tmp_path / "copy.json").write_text(json.dumps(MUSE))
    w = load_workload(tmp_path / "copy.json")
    assert w.name == "muse_bf16_proj" and len(w.shapes) == 30 and w.fingerprint == load_workload().fingerprint


def test_embedded_errors_name_the_run_file_and_the_prefixed_field():
    spec = copy.deepcopy(MUSE)
    spec["families"]["o"]["K"] = 0
    with pytest.raises(DatasetError, match=r"^run\.json: file, field 'workload\.families\.o\.K': "):
        workload_from_dict(spec, "run.json", "workload")


def test_names_resolve_to_the_workloads_folder():
    assert set(list_workloads()) >= {"muse_bf16_proj", "llama31_8b_decode"}
    assert resolve_workload() == WORKLOAD_JSON
    assert resolve_workload("llama31_8b_decode") == WORKLOADS_DIR / "llama31_8b_decode.json"
    for name in list_workloads():   # a file there is found by its name, so the two must agree
        assert load_workload(name).name == name


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(DatasetError, match="no workload named 'llama3'.*muse_bf16_proj"):
        load_workload("llama3")


def test_a_path_must_be_a_json_file(tmp_path):
    with pytest.raises(DatasetError, match="expected a workload name or a .json file"):
        load_workload(str(tmp_path / "workload.yaml"))
    with pytest.raises(DatasetError, match="cannot read"):
        load_workload(str(tmp_path / "none.json"))


def test_inside_project_refuses_paths_outside_it(tmp_path):
    outside = tmp_path / "mine.json"
    outside.write_text(json.dumps(MUSE))
    assert load_workload(outside).name == "muse_bf16_proj"          # the CLI: an explicit user file
    with pytest.raises(DatasetError, match="outside the project"):
        load_workload(outside, inside_project=True)                  # the app: only the repository's files
    sneaky = PROJECT_DIR / os.path.relpath(outside, PROJECT_DIR)     # starts inside, '..' leads out
    with pytest.raises(DatasetError, match="outside the project"):
        load_workload(str(sneaky), inside_project=True)
    assert load_workload(str(WORKLOAD_JSON), inside_project=True).name == "muse_bf16_proj"


def test_a_file_in_the_workloads_folder_must_carry_its_file_name(tmp_path, monkeypatch):
    import datasets.workload as workload_module

    monkeypatch.setattr(workload_module, "WORKLOADS_DIR", tmp_path.resolve())
    (tmp_path / "renamed.json").write_text(json.dumps(MUSE))
    with pytest.raises(DatasetError, match="renamed.json: file, field 'name':.*must be 'renamed'"):
        load_workload("renamed")


def test_oversized_file_is_refused_before_parsing(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({**MUSE, "description": "x" * (1 << 20)}))
    with pytest.raises(DatasetError, match="byte limit"):
        load_workload(path)


# --- defaults, and every problem at once ------------------------------------------------------------------------
MINIMAL = {"families": {"qkv": {"N": 6144, "K": 4096}, "o": {"N": 4096, "K": 4096}},
           "loads": [{"load": "decode 1", "M": 1}, {"load": "decode 8", "M": 8}]}


def test_a_file_with_only_n_k_and_loads_gets_the_documented_defaults(tmp_path):
    path = tmp_path / "my_model.json"
    path.write_text(json.dumps(MINIMAL))
    wl = load_workload(path)
    assert wl.name == "my_model" and "my_model.json" in wl.source
    assert wl.contract == {k: v for k, v in MUSE["contract"].items() if k not in ("reference", "note", "probe_note")}
    for fam in wl.families.values():
        assert (fam["x_dtype"], fam["w_dtype"], fam["y_dtype"], fam["rel_l2_tol"], fam["weight"]) == \
            ("bfloat16", "bfloat16", "bfloat16", 0.01, 1)
    assert len(wl.shapes) == 4 and list(wl.shapes["N"]) == [6144, 4096, 6144, 4096]
    # an FP32 output gets the FP32 tolerance; what is written is never replaced
    spec = copy.deepcopy(MINIMAL)
    spec["families"]["o"] |= {"w_dtype": "float32", "weight": 3}
    path.write_text(json.dumps(spec))
    o = load_workload(path).families["o"]
    assert (o["y_dtype"], o["rel_l2_tol"], o["weight"]) == ("float32", 0.0001, 3)


def test_defaults_resolve_before_the_fingerprint(tmp_path):
    """Writing the defaults out or leaving them to the loader is the same workload (same fingerprint), and the
    shipped files' fingerprints are the ones their tuned plans record (kernels/plans/*.json)."""
    short, full = tmp_path / "my_model.json", tmp_path / "full" / "my_model.json"
    short.write_text(json.dumps(MINIMAL))
    full.parent.mkdir()
    full.write_text(json.dumps(load_workload(short).to_dict()))
    assert load_workload(full).fingerprint == load_workload(short).fingerprint
    plans = sorted((PROJECT_DIR / "kernels" / "plans").glob("*.json"))
    recorded = [json.loads(p.read_text()).get("workload") for p in plans]
    recorded = [r for r in recorded if r]
    assert {r["name"] for r in recorded} >= {"muse_bf16_proj", "llama31_8b_decode"}
    for rec in recorded:
        assert load_workload(rec["name"]).fingerprint == rec["fingerprint"], rec


def test_three_mistakes_are_reported_at_once_each_with_its_field_and_value(tmp_path):
    spec = copy.deepcopy(MINIMAL)
    spec["families"]["qkv"]["x_dtype"] = "bf16"
    spec["families"]["o"]["K"] = -4096
    spec["loads"][1]["M"] = "8"
    message = _error(spec, tmp_path, "three.json")
    assert message.startswith("three.json: file, 3 problems: "), message
    for field, value in (("families.qkv.x_dtype", "'bf16'"), ("families.o.K", "-4096"), ("loads[1].M", "'8'")):
        assert f"field {field!r}: " in message and value in message, (field, message)
    with pytest.raises(DatasetError) as info:
        load_workload(tmp_path / "three.json")
    assert [f for f, _ in info.value.problems] == ["loads[1].M", "families.qkv.x_dtype", "families.o.K"]


def test_a_mismatched_plan_names_the_workload_files_path_in_the_tune_command(tmp_path):
    from kernels.plans import PlanError, load_plan

    (tmp_path / "my models").mkdir()
    path = tmp_path / "my models" / "my_model.json"
    path.write_text(json.dumps(MINIMAL))
    wl = load_workload(path)
    with pytest.raises(PlanError) as info:
        load_plan(PROJECT_DIR / "kernels" / "plans" / "best.json", wl)
    assert f"python -m profiler tune --workload '{path}' --out-plan" in str(info.value), str(info.value)
    assert load_workload("llama31_8b_decode").cli_ref == "llama31_8b_decode"


@pytest.mark.parametrize("family, words", [
    ({"N": 64, "K": 64, "y_dtype": ["bfloat16"]}, "field 'families.up.y_dtype': expected one of"),
    ({"N": 64, "K": 64, "w_dtype": {"a": 1}}, "field 'families.up.w_dtype': expected one of"),
    ({"N": 64, "K": 64, "y_dtype": "bf16"}, "field 'families.up.y_dtype': expected one of bfloat16, float16, float32, "
                                            "got 'bf16'"),
])
def test_a_bad_dtype_is_named_not_the_tolerance_it_would_have_given(tmp_path, family, words):
    """The tolerance defaults from the output dtype: an unknown (or unhashable) dtype is the problem, never
    'rel_l2_tol: missing' or a TypeError."""
    message = _error({"families": {"up": family}, "loads": [{"load": "d", "M": 1}]}, tmp_path)
    assert words in message and "rel_l2_tol" not in message, message


def test_many_problems_are_counted_after_the_first_ten(tmp_path):
    spec = {"families": {f"f{i}": {"N": -1, "K": 1} for i in range(30)}, "loads": [{"load": "d", "M": 1}]}
    message = _error(spec, tmp_path)
    assert message.startswith("bad.json: file, 30 problems: ") and message.endswith("; and 20 more"), message
    assert message.count("field '") == 10 and len(message) < 1500


@pytest.mark.parametrize("raw, words", [
    (b'{"families": {"up": {"N": 64, "K": 64}, "up": {"N": 1, "K": 1}}, "loads": [{"load": "d", "M": 1}]}',
     "duplicate key 'up' in one object (which of its values is meant is ambiguous) at families.up"),
    (b'{"families": {"up": {"N": 64, "K": NaN}}, "loads": [{"load": "d", "M": 1}]}', "NaN"),
])
def test_json_a_parser_would_take_silently_is_one_line(tmp_path, raw, words):
    (tmp_path / "bad.json").write_bytes(raw)
    with pytest.raises(DatasetError) as info:
        load_workload(tmp_path / "bad.json")
    assert str(info.value).startswith("bad.json: file, field '(json)': ") and words in str(info.value)


def test_a_workload_saved_with_a_byte_order_mark_loads(tmp_path):
    (tmp_path / "mine.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(MINIMAL).encode())
    assert load_workload(tmp_path / "mine.json").name == "mine"
