"""What the worker checks of its own reply path after every candidate step: the objects that carry a measurement to
the parent, and what would let candidate code act after the worker answered.

    integrity = Integrity(guard)          at session start, before any candidate is imported
    integrity.watch_fd(fd, what)          the reply pipe, held to the file it is (child, at start)
    integrity.watch_object(obj, what)     a harness object (each timer, when made), held to its attributes
    integrity.check() -> [reason, ...]    [] while nothing changed

Each reason names its mechanism ("in-process forging: ...", "outliving the worker: ..."); the session turns one into
a fatal error (profiler.worker.session.Session.guard_check), so the process that was tampered with measures nothing
more. This is an in-process layer: code in this process can defeat any check made in it (docs/trust.md). What it
cannot see, the parent still does: it recomputes every summary from the raw samples and bounds them by its own wall
clock (profiler/backends/verify.py), and it kills every process the worker started (profiler/worker/process.py).
"""
from __future__ import annotations

import atexit
import json
import json.encoder
import os
import site
import sys
import sysconfig
import threading

FORGING = "in-process forging"
OUTLIVING = "outliving the worker"

# The serializer the worker answers with (profiler.worker.child binds json.dumps at import, before any candidate);
# these are what it calls.
_SERIALIZER = ((json, "dumps"), (json, "loads"), (json.encoder, "c_make_encoder"), (json.encoder, "_make_iterencode"),
               (json.encoder, "encode_basestring"), (json.encoder, "encode_basestring_ascii"),
               (json.JSONEncoder, "encode"), (json.JSONEncoder, "iterencode"), (json.JSONEncoder, "default"))


# Where the interpreter's and the installed libraries' code lives: exit hooks registered from there are theirs (torch
# and the standard library register some while a candidate's first call initialises them), not a candidate's.
_LIBRARY_DIRS = tuple(sorted({str(p) for p in [*(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                                                   "platlib")),
                                                 *site.getsitepackages(), site.getusersitepackages()] if p}))


def _hooks_from_outside_libraries(register):
    """atexit.register as it was, recording each hook whose caller is not in the interpreter's or an installed
    library's code (the candidate's own)."""
    foreign: list[str] = []

    def hooked(fn, *args, **kw):
        caller = sys._getframe(1).f_code.co_filename
        if not caller.startswith(_LIBRARY_DIRS):
            foreign.append(f"{getattr(fn, '__qualname__', fn)!s} from {caller}")
        return register(fn, *args, **kw)

    return hooked, foreign


def proc_table() -> dict[int, tuple[bytes, int]]:
    """{pid: (state, parent pid)} of every process (/proc; zombies included, state b"Z"). The worker's own check
    (children after a step) and the parent's (what a worker left behind: profiler.worker.process) read it."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            table[int(entry.name)] = (fields[0], int(fields[1]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def _children(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (/proc)."""
    found = []
    for child, (state, ppid) in proc_table().items():
        if ppid == pid and state not in (b"Z", b"X"):
            found.append(child)
    return found


def _threads_outside_libraries(before: set) -> list[str]:
    """Python threads alive now that were not at start and run code outside the interpreter's and the installed
    libraries' (a candidate's own: a thread's frames all in library code is a library's worker, e.g. a compile pool),
    as 'name (file:line)'. sys._current_frames sees every thread with a Python state, threading's or _thread's."""
    found = []
    names = {t.ident: t.name for t in threading.enumerate()}
    for ident, frame in sys._current_frames().items():
        if ident in before or ident == threading.get_ident():
            continue
        f, where = frame, None
        while f is not None:
            name = f.f_code.co_filename
            if not name.startswith(_LIBRARY_DIRS):
                where = f"{name}:{f.f_lineno}"
                break
            f = f.f_back
        if where is not None:
            found.append(f"{names.get(ident, 'thread ' + str(ident))} ({where})")
    return found


_GONE = object()
# What a timer is held to after it was made (profiler.measure.timing.ColdTimer): the numbers every sample is computed
# with and the objects it replays. Anything else it may update itself.
TIMER_HELD = ("device", "l2_bytes", "sm_count", "flush_bytes", "overhead_us", "overhead_ci_us", "_flush", "_events")


