"""The baseline out of a candidate's reach: the guarded environment (os.environ, os.putenv and libc setenv alike),
libraries initialised before any candidate, and the canary's verdict (CPU; the GPU proof is marked)."""
import ctypes
import os
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from profiler import wrong
from profiler.check import guards, isolation
from datasets import noise_model  # noqa: E402
from profiler.commands import canary  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

VAR = "PROJLAB_TEST_GUARDED_VARIABLE"


@pytest.fixture
def clean_var():
    os.environ.pop(VAR, None)
    os.unsetenv(VAR)
    yield
    os.environ.pop(VAR, None)
    os.unsetenv(VAR)


@pytest.mark.parametrize("how", ["os.environ", "os.putenv", "libc setenv"])
def test_every_way_of_setting_a_variable_is_named_and_undone(clean_var, how):
    g = guards.Guard()
    if how == "os.environ":
        os.environ[VAR] = ":0:0"
    elif how == "os.putenv":
        os.putenv(VAR, ":0:0")
    else:
        ctypes.CDLL(None).setenv(VAR.encode(), b":0:0", 1)
    assert g.check("loading the module") == [f"changed environment variable {VAR} (from unset to ':0:0') in "
                                             "loading the module"]
    assert VAR not in guards.process_environment() and VAR not in os.environ
    assert g.check("run()") == []


def test_a_removed_or_changed_variable_is_named_and_put_back(clean_var):
    os.environ[VAR] = "1"
    g = guards.Guard()
    os.environ[VAR] = "2"
    assert g.check("prepare()") == [f"changed environment variable {VAR} (from '1' to '2') in prepare()"]
    del os.environ[VAR]
    assert g.check("run()") == [f"changed environment variable {VAR} (from '1' to unset) in run()"]
    assert os.environ[VAR] == "1" and guards.process_environment()[VAR] == "1"


def test_a_variable_torch_sets_itself_on_a_lazy_import_is_not_a_change_but_a_new_value_for_it_is():
    """Importing torch._dynamo (torch.compile does) sets TORCHINDUCTOR_CACHE_DIR to torch's default: seen in a
    CPU sweep after a restore of the TF32 settings; a candidate using torch.compile must not be refused for it."""
    saved = os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    try:
        g = guards.Guard()
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/tmp/torchinductor_default"
        assert g.check("run()") == []
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = "/tmp/elsewhere"
        assert g.check("run()") == ["changed environment variable TORCHINDUCTOR_CACHE_DIR (from "
                                    "'/tmp/torchinductor_default' to '/tmp/elsewhere') in run()"]
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/tmp/torchinductor_default"
    finally:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        if saved is not None:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved


def test_host_threads_are_a_guarded_setting():
    g = guards.Guard()
    before = torch.get_num_threads()
    changed = before - 1 if before > 1 else 2
    torch.set_num_threads(changed)
    assert g.check("run()") == [f"changed global setting torch.get_num_threads() (from {before} to {changed}) "
                                "in run()"]
    assert torch.get_num_threads() == before


def test_env_at_import_is_refused_at_load_and_the_control_is_measured_in_a_clean_environment(tmp_path):
    from datasets.runfile import load_run
    from profiler.commands.sweep import SweepSettings, run_sweep, select_shapes
    from tests.profiler.test_worker import FAKE

    shapes = [s | {"N": 64, "K": 256} for s in select_shapes("official")[:2]]
    out = tmp_path / "env.json"
    run_sweep([wrong.spec(wrong.TorchLinear), wrong.spec(wrong.EnvAtImport)], shapes, out, label="env",
              device="cpu", log=lambda m: None, worker_init=f"{FAKE}:install",
              settings=SweepSettings(probes=False, timing=replace(SWEEP, max_seconds=0.1)))
    run = load_run(out)
    refused = [f for f in run["failures"] if f["kind"] == "load"]  # refused: named by its file (process_state)
    assert len(refused) == 2 and {f["kind"] for f in refused} == {"load"}
    assert "changed environment variable CUBLASLT_WORKSPACE_SIZE (from unset to '0')" in refused[0]["reasons"][0]
    assert "changed environment variable CUBLAS_WORKSPACE_CONFIG (from unset to ':0:0')" in refused[0]["reasons"][0]
    assert [r["candidate"] for r in run["results"]] == ["torch_linear_control"] * 2


