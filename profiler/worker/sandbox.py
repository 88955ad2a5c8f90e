"""Where the worker runs and what it may touch: its folders, its environment, and the sandbox it starts in.

    WorkerFolders.make(uid)      one worker's scratch folder (cwd, home, tmp and its compile caches), removed when it ends
    worker_environment(parent, folders) -> env   the allow-listed environment: what CUDA, Triton and the worker read
    sandbox_plan(...) -> SandboxPlan             the command prefix and the one line recorded as workers[].sandbox

Every place a method or library writes while a worker runs is named here, once (`WRITES`): the CUDA extensions'
build cache, Triton's and Inductor's caches, the interpreter's temporary files, the home folder (nvcc's and the
driver's caches) and the run's side folder (TunableOp's results; kernels.methods_library.tunableop_folder). All but
the side folder are inside the worker's own scratch folder: a compile cache per worker, so nothing a candidate
writes is read by another worker or a later run (the lab's own prebuilt CUDA libraries are read from the project
tree, read-only: kernels.cuda.build).

Where the parent is root (every GPU host), the worker starts in new mount and PID namespaces
(profiler/worker/sandbox_enter.py): every mount read-only but its scratch folder and the side folder, the
kernel's writable corners too, no capabilities, no new privileges, no core dumps, a file size limit, and -- where the
interpreter, the project, the candidates' folders and the GPU are reachable by another user -- a uid and gid of
its own with no supplementary groups. It cannot see or signal any process outside its PID namespace, so it
cannot stop, kill or starve the parent; what it writes outside the two folders fails (read-only file system).
Where the parent is not root, the same namespaces are tried through a user namespace; where the OS refuses them,
the worker runs as the parent's user and the run says so (and the parent watches the import path:
profiler.worker.sandbox.ImportPathWatch).
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTER = Path(__file__).with_name("sandbox_enter.py")

# Each writable place a method or library uses while a worker runs -> the variable that points it there.
WRITES = {
    "home": "HOME",                        # nvcc, the CUDA driver's JIT cache (~/.nv), anything under ~
    "tmp": "TMPDIR",                       # tempfile, nvcc's and ptxas's intermediate files, Inductor's defaults
    "triton": "TRITON_CACHE_DIR",          # Triton's compiled kernels
    "inductor": "TORCHINDUCTOR_CACHE_DIR",  # torch.compile's generated code and autotuning results
    "cuda_build": "PROJLAB_CUDA_CACHE",    # this repository's CUDA extensions (kernels/cuda/build.py)
    "cache": "XDG_CACHE_HOME",             # libraries that cache under ~/.cache (FlashInfer's JIT, torch hub)
}

# The environment a worker gets: these names and prefixes of the parent's, nothing else (no credentials, tokens,
# or other programs' settings), then WRITES pointed into its scratch folder.
ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH",
    "CC", "CXX", "MAX_JOBS", "PYTHONPATH", "PYTHONHASHSEED", "FAKE_NCU_RANGES"})
ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "CUBLAS", "CUDNN_", "NCCL_", "TRITON_", "TORCH_", "TORCHINDUCTOR_",
                "TORCHDYNAMO_", "PYTORCH_", "OMP_", "KMP_", "MKL_", "OPENBLAS_", "FLASHINFER_", "PROJLAB_")

# Set by the lab for every worker: Inductor (the torch_compile peer) compiles in the worker's own process. Its
# default is a pool of compile processes that lives on after the step that started it, which the worker's
# containment rightly ends as an "outlived" death (seen on an H100: torch_compile failed at 30 of 30 shapes, run file
# 2026-12-06_nvidia-h100-80gb-hbm3_main-six-plans.json.gz).
LAB_ENV = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}

MAX_FILE_BYTES = 8 << 30       # one file the worker writes (a CUDA library is ~10 MB; a core dump is off anyway)
MAX_PROCESSES = 4096           # threads count: torch starts one per core, nvcc and ptxas a few per build
WORKER_UID_BASE = 2_000_000_000   # the worker's uid and gid: this plus the parent's pid (owns nothing else)


FOLDER_PREFIX = "projlab-worker-"   # + the parent's pid: a folder whose parent is gone is removed by the next parent


def worker_uid() -> int:
    return WORKER_UID_BASE + os.getpid()


def _remove_orphaned() -> None:
    """Scratch folders of parents that are gone (killed with -9 before they could remove them)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        pid = folder.name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class WorkerFolders:
    """One worker's scratch folder: `cwd`, `home`, `tmp` and a folder per compile cache (WRITES), owned by the
    worker's uid where it has one. remove() when the worker has ended."""
    root: Path
    paths: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def make(cls) -> "WorkerFolders":
        _remove_orphaned()
        root = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        paths = {name: root / name for name in ("cwd", "stage", *WRITES)}
        for path in paths.values():
            path.mkdir(mode=0o700)
        atexit.register(shutil.rmtree, root, True)   # a parent that ends without closing its worker
        return cls(root, paths)

    def own(self, uid: int) -> None:
        """Hand the folders to `uid` (the worker's; 0: back to root). The sandbox's staging folder stays root's."""
        for path in [self.root, *self.paths.values()]:
            if path.name != "stage":
                os.chown(path, uid, uid)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def worker_environment(parent: dict, folders: WorkerFolders | None, extra: dict | None = None) -> dict:
    """The allow-listed part of `parent`, `extra` (the lab's own: PYTHONPATH, ...), and every place of WRITES in
    the worker's scratch folder; USER/LOGNAME name the worker (libraries that key a cache by user ask for them)."""
    env = {k: v for k, v in parent.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}
    env.update(LAB_ENV)
    env.update(extra or {})
    if folders is not None:
        env.update({var: str(folders.paths[name]) for name, var in WRITES.items()})
        env["PWD"] = str(folders.paths["cwd"])
    env.update(USER="projlab-worker", LOGNAME="projlab-worker")
    return env


