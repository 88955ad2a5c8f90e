"""Known-wrong candidates that reach past the call into the worker process: ending, crashing or hanging it,
forging its reply (the serializer, the guard, the reply pipe, the live timer), background threads, processes that
outlive it (profiler/worker/integrity.py, process.py, profiler/backends/verify.py).
"""
from __future__ import annotations

import time
from functools import lru_cache

from profiler.wrong.base import _linear, TorchLinear  # noqa: F401


class SysExit(TorchLinear):
    """Calls sys.exit(3) in run(): a verdict, never a clean exit of the profiler."""

    name, expect = "sys_exit", "called sys.exit(3)"

    def run(self, state, family, x):
        import sys

        sys.exit(3)



class ExitProcess(TorchLinear):
    """os._exit(7) in run(): the process is gone without a word; only the worker's isolation survives it."""

    name, expect = "exit_process", "exit code 7"

    def run(self, state, family, x):
        import os

        os._exit(7)



class Segfault(TorchLinear):
    """Reads address 0 through ctypes in run(): SIGSEGV."""

    name, expect = "segfault", "SIGSEGV"

    def run(self, state, family, x):
        import ctypes

        ctypes.string_at(0)



class Hang(TorchLinear):
    """Never returns from run(): spins the GPU (torch.cuda._sleep) or sleeps on CPU; the watchdog must stop it."""

    name, expect = "hang", "watchdog"

    def run(self, state, family, x):
        import torch

        while True:
            if x.is_cuda:
                torch.cuda._sleep(1 << 40)  # ~9 minutes of GPU cycles per launch at ~2 GHz
                torch.cuda.synchronize(x.device)
            else:
                time.sleep(0.05)



FAULT_SHAPE = ("o", 16)  # (family, M) where FaultAtOneShape faults: decode 16/o among the official shapes



@lru_cache(maxsize=None)
def _wild_store():
    import triton
    import triton.language as tl

    @triton.jit
    def wild_store(ptr, offset):
        """*(ptr + offset) = 1: with a huge offset, an illegal memory access (a sticky CUDA error)."""
        tl.store(ptr + offset, 1.0)

    return wild_store



class FaultAtOneShape(TorchLinear):
    """Correct everywhere except at FAULT_SHAPE, where it stores 4 TiB past its output: an illegal memory access,
    which leaves the CUDA context unusable (sticky). The other shapes must still be measured."""

    name, expect = "fault_at_one_shape", "illegal memory access"

    def run(self, state, family, x):
        y = _linear(x, state["w"])
        if x.is_cuda and (family, int(x.shape[0])) == FAULT_SHAPE:
            _wild_store()[(1,)](y, 1 << 40)
        return y



_REWRITER = """
import json, sys, time
path, ratio = sys.argv[1], float(sys.argv[2])
for _ in range(2000):   # ~400 s: until the parent has written the run "complete", then forge its ratios
    time.sleep(0.2)
    try:
        with open(path) as fh:
            run = json.load(fh)
        if run.get("status") == "complete":
            for pair in run.get("pairs", []):
                pair["ratio_median"] = ratio
            with open(path, "w") as fh:
                json.dump(run, fh)
            break
    except Exception:
        pass
time.sleep(400)
"""



def _run_file_of_ancestors() -> str:
    """The --out path of the `python -m profiler run` this worker serves (its parent's command line), or ""."""
    import os

    pid = os.getppid()
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = fh.read().decode().split("\0")
    except OSError:
        return ""
    return args[args.index("--out") + 1] if "--out" in args[:-1] else ""



def _rewriter_argv(ratio: float = 1.81) -> list[str]:
    import sys

    return [sys.executable, "-c", _REWRITER, _run_file_of_ancestors() or "/nonexistent", str(ratio)]



def _double_fork(argv: list[str]) -> None:
    """Start argv detached: a child that starts its own session, forks the real process and exits at once, so the
    process is nobody's child here (re-parented to init -- or to a child subreaper)."""
    import os

    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                os.execv(argv[0], argv)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)



class ForgesReply(TorchLinear):
    """In-process forging through the serializer: wraps json.dumps in the worker so that its own results read half
    their times (samples, median, ratio) in the reply the parent reads."""

    name, expect = "forges_reply", "in-process forging"

    def prepare(self, family, weight):
        import json

        original, me = json.dumps, self.name

        def dumps(obj, *args, **kw):
            for r in (obj.get("result") or {}).get("results", []) if isinstance(obj, dict) else []:
                if r.get("candidate") == me:
                    r["samples_us"] = [v / 2 for v in r["samples_us"]]
                    r["median_us"] /= 2
            return original(obj, *args, **kw)

        json.dumps = dumps
        return super().prepare(family, weight)



