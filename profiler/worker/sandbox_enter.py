"""The worker sandbox's set-up, run as root inside the worker's new mount and PID namespaces before any lab or
candidate code: `unshare --mount --pid --fork --mount-proc --propagation private python -I -S sandbox_enter.py SPEC
-- COMMAND...` (profiler/worker/sandbox.py builds the line; only the standard library is imported here, with the
interpreter's isolated mode: no site-packages, no environment, no current directory on the import path).

SPEC (JSON): {"masks": [[dir, [path, ...]], ...], "stage": dir, "writable": [dir, ...], "uid": int | null,
"gid": int | null, "max_file_bytes": int, "max_processes": int}. In this order:

1. masks: a directory other users cannot enter (e.g. root's home holding the interpreter) is covered by an empty
   tmpfs, and only the listed paths under it are bound back: the worker reaches what it needs and nothing else
   there;
2. every mount is remounted read-only except the procfs, devices and sysfs, whose writable corners (`/proc/sys`,
   `/proc/sysrq-trigger`, `/sys`) are bound read-only on their own; the per-mount flags it had (nosuid, nodev,
   noexec, atime) are kept, never loosened;
3. the `writable` folders (the worker's scratch folder, the run's side folder) are bound writable again, nosuid
   and nodev;
4. resource limits: no core dumps, a file size limit, a process limit (per user: only when a uid is given);
5. exec `setpriv`: the given uid and gid with no supplementary groups (else uid 0), no new privileges, an empty
   bounding and inheritable capability set -- so nothing after it can remount, unmount, ptrace or signal outside the
   PID namespace, and without a uid of its own it still cannot write what step 2 made read-only.

Any failure is one line on stderr and exit status 97 before the command starts: the parent's probe sees it and
falls back (profiler.worker.sandbox.sandbox_plan says which way the worker ran).
"""
import ctypes
import json
import os
import re
import resource
import sys
import tempfile

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_MOVE, MS_REC = 1024, 2048, 4096, 8192, 16384
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
KEPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
              "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
SPECIAL = ("/proc", "/dev", "/sys")          # kernel file systems: their writable corners are bound read-only below
READ_ONLY_CORNERS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/sys")
FAILED = 97

_LIBC = ctypes.CDLL(None, use_errno=True)


def _b(text):
    return None if text is None else os.fsencode(text)


def mount(source, target, fstype, flags, data=None) -> None:
    if _LIBC.mount(_b(source), _b(target), _b(fstype), ctypes.c_ulong(flags), _b(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts() -> list[tuple[str, list[str]]]:
    """[(mount point, per-mount options)] of this namespace, parents before children (mountinfo's order)."""
    with open("/proc/self/mountinfo") as fh:
        return [(_unescape(f[4]), f[5].split(",")) for f in (line.split() for line in fh)]


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def remount(point: str, options: list[str], read_only: bool, extra: int = 0) -> None:
    flags = MS_REMOUNT | MS_BIND | (MS_RDONLY if read_only else 0) | extra
    for opt in options:
        flags |= KEPT_FLAGS.get(opt, 0)
    mount(None, point, None, flags)


def apply_masks(masks, stage: str) -> None:
    for masked, keep in masks:
        held = []
        for path in keep:
            hold = tempfile.mkdtemp(dir=stage)   # a fresh name: the probe's start used the same staging folder
            mount(path, hold, None, MS_BIND | MS_REC)
            held.append((hold, path))
        mount("projlab-mask", masked, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for hold, path in held:
            os.makedirs(path, mode=0o755, exist_ok=True)
            mount(hold, path, None, MS_MOVE)


def read_only_everywhere(writable) -> None:
    for point, options in mounts():
        if _under(point, SPECIAL) or point in writable:
            continue
        remount(point, options, read_only=True)
    for corner in READ_ONLY_CORNERS:
        if os.path.exists(corner):
            mount(corner, corner, None, MS_BIND | MS_REC)
            remount(corner, [], read_only=True, extra=MS_NOSUID | MS_NODEV | MS_NOEXEC)


def writable_again(writable) -> None:
    for folder in writable:
        mount(folder, folder, None, MS_BIND)
        remount(folder, [], read_only=False, extra=MS_NOSUID | MS_NODEV)


def limits(spec: dict) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["max_file_bytes"], spec["max_file_bytes"]))
    if spec.get("uid") is not None:   # counted per user: the worker's own uid only
        resource.setrlimit(resource.RLIMIT_NPROC, (spec["max_processes"], spec["max_processes"]))


def setpriv_command(spec: dict, command: list[str]) -> list[str]:
    ids = [] if spec.get("uid") is None else ["--reuid", str(spec["uid"]), "--regid", str(spec["gid"]),
                                              "--clear-groups"]
    return ["setpriv", *ids, "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all", "--", *command]


def main(argv: list[str]) -> int:
    spec, command = json.loads(argv[1]), argv[3:]
    try:
        apply_masks(spec.get("masks") or [], spec["stage"])
        writable = [os.path.realpath(w) for w in spec.get("writable") or []]
        read_only_everywhere(writable)
        writable_again(writable)
        limits(spec)
        os.chdir(spec.get("cwd") or "/")
        line = setpriv_command(spec, command)
        os.execvp(line[0], line)
    except (OSError, ValueError, KeyError) as exc:
        sys.stderr.write(f"projlab sandbox: {exc}\n")
        return FAILED
    return FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
