"""Shared pytest setup: the repo root on sys.path, the `gpu` and `slow` markers, and the run's wall time.

GPU tests are marked `@pytest.mark.gpu`; they skip cleanly (with a reason) where torch has no CUDA.

Slow tests are marked `slow`: `python3 -m pytest -q -m "not slow"` is the fast tier, the plain command (what CI
runs) runs everything. A whole file is slow when its base name is a key of SLOW (test file names are unique across
tests/, see pytest.ini), one test when "file::test" is. A test is slow when it takes more than a few seconds on a
2-core machine; SLOW says what makes each so. A whole run hands out every fast test before any slow one and prints
when its fast tier ended; every run prints its wall time and which tier it was.
"""
import importlib.util
import os
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


# What is slow, by test file name (every test in it) or "file::test" (one test, all its parameters), with why.
SLOW = {
    "test_judge_reach.py::test_a_judge_of_each_call_where_candidate_code_runs_between_calls_leaves_no_kept_copy_to_rewrite":
        "six feeds driven for 128 calls each, every judged call an FP64 product",
    # every committed sweep read whole, and every pair of them holding one route compared
    "test_noise.py::test_bands_file_is_what_the_committed_runs_give": "reads every committed sweep",
    "test_noise.py::test_identical_routes_across_committed_sweeps_are_never_fast_or_slow":
        "every pair of committed sweeps on one route, compared",
    "test_noise.py::test_sweeps_are_the_plan_sweeps_and_repeatability_runs": "reads every committed sweep",
    "test_one_floor.py::test_sol_of_a_sweep_is_one_number_on_every_surface": "three sweeps through table and pages",
    # Triton's interpreter runs the kernels in Python
    "test_interpreter.py": "Triton interpreter",
    "test_interp_gemv_rows.py": "Triton interpreter",
    "test_interp_splitk2.py": "Triton interpreter",
    "test_interp_swap.py": "Triton interpreter",
    "test_router_interp.py": "Triton interpreter",
    # every config compiled to sm_90 PTX and assembled by ptxas, 1-30 s each
    "test_compile_sm90.py": "sm_90 compiles",
    "test_compile_splitk2.py": "sm_90 compiles",
    "test_compile_swap.py": "sm_90 compiles",
    # a Streamlit server and a headless chromium
    "test_browser.py": "browser",
    # worker processes, dask clusters, subprocesses of python -m profiler (each imports torch)
    "test_cluster.py": "dask LocalCluster",
    "test_cpu_device.py": "a real CPU sweep through python -m profiler (probes, canary and its repeat, 4 shapes)",
    "test_worker.py": "worker processes",
    "test_explain_worker.py": "worker processes",
    "test_tune_worker.py": "worker processes",
    "test_sweep_cpu.py": "worker processes",
    "test_step_cli.py": "a sweep and a step point through the in-process worker",
    "test_step.py::test_the_step_rejects_the_known_wrong_candidates": "one step point with 14 candidates (~9 s)",
    "test_terminal_escapes.py::test_profiler_run_prints_a_hostile_candidates_name_reason_and_worker_lines_escaped":
        "a profiler run with worker processes",
    "test_interrupts.py::test_ctrl_c_during_the_canary_names_no_file": "a profiler run with a worker process",
    "test_trust_sweep.py": "worker processes",
    "test_shape_records.py": "worker processes",
    "test_reach_measure.py": "worker processes",
    "test_judge_reach.py::test_each_form_of_the_computing_classes_is_rejected_with_its_reason":
        "a CPU sweep in worker processes per class group",
    "test_judge_reach.py::test_each_form_of_forging_is_rejected_and_names_the_forging": "worker processes",
    "test_judge_reach.py::test_a_mode_entered_when_the_candidate_is_loaded_is_refused_at_load": "worker processes",
    "test_judge_reach.py::test_through_the_cli_on_cpu_the_real_timer_refuses_a_lazy_output_and_judges_every_call":
        "python -m profiler subprocess with the wall-clock CPU timer",
    "test_element_rule.py": "FP64 references at every official family's N and K",
    "test_reach.py": "python -m profiler subprocesses and worker processes",
    "test_sandbox.py::test_as_root_a_candidate_cannot_write_signal_or_read_secrets_and_the_next_run_is_unaffected":
        "two python -m profiler subprocesses",
    "test_sandbox.py::test_a_run_whose_unsandboxed_worker_planted_a_pth_on_the_import_path_is_not_recorded":
        "a sweep in a subprocess with a worker process",
    "test_sandbox.py::test_as_root_every_plan_and_peer_that_runs_on_cpu_runs_in_the_sandbox":
        "python -m profiler with torch.compile's C++ build (~40 s)",
    "test_isolation.py::test_env_at_import_is_refused_at_load_and_the_control_is_measured_in_a_clean_environment":
        "worker processes",
    "test_accuracy_flag.py::test_report_and_cli_show_the_flag_beside_the_score": "python -m dashboard subprocesses",
    "test_workload_sweep.py": "worker processes",
    "test_cli.py": "python -m profiler subprocesses",
    # Streamlit AppTest renders, 1-4 s each (the fast tier keeps test_pages.py and test_gate_app.py: every page on
    # the published table and a run, and the correctness gate on every page)
    "test_workload_pages.py": "AppTest: every page on two more workloads",
    "test_state.py": "AppTest: page switches, links and uploads",
    "test_readability.py": "AppTest: captions and labels of every page",
    "test_kernels_page.py": "AppTest: the Kernels page on the committed explain runs",
    "test_gate_app.py::test_pages_without_a_source_still_open_next_to_a_deep_file": "a deeply nested file, every page",
    "test_report.py": "python -m dashboard report subprocesses: the umask, a kill mid-write",
    "test_tune.py::test_warm_runs_jobs_in_worker_processes_and_reports_the_ones_that_raise": "worker processes",
    "test_pages.py::test_no_page_imports_torch": "a subprocess per page",
    "test_runs.py::test_default_run_prefers_the_most_fully_scored_sweep_of_the_default_workload": "every run file",
    "test_runs.py::test_committed_runs_are_valid": "every run file",
    "test_gate_app.py::test_compare_gives_incorrect_no_verdict_and_an_error": "Compare over every series",
    "test_peer_methods.py::test_torch_compile_passes_the_contract_in_a_worker_on_cpu_and_records_its_setup":
        "a worker process and an Inductor compile (about 25 s, 50 s with a cold Inductor cache)",
    "test_peers_page.py": "AppTest: the Overview on a five-candidate run",
    "test_validate_cli.py::test_a_workload_and_a_candidate_check_without_torch": "a python -m dashboard subprocess",
    "test_dashboard_cli.py::test_a_closed_pipe_ends_quietly": "a python -m dashboard subprocess",
    "test_run_index.py::test_the_committed_index_is_what_the_committed_runs_give": "every run file",
    "test_same_pages.py": "AppTest: every page on the committed runs, against the text captured before",
    "test_device_pages.py": "AppTest: every page with a CPU run and with a synthetic H100 run as the source",
    "test_restart.py": "two app processes, each a fresh import",
}
FAST_TIER_TARGET_S = 180   # the fast tier's budget on a 2-core machine
# The files of most test time on the 2-core machine, longest first (a whole run with --durations=0 gives the figures:
# 55-90 s each), handed to the workers before the others of their rank.
LONGEST_FIRST = ("test_browser.py", "test_cluster.py", "test_router_interp.py", "test_reach.py", "test_pages.py",
                 "test_noise.py", "test_worker.py", "test_interp_splitk2.py", "test_results_doc.py")


