"""Scale-out on dask.distributed, on CPU: 2-worker clusters with the keyed fake timer (made-up times that depend only
on the task, never on the process: so a fanned-out sweep can be compared with a one-worker one). Checks that a
cluster run file and a cluster tune's plan carry exactly what the single-process ones do, that a dask worker killed
mid-sweep loses nothing (its task is retried once, then recorded), that two timing workers on one GPU are refused,
that Ctrl-C keeps the partial run, and that nothing imports dask without --cluster."""
import contextlib
import json
import logging
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
distributed = pytest.importorskip("distributed")

from profiler.commands import tune
from profiler import wrong  # noqa: E402
from datasets.runfile import load_run  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402

HERE = Path(__file__).resolve().parent
FAKE = str(HERE / "fake_device.py")
KEYED = f"{FAKE}:install_keyed"
CONTROL = wrong.spec(wrong.TorchLinear)

KILL_ONCE = '''
import os, signal, time
from pathlib import Path
import torch.nn.functional as F
NAME = "kills_its_dask_worker"
MARK = Path(__file__).with_suffix(".killed")
def prepare(weight):
    return weight
def run(state, family, x):
    if x.shape[0] == 16 and (ALWAYS or not MARK.exists()):
        MARK.write_text("killed")
        os.kill(os.getppid(), signal.SIGKILL)   # the projlab worker's parent: the dask worker
        time.sleep(30)
    return F.linear(x, state)
'''


# Nothing here may depend on how fast this machine is today. The keyed fake timer's times are made up, so the
# sampler stops on its RSE rule at its minimum rounds; its time cap only decides when a starved process (a loaded
# machine) is descheduled mid-shape -- a cap of 10 minutes keeps it out of the comparisons. dask's own waits
# (connecting, a worker's handshake) get minutes instead of its default seconds for the same reason.
NO_TIME_CAP_S = 600.0
DASK_WAITS = {"distributed.comm.timeouts.connect": "300s", "distributed.comm.timeouts.tcp": "300s"}


@pytest.fixture(autouse=True, scope="module")
def patient_dask():
    import dask

    with dask.config.set(DASK_WAITS):
        yield


@pytest.fixture(scope="module")
def scheduler(patient_dask):
    """A 2-worker dask cluster (one thread each), reached by address as a remote one would be."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    yield cluster.scheduler_address
    cluster.close()


@contextlib.contextmanager
def own_cluster(n: int):
    """An n-worker cluster of the test's own, for a test that kills its workers: a dask nanny can fail to restart
    its killed worker on a loaded machine (it gives up), which would leave a shared cluster a worker short for
    every test after it."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    try:
        _both_workers(cluster.scheduler_address, n)
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _both_workers(address: str, n: int = 2) -> None:
    """Wait until the cluster has its n workers again (a killed one restarts; on a loaded machine that takes
    seconds): a sweep started before would see fewer workers than the test is about."""
    from distributed import Client

    with Client(address, timeout=300) as client:
        client.wait_for_workers(n, timeout=300)


def _shapes(selection="qkv_gate,o:1,16"):
    from profiler.commands.sweep import select_shapes

    return [s | {"N": 64, "K": 256} for s in select_shapes(selection)]   # CPU-sized, real loads and families


