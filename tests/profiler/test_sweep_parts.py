"""Pure parts of the sweep and probes: shape sets, bytes, names, probe plan, flags."""
import pytest

from profiler import probes, sweep


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

    assert sweep.unique_names([C("baseline"), C("baseline"), C("x")]) == ["baseline", "baseline#2", "x"]


def test_probe_plan_orders_and_merges():
    plan = probes.probe_plan({"a": 100, "b": 200, "c": 100}, [("8.4 MB", 200)], [50, 100])
    assert plan == [(100, "a; c; sweep"), (200, "b; write-up 8.4 MB"), (50, "sweep")]


def test_log_sweep():
    b = probes.log_sweep_bytes()
    assert len(b) == 12 and b[0] == 1 << 20 and b[-1] == 1 << 30 and b == sorted(b)


def test_flags():
    assert sweep._flags(10.0, 9.9, 10.1, 11.0, 0, True) == ["below_floor"]
    assert sweep._flags(10.0, 9.9, 10.1, 9.0, 3, False) == ["throttled", "incorrect"]
    assert sweep._flags(10.0, 8.0, 12.0, None, 0, True) == ["wide_ci"]