class Integrity:
    def __init__(self, guard):
        self.guard, self.guard_type = guard, type(guard)
        self.guard_methods = {k: v for k, v in vars(guard).items() if k in ("check", "restore")}
        self.serializer = {(owner, name): getattr(owner, name, None) for owner, name in _SERIALIZER}
        atexit.register, self.exit_hooks = _hooks_from_outside_libraries(atexit.register)
        self.pid = os.getpid()
        # processes this one already had (none in a worker; a test running tasks in its own process may have some):
        # only a process started after this point is a candidate's
        self.children_before = set(_children(self.pid))
        self.threads_before = set(sys._current_frames())   # the harness's own (the parent watch), before candidates
        self.fds: dict = {}
        self.objects: list = []

    def watch_fd(self, fd: int, what: str) -> None:
        """Hold file descriptor `fd` (the reply pipe) to the file it is now: another file dup2'd onto it (a pipe a
        thread of the candidate's reads and rewrites) is named by check()."""
        now = os.fstat(fd)
        self.fds[fd] = (what, (now.st_dev, now.st_ino, now.st_mode), os.dup(fd))   # a copy to put back

    def watch_object(self, obj, what: str, held=TIMER_HELD) -> None:
        """Hold a harness object (a timer) to its type, its class's attributes and the attributes `held` (those of
        them it has now; the others it may update itself, as a counter), and refuse an instance attribute that shadows
        a method of its class: a smaller overhead, a replaced sample method, on the object or its class, is named."""
        attrs = {k: v for k, v in vars(obj).items() if k in held}
        self.objects.append((obj, what, type(obj), attrs, dict(vars(type(obj)))))

    def _watched(self) -> list[str]:
        reasons = []
        for fd, (what, ident, backup) in self.fds.items():
            try:
                info = os.fstat(fd)
                now = (info.st_dev, info.st_ino, info.st_mode)
            except OSError:
                now = None
            if now != ident:
                reasons.append(f"{FORGING}: {what} (fd {fd}) is no longer the file it was at start (another file "
                               "put in its place)")
                try:   # the file put back, so the reason reaches the parent through the pipe it reads
                    os.dup2(backup, fd)
                except OSError:
                    pass
        for obj, what, cls, attrs, class_attrs in self.objects:
            changed = sorted(k for k in attrs if vars(obj).get(k, _GONE) is not attrs[k])
            changed += sorted(k for k in vars(obj) if k not in attrs and callable(class_attrs.get(k)))
            changed += sorted(k for k in set(class_attrs) | set(vars(cls))
                              if vars(cls).get(k, _GONE) is not class_attrs.get(k, _GONE))
            if type(obj) is not cls or changed:
                reasons.append(f"{FORGING}: changed the live {what} ({', '.join(changed[:3]) or 'its type'})")
        return reasons

    def threads(self) -> list[str]:
        """A reason per Python thread a candidate left alive: code that would run beside the harness's own
        operations (while an input is made, an output kept, a call judged) is refused outright."""
        return [f"{FORGING}: a thread of its own is running beside the harness ({t}); candidates may not start "
                "threads" for t in _threads_outside_libraries(self.threads_before)[:1]]

    def check(self) -> list[str]:
        reasons = []
        for (owner, name), original in self.serializer.items():
            if getattr(owner, name, None) is not original:
                setattr(owner, name, original)
                reasons.append(f"{FORGING}: replaced {owner.__name__}.{name}, what the worker's reply to the parent is "
                               "written with")
        now = {k: v for k, v in vars(self.guard).items() if k in ("check", "restore")}
        if type(self.guard) is not self.guard_type or now != self.guard_methods:
            reasons.append(f"{FORGING}: replaced the guard's {', '.join(sorted(set(now) ^ set(self.guard_methods)) or ['check/restore'])} "
                           "on the live guard object")
            vars(self.guard).update(self.guard_methods)
        if self.exit_hooks:
            reasons.append(f"{OUTLIVING}: registered an exit hook (atexit: {self.exit_hooks[0][:120]}): code that "
                           "would run after the worker answered")
        reasons += self.threads() + self._watched()
        children = [c for c in _children(self.pid) if c not in self.children_before]
        if children:
            reasons.append(f"{OUTLIVING}: started {len(children)} process(es) still running after its step "
                           f"(pid {', '.join(map(str, children[:3]))})")
        return reasons
