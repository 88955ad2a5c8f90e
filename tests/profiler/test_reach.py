"""The candidate's reach (docs/trust.md), through `python -m profiler run --device cpu` and run_sweep on CPU: it cannot
forge what is recorded, outlive its worker, write the project tree or hang the CLI; Ctrl-C and SIGTERM end a run.
Real worker processes (slow: tests/conftest.py SLOW)."""
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets.runfile import load_run  # noqa: E402
from profiler import wrong  # noqa: E402
from profiler.worker import process  # noqa: E402
from profiler.measure.policy import SWEEP  # noqa: E402
from default_signals import default_signals  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(Path(__file__).with_name("fake_device.py"))
WORKLOAD = {"families": {"o": {"N": 64, "K": 256}}, "loads": [{"load": "decode 1", "M": 1}]}
FAST = ["--device", "cpu", "--no-probes", "--canary", "off", "--max-seconds-per-shape", "0.05"]


def _workload(tmp_path) -> str:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(WORKLOAD))
    return str(path)


def _cli(tmp_path, *args, **kw):
    """The CLI with default signal handling (default_signals: a runner started in the background ignores SIGINT,
    and so would the CLI)."""
    return subprocess.Popen([sys.executable, "-m", "profiler", "run", *FAST, "--workload", _workload(tmp_path),
                             *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals, **kw)


def _live(pred) -> list[int]:
    return [p for p in process._parents() if process._state(p) not in ("Z", "X", "?") and pred(process._cmdline(p))]


def _started_by(cli_pid: int, pid: int) -> bool:
    """Whether process `pid` runs in the environment of a worker of the CLI `cli_pid` (its scratch folder, named by
    the CLI's pid, is in HOME and TMPDIR): a process another test on this machine started is not this run's."""
    from profiler.worker.sandbox import FOLDER_PREFIX

    try:
        return f"{FOLDER_PREFIX}{cli_pid}-".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


WRITES_TREE = """
from pathlib import Path

from profiler.wrong import TorchLinear


class WritesTree(TorchLinear):
    name = "writes_tree"

    def prepare(self, family, weight):
        for target in TARGETS:
            try:
                Path(target).write_text("written by a candidate")
            except OSError:
                pass
        return super().prepare(family, weight)
"""

REACH = ("ForgesReply", "PatchesGuard", "InflatesBaseline", "ForksSleeper", "AtExitRewriter", "DetachedRewriter")


def test_reach_classes_are_rejected_and_nothing_they_start_outlives_the_run(tmp_path):
    """Unscreened (--trust-candidate: the mechanisms must hold without the screen), one CLI run: every known-wrong
    class of the candidate's reach is rejected naming its mechanism, nothing any of them started is left, the run
    file is the one the parent wrote, and the project tree was not written."""
    token = uuid.uuid4().hex
    out = tmp_path / f"reach-{token}.json"
    targets = [ROOT / "datasets" / "runs" / f"written-{token}.json", tmp_path / f"written-{token}.json"]
    mod = tmp_path / "reach.py"
    mod.write_text(f"from profiler.wrong import *  # noqa\nTARGETS = {[str(t) for t in targets]!r}\n"
                   + WRITES_TREE)
    specs = ["--candidate", wrong.spec(wrong.TorchLinear)] + [a for c in REACH + ("WritesTree",)
                                                              for a in ("--candidate", f"{mod}:{c}")]
    proc = _cli(tmp_path, "--plan", "baseline", *specs, "--out", str(out), "--trust-candidate")
    stdout, stderr = proc.communicate(timeout=900)
    ended = time.time()
    assert proc.returncode == 0, stderr[-2000:]
    written = out.read_bytes()
    run = load_run(out)
    assert run["status"] == "complete" and run["environment"]["settings"]["screened"] is False
    assert run["environment"]["gpu"].startswith("CPU")
    # the run ended within seconds of the parent's last write, and every process a candidate started is gone
    assert ended - out.stat().st_mtime < 10
    assert _live(lambda c: str(out) in c) == []
    assert [p for p in _live(lambda c: c == "sleep 400") if _started_by(proc.pid, p)] == []
    by_name = {f["candidate"]: f for f in run["failures"]}
    for name in REACH:
        cls = getattr(wrong, name)
        assert cls.name in by_name, (name, stdout[-3000:])
        expect = cls.expect if isinstance(cls.expect, tuple) else (cls.expect,)
        assert any(e in " ".join(by_name[cls.name]["reasons"]) for e in expect), by_name[cls.name]
    assert {p["candidate"] for p in run["pairs"]} == {"torch_linear_control", "writes_tree"}
    if os.geteuid() == 0:   # the worker's sandbox: the project tree and the run's folder are read-only to it
        assert "read-only file system" in [r["sandbox"] for r in run["environment"]["workers"]][0]
        assert not any(t.exists() for t in targets)
    summary = subprocess.run([sys.executable, "-m", "dashboard", "summarize", str(out)], cwd=ROOT,
                             capture_output=True, text=True)
    assert "unscreened" in summary.stdout, summary.stdout   # beside the score of a run measured unscreened
    time.sleep(3)   # a rewriter polls every 0.2 s: it would have forged the file by now
    assert out.read_bytes() == written
    assert all(p["ratio_median"] != 1.81 for p in run["pairs"])


HANGS = """
import subprocess

from profiler.wrong import TorchLinear


class HangsOnChild(TorchLinear):
    name = "hangs_on_child"

    def run(self, state, family, x):
        subprocess.Popen(["sleep", "400"]).wait()
"""


@pytest.mark.parametrize("sig, runner", [(signal.SIGINT, signal.SIG_DFL), (signal.SIGTERM, signal.SIG_DFL),
                                         (signal.SIGINT, signal.SIG_IGN)],
                         ids=["ctrl-c", "sigterm", "ctrl-c-from-a-runner-that-ignores-sigint"])
def test_a_signal_during_the_wait_ends_the_run_with_the_partial_file_marked_interrupted(tmp_path, sig, runner):
    """`runner`: SIGINT in the test process, as a shell leaves it in a background job (.ci/run &): the CLI the test
    starts still hears Ctrl-C (_cli: default_signals)."""
    previous = signal.signal(signal.SIGINT, runner)
    try:
        _signal_during_the_wait(tmp_path, sig)
    finally:
        signal.signal(signal.SIGINT, previous)


def _signal_during_the_wait(tmp_path, sig):
    mod = tmp_path / "hangs.py"
    mod.write_text(HANGS)
    out = tmp_path / "hang.json"
    proc = _cli(tmp_path, "--plan", "baseline", "--candidate", f"{mod}:HangsOnChild", "--out", str(out),
                "--trust-candidate", start_new_session=True)

    def mine() -> list[int]:
        table = process._parents()
        return [p for p in process._descendants({proc.pid}, table) - {proc.pid}
                if process._cmdline(p) == "sleep 400"]

    deadline = time.monotonic() + 300
    while not mine() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if not mine():
        stdout, stderr = proc.communicate(timeout=60) if proc.poll() is not None else ("", "(still running)")
        raise AssertionError(f"the candidate's child never started; the run exited {proc.returncode}: "
                             f"{stderr[-2000:]} {stdout[-1000:]}")
    sleepers = mine()
    proc.send_signal(sig)
    try:   # 60 s: generous on a loaded machine, far below the 400 s its child would keep the run waiting
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)   # where it waits: every thread's stack on its stderr (profiler/__main__.py)
        time.sleep(2)
        proc.kill()
        stdout, stderr = proc.communicate(timeout=30)
        raise AssertionError(f"the run did not end within 60 s of {sig.name}; its threads then:\n{stderr[-6000:]}")
    assert proc.returncode == 130, stderr[-2000:]
    run = json.loads(out.read_text())
    assert run["status"] == "partial" and run["interrupted"] is True
    assert not [p for p in sleepers if process._state(p) not in ("Z", "X", "?")]
    assert "Traceback" not in stderr
    said = [line for line in stderr.splitlines() if "interrupted" in line and not line.startswith("[worker]")]
    assert said == [f"profiler run: interrupted; partial run in {out}"], said   # one line, naming the file


