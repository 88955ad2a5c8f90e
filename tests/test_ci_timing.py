"""A whole-suite run prints the fast tier's part of it (tests/conftest.py), and .ci/run prints its own wall time."""
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def _summary(conftest, reports, markexpr: str) -> list[str]:
    saved = list(conftest._FAST_TEST_S)
    conftest._FAST_TEST_S.clear()
    lines = []
    try:
        for report in reports:
            conftest.pytest_runtest_logreport(report)
        config = SimpleNamespace(_projlab_started_s=time.perf_counter() - 5,
                                 getoption=lambda name: markexpr if name == "markexpr" else None)
        conftest.pytest_terminal_summary(SimpleNamespace(stats={}, write_line=lines.append), 0, config)
    finally:
        conftest._FAST_TEST_S[:] = saved
    return lines


def _root_conftest(pytestconfig):
    """tests/conftest.py as pytest loaded it: a plugin of this run (sys.modules["conftest"] is whichever conftest
    was imported last)."""
    return next(p for p in pytestconfig.pluginmanager.get_plugins()
                if Path(getattr(p, "__file__", None) or "/").resolve() == ROOT / "tests" / "conftest.py")


def test_a_whole_run_prints_the_fast_tiers_part_and_a_marked_run_does_not(pytestconfig):
    conftest = _root_conftest(pytestconfig)
    reports = [SimpleNamespace(keywords={"test_a": 1}, duration=30.0),
               SimpleNamespace(keywords={"test_b": 1, "slow": 1}, duration=500.0),
               SimpleNamespace(keywords={"test_c": 1}, duration=12.0)]
    whole = _summary(conftest, reports, "")
    assert any("fast tier (tests not marked slow) took 42 s" in line for line in whole), whole
    assert any("all tests (both tiers): wall time" in line for line in whole)
    marked = _summary(conftest, reports, "not slow")
    assert not any("took" in line for line in marked) and any("fast tier (-m 'not slow')" in ln for ln in marked)


def test_ci_run_prints_its_wall_time_whatever_the_outcome():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "trap 'echo \"projlab: .ci/run wall time" in script and "EXIT" in script
