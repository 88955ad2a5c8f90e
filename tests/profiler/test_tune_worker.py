"""The tuner through the isolation worker on CPU (a real worker process, the keyed fake timer installed in it):
every measurement is a shape task, a config that kills its worker is a rejection with the cause and the tune goes
on, a config its shape check rejects never runs, and what the tune writes (plan, run file) is valid. The fake times are
made up: nothing here asserts which config is faster."""
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kernels.registry import METHODS  # noqa: E402
from profiler.commands import tune, tune_rules as rules  # noqa: E402
from datasets.runfile import load_run  # noqa: E402

FAKE = str(Path(__file__).with_name("fake_device.py"))


def points(Ms=(1, 16), family="o", N=64, K=256):
    """Scored points of a real family at CPU size (N, K small)."""
    from datasets import load_workload

    spec = dict(load_workload().families[family], N=N, K=K)
    return [rules.Point(family, M, N, K, f"decode {M}", spec) for M in Ms]


def test_a_config_that_kills_its_worker_is_a_rejection_and_the_tune_goes_on(tmp_path, monkeypatch):
    from fake_device import crash_method

    from kernels.plans import load_plan

    monkeypatch.setitem(METHODS, "crash_mm", crash_method())    # the worker registers it through its init hook
    settings = tune.TuneSettings(methods=["mm_wt", "crash_mm"], compile_workers=0)
    (out,) = tune.tune_sweep(points(), tmp_path / "tune.json", tmp_path / "best.json", settings=settings,
                             device="cpu", worker_init=f"{FAKE}:install_keyed_with_crasher", log=lambda m: None)
    run = load_run(out["run_path"])
    assert run["status"] == "complete" and [d["M"] for d in run["tune"]] == [1, 16]
    d16 = run["tune"][1]
    assert "exit code 9" in d16["rejected"]["crash_mm at=16"][0] and "in check" in d16["rejected"]["crash_mm at=16"][0]
    (died,) = [f for f in run["failures"] if f["candidate"] == "crash_mm at=16"]
    assert (died["kind"], died["phase"], died["M"]) == ("died", "check", 16)
    # the others were measured again in a fresh worker at M=16; crash_mm was timed at M=1, where it does not die
    assert {r["candidate"] for r in run["results"] if r["M"] == 16} == {"torch_linear", "mm_wt"}
    assert "crash_mm at=16" in {r["candidate"] for r in run["results"] if r["M"] == 1}
    workers = run["environment"]["workers"]
    assert len(workers) == 2 and "exit code 9" in workers[0]["ended"] and workers[1]["ended"] == "closed"
    assert run["environment"]["settings"]["check"] == "quick"
    plan = load_plan(tmp_path / "best.json")
    assert plan.select("o", 16)[0] in {"torch_linear", "mm_wt"} and plan.tuned_from.endswith("tune.json")


def test_a_config_its_shape_check_rejects_is_a_reason_not_a_launch():
    """router_gemv_fp32 BK=1024 at K=1000 once ran under the interpreter and read out of bounds: in the worker the
    shape check raises at the call, before any launch, and the reason comes back as a rejection."""
    from profiler.commands.tune_measure import WorkerMeasure
    from profiler.backends.local import LocalBackend
    from profiler.worker.settings import SweepSettings

    backend = LocalBackend({"device": "cpu", "mode": "cold", "flush_bytes": None, "init": f"{FAKE}:install_keyed"},
                           log=lambda m: None)
    try:
        measure = WorkerMeasure(backend, SweepSettings(), log=lambda m: None)
        shape = {"load": "x", "family": "router", "M": 1, "N": 16, "K": 1000, "x_dtype": "bfloat16",
                 "w_dtype": "float32", "y_dtype": "float32", "rel_l2_tol": 1e-4}
        cfg = {"BN": 1, "BK": 1024, "num_warps": 4, "cache": ".cg"}
        got = measure(shape, [("torch_linear", {}), ("router_gemv_fp32", cfg)], rules.SCREEN)
    finally:
        backend.close()
    assert [t["method"] for t in got["timed"]] == ["torch_linear"]
    (reasons,) = got["rejected"].values()
    assert "K % BK == 0" in reasons[0] and "raised" in reasons[0]
    assert got["failures"] == []      # a rejection, not a worker incident