def _sweep(specs, shapes, out, cluster=None, init=KEYED, progress=None, **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep

    return run_sweep(specs, shapes, out, label=out.stem, device="cpu", log=lambda m: None, worker_init=init,
                     cluster=cluster, progress=progress,
                     settings=SweepSettings(**({"timing": replace(SWEEP, max_seconds=NO_TIME_CAP_S), "input_salt": 0}
                                               | settings)))


def measured(run: dict) -> dict:
    """What a run file says about the measurements: everything but when, where (worker, host) and how long."""
    def strip(r):
        return {k: v for k, v in r.items() if k != "worker"}

    return {"results": [strip(r) for r in run["results"]], "pairs": [strip(p) for p in run["pairs"]],
            "failures": [strip(f) for f in run["failures"]], "probes": run["probes"],
            "compute_probe": run["compute_probe"], "candidates": run["environment"]["settings"]["candidates"],
            "shape_info": {k: {kk: vv for kk, vv in v.items() if kk not in ("elapsed_s", "worker")}
                           for k, v in run["shape_info"].items()}}


def test_a_local_cluster_run_file_equals_the_single_process_one(tmp_path):
    specs, shapes = [CONTROL, "method:mm_wt"], _shapes()
    one = _sweep(specs, shapes, tmp_path / "one.json")
    seen = []
    fleet = _sweep(specs, shapes, tmp_path / "fleet.json", cluster="local:2",
                   progress=lambda stage, i, n, detail=None: seen.append((stage, i, n, detail)))
    on_disk = load_run(tmp_path / "fleet.json")
    assert on_disk["status"] == "complete" and len(on_disk["results"]) == 2 * len(shapes)
    assert measured(on_disk) == measured(load_run(tmp_path / "one.json")) == measured(one) == measured(fleet)
    # which dask worker and GPU measured each shape: environment per worker + a reference per shape and result
    workers = on_disk["environment"]["workers"]
    assert {w["dask_worker"] for w in workers} == {"projlab-0", "projlab-1"} and all(w["hostname"] for w in workers)
    assert all(0 <= info["worker"] < len(workers) for info in on_disk["shape_info"].values())
    assert all(workers[r["worker"]]["dask_worker"].startswith("projlab-") for r in on_disk["results"])
    assert [w["name"] for w in on_disk["environment"]["cluster"]["workers"]] == ["projlab-0", "projlab-1"]
    # one bar for the whole sweep, with per-worker counts
    shapes_seen = [s for s in seen if s[0] == "shapes"]
    assert [s[1] for s in shapes_seen] == [1, 2, 3, 4] and all(s[2] == 4 for s in shapes_seen)
    counts = dict(part.split(":") for part in shapes_seen[-1][3].split())
    assert set(counts) == {"projlab-0", "projlab-1"}


def test_a_cluster_tune_makes_the_same_plan_as_one_worker(tmp_path, scheduler):
    from test_tune_worker import points

    settings = tune.TuneSettings(methods=["mm_wt", "mm_swapped"], compile_workers=0, input_salt=0)
    kw = dict(settings=settings, device="cpu", worker_init=KEYED, log=lambda m: None)
    (one,) = tune.tune_sweep(points((1, 8, 16)), tmp_path / "one.json", tmp_path / "one_plan.json", **kw)
    (fleet,) = tune.tune_sweep(points((1, 8, 16)), tmp_path / "fleet.json", tmp_path / "fleet_plan.json",
                               cluster=scheduler, **kw)
    a, b = load_run(one["run_path"]), load_run(fleet["run_path"])
    assert a["tune"] == b["tune"] and len(a["tune"]) == 3
    assert a["results"] == b["results"] and a["pairs"] == b["pairs"] and a["failures"] == b["failures"]
    plans = [json.loads((tmp_path / f).read_text()) for f in ("one_plan.json", "fleet_plan.json")]
    assert plans[0]["families"] == plans[1]["families"]
    # the points were spread over both workers; each point's stages stayed on one of them
    assert {w["dask_worker"] for w in b["environment"]["workers"]} == {w["name"] for w in
                                                                      b["environment"]["cluster"]["workers"]}


def test_a_dask_worker_killed_mid_sweep_loses_nothing(tmp_path, patient_dask):
    """Killed once at M=16: the task is retried on another worker and every shape is measured. Killed every time:
    after one retry the shape's candidates are recorded as failures, and the rest of the sweep is kept (on three
    workers: the two that died never need to come back)."""
    once, always = tmp_path / "once.py", tmp_path / "always.py"
    once.write_text("ALWAYS = False\n" + KILL_ONCE)
    always.write_text("ALWAYS = True\n" + KILL_ONCE)
    shapes = _shapes("qkv_gate:1,16,32")
    with own_cluster(2) as address:
        run = _sweep([CONTROL, str(once)], shapes, tmp_path / "once.json", cluster=address, probes=False)
    assert run["status"] == "complete" and once.with_suffix(".killed").exists()
    assert len(run["results"]) == 2 * len(shapes) and run["failures"] == []
    assert all(w["ended"] in ("closed", "lost with its dask worker (the worker process died or was restarted)")
               for w in run["environment"]["workers"])
    with own_cluster(3) as address:
        run = _sweep([CONTROL, str(always)], shapes, tmp_path / "always.json", cluster=address, probes=False)
    assert run["status"] == "complete"
    assert {r["M"] for r in run["results"]} == {1, 32}            # the other shapes are all there
    lost = [f for f in run["failures"] if f["M"] == 16]
    assert {f["candidate"] for f in lost} == {"torch_linear_control", "kills_its_dask_worker"}
    assert all((f["kind"], f["phase"]) == ("died", "dask") and "after one retry" in f["reasons"][0] for f in lost)


def test_a_fleet_of_two_gpu_models_writes_one_run_file_per_model(tmp_path):
    """Two dask workers reporting different GPU models (a fake, from each worker's environment): each model runs
    the whole sweep on its own worker(s) into its own file; nothing of one model is in the other's file."""
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {f"model-{m}": {"cls": Nanny, "options": {"nthreads": 1, "memory_limit": 0, "silence_logs": 40,
                                                        "env": {"PROJLAB_FAKE_GPU": f"SYNTHETIC GPU {m}"}}}
               for m in "AB"}
    cluster = SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard": False,
                                                                       "dashboard_address": ":0"}},
                          silence_logs=logging.ERROR)
    try:
        shapes = _shapes("o:1,16")
        one = _sweep([CONTROL], shapes, tmp_path / "one.json", probes=False)
        _sweep([CONTROL], shapes, tmp_path / "r.json", cluster=cluster.scheduler_address, probes=False,
               init=f"{FAKE}:install_keyed_gpu_from_env")
    finally:
        cluster.close()
    assert not (tmp_path / "r.json").exists()
    for m in "AB":
        run = load_run(tmp_path / f"r_synthetic-gpu-{m.lower()}.json")
        assert run["status"] == "complete" and run["environment"]["gpu"] == f"SYNTHETIC GPU {m}"
        assert {w["dask_worker"] for w in run["environment"]["workers"]} == {f"model-{m}"}
        assert {w["gpu"] for w in run["environment"]["workers"]} == {f"SYNTHETIC GPU {m}"}
        assert measured(run) == measured(one)


