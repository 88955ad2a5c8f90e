"""The sweep's settings: what a run was asked to do (recorded as the run file's environment.settings) and what
every shape task carries to the worker. `timing` is the policy a shape is timed with: the SWEEP preset of
profiler.measure.policy unless a run or a tuner stage says otherwise."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from profiler.measure.policy import SWEEP, TimingPolicy


@dataclass
class SweepSettings:
    mode: str = "cold"                  # "cold" | "stream"
    shapes: str = "official"            # which set the shapes came from (recorded only)
    timing: TimingPolicy = SWEEP        # how each shape is timed (stopping rule, instances, clock floor, seeds)
    seed: int = 0
    probes: bool = True
    probe_rounds: int = 24
    flush_bytes: int | None = None
    command: str = ""
    candidates: list = field(default_factory=list)
    shape_timeout_s: float = 120.0      # watchdog: a step of a shape (one candidate's load/prepare/check/capture,
                                        # or the shape's timing) that makes no progress for this long is stopped
    max_incidents: int = 2              # a candidate whose worker died/hung at this many shapes skips the rest
    check: str = "full"                 # "full" lifecycle contract | "quick" (one eager call: a tuner's screen)
    canary: str = "all"                 # the baseline again in a clean worker (profiler.commands.canary): "all" (every
                                        # shape), "sample" (per family the smallest and largest M) or "off"
    eager: bool = False                 # also time each correct candidate eagerly (eager_us; policy preset EAGER)
    input_salt: int | None = None       # None: each shape task draws its own (profiler.check.inputs.fresh_salt), so no
                                        # candidate can compute the inputs ahead from the seed; an int (tests): the
                                        # inputs follow the seed and this salt alone
    unprivileged: bool = False          # where the parent is root, the worker runs with the project tree and the run
                                        # file's folder read-only and no capabilities (profiler run does;
                                        # profiler.worker.process.sandbox_prefix)
    screened: bool = False              # candidate modules passed the source screen before anything was imported
                                        # (profiler.check.source_screen; `profiler run` does unless
                                        # --trust-candidate); False: every score of the run shows "unscreened"

    @classmethod
    def from_dict(cls, data: dict) -> "SweepSettings":
        """From asdict() of a SweepSettings (what a shape task carries); unknown keys are ignored, a timing field
        left out is SWEEP's."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        if isinstance(kw.get("timing"), dict):
            timing_fields = {f.name for f in fields(TimingPolicy)}
            kw["timing"] = replace(SWEEP, **{k: v for k, v in kw["timing"].items() if k in timing_fields})
        return cls(**kw)

    def with_policy(self, policy: TimingPolicy, **changes) -> "SweepSettings":
        """These settings timed by `policy` (a tuner stage, the config survey), plus `changes`."""
        return replace(self, timing=policy, **changes)