@dataclass(frozen=True)
class SandboxPlan:
    prefix: list[str]
    description: str
    uid: int | None = None


def _others_can(path: Path, bits: int) -> bool:
    try:
        return (path.stat().st_mode & bits) == bits
    except OSError:
        return False


def masks_for(paths: list[Path]) -> list[tuple[str, list[str]]]:
    """[(dir, [paths under it])]: for each path, the topmost ancestor other users cannot enter (mode o-x), with
    every given path under it -- the sandbox covers it and binds those back (sandbox_enter.apply_masks)."""
    found: dict[str, set[str]] = {}
    for path in paths:
        path = path.resolve()
        for parent in reversed(path.parents):
            if parent != Path("/") and not _others_can(parent, stat.S_IXOTH):
                found.setdefault(str(parent), set())
                break
    for masked in found:
        found[masked] = {str(p.resolve()) for p in paths
                         if str(p.resolve()).startswith(masked.rstrip("/") + "/")}
    outer = [m for m in found if not any(m.startswith(o + "/") for o in found if o != m)]
    return [(m, sorted(found[m])) for m in sorted(outer)]


def reachable_paths(read: list[Path]) -> list[Path]:
    """What a worker must read: the project, the interpreter and every folder on its import path, CUDA, and the
    folders given (candidates' modules, the run's folder)."""
    found = [ROOT, Path(sys.executable).resolve().parent, Path(sys.prefix), Path(sys.base_prefix)]
    found += [Path(p) for p in sys.path if p and Path(p).is_dir()]
    cuda = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    if Path(cuda).is_dir():
        found.append(Path(cuda))
    found += [Path(p) for p in read if Path(p).exists()]
    out, seen = [], set()
    for path in found:
        real = path.resolve()
        if real not in seen and real.is_dir():
            seen.add(real)
            out.append(real)
    return out


# What the probe checks as the worker, before any worker runs: the interpreter starts, the project and torch are
# readable, each folder it must read is listable, each folder it may write takes a file, the GPU's device files open.
PROBE = """
import glob, json, os, sys, importlib.util
spec = json.loads(sys.argv[1])
for d in spec["read"]:
    os.listdir(d)
for d in spec["write"]:
    p = os.path.join(d, ".projlab-probe"); open(p, "w").close(); os.remove(p)
t = importlib.util.find_spec("torch")
if t is not None:
    open(t.origin, "rb").close()
for dev in glob.glob("/dev/nvidia*"):
    if not os.path.isdir(dev):
        os.close(os.open(dev, os.O_RDWR))
for d in spec["denied"]:
    try:
        open(os.path.join(d, ".projlab-probe"), "w").close()
    except OSError:
        continue
    os.remove(os.path.join(d, ".projlab-probe")); sys.exit("still writable: " + d)
"""

SANDBOX_TOOLS = ("unshare", "setpriv")
_PLANS: dict = {}


def _namespaces(root: bool) -> list[str]:
    user = [] if root else ["--user", "--map-root-user"]
    return ["unshare", *user, "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation",
            "private"]


def _prefix(root: bool, folders: WorkerFolders, writable: list[str], masks, uid: int | None) -> list[str]:
    spec = {"masks": masks, "stage": str(folders.paths["stage"]), "writable": writable,
            "uid": uid, "gid": uid, "max_file_bytes": MAX_FILE_BYTES, "max_processes": MAX_PROCESSES,
            "cwd": str(folders.paths["cwd"])}
    return [*_namespaces(root), sys.executable, "-I", "-S", str(ENTER), json.dumps(spec), "--"]


