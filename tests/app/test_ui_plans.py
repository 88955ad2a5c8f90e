"""ui.plans decides which workload a plan is read against (the Dispatch page only asks the reader to pick one for a
generic plan): the recorded one, the picked one, or the default with a note."""
import json

import pytest

from kernels.plans import PLANS_DIR, PlanError
from ui import plans


def _data(name):
    return json.loads((PLANS_DIR / f"{name}.json").read_text())


def _no_pick(names, default):
    raise AssertionError("a plan that records its workload asks the reader nothing")


def test_a_plan_that_records_its_workload_is_read_against_it():
    data = _data("llama31_8b_decode")
    workload, note = plans.plan_workload(data, "llama31_8b_decode.json", _no_pick)
    assert workload.name == data["workload"]["name"] == "llama31_8b_decode" and note is None


def test_a_generic_plan_reads_against_the_workload_picked():
    asked = []

    def pick(names, default):
        asked.append((names, default))
        return "llama31_8b_decode"

    opened = plans.open_plan("baseline", None, pick)
    assert opened.workload.name == "llama31_8b_decode" and opened.note is None
    (names, default), = asked
    assert "llama31_8b_decode" in names and default == "muse_bf16_proj"


def test_a_plan_without_a_record_assumes_the_default_and_says_so():
    data = _data("best")
    data.pop("workload", None)
    workload, note = plans.plan_workload(data, "old.json", _no_pick)
    assert workload.name == "muse_bf16_proj" and note.startswith("old.json does not record its workload")


def test_a_plan_of_an_unknown_workload_is_one_line():
    data = _data("best") | {"workload": {"name": "no_such_model", "fingerprint": "0"}}
    with pytest.raises(PlanError, match="tuned for workload 'no_such_model', which is not in datasets/workloads/"):
        plans.plan_workload(data, "x.json", _no_pick)


def test_the_dispatch_tables_use_the_workloads_n_and_give_n_specific_entries_their_own_lane():
    """muse's unpooler is N=1024 at M=1 and 8 (an N-specific entry of best) and N=8192 elsewhere."""
    view = plans.open_plan("best", None, _no_pick)
    plan, wl = view.plan, view.workload
    at_1 = plans.dispatch_at(plan, wl, 1).set_index("family")
    assert at_1.loc["unpooler", "N"] == 1024 and at_1.loc["unpooler", "entry N"] == "1024"
    assert plans.dispatch_at(plan, wl, 16).set_index("family").loc["unpooler", "N"] == 8192
    table = plans.plan_table(plan)
    assert set(table["N"]) >= {"any", "1024"} and len(table) == len(plan.table())
    regions, shapes = plans.figure_frames(plan, wl, table)
    assert "unpooler N=1024" in set(regions["family"])
    lanes = dict(zip(zip(shapes["load"], shapes["M"], shapes["N"]), shapes["family"]))
    assert {lane for (_, M, N), lane in lanes.items() if N == 1024} == {"unpooler N=1024"}
    at_shapes = plans.shape_regions(plan, wl)
    assert len(at_shapes) == len(wl.shapes) and "(not covered)" not in set(at_shapes["method"])
    assert "config" not in at_shapes and at_shapes["method"].str.len().gt(0).all()
