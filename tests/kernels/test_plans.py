"""Plan loading and validation (torch-free): shipped plans load; every error names file, family and M/field."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.method import PlanError
from kernels.plans import DISPATCH_MAX_M as TOP
from kernels.plans import PLANS_DIR, list_plans, load_plan, plan_from_dict

SCORED_M = (1, 8, 16, 32, 128, 256)
FAMILIES = ("qkv_gate", "o", "pooler", "unpooler", "router")


def _base():
    """A plan naming muse's five families, torch_linear everywhere (what baseline.json listed by name before its
    one "*" entry list): the template the error tests edit."""
    return {"name": "baseline", "description": "", "gpu": None, "tuned_from": None, "notes": "",
            "families": {f: [{"M": [1, TOP], "method": "torch_linear", "config": {}}] for f in FAMILIES}}


def _write(tmp_path, data, name="p.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _err(tmp_path, data) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(PlanError) as info:
        load_plan(path)
    msg = str(info.value)
    assert str(path) in msg  # every message names the plan file
    return msg


@pytest.mark.parametrize("name", ["baseline", "seed036", "best"])
def test_shipped_plans_dispatch_every_m_at_any_n(name):
    """No run may meet "no entry covers M": every family dispatches 1..DISPATCH_MAX_M (>= 4096), at the
    workload's N and at an N no entry names; above the tuned range that is the library."""
    plan = load_plan(name)
    assert name in list_plans() and TOP >= 4096
    for fam in FAMILIES:
        assert plan.gaps(fam, 4096) == [] and plan.gaps(fam, 600, N=12345) == []
        for M in (*SCORED_M, 384, 512, 1024, 4096, TOP):
            method, config = plan.select(fam, M)
            assert isinstance(method, str) and isinstance(config, dict)
        for M in (384, 512, 4096, TOP):
            assert plan.select(fam, M) == ("torch_linear", {})


def test_baseline_is_torch_linear_everywhere():
    plan = load_plan("baseline")
    assert {row["method"] for row in plan.table()} == {"torch_linear"}


def test_seed036_records_gpu_tuned_from_and_notes():
    plan = load_plan("seed036")
    assert plan.notes and "APPROXIMATION" in plan.notes
    assert plan.select("qkv_gate", 1) == ("gemv", {"BN": 1, "num_warps": 16, "cache": ".cg"})
    assert plan.select("pooler", 1)[0] == "gemv"
    assert plan.select("router", 1)[0] == "router_gemv_fp32"
    assert plan.select("router", 16)[0] == "router_hilo_atomic"
    assert plan.describe("qkv_gate", 1) == "gemv BN=1 num_warps=16 cache=.cg"


def test_table_and_covering_shapes():
    plan = load_plan("seed036")
    rows = plan.table()
    assert {"family", "M_lo", "M_hi", "method", "config", "label", "note"} <= set(rows[0])
    runs = plan.covering("qkv_gate")
    assert runs[0]["M_lo"] == 1 and runs[-1]["M_hi"] == 256
    assert all(a["M_hi"] + 1 == b["M_lo"] for a, b in zip(runs, runs[1:]))


def test_load_by_path_roundtrip(tmp_path):
    plan = load_plan("seed036")
    again = load_plan(_write(tmp_path, plan.to_dict()))
    assert again.table() == plan.table()


def test_unknown_method(tmp_path):
    data = _base()
    data["families"]["o"][0]["method"] = "warp_drive"
    msg = _err(tmp_path, data)
    assert "'o'" in msg and "warp_drive" in msg and f"M 1..{TOP}" in msg