def test_initialise_libraries_on_cpu_says_so_and_records_what_it_would_read():
    rec = isolation.initialise_libraries("cpu")
    assert rec["initialised"] == ["nothing (not a CUDA device)"]
    assert set(rec["environment_read"]) == set(isolation.LAZY_ENVIRONMENT)
    from datasets import load_workload

    combos = isolation.workload_dtypes(load_workload().families.values())
    assert ("bfloat16", "float32", "float32") in combos and ("bfloat16", "bfloat16", "bfloat16") in combos


@pytest.fixture
def pinned():
    from profiler.measure import timing

    before = dict(timing._PINNED)
    timing.pin_environment({VAR: None, "PROJLAB_TEST_PINNED_SET": "64"})
    os.environ.pop("PROJLAB_TEST_PINNED_SET", None)
    yield timing
    timing.pin_environment(before)
    os.environ.pop("PROJLAB_TEST_PINNED_SET", None)
    os.unsetenv("PROJLAB_TEST_PINNED_SET")


@pytest.mark.parametrize("how", ["os.environ", "libc setenv"])
def test_a_capture_runs_under_the_pinned_environment_and_gives_back_what_was_there(clean_var, pinned, how):
    """What capture_graph and eager_time run under (pinned_environment): the pinned values at the C level, where
    cuBLAS reads them, whichever way a candidate set them; afterwards the candidate's values again, for the guard
    to name and undo."""
    if how == "os.environ":
        os.environ[VAR] = ":0:0"
    else:
        ctypes.CDLL(None).setenv(VAR.encode(), b":0:0", 1)
    with pinned.pinned_environment():
        assert pinned._getenv(VAR) is None and VAR not in os.environ
        assert pinned._getenv("PROJLAB_TEST_PINNED_SET") == "64"
    assert pinned._getenv(VAR) == ":0:0" and pinned._getenv("PROJLAB_TEST_PINNED_SET") is None


def test_a_value_changed_inside_the_pinned_body_is_left_for_the_guard(clean_var, pinned):
    g = guards.Guard()
    with pinned.pinned_environment():
        os.environ[VAR] = "inside"          # a candidate's call inside its own capture
    assert pinned._getenv(VAR) == "inside"
    assert g.check("run()") == [f"changed environment variable {VAR} (from unset to 'inside') in run()"]
    assert pinned._getenv(VAR) is None


def test_the_pin_is_a_binding_the_guard_holds(pinned):
    g = guards.Guard(harness=guards.harness_now())
    pinned.pin_environment({"CUBLAS_WORKSPACE_CONFIG": ":0:0"})   # a candidate re-pinning the harness
    reasons = g.check("run()")
    assert any("profiler.measure.timing._PINNED" in r for r in reasons), reasons
    assert dict(pinned._PINNED) == {VAR: None, "PROJLAB_TEST_PINNED_SET": "64"}