def test_a_candidate_module_failing_at_import_exits_2(tmp_path):
    mod = tmp_path / "broken.py"
    # the protocol's names are there (the static interface check passes), the import itself fails
    mod.write_text("def prepare(weight):\n    return weight\n\n\ndef run(state, family, x):\n    return x\n\n\n"
                   "raise RuntimeError('broken on purpose')\n")
    proc = _cli(tmp_path, "--plan", "baseline", "--candidate", str(mod), "--out", str(tmp_path / "b.json"))
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 2, stderr[-2000:]
    assert "broken on purpose" in stderr and "Traceback" not in stderr


def _sweep(specs, out, init="install", **settings):
    from profiler.commands.sweep import SweepSettings, run_sweep
    from profiler.commands.sweep import select_shapes

    shapes = [s | {"N": 64, "K": 256} for s in select_shapes("official") if s["family"] == "o"][:1]
    run_sweep(specs, shapes, out, label=out.stem, device="cpu", log=lambda m: None, worker_init=init,
              settings=SweepSettings(**({"probes": False, "canary": "off", "timing": replace(SWEEP, max_seconds=0.05)}
                                        | settings)))
    return load_run(out)


DIES = """
import os
import time

from profiler.wrong import TorchLinear


class DiesHoldingPipes(TorchLinear):
    name = "dies_holding_pipes"

    def prepare(self, family, weight):
        if os.fork() == 0:
            time.sleep(400)
            os._exit(0)
        os._exit(9)
"""


