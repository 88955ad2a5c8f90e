"""`python -m dashboard ARGS` for the tests, as dashboard.__main__.main in the test process: the exit code (an
argparse error's SystemExit included) and what it printed, from the repository root. What only a real process shows
(the entry point, the interpreter's exit, a closed pipe, a package missing at import) stays a subprocess in the tests
that need it; this saves a Python start (pandas, plotly: ~0.6 s on the 2-core machine) per call."""
import contextlib
import io
import os
import subprocess
from pathlib import Path

from dashboard.cli import main as dashboard_main

ROOT = Path(__file__).resolve().parents[2]


def run_main(*args) -> subprocess.CompletedProcess:
    args = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = dashboard_main.main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(cwd)
    return subprocess.CompletedProcess(["python", "-m", "dashboard", *args], code, out.getvalue(), err.getvalue())