@pytest.mark.gpu
def test_gpu_cublas_config_set_after_initialisation_does_not_reach_the_baseline():
    """The proof on the device: after initialise_libraries, the variables that made the baseline 13.7x slower
    when set before its first call change nothing (router M=32 and a BF16 M=1 shape, graph-timed): captures run
    under the environment the libraries were initialised with."""
    import torch.nn.functional as F

    from profiler.measure import timing

    dev = torch.device("cuda")
    isolation.initialise_libraries(dev)
    timer = timing.ColdTimer(dev)
    x32, w32 = torch.randn(32, 8192, device=dev).bfloat16(), torch.randn(256, 8192, device=dev)
    x1, w1 = torch.randn(1, 4096, device=dev).bfloat16(), torch.randn(1024, 4096, device=dev).bfloat16()

    def times():
        graphs = [timer.capture(lambda: F.linear(x32.float(), w32)), timer.capture(lambda: F.linear(x1, w1))]
        return timing.measure_shape(graphs, timer, max_seconds=0.5).samples_us.mean(axis=0)

    # Without and with the variables, alternating three times, the fastest of each kept: the GPU suite runs 8 test
    # processes on one GPU, and a neighbour's burst slowed one side of a single pair by 26% there (H100, -n 8).
    saved = {k: os.environ.get(k) for k in ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE")}
    before, after = [], []
    try:
        for _ in range(3):
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            before.append(times())
            os.environ.update(CUBLAS_WORKSPACE_CONFIG=":0:0", CUBLASLT_WORKSPACE_SIZE="0")
            after.append(times())
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    before, after = np.min(before, axis=0), np.min(after, axis=0)
    band = noise_model.band(noise_model.ACROSS, noise_model.SHAPE, torch.cuda.get_device_name(dev))
    assert band.known, band.text()
    assert (after / before).max() < 1 + band.frac, (before, after)


# --- the canary's verdict (pure) ---------------------------------------------------------------------------------
# the H200's canary band: its committed cross-run band (datasets.noise_model), what a sweep there compares with
H200_BAND = canary.device_band([], [], "baseline", "NVIDIA H200")[0]

def _res(key_load, family, us, lo=None, hi=None, cand="baseline"):
    return {"load": key_load, "family": family, "M": 1, "candidate": cand, "median_us": us,
            "ci_low_us": lo if lo is not None else us * 0.99, "ci_high_us": hi if hi is not None else us * 1.01}


def test_canary_ok_within_the_band_and_disturbed_beyond_it_either_way():
    clean = [_res("decode 1", "router", 19.8), _res("decode 1", "o", 6.2), _res("decode 1", "qkv_gate", 10.0)]
    same = [_res("decode 1", "router", 20.6), _res("decode 1", "o", 6.0), _res("decode 1", "qkv_gate", 10.4)]
    v = canary.verdict(clean, same, "baseline", band=H200_BAND)
    assert v["verdict"] == canary.OK and v["compared"] == 3 and v["shapes"] == []
    # the benign spread measured on the H200 (the baseline beside two F.linear controls: 1.101x at decode 16/o)
    # stays inside the band even with CIs that do not overlap
    benign = [_res("decode 1", "router", 19.8 * 1.101), _res("decode 1", "o", 6.2 * 0.95),
              _res("decode 1", "qkv_gate", 10.0)]
    assert canary.verdict(clean, benign, "baseline", band=H200_BAND)["verdict"] == canary.OK
    hurt = [_res("decode 1", "router", 271.0), _res("decode 1", "o", 20.2), _res("decode 1", "qkv_gate", 8.0)]
    v = canary.verdict(clean, hurt, "baseline", band=H200_BAND)
    assert v["verdict"] == canary.DISTURBED
    assert [(d["key"], round(d["ratio"], 2)) for d in v["shapes"]] == [
        ("decode 1/router", 13.69), ("decode 1/o", 3.26), ("decode 1/qkv_gate", 0.8)]  # faster is suspect too


def test_canary_lets_a_difference_inside_overlapping_cis_pass_and_ignores_other_candidates():
    clean = [_res("decode 1", "o", 10.0, 8.0, 13.0)]
    noisy = [_res("decode 1", "o", 11.5, 9.0, 14.0), _res("decode 1", "o", 99.0, cand="best")]
    assert canary.verdict(clean, noisy, "baseline", band=H200_BAND)["verdict"] == canary.OK
    assert canary.verdict([], noisy, "baseline", band=H200_BAND)["verdict"] == canary.NOT_COMPARED


def test_mark_disturbed_flags_only_the_paired_baseline_at_the_disturbed_shapes():
    paired = [_res("decode 1", "router", 271.0), _res("decode 1", "o", 6.2), _res("decode 1", "router", 5.0,
                                                                                    cand="best")]
    v = canary.verdict([_res("decode 1", "router", 19.8), _res("decode 1", "o", 6.2)], paired, "baseline", band=H200_BAND)
    assert canary.mark_disturbed(paired, v) == 1
    assert [r.get("flags") for r in paired] == [[canary.DISTURBED_FLAG], None, None]


def test_canary_sample_is_the_smallest_and_largest_m_of_every_family():
    from profiler.commands.sweep import select_shapes

    shapes = select_shapes("official")
    picked = canary.canary_shapes(shapes, "sample")
    assert sorted((s["family"], s["M"]) for s in picked) == sorted(
        (f, m) for f in ("qkv_gate", "o", "pooler", "unpooler", "router") for m in (1, 256))
    assert canary.canary_shapes(shapes, "all") == shapes and canary.canary_shapes(shapes, "off") == []
    with pytest.raises(ValueError, match="'all', 'sample' or 'off'"):
        canary.canary_shapes(shapes, "some")
