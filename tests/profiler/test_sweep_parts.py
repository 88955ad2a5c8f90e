"""Pure parts of the sweep and probes: shape sets, bytes, names, probe plan, flags."""
import pytest

from profiler.backends.isolate import unique_names
from profiler.commands import sweep
from profiler.measure import probes
from profiler.measure.policy import SWEEP
from profiler.worker import records, shape_task
from profiler.worker.records import failure_record
from profiler.worker.settings import SweepSettings


def test_select_shapes():
    off = sweep.select_shapes("official")
    near = sweep.select_shapes("nearby")
    assert len(off) == 30 and all(s["load"] != "nearby" for s in off)
    assert near and all(s["load"] == "nearby" for s in near)
    assert len(sweep.select_shapes("all")) == len(off) + len(near)
    with pytest.raises(ValueError):
        sweep.select_shapes("some")
    assert isinstance(off[0]["M"], int)


def test_shape_key_and_bytes():
    s = {"load": "decode 1", "family": "qkv_gate", "M": 1, "N": 2304, "K": 8192, "x_dtype": "bfloat16",
         "w_dtype": "bfloat16", "y_dtype": "bfloat16"}
    assert sweep.shape_key(s) == "decode 1/qkv_gate"
    assert sweep.shape_key(s | {"load": "nearby", "M": 3}) == "nearby/qkv_gate/M3"
    assert sweep.shape_bytes(s) == 2304 * 8192 * 2 + 8192 * 2 + 2304 * 2
    r = s | {"family": "router", "N": 256, "w_dtype": "float32", "y_dtype": "float32", "M": 16}
    assert sweep.shape_bytes(r) == 256 * 8192 * 4 + 16 * 8192 * 2 + 16 * 256 * 4


def test_unique_names():
    class C:
        def __init__(self, n):
            self.name = n

    assert unique_names([C("baseline"), C("baseline"), C("x")]) == ["baseline", "baseline#2", "x"]


def test_probe_plan_orders_and_merges():
    plan = probes.probe_plan({"a": 100, "b": 200, "c": 100}, [("8.4 MB", 200)], [50, 100])
    assert plan == [(100, "a; c; sweep"), (200, "b; write-up 8.4 MB"), (50, "sweep")]


def test_log_sweep():
    b = probes.log_sweep_bytes()
    assert len(b) == 12 and b[0] == 1 << 20 and b[-1] == 1 << 30 and b == sorted(b)


def test_flags():
    floor = {"us": 11.0, "ci_low_us": 10.5}
    assert records.result_flags(10.0, 9.9, 10.1, floor, 0) == ["below_floor"]
    # under the probe's median but within its noise (CI low 9.5): not below the floor
    assert records.result_flags(10.0, 9.9, 10.1, {"us": 10.2, "ci_low_us": 9.5}, 0) == []
    assert records.result_flags(10.0, 9.9, 10.1, {"us": 10.2}, 0) == ["below_floor"]  # a probe without a CI: its median
    assert records.result_flags(10.0, 9.9, 10.1, {"us": 9.0, "ci_low_us": 8.9}, 3) == ["throttled"]
    assert records.result_flags(10.0, 8.0, 12.0, None, 0) == ["wide_ci"]
    assert records.result_flags(10.0, 9.9, 10.1, None, 0, vs_baseline=4.5, error_factor=4) == ["less_accurate"]
    assert records.result_flags(10.0, 9.9, 10.1, None, 0, vs_baseline=3.9, error_factor=4) == []


def test_failure_record():
    s = {"load": "decode 1", "family": "o", "M": 1, "N": 8192, "K": 1024, "x_dtype": "bfloat16"}
    f = failure_record(s, "x", "died", "check", ["boom"], worker=2)
    assert f == {"load": "decode 1", "family": "o", "M": 1, "N": 8192, "K": 1024, "candidate": "x",
                 "kind": "died", "phase": "check", "reasons": ["boom"], "worker": 2}


def test_settings_from_dict_ignores_unknown_keys():
    st = SweepSettings.from_dict({"mode": "stream", "timing": {"min_pairs": 7, "not_a_field": 2}, "not_a_setting": 1})
    assert (st.mode, st.timing.min_pairs, st.timing.max_seconds, st.check) == ("stream", 7, SWEEP.max_seconds, "full")