def test_invalid_config_value_and_keys(tmp_path):
    data = _base()
    data["families"]["qkv_gate"] = [
        {"M": [1, 1], "method": "gemv", "config": {"BN": 3, "num_warps": 16, "cache": ".cg"}},
        {"M": [2, TOP], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'qkv_gate'" in msg and "BN=3" in msg and "config" in msg
    data["families"]["qkv_gate"][0]["config"] = {"BN": 1}
    assert "missing" in _err(tmp_path, data)


def test_family_not_served(tmp_path):
    data = _base()
    data["families"]["router"] = [{"M": [1, 1], "method": "gemv", "config": {"BN": 1, "num_warps": 16, "cache": ".cg"}},
                                  {"M": [2, TOP], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'router'" in msg and "entry 1" in msg and "method 'gemv' computes x bfloat16, w bfloat16, y bfloat16, "\
        "not x bfloat16, w float32, y float32" in msg


def test_shape_check_rejects_range(tmp_path):
    data = _base()
    data["families"]["pooler"] = [{"M": [1, 2], "method": "gemv", "config": {"BN": 1, "num_warps": 16, "cache": ".cg"}},
                                  {"M": [3, TOP], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'pooler'" in msg and "M=2" in msg


def test_overlapping_ranges(tmp_path):
    data = _base()
    data["families"]["o"] = [{"M": [1, 16], "method": "torch_linear", "config": {}},
                             {"M": [16, TOP], "method": "mm_wt", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'o'" in msg and "overlaps" in msg and "16" in msg


def test_unordered_ranges(tmp_path):
    data = _base()
    data["families"]["o"] = [{"M": [17, TOP], "method": "mm_wt", "config": {}},
                             {"M": [1, 16], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'o'" in msg and "out of order" in msg


def test_missing_family(tmp_path):
    data = _base()
    del data["families"]["router"]
    msg = _err(tmp_path, data)
    assert "'router'" in msg and "M=1" in msg


def test_unknown_family_and_fields(tmp_path):
    data = _base()
    data["families"]["lm_head"] = [{"M": [1, TOP], "method": "torch_linear", "config": {}}]
    assert "'lm_head'" in _err(tmp_path, data)
    data = _base()
    data["speed"] = "fast"
    assert "unknown field" in _err(tmp_path, data)
    data = _base()
    data["families"]["o"][0]["cfg"] = {}
    assert "unknown field" in _err(tmp_path, data)


@pytest.mark.parametrize("bad", [[1], [0, 4], [5, 2], ["1", 4], [1.0, 4], [True, 4], "1-4"])
def test_bad_m_field(tmp_path, bad):
    data = _base()
    data["families"]["o"][0]["M"] = bad
    msg = _err(tmp_path, data)
    assert "'o'" in msg and "'M'" in msg


@pytest.mark.parametrize("value", [True, 1.0, "1"])
def test_a_config_value_must_have_the_allowed_type_too(tmp_path, value):
    """`True in [1, 2]` and `1.0 in [1, 2]` are true in Python: a launcher would be built with a bool or a float."""
    data = _base()
    data["families"]["qkv_gate"] = [
        {"M": [1, 1], "method": "gemv", "config": {"BN": value, "num_warps": 16, "cache": ".cg"}},
        {"M": [2, TOP], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert f"BN={value!r} not in" in msg, msg


def test_a_range_past_the_dispatch_bound_and_a_note_that_is_no_string_are_refused(tmp_path):
    data = _base()
    data["families"]["o"][0]["M"] = [1, 10 ** 30]
    assert f"field 'M' must end at most at {TOP}" in _err(tmp_path, data)
    data = _base()
    data["families"]["o"][0]["note"] = 5
    assert "field 'note' must be a string, got 5" in _err(tmp_path, data)


def test_a_plan_with_a_repeated_family_is_refused_naming_it(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_base()).replace('"families": {', '"families": {"o": [], ', 1))
    with pytest.raises(PlanError, match=r"duplicate key 'o' in one object .* at families\.o"):
        load_plan(path)


def test_missing_fields_and_types(tmp_path):
    data = _base()
    del data["families"]["o"][0]["config"]
    assert "missing field 'config'" in _err(tmp_path, data)
    data = _base()
    data["gpu"] = 7
    assert "'gpu'" in _err(tmp_path, data)
    data = _base()
    del data["families"]
    assert "families" in _err(tmp_path, data)


def test_bad_json_and_missing_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(PlanError, match="broken.json.*not valid JSON"):
        load_plan(path)
    with pytest.raises(PlanError, match="no such plan"):
        load_plan("no_such_plan_name")


def test_a_plan_that_does_not_dispatch_every_m_is_refused(tmp_path):
    data = copy.deepcopy(_base())
    data["families"]["o"] = [{"M": [1, 256], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'o'" in msg and f"M 257..{TOP}" in msg and "with_library_fallback" in msg
    data["families"]["o"] = [{"M": [1, 8], "method": "torch_linear", "config": {}},
                             {"M": [17, TOP], "method": "mm_wt", "config": {}}]
    assert "M 9..16 is not covered" in _err(tmp_path, data)
    data["families"]["o"] = [{"M": [1, TOP], "method": "torch_linear", "config": {}}]
    plan = plan_from_dict(data, "mem.json")
    with pytest.raises(PlanError, match="mem.json.*'o'.*M=" + str(TOP + 1)):   # past the dispatch bound
        plan.select("o", TOP + 1)


def test_plans_module_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; import kernels.plans, kernels.candidate, kernels.registry; "
            "kernels.plans.load_plan('seed036'); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(PLANS_DIR.parents[1]))
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_registry_rejects_repeated_or_invalid_tuning_configs():
    from kernels.method import BF16, Method, PlanError

    with pytest.raises(PlanError, match="twice"):
        Method("m", (BF16,), "x:y", "", params={"A": (1, 2)}, configs=({"A": 1}, {"A": 1}))
    with pytest.raises(PlanError, match="not in"):
        Method("m", (BF16,), "x:y", "", params={"A": (1, 2)}, configs=({"A": 3},))
    # a method serves dtype signatures: a family name (or a misspelt dtype) where one belongs is a registry bug
    for bad in (("o",), ("bfloat16", "bf16", "bfloat16")):
        with pytest.raises(PlanError, match="is not \\(x_dtype, w_dtype, y_dtype\\)"):
            Method("m", (bad,), "x:y", "")


# --- N-specific entries ("N": the entry applies only when the weight's N equals it) -------------------------------
GEMV = {"BN": 1, "num_warps": 16, "cache": ".cg"}
SPLITK = {"BM": 16, "BN": 64, "BK": 128, "SPLIT": 4, "num_warps": 4, "num_stages": 3}


def _n_specific():
    """Baseline plan; unpooler: torch_linear for any N, gemv/splitk only at N=1024 (the M=1 and M=8 slice)."""
    data = _base()
    data["families"]["unpooler"] = [{"M": [1, TOP], "method": "torch_linear", "config": {}},
                                    {"M": [1, 1], "N": 1024, "method": "gemv", "config": dict(GEMV)},
                                    {"M": [2, 8], "N": 1024, "method": "splitk", "config": dict(SPLITK)}]
    return data


def test_n_specific_entry_wins_at_its_n_only():
    plan = plan_from_dict(_n_specific(), "n.json")
    assert plan.select("unpooler", 8, 1024) == ("splitk", SPLITK)
    assert plan.select("unpooler", 3, 1024)[0] == "splitk"          # in range, at its N
    assert plan.select("unpooler", 8, 8192) == ("torch_linear", {})  # another N: the generic entry
    assert plan.select("unpooler", 3, 8192)[0] == "torch_linear"
    assert plan.select("unpooler", 9, 1024)[0] == "torch_linear"     # N matches but M is outside its range
    assert plan.select("unpooler", 1, 1024)[0] == "gemv"
    assert plan.describe("unpooler", 1, 1024) == "gemv BN=1 num_warps=16 cache=.cg"
    assert plan.entry("unpooler", 8, 1024).N == 1024 and plan.entry("unpooler", 8, 8192).N is None


def test_select_without_n_uses_the_workloads_n_at_m():
    plan = plan_from_dict(_n_specific(), "n.json")
    assert plan.n_at("unpooler", 8) == 1024 and plan.n_at("unpooler", 3) == 8192 and plan.n_at("o", 8) == 8192
    assert plan.select("unpooler", 8)[0] == "splitk"       # scored M=8 is N=1024
    assert plan.select("unpooler", 1)[0] == "gemv"
    assert plan.select("unpooler", 3)[0] == "torch_linear"  # nearby M=3 is N=8192
    assert plan.select("unpooler", 7)[0] == "torch_linear"


def test_n_specific_entries_do_not_stand_in_for_generic_ones(tmp_path):
    data = _base()
    data["families"]["unpooler"] = [{"M": [1, 8], "N": 1024, "method": "torch_linear", "config": {}},
                                    {"M": [9, TOP], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)   # the scored shapes are covered, but M=3 at N=8192 (a nearby shape) is not
    assert "'unpooler'" in msg and "M 1..8 is not covered by a generic entry" in msg


def test_n_specific_entries_only_take_over_at_their_n():
    data = _base()
    data["families"]["unpooler"] = [{"M": [1, 1], "N": 1024, "method": "gemv", "config": dict(GEMV)},
                                    {"M": [1, TOP], "method": "torch_linear", "config": {}},
                                    {"M": [8, 8], "N": 8192, "method": "mm_wt", "config": {}}]
    plan = plan_from_dict(data, "ok.json")
    assert plan.select("unpooler", 8)[0] == "torch_linear"          # M=8 runs N=1024: the generic entry
    assert plan.select("unpooler", 8, 8192)[0] == "mm_wt" and plan.select("unpooler", 1)[0] == "gemv"


def test_n_specific_and_generic_lists_are_validated_separately(tmp_path):
    plan_from_dict(_n_specific(), "n.json")   # generic 1..256 overlaps the N=1024 ranges: allowed
    data = _n_specific()
    data["families"]["unpooler"][2]["M"] = [1, 8]          # overlaps the other N=1024 entry
    msg = _err(tmp_path, data)
    assert "'unpooler'" in msg and "N=1024" in msg and "overlaps" in msg
    data = _n_specific()
    data["families"]["unpooler"][1:] = data["families"]["unpooler"][2:0:-1]   # N=1024 entries out of order
    msg = _err(tmp_path, data)
    assert "N=1024" in msg and "out of order" in msg
    data = _n_specific()
    data["families"]["unpooler"].append({"M": [200, TOP], "method": "mm_wt", "config": {}})   # generic overlap
    msg = _err(tmp_path, data)
    assert "overlaps" in msg and f"M 200..{TOP}" in msg and "(entries for N=" not in msg


@pytest.mark.parametrize("bad", ["1024", 0, -8, 1024.0, True, [1024]])
def test_bad_n_field(tmp_path, bad):
    data = _n_specific()
    data["families"]["unpooler"][2]["N"] = bad
    msg = _err(tmp_path, data)
    assert "'unpooler'" in msg and "'N'" in msg


def test_shape_check_is_checked_at_the_entrys_n(tmp_path):
    # packed needs N % BN == 0: N=1000 is not a multiple of BN=128, N=1024 is
    packed = {"BM": 16, "BN": 128, "BK": 128, "SPLIT": 1, "num_warps": 4, "num_stages": 3}
    data = _n_specific()
    data["families"]["unpooler"].append({"M": [1, 4], "N": 1000, "method": "packed", "config": packed})
    msg = _err(tmp_path, data)
    assert "'unpooler'" in msg and "N=1000" in msg and "packed" in msg and "rejects M=1" in msg
    data["families"]["unpooler"][-1]["N"] = 1024
    data["families"]["unpooler"][-1]["M"] = [9, 12]
    plan = plan_from_dict(data, "n.json")
    assert plan.select("unpooler", 10, 1024)[0] == "packed" and plan.select("unpooler", 10)[0] == "torch_linear"


def test_table_covering_and_to_dict_carry_n(tmp_path):
    plan = plan_from_dict(_n_specific(), "n.json")
    rows = [r for r in plan.table() if r["family"] == "unpooler"]
    assert [(r["N"], r["M_lo"], r["M_hi"], r["method"]) for r in rows] == [
        (None, 1, TOP, "torch_linear"), (1024, 1, 1, "gemv"), (1024, 2, 8, "splitk")]
    assert all(r["N"] is None for r in plan.table() if r["family"] != "unpooler")
    runs = plan.covering("unpooler")   # the workload's N at each M
    assert [(r["M_lo"], r["M_hi"], r["N"], r["method"]) for r in runs] == [
        (1, 1, 1024, "gemv"), (2, 7, None, "torch_linear"), (8, 8, 1024, "splitk"), (9, 256, None, "torch_linear")]
    assert [(r["M_lo"], r["M_hi"], r["method"]) for r in plan.covering("unpooler", 16, N=1024)] == [
        (1, 1, "gemv"), (2, 8, "splitk"), (9, 16, "torch_linear")]
    assert [r["method"] for r in plan.covering("unpooler", N=8192)] == ["torch_linear"]
    assert [m for m, _ in plan.methods_for("unpooler")] == ["torch_linear", "gemv", "splitk"]
    assert [m for m, _ in plan.methods_for("unpooler", 8192)] == ["torch_linear"]
    assert [m for m, _ in plan.methods_for("unpooler", 1024)] == ["torch_linear", "gemv", "splitk"]
    out = plan.to_dict()["families"]["unpooler"]
    assert out[1] == {"M": [1, 1], "N": 1024, "method": "gemv", "config": GEMV}
    assert "N" not in out[0]
    again = load_plan(_write(tmp_path, plan.to_dict()))
    assert again.table() == plan.table()


@pytest.mark.parametrize("name", ["baseline", "seed036", "best"])
def test_existing_plan_files_load_unchanged(name):
    plan = load_plan(name)
    raw = json.loads((PLANS_DIR / f"{name}.json").read_text())
    assert plan.to_dict()["families"] == raw["families"]      # nothing is added or rewritten
    named = {fam: entries for fam, entries in raw["families"].items() if fam != "*"}
    named |= {fam: raw["families"]["*"] for fam in FAMILIES if fam not in named and "*" in raw["families"]}
    raw_n = {(fam, e.get("N")) for fam, entries in named.items() for e in entries}
    assert {(r["family"], r["N"]) for r in plan.table()} == raw_n
    for fam in FAMILIES:
        for M in SCORED_M:
            assert plan.select(fam, M) == plan.select(fam, M, plan.n_at(fam, M))
        if all(n is None for f, n in raw_n if f == fam):
            assert plan.select(fam, 3) == plan.select(fam, 3, 12345)   # generic entries only: any N


# --- plans and workloads ---------------------------------------------------------------------------------------
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "workloads" / "tiny.json"


@pytest.mark.parametrize("ref", [None, "llama31_8b_decode", str(TINY)])
def test_the_baseline_plan_serves_every_family_of_any_workload(ref):
    from datasets import load_workload

    wl = load_workload(ref)
    plan = load_plan("baseline", wl)
    assert plan.families == wl.family_order and plan.recorded is None
    for fam in wl.family_order:
        for M in (1, 7, TOP):
            assert plan.select(fam, M) == ("torch_linear", {})
    assert plan.to_dict()["families"] == {"*": [{"M": [1, TOP], "method": "torch_linear", "config": {}}]}


@pytest.mark.parametrize("name", ["best", "seed036"])
def test_a_plan_tuned_for_one_workload_is_refused_for_another(name):
    from datasets import load_workload

    muse, llama = load_workload(), load_workload("llama31_8b_decode")
    assert load_plan(name, muse).recorded == muse.ref
    with pytest.raises(PlanError) as info:
        load_plan(name, llama)
    msg = str(info.value)
    assert "\n" not in msg and f"{name}.json" in msg
    assert f"tuned for workload muse_bf16_proj (fingerprint {muse.fingerprint}), not llama31_8b_decode" in msg


def test_a_plan_without_a_workload_that_names_families_is_the_default_workloads(tmp_path):
    from datasets import load_workload

    path = _write(tmp_path, _base())
    assert load_plan(path).families == list(FAMILIES)
    with pytest.raises(PlanError, match="records no workload, so it is for the default workload muse_bf16_proj, "
                                        "not tiny_synthetic"):
        load_plan(path, load_workload(TINY))


def test_a_recorded_workload_that_differs_only_in_fingerprint_is_refused(tmp_path):
    from datasets import load_workload

    tiny = load_workload(TINY)
    spec = tiny.to_dict()
    spec["families"]["proj"]["K"] = 256                       # same name, another workload
    changed = tmp_path / "tiny_k256.json"
    changed.write_text(json.dumps(spec))
    data = {"name": "t", "workload": load_workload(changed).ref,
            "families": {"*": [{"M": [1, TOP], "method": "torch_linear", "config": {}}]}}
    assert load_plan(_write(tmp_path, data), load_workload(changed)).recorded["name"] == "tiny_synthetic"
    with pytest.raises(PlanError, match=r"tuned for workload tiny_synthetic \(fingerprint "):
        load_plan(_write(tmp_path, data), tiny)


@pytest.mark.parametrize("bad", ["muse_bf16_proj", {"name": "x"}, {"name": "x", "fingerprint": 3},
                                 {"name": "x", "fingerprint": "y", "extra": 1}])
def test_a_malformed_workload_field_is_one_line(tmp_path, bad):
    data = _base() | {"workload": bad}
    assert "field 'workload' must be" in _err(tmp_path, data)


def test_a_method_that_does_not_compute_a_familys_dtypes_is_named_with_plan_and_family(tmp_path):
    """The dtype check is per workload family: gemv (BF16 only) under "*" passes the tiny workload's BF16
    family and is refused at its FP32-weight family, naming the plan, the family and the method."""
    from datasets import load_workload

    gemv = {"M": [1, 1], "method": "gemv", "config": {"BN": 1, "num_warps": 16, "cache": ".cg"}}
    rest = {"M": [2, TOP], "method": "torch_linear", "config": {}}
    data = {"name": "t", "families": {"*": [gemv, rest]}}
    path = _write(tmp_path, data)
    with pytest.raises(PlanError) as info:
        load_plan(path, load_workload(TINY))
    msg = str(info.value)
    assert str(path) in msg and "family '* (as gate)' entry 1" in msg and "method 'gemv' computes x bfloat16, w " \
        "bfloat16, y bfloat16, not x bfloat16, w float32, y float32 (family 'gate' of workload tiny_synthetic)" in msg
    lib = {"M": [1, TOP], "method": "torch_linear", "config": {}}
    data["families"]["gate"] = [lib]                          # the FP32 family listed by name: the plan loads
    data["workload"] = load_workload(TINY).ref                # (a plan naming families records its workload)
    plan = load_plan(_write(tmp_path, data), load_workload(TINY))
    assert plan.select("proj", 1)[0] == "gemv" and plan.select("gate", 1)[0] == "torch_linear"
    assert plan.to_dict()["families"] == {"gate": [lib], "*": [gemv, rest]}


def test_baseline_refuses_a_family_whose_output_dtype_is_not_its_weight_dtype():
    """F.linear returns the weight's dtype: a workload asking for bf16 weights with an fp32 output cannot be run by
    the baseline, and saying so at plan validation (one line naming the family and the dtypes) beats an incorrect
    baseline at every shape."""
    from datasets import load_workload, workload_from_dict

    spec = copy.deepcopy(load_workload("llama31_8b_decode").spec)
    spec["name"] = "llama_fp32_out"
    spec["families"]["o"]["y_dtype"] = "float32"
    spec.pop("layer", None)   # a declared layer passes one activation dtype between its matmuls: not this one
    wl = workload_from_dict(spec, "llama_fp32_out.json")
    with pytest.raises(PlanError, match=r"torch_linear.*not x bfloat16, w bfloat16, y float32.*family 'o'"):
        load_plan("baseline", wl)


def test_an_old_plan_with_the_retired_prefetch_key_loads_migrated():
    """splitk_atomic_v2 configs once carried PREFETCH (always 0): old plans and the plans inside old run files load
    without it; any other value is still refused as an unknown key."""
    best = json.loads((PLANS_DIR / "best.json").read_text())
    entries = [e for f in best["families"].values() for e in f if e["method"] in ("splitk_atomic_v2",
                                                                                   "splitk_atomic_kn")]
    assert entries, "best.json dispatches splitk_atomic_v2 somewhere"
    old = copy.deepcopy(best)
    for f in old["families"].values():
        for e in f:
            if e["method"] == "splitk_atomic_v2":
                e["config"]["PREFETCH"] = 0
    assert plan_from_dict(old, "old.json").to_dict()["families"] == load_plan("best").to_dict()["families"]
    for f in old["families"].values():
        for e in f:
            if e["method"] == "splitk_atomic_v2":
                e["config"]["PREFETCH"] = 1
    with pytest.raises(PlanError, match="PREFETCH"):
        plan_from_dict(old, "old.json")
