"""A CPU stand-in for the GPU timer and probes, installed in a worker process by run_sweep(worker_init=...).

It runs each "graph" eagerly once at capture and returns made-up times (10 us +- 0.01 after the 3.3 us
overhead): the sweep's orchestration, records and failure handling can be tested without a GPU, but no number
it produces is a measurement, so tests must not assert anything about the times themselves.
"""
import numpy as np

from profiler.timing import GraphHandle


class FakeTimer:
    """Same interface as profiler.timing.ColdTimer; made-up samples."""

    def __init__(self, device=None, flush_bytes=None, **kw):
        self.device, self.l2_bytes, self.sm_count = device, 60 << 20, 132
        self.flush_bytes = flush_bytes or 4 * self.l2_bytes
        self.overhead_us, self.overhead_ci_us = 3.3, (3.2, 3.4)
        self.rng = np.random.default_rng(0)

    def capture(self, fn):
        fns = fn if isinstance(fn, list) else [fn]
        return GraphHandle(graph=None, output=fns[-1](), calls=len(fns))

    def sample_raw(self, graphs, n_rounds, clock=None, clock_out=None):
        if clock_out is not None:
            clock_out.append(1980)
        return 13.3 + self.rng.normal(0, 0.01, size=(n_rounds, len(graphs)))

    def sample(self, graphs, n_rounds, clock=None, clock_out=None):
        return self.sample_raw(graphs, n_rounds, clock, clock_out) - self.overhead_us


def fake_read_probes(timer, plan, n_rounds=0, progress=None, us=None):
    return [{"bytes": b, "us": us or b / 4.0e6 + 2.0, "ci_low_us": (us or b / 4.0e6 + 2.0) - 0.5,
             "ci_high_us": (us or b / 4.0e6 + 2.0) + 0.5, "tbps": 4.0, "design": "fake", "kind": "read",
             "for_shape": lab, "designs_us": {"fake": us or b / 4.0e6 + 2.0}} for b, lab in plan]


def install():
    """Fake timer and probes (floors ~2 us: nothing is below them)."""
    import profiler.probes as probes
    import profiler.timing as timing

    timing.ColdTimer = FakeTimer
    timing.StreamTimer = FakeTimer
    probes.run_read_probes = fake_read_probes
    probes.run_compute_probe = lambda timer: {"M": 8, "N": 8, "K": 8, "us": 1.0, "tflops": 1.0}


def install_high_floors():
    """As install(), with every probe reading 50 us (CI 49.5-50.5): every fake 10 us result is below its floor."""
    import profiler.probes as probes

    install()
    probes.run_read_probes = lambda timer, plan, n_rounds=0, progress=None: fake_read_probes(timer, plan, us=50.0)
