"""The peer methods (kernels/methods_library.py): registered like any method, in plans that load for the workload, tried
by the tuner only when named, refused in one line where they cannot run (CPU), TunableOp's switches held by the
guard, and torch_compile through the real worker on CPU (Inductor's C++ backend): contract, capture, run-file setup
record."""
from dataclasses import replace
from pathlib import Path

import pytest

from kernels.method import PlanError
from kernels.methods_library import PEER_METHODS, PEER_NAMES
from kernels.plans import load_plan
from kernels.registry import METHODS
from profiler.measure.policy import SWEEP

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(ROOT / "tests" / "profiler" / "fake_device.py")
TINY = ROOT / "tests" / "fixtures" / "workloads" / "tiny.json"


def test_the_peers_are_registered_methods_with_plans_of_their_own_name():
    assert set(PEER_NAMES) == {"tunableop", "torch_compile", "flashinfer"}
    for name in PEER_NAMES:
        assert METHODS[name] is next(m for m in PEER_METHODS if m.name == name)
        plan = load_plan(name)
        assert plan.describe("qkv_gate", 1).startswith(name)
    # FlashInfer's tiny GEMM at up to 8 tokens, mm_bf16 above; the FP32 router has no FlashInfer GEMM
    fi = load_plan("flashinfer")
    assert fi.describe("unpooler", 1) == "flashinfer entry=tinygemm_bf16"
    assert fi.describe("pooler", 16) == "flashinfer entry=mm_bf16"
    assert fi.describe("router", 8) == "torch_linear"


def test_the_generic_peer_plans_serve_another_workload():
    from datasets import load_workload

    llama = load_workload("llama31_8b_decode")
    for name in ("tunableop", "torch_compile"):
        load_plan(name, llama)
    with pytest.raises(PlanError, match="tuned for workload muse_bf16_proj"):
        load_plan("flashinfer", llama)


def test_tinygemm_guard_follows_its_documented_alignment():
    fi = METHODS["flashinfer"]
    bf16 = ("bfloat16", "bfloat16", "bfloat16")
    assert fi.supports(bf16, 1, 1024, 4096, {"entry": "tinygemm_bf16"}) is None
    assert "K % 64" in fi.supports(bf16, 1, 1024, 4000, {"entry": "tinygemm_bf16"})
    assert "N % 16" in fi.supports(bf16, 1, 1000, 4096, {"entry": "tinygemm_bf16"})
    assert fi.supports(bf16, 1, 1000, 4000, {"entry": "mm_bf16"}) is None
    assert "computes" in fi.supports(("bfloat16", "float32", "float32"), 1, 256, 8192, {"entry": "mm_bf16"})


def test_the_tuner_tries_a_peer_only_where_it_is_named():
    from profiler.commands.tune_rules import candidates

    bf16 = ("bfloat16", "bfloat16", "bfloat16")
    default = {name for name, _ in candidates(METHODS, bf16, 16, 2304, 8192)}
    assert not default & set(PEER_NAMES) and "torch_linear" in default
    named = candidates(METHODS, bf16, 16, 2304, 8192, only=["torch_compile", "flashinfer"])
    assert {n for n, _ in named} == {"torch_linear", "torch_compile", "flashinfer"}


def test_guard_snapshots_every_process_wide_setting_a_peer_declares():
    """A peer that leaves TunableOp on would make the baseline's F.linear replay TunableOp's pick: the guard must
    hold each switch the method says it touches (on a CUDA host they join the snapshot)."""
    from profiler.check.guards import tunableop_settings

    held = {name for name, _, _ in tunableop_settings()}
    declared = {s for m in PEER_METHODS for s in m.process_state}
    assert declared and declared <= held


@pytest.mark.parametrize("name,words", [("tunableop", "tunableop: needs a CUDA GPU"),
                                        ("flashinfer", "flashinfer: needs a CUDA GPU")])
def test_cuda_only_peers_refuse_in_one_line_without_a_gpu(name, words):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA host: the peers run there")
    from kernels.candidate import MethodCandidate

    cand = MethodCandidate(name)
    with pytest.raises(RuntimeError) as err:
        cand.prepare("qkv_gate", torch.zeros(64, 128, dtype=torch.bfloat16))
    assert str(err.value).startswith(words) and "\n" not in str(err.value)


def test_the_peer_run_command_is_valid_up_to_the_gpu(tmp_path, capsys):
    """`profiler run --plan baseline --plan best --plan tunableop --plan torch_compile --plan flashinfer --shapes
    official`: every plan resolves for the workload; on a CPU host the only refusal is the missing GPU."""
    pytest.importorskip("torch")
    from profiler.cli.main import main

    argv = ["run", "--plan", "baseline", "--plan", "best", "--plan", "tunableop", "--plan", "torch_compile",
            "--plan", "flashinfer", "--shapes", "official", "--out", str(tmp_path / "peers.json")]
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA host would start measuring")
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "needs a CUDA GPU" in err and "cannot load candidate" not in err
    with pytest.raises(SystemExit):
        main(argv[:-6] + ["--plan", "no_such_peer", "--shapes", "official"])
    assert "cannot load candidate 'no_such_peer'" in capsys.readouterr().err