def _probe(prefix: list[str], env: dict, read: list[Path], write: list[str]) -> str | None:
    """None where the sandboxed probe ran as the worker will, else the last line it said."""
    denied = [str(p) for p in (Path(sys.prefix), ROOT) if p.is_dir()]
    probe = {"read": [str(p) for p in read], "write": write, "denied": denied}
    try:
        done = subprocess.run(prefix + [sys.executable, "-I", "-c", PROBE, json.dumps(probe)], env=env,
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = [ln for ln in (done.stderr or done.stdout or "").splitlines() if ln.strip()]
    return (lines[-1] if lines else f"exit status {done.returncode}")[:200]


def sandbox_plan(folders: WorkerFolders, env: dict, read: list[Path], writable: list[Path]) -> SandboxPlan:
    """The prefix that starts the worker sandboxed (module docstring) and the line that says how, tried strictest
    first: as root with a uid of its own, as root with uid 0 (the interpreter or a folder it must read is closed to
    other users), in a user namespace (the parent is not root), else no sandbox. Each way is probed once per
    process and set of folders (a failed way costs one short process start)."""
    missing = [t for t in SANDBOX_TOOLS if shutil.which(t) is None]
    if missing:
        return SandboxPlan([], f"none: {', '.join(missing)} not found (util-linux)")
    root = os.geteuid() == 0
    side = [str(Path(p).resolve()) for p in writable if Path(p).is_dir()]
    write = [str(folders.root)] + side
    need = reachable_paths(read)
    key = (root, tuple(map(str, need)), tuple(side))
    every_write = [str(folders.paths[name]) for name in ("cwd", *WRITES)] + side   # the probe writes each
    uid = worker_uid() if root else None
    tries = []
    if root:
        masks = masks_for(need + [Path(w) for w in write])
        tries.append((_prefix(True, folders, write, masks, uid), uid,
                      f"uid {uid}: own PID and mount namespaces, read-only file system but its scratch folder and "
                      f"the run's side folder, no capabilities"))
        tries.append((_prefix(True, folders, write, [], None), None,
                      "uid 0 without capabilities: own PID and mount namespaces, read-only file system but its "
                      "scratch folder and the run's side folder"))
    else:
        tries.append((_prefix(False, folders, write, [], None), None,
                      "the parent's user in a user namespace: own PID and mount namespaces, read-only file system "
                      "but its scratch folder and the run's side folder, no capabilities"))
    why = []
    for prefix, tried_uid, line in tries:
        if root:
            folders.own(tried_uid or 0)
            for folder in side:   # the side folder: the worker writes there as whoever it runs as
                os.chown(folder, tried_uid or 0, tried_uid or 0)
        slot = key + (tried_uid is None,)
        if slot not in _PLANS:
            _PLANS[slot] = _probe(prefix, env, need, every_write)
        if _PLANS[slot] is None:
            reason = f" ({why[0]})" if why else ""
            return SandboxPlan(prefix, line + reason, tried_uid)
        why.append(f"{'own uid' if tried_uid is not None else 'namespaces'} refused: {_PLANS[slot]}")
    return SandboxPlan([], "none: " + "; ".join(why) + (" -- the worker runs as this user and can write what it "
                                                        "can; the parent watches the import path" if not root else ""))


class ImportPathWatch:
    """What a worker could leave for the next process that starts the interpreter: files on the import path
    (`.pth`, `sitecustomize`, `usercustomize`, a module or package added at the top of a folder) and the project's
    own modules. Made before the first worker; changed() after: the names added or rewritten."""

    SUFFIXES = (".py", ".pth", ".so")

    def __init__(self):
        self.folders = self._folders()   # the folders on the import path now: a later run's interpreter has them
        self.before = self._scan(self.folders)

    @classmethod
    def _folders(cls) -> list[Path]:
        found = {Path(p).resolve() for p in sys.path if p and Path(p).is_dir()}
        try:
            import site
            found |= {Path(p).resolve() for p in site.getsitepackages() + [site.getusersitepackages()]
                      if Path(p).is_dir()}
        except (AttributeError, OSError):
            pass
        return sorted(found)

    @classmethod
    def _scan(cls, folders: list[Path]) -> dict[str, tuple]:
        """{path: (mtime, size, inode)} of the project's modules and, in every other import folder, its top-level
        modules, `.pth` files and each package's `__init__.py` (not the package folder: the interpreter adds
        `__pycache__` to it as it imports)."""
        files: list[Path] = []
        for folder in folders:
            try:
                if folder == ROOT:
                    files += [p for p in folder.rglob("*.py") if not any(
                        part.startswith(".") or part in ("tests", "__pycache__") for part in p.relative_to(folder).parts)]
                    continue
                for entry in folder.iterdir():
                    if entry.name == "__pycache__":
                        continue
                    if entry.is_dir():   # a package runs through its __init__.py (a bare folder is no package)
                        files.append(entry / "__init__.py")
                    elif entry.suffix in cls.SUFFIXES:
                        files.append(entry)
            except OSError:
                continue
        seen: dict[str, tuple] = {}
        for path in files:
            try:
                info = path.lstat()
            except OSError:
                continue
            seen[str(path)] = (info.st_mtime_ns, info.st_size, info.st_ino)
        return seen

    def changed(self) -> list[str]:
        """What was added or rewritten in the folders of the snapshot (a file removed runs nothing; a folder that
        joined the import path since, such as a dask worker's scratch space, is not on the next interpreter's)."""
        now = self._scan(self.folders)
        added = [p for p in now if p not in self.before]
        rewritten = [p for p in now if p in self.before and now[p] != self.before[p]]
        return [f"added {p}" for p in added] + [f"rewritten {p}" for p in rewritten]
