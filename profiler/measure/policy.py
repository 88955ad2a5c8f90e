"""The timing policy: every number that decides how a shape is timed, in one object with named presets.

    TimingPolicy(min_pairs, rse_target, max_seconds, batch_rounds, warmup_seconds, instances, ...)
    SWEEP          `python -m profiler run`: 0.5 % RSE of every paired ratio after >= 30 pairs, or 2 s
    TUNE_SCREEN    the tuner's screen: rank dozens of configs quickly (2 % RSE or 0.6 s)
    TUNE_FINAL     the tuner's finals and neighbours: the sweep's RSE rule (0.5 % after >= 48 pairs, 1.5 s cap)
    SURVEY         the config survey (`profiler survey`): one pass per shape, 1 % RSE or 1.2 s
    EAGER          eager (host-inclusive) time beside the graph time (profiler.measure.eager): triton.testing.do_bench's
                   budget -- 25 ms of warm-up calls, 100 ms of timed calls (at least 10)

A timing rule changes here and nowhere else: the sweep's settings (profiler.worker.settings.SweepSettings) take
their `timing` from SWEEP, the tuner's stages and the config survey record `stage()` of theirs, and the shape
task (profiler.worker.shape_task) reads the clock floor, the instances and the seed offsets from the policy.

Why these numbers (measured on the H200, run files in datasets/runs/):
- instances: identical CUDA graphs at different addresses differ by up to ~4 % at one shape, so every candidate is
  timed on separately allocated instances rotated per batch (3 in a sweep, 2 in the tuner and the bench).
- min_clock_fraction: a batch whose SM clock read below 75 % of the maximum is clock-throttled and dropped.
- timing_seed_offset / stream_seed_offset: timing inputs are never one of the correctness check's inputs.
- judge_miss_fraction / judge_confidence: every timed call reads a new input and its output is kept; after each
  batch each call is judged with probability p, drawn then (profiler.check.timed.judged_share):
  P(caught) = 1 - (1 - p)^ceil(f x calls) for a candidate wrong at a fraction f of its calls, so
  p = 1 - (1 - 0.999)^(1 / ceil(0.05 x min_rounds)): 0.749 for the sweep's 96 calls (P(caught) >= 0.999 at 5 %).
- stream_min_calls / stream_l2_multiple: stream mode replays >= 24 calls rotating through copies of the weights
  and input totalling >= 3 x L2 (the cold L2 a served decode step sees).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

STAGE_KEYS = ("min_pairs", "rse_target", "max_seconds", "batch_rounds", "warmup_seconds", "instances")


@dataclass(frozen=True)
class TimingPolicy:
    min_pairs: int                    # stopping rule: at least this many paired rounds ...
    rse_target: float                 # ... and the RSE of every paired ratio at most this,
    max_seconds: float                # ... or this much time spent on the shape
    batch_rounds: int                 # rounds per batch (one clock read, one instance per batch)
    warmup_seconds: float             # warm-up by time before the first batch
    instances: int                    # cold mode: graphs per candidate, separately allocated, rotated per batch
    min_clock_fraction: float = 0.75  # batches below this fraction of the max SM clock are dropped
    timing_seed_offset: int = 300     # cold timing inputs: seed + 300 + instance
    stream_seed_offset: int = 500     # stream mode inputs: seed + 500 + copy
    stream_min_calls: int = 24        # stream mode: at least this many calls per replay
    stream_l2_multiple: int = 3       # stream mode: rotated copies total >= 3 x L2
    judge_miss_fraction: float = 0.05  # cold mode: a candidate wrong at this fraction of its timed calls ...
    judge_confidence: float = 0.999    # ... is caught with at least this probability (the judged share follows)

    def stage(self) -> dict:
        """The stopping rule and instances as a dict: what a tune or screen run records per stage, and what
        tune_rules passes to its measure function."""
        return {k: getattr(self, k) for k in STAGE_KEYS}

    def with_stage(self, stage: dict) -> "TimingPolicy":
        """This policy with a stage dict's stopping rule (missing instances: 2, the tuner's)."""
        return replace(self, min_pairs=int(stage["min_pairs"]), rse_target=float(stage["rse_target"]),
                       max_seconds=float(stage["max_seconds"]), batch_rounds=int(stage["batch_rounds"]),
                       warmup_seconds=float(stage["warmup_seconds"]), instances=int(stage.get("instances", 2)))

    def measure_kwargs(self) -> dict:
        """Keywords of profiler.measure.timing.measure_shape (the stopping rule)."""
        return {"min_pairs": self.min_pairs, "rse_target": self.rse_target, "max_seconds": self.max_seconds,
                "warmup_seconds": self.warmup_seconds, "batch_rounds": self.batch_rounds}

    def to_dict(self) -> dict:
        return asdict(self)


SWEEP = TimingPolicy(min_pairs=30, rse_target=0.005, max_seconds=2.0, batch_rounds=32, warmup_seconds=0.05,
                     instances=3)
TUNE_SCREEN = TimingPolicy(min_pairs=12, rse_target=0.02, max_seconds=0.6, batch_rounds=6, warmup_seconds=0.02,
                           instances=2)
TUNE_FINAL = TimingPolicy(min_pairs=48, rse_target=0.005, max_seconds=1.5, batch_rounds=16, warmup_seconds=0.05,
                          instances=2)
SURVEY = TimingPolicy(min_pairs=24, rse_target=0.01, max_seconds=1.2, batch_rounds=8, warmup_seconds=0.05,
                      instances=2)
# do_bench(fn, warmup=25, rep=100): the timer most kernel engineers reach for, so its budget; rse_target and
# batch_rounds are unused by eager_time.
EAGER = TimingPolicy(min_pairs=10, rse_target=1.0, max_seconds=0.1, batch_rounds=1, warmup_seconds=0.025,
                     instances=1)
