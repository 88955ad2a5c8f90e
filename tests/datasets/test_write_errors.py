"""A file that cannot be written (a full disk, a read-only folder) is one line naming the path and the reason, exit 2
in every command; a run in progress keeps what it measured in a fallback file named in that line; `--out` is
checked for writability before any worker starts. ENOSPC / EROFS are simulated (CI runs as root, where permission
bits deny nothing)."""
import errno
import json
import os
import tempfile
from pathlib import Path

import pytest

from datasets.runfile import RunWriter, WriteError, check_writable, load_run, write_text_atomic

FIXTURE = Path(__file__).parents[1] / "fixtures" / "runs" / "2000-01-01_synthetic_synthetic-complete.json"


@pytest.fixture
def full_folder(monkeypatch):
    """Make every temp file created in the folders added to the returned set fail with ENOSPC."""
    full: set[Path] = set()
    real = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() in full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    return full


def test_a_full_disk_is_one_write_error_and_the_old_file_stays(tmp_path, full_folder):
    target = tmp_path / "report.md"
    target.write_text("old\n")
    full_folder.add(tmp_path.resolve())
    with pytest.raises(WriteError, match=f"^cannot write {target}: No space left on device$"):
        write_text_atomic(target, "new\n")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_a_run_that_cannot_be_flushed_is_kept_in_the_fallback_file(tmp_path, full_folder, monkeypatch):
    run = json.loads(FIXTURE.read_text())
    out, spare = tmp_path / "out", tmp_path / "spare"
    out.mkdir()
    spare.mkdir()
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(spare))
    writer = RunWriter(out / "2000-01-01_x_y.json")
    first = dict(run, results=run["results"][:2], pairs=[])
    writer.flush(first)
    full_folder.add(out.resolve())
    with pytest.raises(WriteError) as info:
        writer.flush(run)
    fallback = spare / "2000-01-01_x_y.json"
    assert str(info.value) == (f"cannot write {out / '2000-01-01_x_y.json'}: No space left on device; what was "
                               f"measured so far is in {fallback} (status partial)")
    kept = load_run(fallback)
    assert kept["status"] == "partial" and kept["results"] == run["results"]
    assert load_run(out / "2000-01-01_x_y.json")["results"] == first["results"]   # the earlier flush is intact


def test_check_writable_sees_a_folder_that_refuses_files(tmp_path, full_folder):
    check_writable(tmp_path / "new" / "deeper" / "r.json")   # the nearest existing parent is tried
    full_folder.add(tmp_path.resolve())
    with pytest.raises(WriteError, match="No space left on device"):
        check_writable(tmp_path / "new" / "r.json")


def test_profiler_out_is_checked_before_any_worker_starts(tmp_path, full_folder, capsys):
    from profiler.cli.options import new_run_path

    full_folder.add(tmp_path.resolve())
    with pytest.raises(SystemExit) as info:
        new_run_path("run", tmp_path / "r.json")
    assert info.value.code == 2
    assert capsys.readouterr().err == f"profiler run: --out {tmp_path / 'r.json'} cannot be written: No space left " \
                                      f"on device\n"


def test_a_sweep_write_error_is_one_line_exit_2(monkeypatch, capsys):
    from profiler.cli import main as cli

    def fails(*args, **kwargs):
        raise WriteError("cannot write r.json: No space left on device; what was measured so far is in /t/r.json "
                         "(status partial)")

    monkeypatch.setattr(cli, "run_sweep", fails)
    with pytest.raises(SystemExit) as info:
        cli._sweep("run", [], [], Path("r.json"), "x", None)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "what was measured so far is in /t/r.json" in err


@pytest.mark.parametrize("argv", [["results", "--runs", str(FIXTURE.parent), "--out", "{out}/RESULTS.md"],
                                  ["report", str(FIXTURE), "--out", "{out}", "--format", "md"]])
def test_dashboard_write_errors_are_one_line_exit_2(tmp_path, full_folder, capsys, argv):
    from dashboard.cli.main import main

    full_folder.add(tmp_path.resolve())
    assert main([a.replace("{out}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "Traceback" not in err


def test_tune_checks_its_plan_folder_before_anything_runs(tmp_path, full_folder, capsys):
    from profiler.cli import tune

    full_folder.add(tmp_path.resolve())
    assert tune.main(["--out-plan", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err == (f"profiler tune: --out-plan: cannot write {tmp_path / 'p.json'}: No space left "
                                       f"on device\n")