def test_torch_compile_passes_the_contract_in_a_worker_on_cpu_and_records_its_setup(monkeypatch):
    """The real worker (fake timer): check, capture and time torch_compile beside F.linear at one tiny BF16 shape;
    its result carries the compile and autotune seconds and the generated kernels. One shape, and Inductor's GEMM
    choices limited to the library call in this test's worker: its C++ GEMM template alone took 25 s to build with a
    cold cache on a 2-core machine (the method's mode is unchanged; the GPU tests run the full autotune)."""
    pytest.importorskip("torch")
    monkeypatch.setenv("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", "ATEN")   # the worker inherits it
    from dataclasses import asdict

    from datasets import load_workload
    from kernels.candidate import method_spec
    from profiler.backends.isolate import measure_shape_isolated
    from profiler.backends.pool import WorkerPool
    from profiler.worker.settings import SweepSettings

    tiny = load_workload(TINY)
    cands = [{"spec": method_spec("torch_linear", {}), "name": "torch_linear"},
             {"spec": method_spec("torch_compile", {}), "name": "torch_compile"}]
    settings = SweepSettings(timing=replace(SWEEP, min_pairs=8, batch_rounds=8, instances=2, max_seconds=0.1))
    pool = WorkerPool({"device": "cpu", "mode": "cold", "flush_bytes": None, "init": f"{FAKE}:install"},
                      lambda m: None)
    results = []
    try:
        for shape in tiny.select("proj:4"):
            res = measure_shape_isolated(pool, shape, cands, {"kind": "shape", "settings": asdict(settings),
                                                              "workload": tiny.to_dict()}, settings, {}, print)
            assert not res["failures"], res["failures"]
            results += res["results"]
    finally:
        pool.close()
    compiled = [r for r in results if r["candidate"] == "torch_compile"]
    assert [r["family"] for r in compiled] == ["proj"]
    for r in compiled:
        setup = r["setup"]["torch_compile"]
        assert setup["mode"] == "max-autotune-no-cudagraphs" and setup["kernels"]
        assert setup["compile_seconds"] > 0 and setup["autotune_seconds"] >= 0
    assert all("setup" not in r for r in results if r["candidate"] == "torch_linear")


def test_a_worker_tells_the_tunableop_peer_where_its_run_file_is(tmp_path):
    """The sweep's worker config names the run's side folder (kernels.methods_library.use_side_folder, no
    environment variable); TunableOp's results file then goes there, named apart from every other worker's."""
    pytest.importorskip("torch")
    from kernels import methods_library
    from kernels.launch.peers import tunableop_results_path
    from profiler.worker.session import Session

    side = methods_library.tunableop_folder(tmp_path / "2000-01-01_synthetic_peers.json")
    try:
        sess = Session({"device": "cpu", "side_folder": str(side)})
        assert tunableop_results_path().parent == tmp_path / "2000-01-01_synthetic_peers.tunableop"
        assert not sess.guard.check("a test step")
    finally:
        methods_library.use_side_folder(None)


def test_tunableop_is_on_for_its_own_calls_only_and_writes_beside_the_run(monkeypatch, tmp_path):
    """tunableop_on switches TunableOp on (tuning or replaying) for the calls inside and puts every switch back on
    the way out, also when a call raises; its results file is set beside the run file, never TunableOp's default
    in the working directory. (A stand-in for torch.cuda.tunable, whose functions need a CUDA build.)"""
    from types import SimpleNamespace

    torch = pytest.importorskip("torch")
    from kernels.launch import peers as launch

    s = {"on": False, "tuning": False, "untuned": True, "file": "tunableop_results.csv"}
    fake = SimpleNamespace(
        is_enabled=lambda: s["on"], enable=lambda v=True: s.update(on=v),
        tuning_is_enabled=lambda: s["tuning"], tuning_enable=lambda v=True: s.update(tuning=v),
        record_untuned_is_enabled=lambda: s["untuned"], record_untuned_enable=lambda v=True: s.update(untuned=v),
        get_filename=lambda: s["file"], set_filename=lambda f, ordinal=False: s.update(file=f))
    monkeypatch.setattr(torch.cuda, "tunable", fake, raising=False)
    from kernels import methods_library

    methods_library.use_side_folder(methods_library.tunableop_folder(tmp_path / "2000-01-01_x.json"))
    monkeypatch.setattr(methods_library, "_SIDE_FOLDER", methods_library._SIDE_FOLDER)
    before = dict(s, file=None)
    with launch.tunableop_on(tuning=True):
        assert (s["on"], s["tuning"], s["untuned"]) == (True, True, False)
    assert dict(s, file=None) == before
    with pytest.raises(ValueError), launch.tunableop_on(tuning=False):
        assert (s["on"], s["tuning"]) == (True, False)
        raise ValueError("a call that raises")
    assert dict(s, file=None) == before
    assert s["file"] == str(tmp_path / "2000-01-01_x.tunableop" / Path(s["file"]).name)
    methods_library.use_side_folder(None)
