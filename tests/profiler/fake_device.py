"""A CPU stand-in for the GPU timer and probes, installed in a worker process by run_sweep(worker_init=...).

It runs each "graph" eagerly once at capture (a replay runs its calls again into the captured output) and returns
made-up times (10 us +- 0.01 after the 3.3 us overhead): the sweep's orchestration, records and failure handling
can be tested without a GPU, but no number it produces is a measurement, so tests must not assert anything about
the times themselves. ReplayingFakeTimer also replays every graph once per sampled round, as timing would.
"""
import zlib

import numpy as np

from profiler.measure.timing import GraphHandle


class FakeTimer:
    """Same interface as profiler.measure.timing.ColdTimer; made-up samples."""

    def __init__(self, device=None, flush_bytes=None, **kw):
        self.device, self.l2_bytes, self.sm_count = device, 60 << 20, 132
        self.flush_bytes = flush_bytes or 4 * self.l2_bytes
        self.overhead_us, self.overhead_ci_us = 3.3, (3.2, 3.4)
        self.rng = np.random.default_rng(0)

    def capture(self, fn):
        fns = fn if isinstance(fn, list) else [fn]

        def run_all():
            return [f() for f in fns][-1]

        handle = GraphHandle(graph=None, output=run_all(), calls=len(fns))
        handle.graph = _Rerun(run_all, handle)
        return handle

    def sample_raw(self, graphs, n_rounds, clock=None, clock_out=None):
        if clock_out is not None:
            clock_out.append(1980)
        return 13.3 + self.rng.normal(0, 0.01, size=(n_rounds, len(graphs)))

    def sample(self, graphs, n_rounds, clock=None, clock_out=None):
        return self.sample_raw(graphs, n_rounds, clock, clock_out) - self.overhead_us


class _Rerun:
    """A captured graph's stand-in: replay() runs the calls again and copies the result into the captured output
    (a real replay writes the same memory)."""

    def __init__(self, fn, handle):
        self.fn, self.handle = fn, handle

    def replay(self):
        y = self.fn()
        out = self.handle.output
        if hasattr(out, "copy_") and hasattr(y, "shape") and tuple(y.shape) == tuple(out.shape):
            out.copy_(y)


class ReplayingFakeTimer(FakeTimer):
    """FakeTimer whose sampling replays every graph once per round, each after its feed and followed by its
    feed's keep (and its settle, as the CPU timer's calls are), as ColdTimer.sample_raw does: the number of replays depends on the rounds asked for, never on how fast this machine is (a candidate that
    degrades after N replays degrades here too; one that keeps its last answer gives it for another input)."""

    def sample_raw(self, graphs, n_rounds, clock=None, clock_out=None):
        for _ in range(n_rounds):
            for g in graphs:
                feed = getattr(g, "feed", None)
                if feed is not None:   # the next input first, as ColdTimer.sample_raw does
                    feed()
                g.replay()
                if getattr(feed, "keep", None) is not None:   # and the output kept after the call, as there
                    feed.keep(g.output)
                    if getattr(feed, "settle", None) is not None:   # judged now where the feed judges each call
                        feed.settle()
        return super().sample_raw(graphs, n_rounds, clock, clock_out)

    def sample(self, graphs, n_rounds, clock=None, clock_out=None):
        return self.sample_raw(graphs, n_rounds, clock, clock_out) - self.overhead_us


def install_replaying():
    """install() with ReplayingFakeTimer."""
    import profiler.measure.timing as timing

    install()
    timing.ColdTimer = ReplayingFakeTimer
    timing.StreamTimer = ReplayingFakeTimer


DISTURBANCE_MODULE = "projlab_test_disturbance"  # a candidate that imports a module of this name slows every graph


class DisturbableFakeTimer(FakeTimer):
    """FakeTimer whose made-up times are 3x longer once a module named DISTURBANCE_MODULE is in sys.modules: a
    stand-in for process-wide state a candidate's import changes and the guard does not watch (what the canary is
    for)."""

    def sample(self, graphs, n_rounds, clock=None, clock_out=None):
        import sys

        out = super().sample(graphs, n_rounds, clock, clock_out)
        return out * 3.0 if DISTURBANCE_MODULE in sys.modules else out


def install_disturbable():
    import profiler.measure.timing as timing

    install()
    timing.ColdTimer = DisturbableFakeTimer
    timing.StreamTimer = DisturbableFakeTimer


def fake_read_probes(timer, plan, n_rounds=0, progress=None, us=None):
    return [{"bytes": b, "us": us or b / 4.0e6 + 2.0, "ci_low_us": (us or b / 4.0e6 + 2.0) - 0.5,
             "ci_high_us": (us or b / 4.0e6 + 2.0) + 0.5, "tbps": 4.0, "design": "fake", "kind": "read",
             "for_shape": lab, "designs_us": {"fake": us or b / 4.0e6 + 2.0}} for b, lab in plan]


def install():
    """Fake timer and probes (floors ~2 us: nothing is below them)."""
    import profiler.measure.probes as probes
    import profiler.measure.timing as timing

    timing.ColdTimer = FakeTimer
    timing.StreamTimer = FakeTimer
    probes.run_read_probes = fake_read_probes
    probes.run_compute_probe = lambda timer: {"M": 8, "N": 8, "K": 8, "us": 1.0, "tflops": 1.0}


