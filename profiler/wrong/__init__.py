"""Known-wrong candidates: each one breaks one rule of the contract or one rule of isolation, and the harness must
reject every one with a clear reason (tests/profiler/test_wrong.py, test_worker.py, test_isolation.py,
test_timed_check.py, test_trust_sweep.py, test_reach*.py, test_judge_reach.py). `TorchLinear` is the correct
control. `expect`: the words a rejection must contain (one of them, when a tuple). A test corpus, not part of the
checks: nothing in the lab imports it but the tests and the benches.

All follow the Candidate protocol (kernels/candidate.py): name, prepare(family, weight), run(state, family, x),
describe(family, M). On the command line each is the spec of the file that defines it, `spec(cls)`, e.g.
`python -m profiler run --plan baseline --candidate profiler/wrong/output.py:OneHotInt8` (run files from before
the corpus moved here name `profiler/check/wrong.py:<ClassName>`).

Modules, by what their classes attack:
  output         the output rules (profiler/check/rules.py): stale, partial, mistyped, NaN, mutated, lossy, lying
  process_state  process-wide state the guard holds: settings, flags, environment, dispatcher, modes, harness code
  graphs         captured and timed graphs vs the lifecycle's calls: streams, host syncs, later captures, degrading
  worker         the worker process: exits, crashes, hangs, forged replies, threads, processes that outlive it
  judge          the judge of timed calls: answers computed outside the call, unjudged calls, unrecognised rows
  base           the control and the helpers they share

Groups (by the layer that rejects them): CPU_WRONG are rejected by check_candidate on any device; GPU_ONLY_WRONG
only show their bug under CUDA (graph replay, capture, streams); WORKER_WRONG kill or hang the process they run in,
so only the worker's isolation can survive them (FaultAtOneShape needs CUDA); LOAD_WRONG change process-wide state
when the worker loads them (refused at load); TIMED_WRONG are right wherever the lifecycle contract looks and wrong
only in graphs the sweep times; MEASURE_REACH_WRONG and PROCESS_REACH_WRONG reach past one call (a memo across timed
replays, lossy weights exact where recognisable, a dispatcher kernel, a backend flag; forging and outliving the
worker); the judge's reach, several forms per class (docs/trust.md's classes): ANSWER_WRONG, UNJUDGED_WRONG,
FORGING_WRONG, ROW_KIND_WRONG, MODE_WRONG, and their GPU forms GPU_JUDGE_WRONG.
"""
from __future__ import annotations

import sys
from pathlib import Path

from profiler.wrong.base import TorchLinear, _half_k, _int8_groups, _linear  # noqa: F401  (the control, helpers)
from profiler.wrong.worker import FAULT_SHAPE  # noqa: F401
from profiler.wrong.graphs import (CaptureOnlyLossy, DegradesAfterReplays, HostSync, LaterCapturesHalfK,
                                   SideStream)
from profiler.wrong.judge import (Bf16RoundedPlainRows, CounterInDeviceMemory, DeviceMemoOfSeveral, FingerprintMemo,
                                  HooksStaticInput, LazyOutputInTiming, LossyWithoutOutlier, MemoAcrossReplays,
                                  MemoInGraph, OutlierExactInt8, OutlierExactInt8Groups, OutlierExactInt8SmallM,
                                  ReadsJudgeReferences, ScansForTimedInputs, WrongBetweenCountedCalls,
                                  WrongOneCallInTen, RewritesJudgeStore, ReplaysKeptPair, ClearsJudgeVerdict,
                                  PausesJudge, SkewsJudgeShare)
from profiler.wrong.output import (Fp16Inputs, InputMutated, MemoByPointer, NaNRow, OneHotInt8, PrecomputedAnswers,
                                   ProbeStatsInt8, RouterBF16Weights, ScratchNotReset, SkippedKTail, StaleOutput,
                                   TensorSubclassLies, TransposedOutput, UninitializedOutput, WeightMutated,
                                   WrongDevice, WrongDtype)