def test_two_timing_workers_on_one_gpu_are_refused_before_anything_is_measured(tmp_path, scheduler):
    from profiler.backends.dask import ClusterError

    out = tmp_path / "shared.json"
    _both_workers(scheduler)
    with pytest.raises(ClusterError, match="one timing worker per GPU") as err:
        _sweep([CONTROL], _shapes("o:1"), out, cluster=scheduler, init=f"{FAKE}:install_keyed_one_gpu")
    assert "GPU-fake-0" in str(err.value) and "CUDA_VISIBLE_DEVICES" in str(err.value)
    assert not out.exists()


def test_ctrl_c_cancels_the_cluster_tasks_and_keeps_the_partial_run(tmp_path, scheduler):
    def progress(stage, i, n, detail=None):
        if stage == "shapes" and i == 1:
            raise KeyboardInterrupt

    out = tmp_path / "p.json"
    with pytest.raises(KeyboardInterrupt):
        _sweep([CONTROL], _shapes(), out, cluster=scheduler, progress=progress, probes=False)
    run = load_run(out)
    assert run["status"] == "partial" and run["interrupted"] is True and 1 <= len(run["results"]) < 4


def test_cluster_addresses_and_file_names():
    from profiler.backends.dask import ClusterError, parse_cluster
    from profiler.commands.fanout import model_paths

    assert parse_cluster("local") == ("local", None) and parse_cluster("local:3") == ("local", 3)
    assert parse_cluster("tcp://10.0.0.5:8786") == ("address", "tcp://10.0.0.5:8786")
    for bad in ("local:0", "local:x", "tcp://a b:1", ""):
        with pytest.raises(ClusterError, match="expected 'local'"):
            parse_cluster(bad)
    paths = model_paths(Path("runs/r.json"), ["NVIDIA H100 80GB HBM3", "NVIDIA H200"], lambda m: None)
    assert paths == {"NVIDIA H100 80GB HBM3": Path("runs/r_nvidia-h100-80gb-hbm3.json"),
                     "NVIDIA H200": Path("runs/r_nvidia-h200.json")}
    assert model_paths(Path("r.json"), ["NVIDIA H200"], lambda m: None) == {"NVIDIA H200": Path("r.json")}


def test_nothing_imports_dask_without_cluster():
    code = ("import sys, profiler.cli.main, profiler.commands.sweep, profiler.commands.tune, "
            "profiler.commands.explain, profiler.commands.survey, profiler.backends.open;"
            "m = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'));"
            "sys.exit(str(m) if m else 0)")
    p = subprocess.run([sys.executable, "-c", code], cwd=HERE.parents[1], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_a_bad_cluster_address_is_one_line_and_no_file(tmp_path):
    out = tmp_path / "x.json"
    p = subprocess.run([sys.executable, "-m", "profiler", "run", "--plan", "baseline", "--shapes", "o:1",
                        "--cluster", "tcp://no such host", "--out", str(out)], cwd=HERE.parents[1],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "argument --cluster: expected 'local'" in p.stderr and not out.exists()


def test_explain_on_a_local_cluster_records_what_the_single_process_one_does(tmp_path):
    from test_explain_worker import CRASH_UNDER_NCU, _fake_ncu, _shape

    from profiler.commands import explain

    crasher = tmp_path / "crasher.py"
    crasher.write_text(CRASH_UNDER_NCU)
    shapes = [_shape("decode 1", "qkv_gate"), _shape("decode 1", "o")]
    runs = []
    for cluster in (None, "local:2"):
        out = tmp_path / f"explain-{cluster or 'one'}.json".replace(":", "")
        runs.append(explain.run_explain(["baseline", str(crasher)], shapes, out, label="explain-test",
                                        settings=explain.ExplainSettings(probes=False, shapes_per_ncu=1,
                                                                         input_salt=0),
                                        tool=_fake_ncu(tmp_path), device="cpu", cluster=cluster,
                                        worker_init=f"{FAKE}:install_fake_nvtx", log=lambda m: None))
    one, fleet = runs
    assert fleet["status"] == "complete" and fleet["calls"] == one["calls"] and fleet["kernels"] == one["kernels"]
    assert fleet["failures"] == one["failures"] and len(fleet["kernels"]) == 3   # baseline: 2 kernels + 1 (H200 CSV)
    assert {w["dask_worker"] for w in fleet["environment"]["workers"]} <= {"projlab-0", "projlab-1"}
