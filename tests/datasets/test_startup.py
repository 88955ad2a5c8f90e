"""datasets.startup guards a command line's slow imports (tests/profiler/test_interrupts.py sends the Ctrl-C); it can
only do so if importing it loads nothing slow, which the package's lazy names (datasets/__init__.py) allow."""
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import datasets
from datasets.startup import interrupted_while_importing

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_guard_loads_neither_numpy_nor_pandas():
    code = ("import sys, datasets.startup; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_package_names_read_their_modules():
    from datasets.workload import load_workload

    assert datasets.load_workload is load_workload
    assert datasets.runfile.__name__ == "datasets.runfile"   # a submodule, imported when asked for
    assert set(datasets.__all__) <= set(dir(datasets))
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        datasets.no_such_name


def test_the_guard_turns_sigint_into_one_line_and_130_then_gives_it_back(capsys):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(SystemExit) as stop:
            with interrupted_while_importing("prog", "nothing was done"):
                assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
                signal.raise_signal(signal.SIGINT)
        assert stop.value.code == 130
        assert capsys.readouterr().err == "prog: interrupted while starting (nothing was done)\n"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupted_while_importing("prog", "nothing was done"):
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