class PatchesGuard(TorchLinear):
    """In-process forging through the harness objects: reaches the live session, turns its guard's check off (an
    instance attribute) and then makes the timer report every sample at 60 %."""

    name, expect = "patches_guard", "in-process forging"

    def prepare(self, family, weight):
        import sys

        sess = sys.modules["profiler.worker.session"]._SESSION[0]
        sess.guard.check = lambda where: []
        timing = sys.modules["profiler.measure.timing"]
        original = timing.ColdTimer.sample
        timing.ColdTimer.sample = lambda self, *a, **k: original(self, *a, **k) * 0.6
        return super().prepare(family, weight)



class InflatesBaseline(TorchLinear):
    """In-process forging of the serializer the worker bound at start (its module global, not json's): reports every
    other candidate's samples 1000x longer. The guard names the rebinding; installed before the worker's snapshots
    (as a set-up hook could), the parent's checks still refuse the reply: its samples add up to more time than the
    parent's own clock saw pass (tests/profiler/test_reach.py)."""

    name, expect = "inflates_baseline", ("replaced a function the harness uses", "in-process forging")

    def prepare(self, family, weight):
        import sys

        child = sys.modules["profiler.worker.child"]
        original, me = child._DUMPS, self.name

        def dumps(obj, *args, **kw):
            for r in (obj.get("result") or {}).get("results", []) if isinstance(obj, dict) else []:
                if r.get("candidate") != me:
                    r["samples_us"] = [v * 1000 for v in r["samples_us"]]
                    r["median_us"] *= 1000
            return original(obj, *args, **kw)

        child._DUMPS = dumps
        return super().prepare(family, weight)



class ForksSleeper(TorchLinear):
    """Outliving its call: starts a child process that sleeps 400 s (a Popen, as a build or a helper server would)."""

    name, expect = "forks_sleeper", "outliving the worker"

    def prepare(self, family, weight):
        import subprocess

        subprocess.Popen(["sleep", "400"], stdin=subprocess.DEVNULL)
        return super().prepare(family, weight)



class AtExitRewriter(TorchLinear):
    """Outliving the worker through an exit hook: registers an atexit function that starts a detached process which
    waits for the parent to write the run file "complete" and then rewrites its ratios (1.81)."""

    name, expect = "atexit_rewriter", "outliving the worker"

    def prepare(self, family, weight):
        import atexit

        atexit.register(_double_fork, _rewriter_argv())
        return super().prepare(family, weight)



class DetachedRewriter(TorchLinear):
    """Outliving the worker by detaching at once: double-forks the run-file rewriter at prepare(), so it is not
    the worker's child (only a child subreaper finds it)."""

    name, expect = "detached_rewriter", "outliving the worker"

    def prepare(self, family, weight):
        _double_fork(_rewriter_argv())
        return super().prepare(family, weight)



class RebindsReplyPipe(TorchLinear):
    """Puts a pipe of its own in place of the worker's reply descriptor (os.dup2) and reads it in a thread that would
    rewrite each reply before passing it on."""

    name, expect = "rebinds_reply_pipe", "in-process forging"

    def prepare(self, family, weight):
        import gc
        import io
        import os
        import threading

        reply = next((f for f in gc.get_objects() if isinstance(f, io.TextIOWrapper) and getattr(f, "mode", "") == "w"
                      and not f.closed and f.fileno() > 2), None)
        if reply is not None:
            fd = reply.fileno()
            saved = os.dup(fd)
            r, w = os.pipe()
            os.dup2(w, fd)

            def relay():
                with os.fdopen(r, "rb") as src:
                    for line in src:
                        os.write(saved, line)

            threading.Thread(target=relay, daemon=True).start()
        return super().prepare(family, weight)



class SetsTimerAttribute(TorchLinear):
    """Finds the live cold timer (gc) and raises its replay overhead, which every sample has subtracted: every
    time it records is smaller (its own and the baseline's alike, so it also moves every floor comparison)."""

    name, expect = "sets_timer_attribute", "in-process forging"

    def prepare(self, family, weight):
        import gc

        for obj in gc.get_objects():
            if type(obj).__name__ in ("ColdTimer", "FakeTimer", "ReplayingFakeTimer") and hasattr(obj, "overhead_us"):
                obj.overhead_us = obj.overhead_us + 5.0
        return super().prepare(family, weight)



class ThreadComputes(TorchLinear):
    """A background thread (KernelArena's "background thread"): the timed call returns at once while a thread of its
    own does the product into the output it returned, finishing after the clock stopped. The worker refuses any
    candidate thread after every step and every timed batch."""

    name, expect = "thread_computes", ("in-process forging", "thread")

    def run(self, state, family, x):
        import threading

        y = _linear(x[:1], state["w"]).new_zeros((x.shape[0], state["w"].shape[0]))
        done = threading.Event()

        def work():
            y.copy_(_linear(x, state["w"]))
            done.set()
            threading.Event().wait(30)   # stays alive: a helper pool would

        threading.Thread(target=work, daemon=True).start()
        done.wait(5)
        return y