# One thread per test process: the suite runs one worker process per core (pytest.ini), and the worker, CLI and
# interpreter processes the tests start run beside it. With torch's and MKL's default (a thread per core) the processes'
# threads outnumbered the cores: five of the slow files took 87 s and 103 s of wall time on 2 workers by default,
# 68 s and 63 s with one thread (on the 2-core machine, back to back). An explicit setting is kept.
ONE_THREAD = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped elsewhere")
    for name in ONE_THREAD:   # before any test imports torch or numpy; the processes tests start inherit it
        os.environ.setdefault(name, "1")
    config._projlab_started_s = time.perf_counter() - (_process_age_s() or 0.0)


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    # Checked against the files' sources, not the items collected: one test picked by its node id collects no other.
    files = {p.name: p for p in (ROOT / "tests").rglob("test_*.py")}
    missing = [key for key in (*SLOW, *LONGEST_FIRST) if key.split("::")[0] not in files
               or ("::" in key and not re.search(rf"^def {re.escape(key.split('::')[1])}\(",
                                                 files[key.split("::")[0]].read_text(encoding="utf-8"), re.M))]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py: SLOW names {missing}, which no test is called "
                                "(renamed? update SLOW)")
    for item in items:
        name = Path(str(item.fspath)).name
        if name in SLOW or f"{name}::{item.originalname}" in SLOW:
            item.add_marker(pytest.mark.slow)
    # Every fast test before every slow one: the fast tier's answer comes first in a whole run too, and the run
    # measures when it came. pytest-xdist hands out groups (--dist loadgroup in pytest.ini): a file's fast tests are
    # one group and its slow tests another, each run whole on one worker (module fixtures built once per group), in
    # this order. Within a tier, the longest files first (LONGEST_FIRST): the last groups handed out are short ones,
    # so neither worker is left running one long file alone at the end.
    longest = {name: i for i, name in enumerate(LONGEST_FIRST)}
    first = {}
    for i, item in enumerate(items):
        first.setdefault(str(item.fspath), i)
    for item in items:
        tier = "slow" if "slow" in item.keywords else "fast"
        item.add_marker(pytest.mark.xdist_group(f"{Path(str(item.fspath)).relative_to(ROOT)}:{tier}"))
    items.sort(key=lambda item: ("slow" in item.keywords, longest.get(Path(str(item.fspath)).name, len(LONGEST_FIRST)),
                                 first[str(item.fspath)]))
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# The GPU tests run as `pytest -n 8` on one H200 (139 GiB): eight workers share it, so a test may leave at most this
# much in its process's allocator cache. A test past the limit is named at the end of the run and its process's cache
# emptied. What this caught on the H200: after a capture that a CUDA error invalidated (the known-wrong HostSync and
# SideStream candidates) the allocator counted a capture as underway for the rest of the process, one worker's cache
# grew by ~0.5 GiB per later test past 100 GiB, neither gc.collect() nor empty_cache() gave any of it back, and hundreds
# of tests in the other workers failed with CUDA out-of-memory errors; profiler.measure.timing.abandon_failed_capture
# now ends such a capture (tests/profiler/test_timing_capture.py).
GPU_TEST_RESERVED_LIMIT = 8 << 30


