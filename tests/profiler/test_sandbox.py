"""The worker sandbox (profiler/worker/sandbox.py, docs/trust.md "The sandbox"): as root, a candidate that tries to
write outside its folders, signal or stop the parent, or read the parent's secrets is denied each time, the run
completes and records it, and the next run is unaffected; without a sandbox, a run during which a file appeared on
the interpreter's import path is not recorded. Real worker processes (slow: tests/conftest.py SLOW)."""
import json
import os
import re
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from datasets.runfile import load_run  # noqa: E402
from profiler import wrong  # noqa: E402
from profiler.worker import sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = {"families": {"o": {"N": 64, "K": 256}}, "loads": [{"load": "decode 1", "M": 1}]}
FAST = ["--device", "cpu", "--no-probes", "--canary", "off", "--max-seconds-per-shape", "0.05"]

ESCAPES = '''
import os
import signal
import sys
import time
from pathlib import Path

from profiler.wrong.base import TorchLinear


def _try(what, act):
    try:
        act()
    except Exception as exc:
        print(f"SANDBOX-ATTEMPT {what}: denied ({type(exc).__name__})", file=sys.stderr, flush=True)
        return
    print(f"SANDBOX-ATTEMPT {what}: ALLOWED", file=sys.stderr, flush=True)


def _parent_pid():
    for _ in range(300):
        if Path(PID_FILE).is_file() and Path(PID_FILE).read_text().strip():
            return int(Path(PID_FILE).read_text())
        time.sleep(0.1)
    raise RuntimeError("no pid file")


class Escapes(TorchLinear):
    name = "escapes"
    tried = False

    def prepare(self, family, weight):
        if not Escapes.tried:
            Escapes.tried = True
            for target in TARGETS:
                _try(f"write {target}", lambda t=target: Path(t).write_text("planted by a candidate"))
            _try("write /proc/sys/kernel/core_pattern",
                 lambda: open("/proc/sys/kernel/core_pattern", "w").write("|/bin/false"))
            pid = _parent_pid()
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                _try(f"signal {sig.name} to the parent", lambda s=sig: os.kill(pid, s))
            _try("read the parent's secret", lambda: os.environ[SECRET])
        return super().prepare(family, weight)
'''


def _targets(token: str) -> list[Path]:
    """Where a candidate must not write: the interpreter's site-packages and standard library (code the next run
    imports), /etc, /usr/local/bin, root's home, the project tree, the lab's CUDA cache, the shared temp folder."""
    paths = sysconfig.get_paths()
    return [Path(paths["purelib"]) / f"projlab_planted_{token}.pth", Path(paths["stdlib"]) / f"planted_{token}.py",
            Path("/etc") / f"planted-{token}", Path("/usr/local/bin") / f"planted-{token}",
            Path(os.path.expanduser("~root")) / f"planted-{token}", ROOT / "datasets" / f"planted-{token}.json",
            ROOT / "artifacts" / "cuda_build" / f"planted-{token}", Path(tempfile.gettempdir()) / f"planted-{token}"]