from profiler.wrong.process_state import (BackendFlagToggle, CodeSwapper, DefaultDevice, DispatcherSlowMM,
                                          DispatchModeAtImport, EnvAtImport, FlushDenormal, FunctionModeAtImport,
                                          RuleNumberPatcher, RulePatcher, TF32Flipper, TimerPatcher)
from profiler.wrong.worker import (AtExitRewriter, DetachedRewriter, ExitProcess, FaultAtOneShape, ForgesReply,
                                   ForksSleeper, Hang, InflatesBaseline, PatchesGuard, RebindsReplyPipe, Segfault,
                                   SetsTimerAttribute, SysExit, ThreadComputes)

CPU_WRONG = (StaleOutput, SkippedKTail, RouterBF16Weights, WrongDtype, TransposedOutput,
             NaNRow, InputMutated, ScratchNotReset, WeightMutated, OneHotInt8, TF32Flipper, TimerPatcher, SysExit,
             ProbeStatsInt8, TensorSubclassLies, WrongDevice, RulePatcher, CodeSwapper, RuleNumberPatcher,
             DefaultDevice, FlushDenormal, PrecomputedAnswers, Fp16Inputs)
# UninitializedOutput is caught by the poisoned CUDA allocator; on CPU, malloc may hand its torch.empty the block
# the reference's BF16 copy of the same size just freed, so the unwritten columns can hold the right answer.
GPU_ONLY_WRONG = (UninitializedOutput, MemoByPointer, SideStream, HostSync, CaptureOnlyLossy)
WORKER_WRONG = (ExitProcess, Segfault, Hang, FaultAtOneShape)
LOAD_WRONG = (EnvAtImport,)
TIMED_WRONG = (LaterCapturesHalfK, DegradesAfterReplays)
ALL_WRONG = CPU_WRONG + GPU_ONLY_WRONG + WORKER_WRONG + LOAD_WRONG + TIMED_WRONG
MEASURE_REACH_WRONG = (MemoAcrossReplays, MemoInGraph, OutlierExactInt8, OutlierExactInt8Groups,
                       OutlierExactInt8SmallM, DispatcherSlowMM, BackendFlagToggle)
PROCESS_REACH_WRONG = (ForgesReply, PatchesGuard, InflatesBaseline, ForksSleeper, AtExitRewriter, DetachedRewriter)
REACH_WRONG = MEASURE_REACH_WRONG + PROCESS_REACH_WRONG
ALL_WRONG = ALL_WRONG + REACH_WRONG
GPU_JUDGE_WRONG = (DeviceMemoOfSeveral, CounterInDeviceMemory)
ANSWER_WRONG = (FingerprintMemo, ScansForTimedInputs, ReadsJudgeReferences, LazyOutputInTiming, HooksStaticInput,
                RewritesJudgeStore, ReplaysKeptPair)
UNJUDGED_WRONG = (WrongBetweenCountedCalls, WrongOneCallInTen)
FORGING_WRONG = (RebindsReplyPipe, SetsTimerAttribute, ThreadComputes, ClearsJudgeVerdict, PausesJudge,
                 SkewsJudgeShare)
ROW_KIND_WRONG = (LossyWithoutOutlier, Bf16RoundedPlainRows)
MODE_WRONG = (FunctionModeAtImport, DispatchModeAtImport)
LOAD_WRONG = LOAD_WRONG + MODE_WRONG
JUDGE_REACH_WRONG = ANSWER_WRONG + UNJUDGED_WRONG + FORGING_WRONG + ROW_KIND_WRONG + MODE_WRONG + GPU_JUDGE_WRONG
ALL_WRONG = ALL_WRONG + JUDGE_REACH_WRONG


def spec(cls) -> str:
    """The candidate spec of a class here: the file that defines it and its name, e.g.
    '/.../profiler/wrong/output.py:StaleOutput' (kernels.candidate)."""
    return f"{Path(sys.modules[cls.__module__].__file__).resolve()}:{cls.__name__}"