@pytest.fixture(autouse=True)
def _gpu_memory_given_back(request):
    yield
    if "gpu" not in request.keywords or "torch" not in sys.modules:
        return
    import torch

    if not torch.cuda.is_initialized():
        return
    reserved = torch.cuda.memory_reserved()
    if reserved > GPU_TEST_RESERVED_LIMIT:
        allocated = torch.cuda.memory_allocated()
        torch.cuda.empty_cache()
        request.node.user_properties.append(
            ("gpu_memory", f"{reserved / 2**30:.1f} GiB cached after the test ({allocated / 2**30:.1f} GiB of it "
                           f"allocated); {torch.cuda.memory_reserved() / 2**30:.1f} GiB after empty_cache"))


def _process_age_s() -> float | None:
    """Seconds since this pytest process started (Linux /proc: field 22 of /proc/self/stat against the uptime),
    so the wall time printed counts the interpreter's start and the imports too; None where /proc is missing."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
        return max(uptime_s - start_ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return None


_FAST = {"test_s": [], "last_done_s": None}   # this run's tests not marked slow: their seconds, when the last ended


def pytest_runtest_logreport(report):
    """Every test's report (under pytest-xdist the controller gets every worker's): a fast test's setup + call +
    teardown seconds, and the moment its teardown arrived."""
    if "slow" not in report.keywords:
        _FAST["test_s"].append(report.duration)
        if getattr(report, "when", "teardown") == "teardown":
            _FAST["last_done_s"] = time.perf_counter()


def _workers(config) -> int:
    """How many processes ran the tests: pytest-xdist's worker count (-n), else 1."""
    n = getattr(getattr(config, "option", None), "numprocesses", None)
    return n if isinstance(n, int) and n > 0 else 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The run's wall time and tier, last: the fast tier (-m "not slow") should stay within FAST_TIER_TARGET_S."""
    wall_s = time.perf_counter() - config._projlab_started_s
    marks = config.getoption("markexpr") or ""
    tier = "fast tier (-m 'not slow')" if marks.replace('"', "").replace("'", "").strip() == "not slow" else \
        (f"-m {marks!r}" if marks else "all tests (both tiers)")
    budget = f" (budget {FAST_TIER_TARGET_S} s on 2 cores)" if tier.startswith("fast") else ""
    for report in (r for reports in terminalreporter.stats.values() for r in reports):
        for key, text in getattr(report, "user_properties", None) or []:
            if key == "gpu_memory" and getattr(report, "when", "") == "teardown":
                terminalreporter.write_line(f"projlab: {report.nodeid} left {text} (limit "
                                            f"{GPU_TEST_RESERVED_LIMIT >> 30} GiB per test)")
    workers = _workers(config)
    if not marks and _FAST["last_done_s"] is not None:
        # the whole suite (what .ci/run runs): fast files run first (pytest_collection_modifyitems), so the moment
        # the last fast test ended is when the fast tier's answer was in
        done_s = _FAST["last_done_s"] - config._projlab_started_s
        # (files holding slow tests too end later than the fast tier alone would; its budget is for -m "not slow")
        terminalreporter.write_line(
            f"projlab: fast tier (tests not marked slow): all ended {done_s:.0f} s into this run, on {workers} "
            f"worker process{'es' if workers > 1 else ''} ({sum(_FAST['test_s']):.0f} s of test time; run alone, "
            f"-m \"not slow\", its budget is {FAST_TIER_TARGET_S} s on 2 cores)")
    terminalreporter.write_line(f"projlab: {tier}: wall time {wall_s:.0f} s on {workers} worker "
                                f"process{'es' if workers > 1 else ''}{budget}")


@pytest.fixture
def fleet_run_files(tmp_path):
    """make(break_b=False) -> two run files of one fleet sweep ('fleet-demo'): the SYNTHETIC app fixtures
    synthetic_a / synthetic_b under the made-up GPU names 'SYNTHETIC GPU A/B' (not measurements); break_b marks one
    scored decode-16 result of B's candidate incorrect (the gate must then refuse B's score)."""
    import json

    fixtures = ROOT / "tests" / "fixtures" / "app"

    def make(break_b: bool = False) -> list[Path]:
        paths = []
        for src, gpu in (("synthetic_a.json", "A"), ("synthetic_b.json", "B")):
            run = json.loads((fixtures / src).read_text())
            run["label"] = "fleet-demo"
            run["environment"]["gpu"] = f"SYNTHETIC GPU {gpu} (test fixture, not a measurement)"
            if break_b and gpu == "B":
                bad = next(r for r in run["results"] if r["candidate"] != "baseline" and r["load"] == "decode 16")
                bad["correct"], bad["flags"] = False, ["incorrect"]
            path = tmp_path / f"2026-12-02_synthetic-gpu-{gpu.lower()}_fleet-demo.json"
            path.write_text(json.dumps(run))
            paths.append(path)
        return paths

    return make