def _cli(folder: Path, out: Path, *specs, env=None):
    workload = folder / "tiny.json"
    workload.write_text(json.dumps(WORKLOAD))
    return subprocess.Popen([sys.executable, "-m", "profiler", "run", *FAST, "--workload", str(workload),
                             "--plan", "baseline", *specs, "--out", str(out), "--trust-candidate"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.skipif(os.geteuid() != 0, reason="the root sandbox needs root (every GPU host runs the lab as root)")
def test_as_root_a_candidate_cannot_write_signal_or_read_secrets_and_the_next_run_is_unaffected():
    token = uuid.uuid4().hex[:12]
    folder = Path(tempfile.mkdtemp(prefix="projlab-sandbox-test-"))
    try:
        folder.chmod(0o755)   # a folder any user can read: the worker may then run under a uid of its own
        targets = _targets(token)
        pid_file = folder / "parent.pid"
        secret = f"AWS_SECRET_ACCESS_KEY_{token.upper()}"
        (folder / "escapes.py").write_text(f"PID_FILE = {str(pid_file)!r}\nSECRET = {secret!r}\n"
                                           f"TARGETS = {[str(t) for t in targets]!r}\n" + ESCAPES)
        (folder / "escapes.py").chmod(0o644)
        out = folder / "first.json"
        proc = _cli(folder, out, "--candidate", f"{folder / 'escapes.py'}:Escapes",
                    env=dict(os.environ, **{secret: "s3cr3t"}))
        pid_file.write_text(str(proc.pid))
        pid_file.chmod(0o644)
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
        attempts = [line.split("SANDBOX-ATTEMPT ", 1)[1] for line in stderr.splitlines() if "SANDBOX-ATTEMPT" in line]
        assert len(attempts) == len(targets) + 4, stderr[-3000:]
        assert [a for a in attempts if "ALLOWED" in a] == [], attempts
        assert not any(t.exists() for t in targets)
        run = load_run(out)
        assert run["status"] == "complete"
        assert "escapes" in {p["candidate"] for p in run["pairs"]}   # recorded like any candidate that ran
        line = run["environment"]["workers"][0]["sandbox"]
        assert "PID and mount namespaces" in line and "read-only file system" in line, line
        # the next run: the same sandbox, nothing left behind by the first, a complete file
        again = folder / "second.json"
        proc = _cli(folder, again, "--candidate", wrong.spec(wrong.TorchLinear))
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
        second = load_run(again)
        assert second["status"] == "complete"
        assert re.sub(r"\d+", "N", second["environment"]["workers"][0]["sandbox"]) == re.sub(r"\d+", "N", line)
        assert not any(t.exists() for t in targets)
        assert list(Path(tempfile.gettempdir()).glob(f"{sandbox.FOLDER_PREFIX}{proc.pid}-*")) == []
    finally:
        for t in _targets(token):
            t.unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(folder)], check=False)


PLANTS = '''
from pathlib import Path

from profiler.wrong.base import TorchLinear


class PlantsPth(TorchLinear):
    name = "plants_pth"

    def prepare(self, family, weight):
        Path(FOLDER, "projlab_forger.pth").write_text("import os\\n")
        return super().prepare(family, weight)
'''


def test_a_run_whose_unsandboxed_worker_planted_a_pth_on_the_import_path_is_not_recorded(tmp_path):
    """Outside the sandbox the worker can write what the parent's user can: a `.pth` file that appears on the
    interpreter's import path during the run could run in the next Python process (and forge its run file), so the
    parent refuses the run: no file, one line naming what appeared."""
    site = tmp_path / "site"
    site.mkdir()
    (tmp_path / "plants.py").write_text(f"FOLDER = {str(site)!r}\n" + PLANTS)
    driver = (
        "import sys\n"
        "from profiler.commands.sweep import SweepSettings, run_sweep\n"
        "from datasets.runfile import RunFileError\n"
        "from profiler.commands.sweep import select_shapes\n"
        "shapes = [s | {'N': 64, 'K': 256} for s in select_shapes('official')[:1]]\n"
        "try:\n"
        f"    run_sweep(['baseline', {str(tmp_path / 'plants.py:PlantsPth')!r}], shapes, {str(tmp_path / 'r.json')!r},\n"
        "              label='r', device='cpu', log=lambda m: None,\n"
        "              settings=SweepSettings(probes=False, canary='off'))\n"
        "except RunFileError as exc:\n"
        "    print('REFUSED', exc)\n")
    done = subprocess.run([sys.executable, "-c", driver], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)])))
    assert "REFUSED run not recorded" in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
    assert "projlab_forger.pth" in done.stdout
    assert not (tmp_path / "r.json").exists()


def test_the_import_path_watch_names_added_and_rewritten_files(tmp_path, monkeypatch):
    (tmp_path / "mod.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    watch = sandbox.ImportPathWatch()
    assert watch.changed() == []
    (tmp_path / "evil.pth").write_text("import os\n")
    time.sleep(0.01)
    (tmp_path / "mod.py").write_text("x = 2  # longer\n")
    changed = watch.changed()
    assert f"added {tmp_path / 'evil.pth'}" in changed and f"rewritten {tmp_path / 'mod.py'}" in changed


def test_the_worker_environment_is_allow_listed_and_every_write_place_is_in_its_scratch_folder():
    folders = sandbox.WorkerFolders.make()
    try:
        env = sandbox.worker_environment({"PATH": "/usr/bin", "AWS_SECRET_ACCESS_KEY": "x", "GITHUB_TOKEN": "y",
                                          "CUDA_VISIBLE_DEVICES": "0", "PROJLAB_NCU": "ncu", "HOME": "/root",
                                          "TRITON_CACHE_DIR": "/shared/cache"}, folders)
        assert "AWS_SECRET_ACCESS_KEY" not in env and "GITHUB_TOKEN" not in env
        assert env["PATH"] == "/usr/bin" and env["CUDA_VISIBLE_DEVICES"] == "0" and env["PROJLAB_NCU"] == "ncu"
        assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"   # no compile pool outliving a step (sandbox.LAB_ENV)
        for var in sandbox.WRITES.values():   # the parent's own cache folders are never the worker's
            assert Path(env[var]).resolve().is_relative_to(folders.root.resolve()), var
        assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in folders.paths.values())
    finally:
        folders.remove()
    assert not folders.root.exists()


