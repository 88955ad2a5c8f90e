"""Every file read from outside is checked before it is read (datasets.jsonfile.read_checked): a FIFO, a directory or
a device is refused without blocking, a file over its kind's size limit without reading it, each in one line naming
the file and the limit; every reader (run files, workloads, plans, per-shape tables, candidate modules, the CLIs)
goes through it."""
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from datasets import DatasetError, load_workload
from datasets.csvread import read_typed_csv
from datasets.jsonfile import LIMITS, JsonInputError, read_checked, read_json
from datasets.runfile import RunFileError, load_run
from kernels.plans import PlanError, load_plan

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def deadline(seconds: int = 10):
    """Fail (instead of hanging the test run) when a read blocks: what a FIFO did to every reader."""
    def expired(*_):
        raise AssertionError(f"the reader blocked for {seconds} s (it opened a FIFO for reading?)")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def fifo(tmp_path):
    def make(name):
        path = tmp_path / name
        os.mkfifo(path)
        return path
    return make


@pytest.mark.parametrize("kind", sorted(LIMITS))
def test_a_fifo_of_every_kind_is_refused_without_blocking(fifo, kind):
    path = fifo(f"in-{kind.replace(' ', '_')}.json")
    with deadline(), pytest.raises(JsonInputError) as info:
        read_checked(path, kind)
    assert str(info.value) == (f"{path.name}: a FIFO (named pipe), not a regular file; a {kind} must be a regular "
                               "file (not read)")


def test_a_directory_and_a_device_are_refused(tmp_path):
    (tmp_path / "d.json").mkdir()
    with pytest.raises(JsonInputError, match=r"^d\.json: a directory, not a regular file; a run file must be"):
        read_json(tmp_path / "d.json")
    with deadline(), pytest.raises(JsonInputError, match=r"^zero: a character device, not a regular file"):
        read_checked("/dev/zero", "upload")


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_sparse_file_over_the_limit_is_refused_from_its_size(tmp_path, suffix):
    path = tmp_path / f"2026-01-01_x_sparse{suffix}"
    with open(path, "wb") as handle:
        handle.truncate(LIMITS["run file"] + 1)   # no data blocks: only the size says how big it is
    with pytest.raises(RunFileError) as info:
        load_run(path)
    assert str(info.value) == (f"{path.name}: {LIMITS['run file'] + 1:,} bytes is over the "
                               f"{LIMITS['run file']:,}-byte limit for a run file (not read)")


def test_the_limit_is_per_kind_and_a_file_at_the_limit_is_read(tmp_path):
    path = tmp_path / "w.json"
    path.write_bytes(b"[" + b" " * (LIMITS["workload"] - 2) + b"]")
    assert read_json(path, kind="workload") == []
    path.write_bytes(b"[" + b" " * (LIMITS["workload"] - 1) + b"]")
    with pytest.raises(JsonInputError, match=f"over the {LIMITS['workload']:,}-byte limit for a workload"):
        read_json(path, kind="workload")
    assert read_json(path, kind="run file") == []   # the same bytes are a small run file


def test_a_gzip_file_may_not_expand_past_the_limit(tmp_path):
    import gzip
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b"[" + b" " * LIMITS["plan"] + b"]"))
    with pytest.raises(JsonInputError, match=f"expands to over {LIMITS['plan']:,} bytes"):
        read_json(path, kind="plan")


def test_every_loader_refuses_a_fifo_in_one_line(fifo):
    with deadline():
        with pytest.raises(DatasetError, match="a FIFO .* a workload must be a regular file"):
            load_workload(fifo("w.json"))
        with pytest.raises(PlanError, match="a FIFO .* a plan must be a regular file"):
            load_plan(fifo("p.json"))
        with pytest.raises(RunFileError, match="a FIFO .* a run file must be a regular file"):
            load_run(fifo("2026-01-01_x_y.json"))
        with pytest.raises(DatasetError, match="a FIFO .* a table must be a regular file"):
            read_typed_csv(fifo("t.csv"), {"load": str})


def test_a_candidate_module_that_is_a_fifo_is_refused(fifo):
    from kernels.candidate import CandidateError, check_interface
    with deadline(), pytest.raises(CandidateError, match="a FIFO .* a candidate module must be a regular file"):
        check_interface(fifo("cand.py"))


def test_the_dashboard_cli_refuses_a_fifo_workload(fifo, capsys):
    from dashboard.cli.main import main
    path = fifo("w.json")
    with deadline():
        assert main(["validate", str(path)]) != 0
    err = capsys.readouterr().err
    assert "w.json" in err and "a FIFO (named pipe), not a regular file" in err and "Traceback" not in err


@pytest.mark.parametrize("verb", ["run", "probe", "tune", "explain"])
def test_every_profiler_command_refuses_a_fifo_workload(fifo, capsys, verb):
    from profiler.cli.main import main
    path = fifo("w.json")
    extra = ["--plan", "baseline"] if verb in ("run", "explain") else []
    with deadline(20), pytest.raises(SystemExit) as exit_:
        main([verb, "--workload", str(path), *extra])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"profiler {verb}: --workload: w.json" in err and "a FIFO (named pipe)" in err
    assert len(err.strip().splitlines()) == 1


def test_a_sparse_run_file_is_refused_without_reading_it(tmp_path):
    """Measured in a fresh interpreter: its peak memory stays far below the file's 1 GB."""
    path = tmp_path / "2026-01-01_x_sparse.json"
    with open(path, "wb") as handle:
        handle.truncate(1 << 30)
    # VmHWM: this process's own peak (ru_maxrss keeps the forking test process's peak across exec)
    code = ("import sys; from dashboard.cli.main import main; rc = main(['summarize', sys.argv[1]]); "
            "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))); sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60,
                         cwd=ROOT)
    assert out.returncode != 0
    assert out.stderr.strip() == (f"error: {path.name}: 1,073,741,824 bytes is over the "
                                  f"{LIMITS['run file']:,}-byte limit for a run file (not read)")
    assert int(out.stdout.split()[-1]) < 600 * 1024, "peak RSS (KB) says the file was read"