HIGH_FLOOR_RATE = 1e3   # bytes per us (1 GB/s): a CPU device's floors derived from it sit above every fake 10 us


def install_high_floors():
    """As install(), with every probe reading 50 us (CI 49.5-50.5) on a GPU, and at HIGH_FLOOR_RATE on a CPU (whose
    floors are derived from its read rate, profiler.measure.probes.cpu_floors): every fake 10 us result of a shape of
    more than 10 KB is below its floor."""
    import profiler.measure.probes as probes

    install()

    def slow(timer, plan, n_rounds=0, progress=None):
        if getattr(timer.device, "type", timer.device) == "cpu":
            return [r | {"us": r["bytes"] / HIGH_FLOOR_RATE, "ci_low_us": None, "ci_high_us": None}
                    for r in fake_read_probes(timer, plan)]
        return fake_read_probes(timer, plan, us=50.0)
    probes.run_read_probes = slow


class KeyedFakeTimer(FakeTimer):
    """Made-up times that are a pure function of the task: each candidate gets a speed from its name and M (the
    candidate named by the worker's last "step"), the noise of batch b of a shape a seed from the candidates and
    b. The same shape task gives the same samples in any worker process, in any order -- so a sweep or tune on
    several workers can be compared with a one-worker one. Warm-up batches draw nothing."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._batches = {}

    def capture(self, fn):
        from profiler.worker.steps import current

        handle = super().capture(fn)
        out = handle.output
        handle.fake_key = f"{current()[0]}|{tuple(out.shape) if hasattr(out, 'shape') else out}"
        handle.fake_us = 5.0 + zlib.crc32(str(current()[0]).encode()) % 1000 / 100.0
        if hasattr(out, "shape"):
            handle.fake_us *= 1.0 + out.shape[0] / 64.0
        self._batches = {}  # a new task captures before it samples: its batch numbers start again
        return handle

    def sample(self, graphs, n_rounds, clock=None, clock_out=None):
        if clock_out is not None:
            clock_out.append(1980)
        key = "/".join(getattr(g, "fake_key", "?") for g in graphs)
        b = self._batches[key] = self._batches.get(key, -1) + 1
        rng = np.random.default_rng([zlib.crc32(key.encode()), b])
        base = np.array([getattr(g, "fake_us", 10.0) for g in graphs])
        return base * (1.0 + 0.001 * rng.standard_normal((n_rounds, len(graphs))))


def install_keyed():
    """install() with KeyedFakeTimer: samples that depend only on the task, never on the process or order."""
    import profiler.measure.timing as timing

    install()
    timing.ColdTimer = KeyedFakeTimer
    timing.StreamTimer = KeyedFakeTimer


def crash_method():
    """A registry Method whose run() ends its process at M == 16 (as a CUDA fault or a segfault would); elsewhere
    it is F.linear. Its impl lives in a module this file puts in sys.modules (install_keyed_with_crasher)."""
    from kernels.method import BF16, Method

    return Method("crash_mm", (BF16,), "projlab_fake_methods:CRASH", "dies at M=16", params={"at": (16,)},
                  configs=({"at": 16},))


class _Crash:
    @staticmethod
    def prepare(weight, config):
        return {"w": weight, "at": config["at"]}

    @staticmethod
    def run(state, x):
        import os

        import torch.nn.functional as F

        if x.shape[0] == state["at"]:
            os._exit(9)
        return F.linear(x, state["w"])


def register_crasher():
    """Put crash_mm in this process's method registry (the test's and, through the init hook, the worker's)."""
    import sys
    import types

    from kernels.registry import METHODS

    sys.modules["projlab_fake_methods"] = types.SimpleNamespace(CRASH=_Crash)
    METHODS["crash_mm"] = crash_method()


def install_keyed_with_crasher():
    install_keyed()
    register_crasher()


def install_fake_nvtx():
    """install(), and NVTX ranges noted in $FAKE_NCU_RANGES (set by fake_ncu.py) instead of pushed: a CPU has no
    NVTX, and the fake ncu reports the fixture's kernels of exactly the jobs whose range was pushed."""
    import os

    import profiler.worker.explain_task as explain_task

    install()

    def nvtx(sess, op, text=""):
        if op == "push" and os.environ.get("FAKE_NCU_RANGES"):
            with open(os.environ["FAKE_NCU_RANGES"], "a") as f:
                f.write(text + "\n")

    explain_task._nvtx = nvtx


def install_keyed_one_gpu():
    """install_keyed(), and every worker reporting the same GPU UUID: as two dask workers left unpinned on one
    GPU would (the cluster must refuse them)."""
    import profiler.measure.telemetry as telemetry

    install_keyed()
    real = telemetry.environment
    telemetry.environment = lambda device, tel=None: real(device, tel) | {"gpu": "NVIDIA H200",
                                                                          "gpu_uuid": "GPU-fake-0"}


def install_keyed_gpu_from_env():
    """install_keyed(), the GPU model (and a UUID) taken from $PROJLAB_FAKE_GPU: dask workers started with
    different values stand for hosts with different GPU models."""
    import os

    import profiler.measure.telemetry as telemetry

    install_keyed()
    real, model = telemetry.environment, os.environ.get("PROJLAB_FAKE_GPU", "SYNTHETIC GPU")
    telemetry.environment = lambda device, tel=None: real(device, tel) | {"gpu": model, "gpu_uuid": f"GPU-{model}"}
