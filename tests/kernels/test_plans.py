"""Plan loading and validation (torch-free): shipped plans load; every error names file, family and M/field."""
import copy
import json
import subprocess
import sys

import pytest

from kernels.method import PlanError
from kernels.plans import PLANS_DIR, list_plans, load_plan, plan_from_dict

SCORED_M = (1, 8, 16, 32, 128, 256)
FAMILIES = ("qkv_gate", "o", "pooler", "unpooler", "router")


def _base():
    return json.loads((PLANS_DIR / "baseline.json").read_text())


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


@pytest.mark.parametrize("name", ["baseline", "seed036"])
def test_shipped_plans_load_and_cover_1_to_256(name):
    plan = load_plan(name)
    assert name in list_plans()
    for fam in FAMILIES:
        assert plan.gaps(fam) == []
        for M in SCORED_M:
            method, config = plan.select(fam, M)
            assert isinstance(method, str) and isinstance(config, dict)


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
    assert "'o'" in msg and "warp_drive" in msg and "M 1..256" in msg


def test_invalid_config_value_and_keys(tmp_path):
    data = _base()
    data["families"]["qkv_gate"] = [
        {"M": [1, 1], "method": "gemv", "config": {"BN": 3, "num_warps": 16, "cache": ".cg"}},
        {"M": [2, 256], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'qkv_gate'" in msg and "BN=3" in msg and "config" in msg
    data["families"]["qkv_gate"][0]["config"] = {"BN": 1}
    assert "missing" in _err(tmp_path, data)


def test_family_not_served(tmp_path):
    data = _base()
    data["families"]["router"] = [{"M": [1, 1], "method": "gemv", "config": {"BN": 1, "num_warps": 16, "cache": ".cg"}},
                                  {"M": [2, 256], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'router'" in msg and "does not serve" in msg


def test_guard_rejects_range(tmp_path):
    data = _base()
    data["families"]["pooler"] = [{"M": [1, 2], "method": "gemv", "config": {"BN": 1, "num_warps": 16, "cache": ".cg"}},
                                  {"M": [3, 256], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'pooler'" in msg and "M=2" in msg


def test_overlapping_ranges(tmp_path):
    data = _base()
    data["families"]["o"] = [{"M": [1, 16], "method": "torch_linear", "config": {}},
                             {"M": [16, 256], "method": "mm_wt", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'o'" in msg and "overlaps" in msg and "16" in msg


def test_unordered_ranges(tmp_path):
    data = _base()
    data["families"]["o"] = [{"M": [17, 256], "method": "mm_wt", "config": {}},
                             {"M": [1, 16], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'o'" in msg and "out of order" in msg


def test_uncovered_scored_m(tmp_path):
    data = _base()
    data["families"]["unpooler"] = [{"M": [1, 100], "method": "torch_linear", "config": {}}]
    msg = _err(tmp_path, data)
    assert "'unpooler'" in msg and "M=128" in msg and "not covered" in msg


def test_missing_family(tmp_path):
    data = _base()
    del data["families"]["router"]
    msg = _err(tmp_path, data)
    assert "'router'" in msg and "M=1" in msg


def test_unknown_family_and_fields(tmp_path):
    data = _base()
    data["families"]["lm_head"] = [{"M": [1, 256], "method": "torch_linear", "config": {}}]
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


def test_select_outside_plan_names_family_and_m():
    data = copy.deepcopy(_base())
    data["families"]["o"] = [{"M": [1, 256], "method": "torch_linear", "config": {}}]
    plan = plan_from_dict(data, "mem.json")
    with pytest.raises(PlanError, match="mem.json.*'o'.*M=300"):
        plan.select("o", 300)
    assert plan.gaps("o", 300) == [(257, 300)]


def test_plans_module_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; import kernels.plans, kernels.candidate, kernels.registry; "
            "kernels.plans.load_plan('seed036'); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(PLANS_DIR.parents[1]))
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_registry_rejects_repeated_or_invalid_tuning_configs():
    from kernels.method import Method, PlanError

    with pytest.raises(PlanError, match="twice"):
        Method("m", ("o",), "x:y", "", params={"A": (1, 2)}, configs=({"A": 1}, {"A": 1}))
    with pytest.raises(PlanError, match="not in"):
        Method("m", ("o",), "x:y", "", params={"A": (1, 2)}, configs=({"A": 3},))