def test_every_place_a_method_writes_is_a_place_the_worker_may_write(tmp_path, monkeypatch):
    """The CUDA build cache, TunableOp's results (in the side folder, else the worker's temp folder) and the
    compile caches resolve inside the worker's writable set; the lab's own CUDA cache is only read."""
    from kernels import methods_library
    from kernels.cuda import build

    folders = sandbox.WorkerFolders.make()
    try:
        env = sandbox.worker_environment({}, folders)
        for var, value in env.items():
            monkeypatch.setenv(var, value)
        assert build.cache_root() == folders.paths["cuda_build"]
        assert build.LAB_CACHE.is_relative_to(ROOT)
        side = tmp_path / "run.tunableop"
        methods_library.use_side_folder(side)
        try:
            peers = pytest.importorskip("kernels.launch.peers")
            assert peers.tunableop_results_path().parent == side
            methods_library.use_side_folder(None)
            monkeypatch.setattr(tempfile, "tempdir", None)
            assert peers.tunableop_results_path().is_relative_to(folders.paths["tmp"])
        finally:
            methods_library.use_side_folder(None)
    finally:
        folders.remove()


def test_masks_cover_the_topmost_folder_other_users_cannot_enter():
    base = Path(tempfile.mkdtemp(prefix="projlab-mask-test-"))   # in the shared temp folder: others may enter it
    closed = base / "closed"
    try:
        base.chmod(0o755)
        (closed / "a" / "b").mkdir(parents=True)
        (closed / "c").mkdir()
        closed.chmod(0o700)
        masks = sandbox.masks_for([closed / "a" / "b", closed / "c", base])
        assert masks == [(str(closed.resolve()), sorted([str((closed / "a" / "b").resolve()),
                                                         str((closed / "c").resolve())]))]
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)


def test_a_missing_tool_means_no_sandbox_and_says_which(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None if name == "setpriv" else "/usr/bin/" + name)
    folders = sandbox.WorkerFolders.make()
    try:
        plan = sandbox.sandbox_plan(folders, {}, [], [])
        assert plan.prefix == [] and plan.description.startswith("none: setpriv not found")
    finally:
        folders.remove()


def test_a_scratch_folder_whose_parent_is_gone_is_removed_by_the_next():
    dead = 2 ** 22 + 12345   # above the default pid_max: no process has it
    while Path(f"/proc/{dead}").exists():
        dead += 1
    stale = Path(tempfile.gettempdir()) / f"{sandbox.FOLDER_PREFIX}{dead}-abc"
    (stale / "home").mkdir(parents=True)
    folders = sandbox.WorkerFolders.make()
    folders.remove()
    assert not stale.exists()



@pytest.mark.skipif(os.geteuid() != 0, reason="the root sandbox needs root (every GPU host runs the lab as root)")
def test_as_root_every_plan_and_peer_that_runs_on_cpu_runs_in_the_sandbox(tmp_path):
    """The peers that run on a CPU (torch.compile: Inductor writes its cache and compiles C++ in the worker's
    folders) are correct under the sandbox; a GPU-only one fails for its own reason, never a read-only file system
    (their write places: test_every_place_a_method_writes_is_a_place_the_worker_may_write)."""
    out = tmp_path / "peers.json"
    proc = _cli(tmp_path, out, "--plan", "torch_compile", "--plan", "tunableop")
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    run = load_run(out)
    assert {r["candidate"] for r in run["results"]} >= {"baseline", "torch_compile"}
    reasons = " ".join(" ".join(f["reasons"]) for f in run["failures"])
    assert "Read-only file system" not in reasons and "Permission denied" not in reasons, reasons
    assert {f["candidate"] for f in run["failures"]} <= {"tunableop"}
    assert "read-only file system" in run["environment"]["workers"][0]["sandbox"]
