"""Ctrl-C at any moment is one line: while the command lines import (seconds), during a run (the partial file it
names exists), before anything was recorded (the canary: no file is named); tests that signal a process start it
with default signal handling whatever their runner inherited, and the command lines keep the shell's convention
(an ignored SIGINT stays ignored)."""
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from default_signals import default_signals, ignored_signals
from profiler.commands.runlife import RunLife, interrupted_line

ROOT = Path(__file__).resolve().parents[2]


def _interrupt_while_importing(module: str, args: list[str], runner=signal.SIG_DFL) -> tuple[int, list[str]]:
    """Start `python -m module args` printing each import as it ends (-X importtime), send SIGINT once numpy has
    been imported (the command's own modules are then still importing: pandas, the registry), return the exit
    status and the stderr lines that are not import timings. `runner`: SIGINT in the test process while the child
    starts, without default_signals when it is SIG_IGN (the shell's convention for a background job)."""
    previous = signal.signal(signal.SIGINT, runner)
    try:
        proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", module, *args], cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=default_signals if runner == signal.SIG_DFL else None)
    finally:
        signal.signal(signal.SIGINT, previous)
    while True:
        line = proc.stderr.readline()
        assert line, "the command ended before it imported numpy"
        if line.split("|")[-1].strip() == "numpy":
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    proc.communicate(timeout=120)
    return proc.returncode, [x for x in rest.splitlines() if not x.startswith("import time:")]


@pytest.mark.parametrize("module, args, line", [
    ("profiler", ["run", "--plan", "baseline"], "profiler: interrupted while starting (nothing was run)"),
    ("dashboard", ["summarize", "x.json"], "dashboard: interrupted while starting (nothing was read)")])
def test_ctrl_c_while_the_command_imports_is_one_line(module, args, line):
    code, said = _interrupt_while_importing(module, args)
    assert (code, said) == (130, [line])


def test_a_command_started_ignoring_sigint_keeps_ignoring_it():
    """What a shell does to a background job: the command does not turn Ctrl-C back on (it runs to its end: here
    the one-line refusal of a machine without CUDA, or of a missing file)."""
    code, said = _interrupt_while_importing("dashboard", ["summarize", "x.json"], runner=signal.SIG_IGN)
    assert code == 2 and len(said) == 1 and "interrupted" not in said[0], said


def test_the_tests_start_their_processes_with_default_signal_handling_under_a_runner_that_ignores_sigint():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)   # the runner as a background job's shell leaves it
    try:
        plain = subprocess.Popen(["sleep", "30"])
        reset = subprocess.Popen(["sleep", "30"], preexec_fn=default_signals)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert signal.SIGINT in ignored_signals(plain.pid)       # what the Ctrl-C test's CLI inherited
        assert signal.SIGINT not in ignored_signals(reset.pid)   # what it gets now
    finally:
        for proc in (plain, reset):
            proc.kill()
            proc.wait()


class _Backend:
    def cancel(self):
        pass

    def close(self, force=False):
        pass

    def records(self):
        return []


class _Writer:
    def __init__(self, path):
        self.path = path

    def flush(self, run):
        self.path.write_text(json.dumps(run))


def _interrupt(life_writer, started: bool) -> KeyboardInterrupt:
    try:
        with RunLife(_Backend(), life_writer) as life:
            if started:
                life.start({"environment": {}})
                life.flush()
            raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        return exc


def test_the_line_names_the_partial_file_only_when_it_exists(tmp_path):
    out = tmp_path / "run.json"
    early = _interrupt(_Writer(out), started=False)   # the canary: nothing recorded yet
    assert not out.exists()
    assert interrupted_line("run", early) == "profiler run: interrupted before any result was recorded (no run file " \
                                             "written)"
    late = _interrupt(_Writer(out), started=True)
    assert json.loads(out.read_text())["interrupted"] is True
    assert interrupted_line("run", late) == f"profiler run: interrupted; partial run in {out}"
    out.unlink()   # removed meanwhile: not named
    assert "before any result was recorded" in interrupted_line("run", late)


def test_ctrl_c_during_the_canary_names_no_file(tmp_path, monkeypatch, capsys):
    """A real `profiler run` on CPU (a worker process starts: slow), interrupted while the canary is timed."""
    pytest.importorskip("torch")
    from profiler.cli.main import main
    from profiler.commands import sweep

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(sweep, "time_canary", interrupted)
    workload = tmp_path / "tiny.json"
    workload.write_text(json.dumps({"families": {"o": {"N": 64, "K": 256}}, "loads": [{"load": "decode 1", "M": 1}]}))
    out = tmp_path / "run.json"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--device", "cpu", "--no-probes", "--canary", "sample", "--workload", str(workload), "--plan",
              "baseline", "--plan", "baseline", "--out", str(out)])
    assert exit_.value.code == 130
    err = capsys.readouterr().err
    assert not out.exists()
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert said == ["profiler run: interrupted before any result was recorded (no run file written)"], err[-2000:]


def test_scratch_folders_of_dead_parents_are_removed_and_live_ones_kept(tmp_path, monkeypatch):
    """A parent killed with -9 cannot remove its workers' scratch folders; the next one does
    (profiler.worker.sandbox.WorkerFolders.make): a folder named for a parent pid that is gone goes, one whose parent
    lives stays, and so does anything else in the temp folder."""
    import tempfile

    from profiler.worker import sandbox

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead_pid = 2 ** 22 + 4321
    while Path(f"/proc/{dead_pid}").exists():
        dead_pid += 1
    dead = tmp_path / f"{sandbox.FOLDER_PREFIX}{dead_pid}-abc"
    live = tmp_path / f"{sandbox.FOLDER_PREFIX}1-abc"      # pid 1 lives as long as the machine
    other = tmp_path / f"{sandbox.FOLDER_PREFIX}cache"
    for folder in (dead, live, other):
        (folder / "home").mkdir(parents=True)
    made = sandbox.WorkerFolders.make()
    try:
        assert made.root.parent == tmp_path
        assert not dead.exists() and live.is_dir() and other.is_dir()
    finally:
        made.remove()


def test_a_parent_killed_with_9_leaves_nothing_the_next_run_keeps_or_git_sees(tmp_path):
    """Its scratch folder goes at the next parent's start; a temp file of an atomic write it was making is ignored
    by git (.gitignore), wherever it was writing."""
    code = ("import os, signal, sys; from profiler.worker.sandbox import WorkerFolders; "
            "print(WorkerFolders.make().root, flush=True); os.kill(os.getpid(), signal.SIGKILL)")
    env = {**__import__("os").environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=60)
    scratch = Path(proc.stdout.strip())
    assert proc.returncode == -signal.SIGKILL and scratch.is_dir() and scratch.parent == tmp_path
    nxt = subprocess.run([sys.executable, "-c", code.replace("os.kill(os.getpid(), signal.SIGKILL)", "")],
                         cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert nxt.returncode == 0 and not scratch.exists()
    assert not Path(nxt.stdout.strip()).exists(), "a parent that exits removes its own"
    for temp in ("datasets/runs/.2026-01-01_gpu_label.json.k2j3x9.tmp", "kernels/plans/.best.json.a1b2.tmp",
                 ".projlab-write-check.x1y2", ".uploads/.tmp-abc.json"):
        check = subprocess.run(["git", "check-ignore", "-q", temp], cwd=ROOT)
        assert check.returncode == 0, f"{temp} is not ignored by git"
