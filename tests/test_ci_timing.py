"""A whole-suite run prints when its fast tier ended (tests/conftest.py runs fast files first), and .ci/run prints its
own wall time."""
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def _summary(conftest, reports, markexpr: str, workers=None) -> list[str]:
    saved = {k: (list(v) if isinstance(v, list) else v) for k, v in conftest._FAST.items()}
    conftest._FAST.update(test_s=[], last_done_s=None)
    lines = []
    try:
        for report in reports:
            conftest.pytest_runtest_logreport(report)
        config = SimpleNamespace(_projlab_started_s=time.perf_counter() - 5, option=SimpleNamespace(numprocesses=workers),
                                 getoption=lambda name: markexpr if name == "markexpr" else None)
        conftest.pytest_terminal_summary(SimpleNamespace(stats={}, write_line=lines.append), 0, config)
    finally:
        conftest._FAST.update(saved)
    return lines


def _root_conftest(pytestconfig):
    """tests/conftest.py as pytest loaded it: a plugin of this run (sys.modules["conftest"] is whichever conftest
    was imported last)."""
    return next(p for p in pytestconfig.pluginmanager.get_plugins()
                if Path(getattr(p, "__file__", None) or "/").resolve() == ROOT / "tests" / "conftest.py")


def test_a_whole_run_prints_when_the_fast_tier_ended_and_a_marked_run_does_not(pytestconfig):
    conftest = _root_conftest(pytestconfig)
    reports = [SimpleNamespace(keywords={"test_a": 1}, duration=30.0, when="teardown"),
               SimpleNamespace(keywords={"test_b": 1, "slow": 1}, duration=500.0, when="teardown"),
               SimpleNamespace(keywords={"test_c": 1}, duration=12.0, when="teardown")]
    whole = _summary(conftest, reports, "", workers=2)
    fast = [line for line in whole if "fast tier (tests not marked slow): all ended" in line]
    assert fast and "on 2 worker processes (42 s of test time; run alone, -m \"not slow\", its budget is 180 s" \
        in fast[0], whole
    assert int(fast[0].split("all ended ")[1].split(" s")[0]) >= 5   # the run started 5 s before the reports came
    assert any("all tests (both tiers): wall time" in line and "on 2 worker processes" in line for line in whole)
    marked = _summary(conftest, reports, "not slow")
    assert not any("all ended" in line for line in marked)
    assert any("fast tier (-m 'not slow')" in ln and "on 1 worker process (budget" in ln for ln in marked), marked
    assert not any("all ended" in line for line in _summary(conftest, reports[1:2], ""))   # no fast test ran


def test_fast_tests_run_before_slow_ones_in_groups_of_one_file_and_tier(request):
    """A whole run's collection: every fast test before every slow one; each test's xdist group is its file and tier
    (what pytest-xdist hands out whole: pytest.ini), and the tests of a group are together."""
    items = request.session.items
    slow = ["slow" in item.keywords for item in items]
    assert slow == sorted(slow), "a fast test after a slow one"
    groups = [next(item.iter_markers("xdist_group")).args[0] for item in items]
    for item, group, is_slow in zip(items, groups, slow):
        assert group == f"{Path(str(item.fspath)).relative_to(ROOT)}:{'slow' if is_slow else 'fast'}", group
    seen = list(dict.fromkeys(groups))
    assert [g for i, g in enumerate(groups) if i == 0 or g != groups[i - 1]] == seen, "a group's tests are apart"


def test_ci_run_prints_its_wall_time_whatever_the_outcome():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "trap 'echo \"projlab: .ci/run wall time" in script and "EXIT" in script