def test_a_worker_that_dies_while_its_child_holds_the_pipes_is_recorded_died_within_seconds(tmp_path):
    mod = tmp_path / "dies.py"
    mod.write_text(DIES)
    t0 = time.monotonic()
    run = _sweep([wrong.spec(wrong.TorchLinear), f"{mod}:DiesHoldingPipes"], tmp_path / "d.json",
                 init=f"{FAKE}:install", shape_timeout_s=200)
    assert time.monotonic() - t0 < 150   # far from the 200 s watchdog
    (f,) = [f for f in run["failures"] if f["candidate"] == "dies_holding_pipes"]
    assert f["kind"] == "died" and "exit code 9" in f["reasons"][0], f
    assert _live(lambda c: "dies.py" in c) == []


BIG_PRINT = """
print("x" * 50_000_000)
from profiler.wrong import TorchLinear


class Loud(TorchLinear):
    name = "loud"
"""


def test_a_50mb_line_from_a_candidate_is_cut_without_a_traceback(tmp_path, capfd):
    mod = tmp_path / "loud.py"
    mod.write_text(BIG_PRINT)
    run = _sweep([wrong.spec(wrong.TorchLinear), f"{mod}:Loud"], tmp_path / "l.json", init=f"{FAKE}:install")
    assert {r["candidate"] for r in run["results"]} == {"torch_linear_control", "loud"}
    assert "Traceback" not in capfd.readouterr().err


FORGER_INIT = '''
import sys

sys.path.insert(0, {tests!r})
import fake_device


def install():
    """The fake timer, and a reply serializer that reports the baseline 1e5 times slower -- installed before the
    worker's own snapshots, so only the parent's checks can see it."""
    fake_device.install()
    import profiler.worker.child as child

    original = child._DUMPS

    def dumps(obj, *args, **kw):
        for r in (obj.get("result") or {{}}).get("results", []) if isinstance(obj, dict) else []:
            if r.get("candidate") == "torch_linear_control":
                r["samples_us"] = [v * 1e5 for v in r["samples_us"]]
                r["median_us"] *= 1e5
        return original(obj, *args, **kw)

    child._DUMPS = dumps
'''


def test_a_reply_forged_past_the_workers_own_checks_is_caught_by_the_parent(tmp_path):
    init = tmp_path / "forger_init.py"
    init.write_text(FORGER_INIT.format(tests=str(Path(__file__).parent)))
    control = wrong.spec(wrong.TorchLinear)
    run = _sweep([control, control], tmp_path / "f.json", init=f"{init}:install")
    assert run["results"] == [] and run["pairs"] == []
    reasons = [f["reasons"][0] for f in run["failures"]]
    assert reasons and all("in-process forging" in r and "parent's clock" in r for r in reasons), reasons


ENDS_FOREIGN_SHELL = """
import time
from pathlib import Path

from profiler.wrong import TorchLinear


class EndsForeignShell(TorchLinear):
    name = "ends_foreign_shell"

    def prepare(self, family, weight):
        # let the foreign shell end, and wait until it has (its child is re-parented by then)
        Path({flag!r}).touch()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                state = Path("/proc/{shell}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                break
            if state in (b"Z", b"X"):
                break
            time.sleep(0.02)
        return super().prepare(family, weight)
"""


def test_a_process_tree_started_before_the_worker_and_orphaned_during_it_is_no_workers_stray(tmp_path):
    """This process is the subreaper of all it starts: a tree started before in a session of its own (a browser, a
    server, by an earlier test) is re-parented here when its parent ends, mid-sweep. Neither its process started
    before the worker nor the one its session starts after (the worker's processes are in sessions made since) is
    the worker's: the sweep measures both candidates and the foreign processes are left alone."""
    process.become_subreaper()
    tag, flag = f"foreign-{uuid.uuid4().hex[:8]}", tmp_path / "end-the-shell"
    sleeper = f"python3 -c 'import time; time.sleep(300)' {tag}"
    shell = subprocess.Popen(["sh", "-c", f"{sleeper} before & while [ ! -e {flag} ]; do sleep 0.02; done; "
                                          f"{sleeper} after &"], start_new_session=True)
    mod = tmp_path / "ends.py"
    mod.write_text(ENDS_FOREIGN_SHELL.format(flag=str(flag), shell=shell.pid))
    try:
        deadline = time.monotonic() + 60
        while not _live(lambda c: tag in c) and time.monotonic() < deadline:   # started before the worker
            time.sleep(0.02)
        run = _sweep([wrong.spec(wrong.TorchLinear), f"{mod}:EndsForeignShell"], tmp_path / "o.json",
                     init=f"{FAKE}:install")
        foreign = {process._cmdline(p).split()[-1]: p for p in _live(lambda c: tag in c)}
        assert flag.exists() and shell.poll() is not None
        assert run["failures"] == [] and len(run["results"]) == 2, run["failures"]
        assert set(foreign) == {"before", "after"}
        assert all(process._parents()[p] == os.getpid() for p in foreign.values())
    finally:
        for pid in _live(lambda c: tag in c):
            os.kill(pid, signal.SIGKILL)
        shell.kill()
        shell.wait()
