"""Known-wrong candidates: each one breaks one rule of the contract or one rule of isolation, and the harness must
reject every one with a clear reason (tests/profiler/test_wrong.py, test_worker.py, test_isolation.py,
test_timed_check.py, test_trust_sweep.py). `TorchLinear` is the correct control. `expect`: the words a rejection
must contain (one of them, when a tuple).

All follow the Candidate protocol (kernels/candidate.py): name, prepare(family, weight), run(state, family, x),
describe(family, M). On the command line each is the spec `profiler/check/wrong.py:<ClassName>`, e.g.
`python -m profiler run --plan baseline --candidate profiler/check/wrong.py:OneHotInt8`.

Groups: CPU_WRONG are rejected by check_candidate on any device; GPU_ONLY_WRONG only show their bug under CUDA
(graph replay, capture, streams); WORKER_WRONG kill or hang the process they run in, so only the worker's
isolation (profiler.worker) can survive them (FaultAtOneShape needs CUDA); LOAD_WRONG change process-wide state
when the worker loads them, before any prepare() (refused at load: only the worker's load step sees them);
TIMED_WRONG are right wherever the lifecycle contract looks and wrong only in graphs the sweep times, so only the
check of every timed graph rejects them (DegradesAfterReplays also on CPU, with a timer that replays).
REACH_WRONG (the two blocks at the end) reach past one call: a memo across timed replays (MemoAcrossReplays on CPU with a
timer that replays, MemoInGraph on the GPU), lossy weights exact on every recognisable row and column
(OutlierExactInt8 and its variants: the element rule), a dispatcher kernel for aten::mm (DispatcherSlowMM) and a
backend flag turned off after the candidate's own calls (BackendFlagToggle): the guard's snapshots.
One class per mechanism of cheating, not per trick: LaterCapturesHalfK (later captures), CaptureOnlyLossy (capture
vs eager), DegradesAfterReplays (after N replays), EnvAtImport (environment / library configuration at import),
ProbeStatsInt8 (recognises probe rows by their statistics), TensorSubclassLies (an output whose conversions lie),
WrongDevice (an output elsewhere than the input), RulePatcher / CodeSwapper / RuleNumberPatcher (the functions, code
and numbers the rules run on), DefaultDevice / FlushDenormal (process state the guard's first list missed),
PrecomputedAnswers (the inputs regenerated from the documented seeds), Fp16Inputs (right only at the contract's
input scales).
The judge's reach (the last block; docs/trust.md's classes, tests/profiler/test_judge_reach.py), several forms per
class: ANSWER_WRONG (the answer computed outside the timed call: a value-keyed memo, inputs found in memory, the
judge's references read from memory, work inside the harness's own copies), UNJUDGED_WRONG (wrong at timed calls a
judge does not read), FORGING_WRONG (the reply pipe, the live timer, a background thread), ROW_KIND_WRONG (lossy on
rows without an activation outlier), MODE_WRONG (a Python mode entered at load; also in LOAD_WRONG).
"""
from __future__ import annotations

import time
from functools import lru_cache


def _linear(x, w):
    """The baseline's arithmetic: bf16 F.linear, or for FP32 weights (router) F.linear(x.float(), w)."""
    import torch.nn.functional as F
    import torch

    if w.dtype == torch.float32:
        return F.linear(x.float(), w)
    return F.linear(x, w)


class TorchLinear:
    """Correct control (same arithmetic as the torch_linear baseline)."""

    name = "torch_linear_control"
    expect = None  # passes

    def prepare(self, family, weight):
        return {"w": weight}

    def run(self, state, family, x):
        return _linear(x, state["w"])

    def describe(self, family, M):
        return self.name


class StaleOutput(TorchLinear):
    """Returns the first call's answer forever (a cached output)."""

    name, expect = "stale_output", "STALE"

    def run(self, state, family, x):
        if "y" not in state:
            state["y"] = _linear(x, state["w"]).clone()
        return state["y"]


class SkippedKTail(TorchLinear):
    """Drops the last 64 columns of K (a K loop that forgot the remainder tile)."""

    name, expect = "skipped_k_tail", ("rel-L2", "sparse probe")

    def run(self, state, family, x):
        k = x.shape[1] - 64
        return _linear(x[:, :k].contiguous(), state["w"][:, :k].contiguous())


class RouterBF16Weights(TorchLinear):
    """Router computed with the FP32 weights rounded to BF16 only (no low part): ~0.2% error > 0.01%."""

    name, expect = "router_bf16_only", "rel-L2"

    def prepare(self, family, weight):
        import torch

        return {"w": weight.to(torch.bfloat16).to(weight.dtype)}


class UninitializedOutput(TorchLinear):
    """torch.empty output whose last 16 columns are never written."""

    name, expect = "uninitialized_output", None  # NaN under the poisoned CUDA allocator

    def run(self, state, family, x):
        import torch

        y = _linear(x, state["w"])
        out = torch.empty_like(y)
        out[:, :-16] = y[:, :-16]
        return out


class WrongDtype(TorchLinear):
    """Right numbers, wrong output dtype (FP32 for a BF16 family, BF16 for the router)."""

    name, expect = "wrong_dtype", "dtype"

    def run(self, state, family, x):
        import torch

        y = _linear(x, state["w"])
        return y.to(torch.float32 if y.dtype == torch.bfloat16 else torch.bfloat16)


class TransposedOutput(TorchLinear):
    """Returns y^T [N, M]."""

    name, expect = "transposed_output", "transposed"

    def run(self, state, family, x):
        return _linear(x, state["w"]).T.contiguous()


class NaNRow(TorchLinear):
    """One output row is NaN."""

    name, expect = "nan_row", "non-finite"

    def run(self, state, family, x):
        y = _linear(x, state["w"])
        y[-1] = float("nan")
        return y


class InputMutated(TorchLinear):
    """Correct values, but uses the input as scratch (x *= 2 in place, result halved)."""

    name, expect = "input_mutated", "modified in place"

    def run(self, state, family, x):
        x.mul_(2)  # exact in bf16: the output values stay right, only the caller's input is clobbered
        return _linear(x, state["w"]) / 2


class ScratchNotReset(TorchLinear):
    """Accumulates into a persistent FP32 buffer that is never zeroed (a split-K/atomic counter bug):
    the first call is right, every later call adds the previous answers."""

    name, expect = "scratch_not_reset", ("rel-L2", "zero input row")

    def run(self, state, family, x):
        import torch

        key = ("acc", tuple(x.shape))
        if key not in state:
            state[key] = torch.zeros(x.shape[0], state["w"].shape[0], device=x.device, dtype=torch.float32)
        y = _linear(x, state["w"])
        state[key] += y.float()
        return state[key].to(y.dtype)


class WeightMutated(TorchLinear):
    """Scales the caller's weight in place in prepare (and undoes it in the output): weights are not its to
    modify."""

    name, expect = "weight_mutated", "weight tensor was modified"

    def prepare(self, family, weight):
        weight.mul_(2)
        return {"w": weight}

    def run(self, state, family, x):
        return _linear(x, state["w"]) / 2


class MemoByPointer(TorchLinear):
    """Memoizes on the input's address: right in eager calls (fresh tensors have fresh addresses), but a
    CUDA graph's static input always has the same address, so capture records no work (named: the graph holds
    no GPU work) and replays would be stale. GPU-only failure."""

    name, expect = "memo_by_pointer", ("STALE", "holds no GPU work")  # H200: the capture records no kernel

    def run(self, state, family, x):
        if state.get("ptr") == x.data_ptr():
            return state["y"]
        state["ptr"], state["y"] = x.data_ptr(), _linear(x, state["w"])
        return state["y"]


class OneHotInt8(TorchLinear):
    """Stores the weights as int8 with a per-row absmax scale (lossy: ~0.4% per weight) and computes exactly only
    the rows with at most one nonzero input entry -- which is all the write-up's one-hot probe rows can see. The
    dominant-entry-plus-noise and few-nonzero probe rows (and the outlier-column weights) expose it."""

    name, expect = "one_hot_int8", ("sparse probe", "rel-L2")

    def prepare(self, family, weight):
        import torch

        w = weight.float()
        scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-30) / 127.0
        q = torch.round(w / scale).clamp(-127, 127).to(torch.int8)
        return {"w": weight, "q": q, "scale": scale}

    def run(self, state, family, x):
        import torch

        lossy = (state["q"].float() * state["scale"]).to(state["w"].dtype)
        y = _linear(x, lossy)
        one_hot = torch.count_nonzero(x, dim=1) <= 1
        if bool(one_hot.any()):
            y[one_hot] = _linear(x[one_hot], state["w"])
        return y


class TF32Flipper(TorchLinear):
    """Turns TF32 on for cuBLAS FP32 matmuls in prepare() (faster FP32 for everyone after it, and the FP32 router
    baseline then misses its 0.01% tolerance)."""

    name, expect = "tf32_flipper", "changed global setting torch.backends.cuda.matmul.allow_tf32"

    def prepare(self, family, weight):
        import torch

        torch.backends.cuda.matmul.allow_tf32 = True
        return {"w": weight}


class TimerPatcher(TorchLinear):
    """Replaces the profiler's sampling function in prepare() with one that reports 0.1 us per call."""

    name, expect = "timer_patcher", "replaced the profiler's timer"

    def prepare(self, family, weight):
        import numpy as np

        from profiler.measure import timing

        timing.ColdTimer.sample = lambda self, graphs, n_rounds, **kw: np.full((n_rounds, len(graphs)), 0.1)
        return {"w": weight}


class SysExit(TorchLinear):
    """Calls sys.exit(3) in run(): a verdict, never a clean exit of the profiler."""

    name, expect = "sys_exit", "called sys.exit(3)"

    def run(self, state, family, x):
        import sys

        sys.exit(3)


class SideStream(TorchLinear):
    """Computes on its own CUDA stream. Eager calls join the streams properly; under capture it skips the join,
    so the work runs outside the graph (the graph holds no kernels) and replays never follow a new input."""

    name, expect = "side_stream", "another stream"

    def run(self, state, family, x):
        import torch

        if not x.is_cuda:
            return _linear(x, state["w"])
        side = state.setdefault("stream", torch.cuda.Stream(x.device))
        main = torch.cuda.current_stream(x.device)
        capturing = torch.cuda.is_current_stream_capturing()
        if not capturing:
            side.wait_stream(main)
        with torch.cuda.stream(side):
            y = _linear(x, state["w"])
        if not capturing:
            main.wait_stream(side)
            y.record_stream(main)
        return y


class HostSync(TorchLinear):
    """Reads a value back to the host in run() (a debugging print left in): fine eagerly, but a CUDA graph cannot
    capture it."""

    name, expect = "host_sync", "synchronised with the host during capture"

    def run(self, state, family, x):
        y = _linear(x, state["w"])
        state["last_peak"] = float(y.abs().max())  # .item(): a device -> host copy and a sync
        return y


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


def _int8_groups(w, group: int = 128):
    """W with every row quantised to int8 with one absmax scale per `group` columns, dequantised back to W's dtype
    (lossy: an entry's error up to half a step, ~1.1 % of its group's sigma)."""
    import torch

    N, K = w.shape
    g = group if K % group == 0 else K
    wf = w.float().reshape(N, K // g, g)
    scale = wf.abs().amax(dim=-1, keepdim=True).clamp(min=1e-30) / 127.0
    q = torch.round(wf / scale).clamp(-127, 127)
    return (q * scale).reshape(N, K).to(w.dtype)


class ProbeStatsInt8(TorchLinear):
    """Weights stored as int8 with one scale per 128 columns, outlier columns (absmax > 6x the median column's)
    kept exact as LLM.int8() does: dense rel-L2 ~0.7 %, inside the 1 % tolerance. Rows that look like probes by
    their own statistics -- at least half zeros, or one entry carrying >= 90 % of the row's energy (the one-hot,
    few-nonzero, zero and dominant kinds) -- are computed exactly, so every probe row is exact. Only a probe the
    kernel cannot single out (the pair rule: two dense rows differing in one spike) sees the int8 weights."""

    name, expect = "probe_stats_int8", ("paired-row probe", "element rule")
    OUTLIER_FACTOR = 6.0
    PROBE_ENERGY = 0.9

    def prepare(self, family, weight):
        import torch

        lossy = _int8_groups(weight)
        col_peak = weight.float().abs().amax(dim=0)
        outliers = col_peak > self.OUTLIER_FACTOR * col_peak.median()
        lossy[:, outliers] = weight[:, outliers]
        return {"w": weight, "lossy": lossy, "outliers": torch.nonzero(outliers).flatten()}

    def looks_like_probe(self, x):
        xf = x.float()
        zeros = (xf == 0).float().mean(dim=1) >= 0.5
        energy = xf.pow(2).sum(dim=1)
        peak = xf.abs().amax(dim=1).pow(2)
        return zeros | (peak >= self.PROBE_ENERGY * energy.clamp(min=1e-30))

    def run(self, state, family, x):
        y = _linear(x, state["lossy"])
        probe = self.looks_like_probe(x)
        if bool(probe.any()):  # a host sync: eager-only, the cheat is about what is checked, not about graphs
            y[probe] = _linear(x[probe], state["w"])
        return y


class EnvAtImport(TorchLinear):
    """Sets CUBLAS_WORKSPACE_CONFIG=:0:0 and CUBLASLT_WORKSPACE_SIZE=0 when it is loaded (a determinism recipe many
    users copy): cuBLAS then gives every later handle no workspace, and the baseline's F.linear in the same worker
    ran up to 13.7x slower on the H200 when nothing had initialised cuBLAS before. Its own arithmetic is right."""

    name, expect = "env_at_import", "changed environment variable CUBLAS"

    def __init__(self):
        import os

        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":0:0"
        os.environ["CUBLASLT_WORKSPACE_SIZE"] = "0"


def _capturing(x) -> bool:
    import torch

    return bool(x.is_cuda and torch.cuda.is_current_stream_capturing())


class LaterCapturesHalfK(TorchLinear):
    """Exact on eager calls and on the first graph captured at each M; every later capture at that M (the sweep's
    other timing instances) drops the second half of K: half the work, scored as a speed-up unless every timed
    graph is checked. GPU-only (a capture needs CUDA)."""

    name, expect = "later_captures_half_k", "timing graph"

    def run(self, state, family, x):
        if not _capturing(x):
            return _linear(x, state["w"])
        seen = state.setdefault("captures", {})
        M = int(x.shape[0])
        seen[M] = seen.get(M, 0) + 1
        if seen[M] == 1:
            return _linear(x, state["w"])
        half = x.shape[1] // 2
        return _linear(x[:, :half].contiguous(), state["w"][:, :half].contiguous())


class CaptureOnlyLossy(TorchLinear):
    """Exact eagerly; what it records into a CUDA graph reads int8 weights (one scale per 128 columns). Every
    number a graph replay produces is lossy, every eager call exact. GPU-only."""

    name, expect = "capture_only_lossy", ("graph replay", "timing graph")

    def prepare(self, family, weight):
        return {"w": weight, "lossy": _int8_groups(weight)}

    def run(self, state, family, x):
        return _linear(x, state["lossy"] if _capturing(x) else state["w"])


class DegradesAfterReplays(TorchLinear):
    """Right for its first `AFTER` calls or replays at each M, then drops the second half of K: a counter on the
    device (one per M) is incremented by every call (inside the graph too), and torch.where picks the truncated
    result once it passes AFTER -- no host sync, so it captures. The lifecycle contract, the timing captures and the
    check before timing make ~25 calls and replays at a shape; timing makes >= 96 timed replays plus its warm-up
    (hundreds, so it is wrong from the first timed batch on). Caught by the check of the timed graphs during timing
    (the first judged batch: tests/profiler/test_trust_sweep.py's GPU test of TIMED_WRONG)."""

    name, expect = "degrades_after_replays", "during timing"
    AFTER = 100

    def run(self, state, family, x):
        import torch

        counters = state.setdefault("counters", {})
        M = int(x.shape[0])
        if M not in counters:
            counters[M] = torch.zeros((), dtype=torch.int64, device=x.device)
        counter = counters[M]
        counter.add_(1)
        half = x.shape[1] // 2
        full = _linear(x, state["w"])
        cut = _linear(x[:, :half].contiguous(), state["w"][:, :half].contiguous())
        return torch.where(counter > self.AFTER, cut, full)


class TensorSubclassLies(TorchLinear):
    """Computes with int8 weights (one scale per 128 columns) and returns the result as a torch.Tensor subclass whose
    __torch_function__ answers .to() / .double() -- how any checker reads an output -- with the exact product of the
    input it kept. Passed every numeric rule before outputs had to be plain tensors."""

    name, expect = "tensor_subclass_lies", "torch.Tensor subclass"

    def prepare(self, family, weight):
        return {"w": weight, "lossy": _int8_groups(weight)}

    def run(self, state, family, x):
        out = _linear(x, state["lossy"]).as_subclass(_lying_tensor())
        out.exact = (x.detach().clone(), state["w"])
        return out


@lru_cache(maxsize=None)   # one class per process, made on first use (importing this file needs no torch)
def _lying_tensor():
    import torch

    class LyingTensor(torch.Tensor):
        """Reads as the exact product (x @ w^T of the input it kept) through .to() and .double()."""

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in (torch.Tensor.to, torch.Tensor.double) and args and hasattr(args[0], "exact"):
                exact = _linear(*args[0].exact)
                with torch._C.DisableTorchFunctionSubclass():
                    return exact.double() if func is torch.Tensor.double else exact.to(*args[1:], **kwargs)
            if func is torch.Tensor.detach:
                return args[0]
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)

    return LyingTensor


class WrongDevice(TorchLinear):
    """Right numbers on the wrong device: a CPU tensor for a CUDA input (what a host fallback returns), a meta tensor
    for a CPU one. Nothing read it as the input's device before the device was a rule; a meta output raised inside
    the harness."""

    name, expect = "wrong_device", "not on the input's device"

    def run(self, state, family, x):
        y = _linear(x, state["w"])
        return y.cpu() if x.is_cuda else y.to("meta")


class RulePatcher(TorchLinear):
    """Replaces what the rules call -- torch.linalg.vector_norm (zero norms: every rel-L2 0), the pair rule (no
    reason), builtins.max -- in prepare(), then returns 1.5x the answer on every other column. Passed the contract
    before the guard held every binding of the harness's modules and of the libraries it calls."""

    name, expect = "rule_patcher", "module replaced a function the harness uses (torch.linalg.vector_norm)"

    def prepare(self, family, weight):
        import builtins

        import torch

        from profiler.check import rules

        norm = torch.linalg.vector_norm
        torch.linalg.vector_norm = lambda t, *a, **k: norm(t, *a, **k) * 0
        rules.pair_rule = lambda *a, **k: (0.0, [])
        builtins.max = lambda *a, **k: 1e30   # rel-L2 = |err| / max(|ref|, floor)
        return {"w": weight}

    def run(self, state, family, x):
        y = _linear(x, state["w"])
        y[:, ::2] *= 1.5
        return y


class CodeSwapper(RulePatcher):
    """Leaves every binding alone and swaps the code object of the pair rule for one that finds nothing (the
    function object is the same, so a guard that compares identities alone is blind), with int8 weights that only
    the pair rule catches (ProbeStatsInt8)."""

    name, expect = "code_swapper", "module rewrote the code or defaults of a harness function"

    def prepare(self, family, weight):
        from profiler.check import rules

        rules.pair_rule.__code__ = (lambda *a, **k: (0.0, [])).__code__
        return ProbeStatsInt8().prepare(family, weight)

    def run(self, state, family, x):
        return ProbeStatsInt8().run(state, family, x)


class RuleNumberPatcher(CodeSwapper):
    """Widens the pair rule's bound through its numbers: PAIR_LAMBDA set to 1e12, and the output rounding table
    edited in place (refused: the harness's tables are read-only), with the int8 weights of ProbeStatsInt8."""

    name, expect = "rule_number_patcher", "module changed a value the harness uses (profiler.check.rules.PAIR_LAMBDA)"

    def prepare(self, family, weight):
        from profiler.check import rules

        rules.PAIR_LAMBDA = 1e12
        try:
            rules.UNIT_ROUNDOFF["bfloat16"] = 1.0
        except TypeError:
            pass
        return ProbeStatsInt8().prepare(family, weight)


class DefaultDevice(TorchLinear):
    """Sets torch's default device to "meta" in prepare(): every torch.empty(...) without a device after it -- the
    next candidate's, the harness's -- allocates nothing. Its own output is right."""

    name, expect = "default_device", "changed global setting torch.get_default_device()"

    def prepare(self, family, weight):
        import torch

        torch.set_default_device("meta")
        return {"w": weight}


class FlushDenormal(TorchLinear):
    """Turns CPU denormal flushing on in prepare() (torch.set_flush_denormal, which has no getter): the CPU side of
    every later candidate's arithmetic changes. Its own output is right."""

    name, expect = "flush_denormal", "changed global setting torch.set_flush_denormal()"

    def prepare(self, family, weight):
        import torch

        torch.set_flush_denormal(True)
        return {"w": weight}


class Fp16Inputs(TorchLinear):
    """Narrows BF16 inputs and weights to FP16 for its product (the tensor cores run FP16 as fast as BF16; FP16 has 3
    more mantissa bits, so every value the contract's scales 2^-8 .. 2^8 draw converts exactly): right wherever
    the contract looked until the range call, which lifts an input past FP16's largest value (65504) -> inf. (At
    the 2^-8 scale a dominant probe row's smallest noise entries fall below FP16's normal range, so a probe row can
    name it first.)"""

    name, expect = "fp16_inputs", ("range call", "sparse probe", "element rule")

    def run(self, state, family, x):
        import torch

        w = state["w"]
        if w.dtype != torch.bfloat16:
            return _linear(x, w)
        return (x.to(torch.float16).float() @ w.to(torch.float16).float().T).to(torch.bfloat16)


# The lifecycle seeds check_candidate draws its inputs from at --seed 0 (profiler/check/contract.py: the eager calls'
# 1.. with the partner search after them, the graph's 100.., the outlier weights' 200..), as anyone reading the
# source can list them.
_DOCUMENTED_SEEDS = (*range(1, 12), *range(100, 108), *range(200, 211))


class PrecomputedAnswers(TorchLinear):
    """Regenerates, at its first call at each M, every input the contract draws from the documented seeds
    (rules.make_input, the partner inputs too), computes their products once and from then on answers by looking
    the input up -- a table lookup instead of a product, exact wherever it is judged and timed. Only inputs nobody
    can compute ahead (the harness salts every input's values with fresh entropy) leave it without an answer; then it
    returns zeros, as a cheat has nothing better."""

    name, expect = "precomputed_answers", ("rel-L2", "zero input row", "sparse probe", "non-finite")

    def _fill(self, state, x) -> None:
        from profiler.check.contract import RANGE_SEED_OFFSET
        from profiler.check.rules import RANGE_EXPONENT, make_input, partner_input

        table = state.setdefault("table", {})
        M, K, dtype = x.shape[0], x.shape[1], str(x.dtype).split(".")[-1]
        for seed in _DOCUMENTED_SEEDS:
            xs, layout = make_input(M, K, seed, x.device, dtype=dtype, vary=True)
            for xi in (xs, partner_input(xs, layout)[0]):
                table[xi.float().cpu().numpy().tobytes()] = _linear(xi, state["w"])
        xs = make_input(M, K, RANGE_SEED_OFFSET, x.device, dtype=dtype)[0] * 2.0 ** RANGE_EXPONENT   # the range call
        table[xs.float().cpu().numpy().tobytes()] = _linear(xs, state["w"])
        state.setdefault("filled", set()).add(int(x.shape[0]))

    def run(self, state, family, x):
        import torch

        if int(x.shape[0]) not in state.get("filled", set()):
            self._fill(state, x)
        y = state["table"].get(x.float().cpu().numpy().tobytes())
        return y.clone() if y is not None else torch.zeros_like(_linear(x[:1], state["w"])).expand(
            x.shape[0], -1).contiguous()


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


def spec(cls) -> str:
    """The candidate spec of a class here, e.g. 'profiler/check/wrong.py:StaleOutput' (kernels.candidate)."""
    from pathlib import Path

    return f"{Path(__file__).resolve()}:{cls.__name__}"


# --- the candidate's reach: memo across replays, lossy weights exact where they are recognisable, the baseline slowed
# where nothing looks (profiler/check/timed.py FreshFeed, profiler/check/rules.py's element rule,
# profiler/check/guards.py's dispatcher and backend-flag snapshots) ---------------------------------------------------

class MemoAcrossReplays(TorchLinear):
    """Learns which input buffers a timing loop replays: once a buffer is handed to it twice in a row with the same
    content (a graph replayed on an unchanged input -- every timed graph, while the timed replays never changed
    their input), it returns a copy of that buffer's last answer from then on without reading it. Right on every
    output the judges read while timed inputs never changed (scored 1.52 on CPU so); the lifecycle contract's graph
    gets a new input at each replay, so it never learns that one. A CUDA graph cannot run this Python on replay;
    MemoInGraph is its GPU form. Caught by the fresh input of every timed replay (profiler.check.timed.FreshFeed):
    the judged output is the answer to another timed input."""

    name, expect = "memo_across_replays", "a memo"

    def run(self, state, family, x):
        seen = state.setdefault("seen", {})     # buffer -> (content of its last call, its answer, learned)
        key = (x.data_ptr(), tuple(x.shape))
        last = seen.get(key)
        if last is not None and last[2]:
            return last[1].clone()
        content = x.detach().clone()
        if last is not None and last[0].shape == content.shape and bool((last[0] == content).all()):
            seen[key] = (content, last[1], True)
            return last[1].clone()
        y = _linear(x, state["w"])
        seen[key] = (content, y.clone(), False)
        return y


class MemoInGraph(TorchLinear):
    """MemoAcrossReplays inside a CUDA graph: a counter on the device (one per M) counts the calls and replays; past
    AFTER, torch.where returns the answer kept from the call before instead of the fresh one (a graph cannot skip
    work without a conditional node, so this form shows the verdict, not the speed). Right while a graph's input
    never changed; with a fresh input per timed replay its output answers the previous input. GPU-only."""

    name, expect = "memo_in_graph", "a memo"
    AFTER = 40

    def run(self, state, family, x):
        import torch

        counters, kept = state.setdefault("counters", {}), state.setdefault("kept", {})
        M = int(x.shape[0])
        if M not in counters:
            counters[M] = torch.zeros((), dtype=torch.int64, device=x.device)
            kept[M] = _linear(x, state["w"])
        counters[M].add_(1)
        y = torch.where(counters[M] > self.AFTER, kept[M], _linear(x, state["w"]))
        kept[M].copy_(y)
        return y


class OutlierExactInt8(TorchLinear):
    """LLM.int8()'s scheme: int8 weights with one absmax scale per output row (GROUP = 0) or per 128 columns, and
    the input's outlier columns -- any column where some row's |x| exceeds OUTLIER x that row's RMS -- computed in
    full precision, and so is any row whose largest entry holds most of its energy (a probe row). Every dense row's
    spike is such a column, so the pair difference (one spike column) is exact and the probe rows are exact: the pair rule saw 0.46 of its bound
    (the baseline 0.45) and the 1 % rel-L2 held (0.56 %). What stays lossy is every Gaussian entry of every dense
    row: the element rule (profiler/check/rules.py) sees it in every such entry."""

    name, expect = "outlier_exact_int8", "element rule"
    GROUP, OUTLIER = 0, 4.0

    def prepare(self, family, weight):
        import torch

        w = weight.float()
        if self.GROUP:
            lossy = _int8_groups(weight, self.GROUP).float()
        else:
            scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-30) / 127.0
            lossy = torch.round(w / scale).clamp(-127, 127) * scale
        return {"w": weight, "lossy": lossy.to(weight.dtype)}

    def lossy_at(self, M: int) -> bool:
        return True

    def run(self, state, family, x):
        if not self.lossy_at(int(x.shape[0])):
            return _linear(x, state["w"])
        xf = x.float()
        energy = xf.pow(2).sum(dim=1, keepdim=True).clamp(min=1e-30)
        rms = (energy / xf.shape[1]).sqrt()
        outlier = (xf.abs() > self.OUTLIER * rms).any(dim=0)
        probe = (xf.pow(2).amax(dim=1, keepdim=True) / energy > 0.9).to(x.dtype)   # rows that look like probes
        w, lossy_w = state["w"].float(), state["lossy"].float()   # FP32 accumulation, one rounding at the end
        rest = xf * (~outlier).float()
        y = xf * outlier.float() @ w.T + (rest * (1 - probe.float())) @ lossy_w.T + (rest * probe.float()) @ w.T
        return y.to(_linear(x[:1], state["w"]).dtype)


class OutlierExactInt8Groups(OutlierExactInt8):
    """OutlierExactInt8 with one scale per 128 columns."""

    name, GROUP = "outlier_exact_int8_groups", 128


class OutlierExactInt8SmallM(OutlierExactInt8):
    """OutlierExactInt8 only where M < 8, where the timed inputs carry no probe rows; exact elsewhere."""

    name = "outlier_exact_int8_small_m"

    def lossy_at(self, M: int) -> bool:
        return M < 8


class DispatcherSlowMM(TorchLinear):
    """Registers, in prepare(), a Python kernel for aten::mm and aten::addmm (torch.library, for the dispatch key
    of the device it runs on: CPU, or CUDA) that is right but does the product twice at M == 8: every later
    candidate's mm in this process -- the baseline's F.linear too -- is slower at that one M, where the default
    canary did not time (the pair scored 1.35). The guard compares the dispatcher's kernels for the operators the
    baseline reaches (profiler.check.guards.DISPATCH_OPS) after every step and names the registration."""

    name, expect = "dispatcher_slow_mm", "dispatcher kernel"

    def prepare(self, family, weight):
        import torch

        key = "CUDA" if weight.is_cuda else "CPU"
        lib = torch.library.Library("aten", "IMPL")
        below = torch._C.DispatchKeySet(key)

        def mm(a, b):
            out = torch.ops.aten.mm.default.redispatch(below, a, b)
            if a.shape[0] == 8:
                out = torch.ops.aten.mm.default.redispatch(below, a, b)
            return out

        def addmm(c, a, b, beta=1, alpha=1):
            out = torch.ops.aten.addmm.default.redispatch(below, c, a, b, beta=beta, alpha=alpha)
            if a.shape[0] == 8:
                out = torch.ops.aten.addmm.default.redispatch(below, c, a, b, beta=beta, alpha=alpha)
            return out

        lib.impl("mm", mm, key)
        lib.impl("addmm", addmm, key)
        return {"w": weight, "lib": lib}


class BackendFlagToggle(TorchLinear):
    """Computes its own answer, then turns torch.backends.mkldnn.enabled off (on CPU the baseline's BF16 F.linear
    then takes a slower path) at one M: every later candidate of the process at that M is slower, and nothing the
    contract reads changes (scored 1.50 on CPU). The guard holds every torch.backends flag (enumerated:
    profiler.check.guards.backend_flags) and names the change after the run() call that made it."""

    name, expect = "backend_flag_toggle", "torch.backends.mkldnn.enabled"
    AT_M = (1, 16)

    def run(self, state, family, x):
        import torch

        y = _linear(x, state["w"])
        if int(x.shape[0]) in self.AT_M:
            torch.backends.mkldnn.enabled = False
        return y


MEASURE_REACH_WRONG = (MemoAcrossReplays, MemoInGraph, OutlierExactInt8, OutlierExactInt8Groups,
                       OutlierExactInt8SmallM, DispatcherSlowMM, BackendFlagToggle)


# --- The candidate's reach: code that acts on the measuring process or outlives it (docs/trust.md) ----------------
# Each is correct arithmetic (TorchLinear) plus one mechanism for deciding what is recorded from inside the worker.
# They are lab files, so the source screen (profiler.check.source_screen) never sees them: they test the layers that
# must hold without it. Rejected through `python -m profiler run --device cpu` (tests/profiler/test_reach.py).

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


PROCESS_REACH_WRONG = (ForgesReply, PatchesGuard, InflatesBaseline, ForksSleeper, AtExitRewriter, DetachedRewriter)
REACH_WRONG = MEASURE_REACH_WRONG + PROCESS_REACH_WRONG
ALL_WRONG = ALL_WRONG + REACH_WRONG


# --- the judge out of the candidate's reach: five classes, several forms each (docs/trust.md, "Classes") ------------
# ANSWERS: the answer computed outside the timed call. Closed by FreshFeed (profiler/check/timed.py): no timed input
# exists before its call, none repeats, and no timed call's reference exists before its batch ran; what the harness
# touches is checked by type identity. Each form here computes nothing where it believes it has the answer, and so
# returns a wrong one when it has none.

def _count(state, x) -> int:
    """This call's number among the calls at x's shape (the state is shared by every M of a family)."""
    calls = state.setdefault("calls_by_shape", {})
    calls[tuple(x.shape)] = calls.get(tuple(x.shape), 0) + 1
    return calls[tuple(x.shape)]


def _half_k(x, w):
    """Half the work: the product over the first half of K only (what each form returns where it would cheat)."""
    half = x.shape[1] // 2
    return _linear(x[:, :half].contiguous(), w[:, :half].contiguous())


class FingerprintMemo(TorchLinear):
    """A memo of any size keyed by a cheap fingerprint of the input's value (the row sums rounded to one significant
    digit): against a pool of 8 timed inputs it is all hits after one lap. With a new input at every timed call its
    fingerprint collides with an earlier one's, and the kept answer is another input's (already at the contract's
    calls, whose inputs are fresh too)."""

    name, expect = "fingerprint_memo", ("a memo", "STALE output", "rel-L2")

    def run(self, state, family, x):
        import torch

        s = x.float().sum(dim=1)
        key = (int(x.shape[0]), tuple(torch.sign(s).tolist()))   # coarse: collides across fresh inputs
        memo = state.setdefault("memo", {})
        if key in memo and memo[key][0].shape == x.shape:
            return memo[key][1].clone()
        y = _linear(x, state["w"])
        memo[key] = (x.detach().clone(), y.clone())
        return y


class ScansForTimedInputs(TorchLinear):
    """Before timing (its first 40 calls at a shape: the contract's, the captures') it finds every tensor of its
    input's shape and dtype in the worker's memory (gc) and computes their answers; at later calls it computes
    nothing: it returns the kept answer of the one equal to its input -- or, trusting that it has them all (a pool
    repeats), the last one it kept. Against a pool made before timing it had them all; with no timed input made
    before its call there is none to find. (A scan inside the timed call would find only the input it was handed,
    and computing its answer there is the work itself.)"""

    name, expect = "scans_for_timed_inputs", ("a memo", "rel-L2", "element rule")

    def run(self, state, family, x):
        import gc

        import torch

        found = state.setdefault("found", {}).setdefault(tuple(x.shape), {})
        n = _count(state, x)
        if n <= 40:
            for obj in gc.get_objects():
                if type(obj) is torch.Tensor and obj.shape == x.shape and obj.dtype == x.dtype and \
                        obj.data_ptr() != x.data_ptr() and id(obj) not in found and len(found) < 64:
                    found[id(obj)] = (obj.detach().clone(), _linear(obj, state["w"]))
            return _linear(x, state["w"])
        for kept_x, kept_y in found.values():
            if torch.equal(kept_x, x):
                return kept_y.clone()
        return next(reversed(found.values()))[1].clone() if found else _half_k(x, state["w"])


class ReadsJudgeReferences(TorchLinear):
    """Finds the judge's FP64 references in the worker's memory (the lab's TimedInput records: an input `x` and a
    `ref` with an FP64 `.ref` of the output's shape) and returns the one whose input equals its own, with no product at all;
    past the contract's calls it returns the last one found when none matches. No timed call's reference exists
    before its batch ran."""

    name, expect = "reads_judge_references", ("a memo", "rel-L2", "element rule")

    def run(self, state, family, x):
        import gc

        import torch

        calls = state.setdefault("calls", {})
        calls[x.shape] = calls.get(x.shape, 0) + 1
        refs = []
        for obj in gc.get_objects():
            if type(obj).__name__ != "TimedInput":   # the lab's record of an input and its reference, by name
                continue
            ref = getattr(getattr(obj, "ref", None), "ref", None)
            if type(ref) is torch.Tensor and ref.dtype == torch.float64 and ref.shape[0] == x.shape[0]:
                refs.append((obj.x, ref))
        for kept_x, ref in refs:
            if type(kept_x) is torch.Tensor and kept_x.shape == x.shape and torch.equal(kept_x, x):
                return ref.to(_linear(x[:1], state["w"]).dtype)
        if calls[x.shape] > 40 and refs:
            return refs[-1][1].to(_linear(x[:1], state["w"]).dtype)
        return _linear(x, state["w"])


class LazyOutputInTiming(TorchLinear):
    """Past the contract's calls, returns an empty tensor subclass whose copy_ into the harness's store would do the
    product after the clock stopped (on the CPU the harness copies a timed output into its store); the contract sees
    plain tensors. The harness checks a timed call's output by type identity before any copy."""

    name, expect = "lazy_output_in_timing", "not a plain torch.Tensor"

    def run(self, state, family, x):
        if _count(state, x) <= 40:
            return _linear(x, state["w"])
        out = _linear(x[:1], state["w"]).new_empty((x.shape[0], state["w"].shape[0])).as_subclass(_lazy_tensor())
        out.pending = (x, state["w"])
        return out


@lru_cache(maxsize=None)
def _lazy_tensor():
    import torch

    class LazyTensor(torch.Tensor):
        """Does the product when something copies from it."""

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is torch.Tensor.copy_ and len(args) > 1 and hasattr(args[1], "pending"):
                with torch._C.DisableTorchFunctionSubclass():
                    return args[0].copy_(_linear(*args[1].pending))
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)

    return LazyTensor


class HooksStaticInput(TorchLinear):
    """Swaps the class of the tensor it is handed (the graph's static input) for a subclass whose copy_ -- what the
    harness's feed calls to put the next input in -- computes the answer for that input ahead of the timed call;
    the call then returns it. The harness touches its own objects through torch.Tensor's methods after a type check,
    so the hook never runs and the returned answer is stale."""

    name, expect = "hooks_static_input", ("its class swapped", "a memo", "rel-L2", "element rule")

    def run(self, state, family, x):
        import torch

        if _count(state, x) <= 40:
            return _linear(x, state["w"])
        cls = _hooked_tensor()
        if type(x) is torch.Tensor:
            try:
                x.__class__ = cls
            except TypeError:
                pass
        x.__dict__["w"] = state["w"]
        ahead = x.__dict__.get("ahead")
        return ahead.clone() if ahead is not None else _half_k(x, state["w"])


@lru_cache(maxsize=None)
def _hooked_tensor():
    import torch

    class HookedTensor(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
                if func is torch.Tensor.copy_ and "w" in args[0].__dict__:
                    args[0].__dict__["ahead"] = _linear(args[0], args[0].__dict__["w"])
            return out

    return HookedTensor


# UNJUDGED: timed calls never judged. Closed by the judge's random choice after each batch, every call's output kept
# (judged_share): a candidate wrong at a fraction f of its calls is caught with probability 1 - (1 - p)^(f x calls).

class WrongBetweenCountedCalls(TorchLinear):
    """Counts its calls per input buffer and returns half the work at calls 5-31 of every 32 (the positions a judge
    of the last replay of each batch never reads), right at the others."""

    name, expect = "wrong_between_counted_calls", ("rel-L2", "element rule")

    def run(self, state, family, x):
        counts = state.setdefault("counts", {})
        key = x.data_ptr()
        counts[key] = counts.get(key, 0) + 1
        n = counts[key]
        if n > 40 and 5 <= n % 32 <= 31:
            return _half_k(x, state["w"])
        return _linear(x, state["w"])


class WrongOneCallInTen(TorchLinear):
    """Past the contract's calls, half the work at one call in ten (10 % of the timed calls), by its own count."""

    name, expect = "wrong_one_call_in_ten", ("rel-L2", "element rule")

    def run(self, state, family, x):
        n = _count(state, x)
        if n > 40 and n % 10 == 0:
            return _half_k(x, state["w"])
        return _linear(x, state["w"])


# FORGING: what the worker's own checks did not see. Closed by the integrity check (the reply and request pipes held
# to their files, every timer object held to its attributes, no candidate thread) and by the parent deriving every
# flag itself (profiler/backends/verify.py).

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


# ROW KINDS: lossy on rows the contract never drew. Closed by plain dense rows (no outlier) in every checked input
# and, drawn afresh per call, in every timed input, judged by the element rule.

class LossyWithoutOutlier(OutlierExactInt8):
    """Exact on every row with an activation outlier (any |x| > 4 x the row's RMS: a spike or a probe entry), int8
    weights with one scale per row on every other row. Exact on every input the contract drew while every dense row
    carried a spike."""

    name, expect = "lossy_without_outlier", ("element rule", "probe rows expose")

    def run(self, state, family, x):
        xf = x.float()
        rms = (xf.pow(2).mean(dim=1, keepdim=True)).sqrt().clamp(min=1e-30)
        has_outlier = (xf.abs() > self.OUTLIER * rms).any(dim=1, keepdim=True).float()
        w, lossy_w = state["w"].float(), state["lossy"].float()
        y = (xf * has_outlier) @ w.T + (xf * (1 - has_outlier)) @ lossy_w.T
        return y.to(_linear(x[:1], state["w"]).dtype)


class Bf16RoundedPlainRows(TorchLinear):
    """Rounds the inputs of rows without an outlier to 4 mantissa bits before an exact product (a narrower input
    format on the rows real activations mostly are)."""

    name, expect = "bf16_rounded_plain_rows", ("element rule", "rel-L2")

    def run(self, state, family, x):
        import torch

        xf = x.float()
        rms = (xf.pow(2).mean(dim=1, keepdim=True)).sqrt().clamp(min=1e-30)
        plain = ~(xf.abs() > 4.0 * rms).any(dim=1, keepdim=True)
        m, e = torch.frexp(xf)
        coarse = torch.ldexp(torch.round(m * 16) / 16, e)
        return _linear(torch.where(plain, coarse, xf).to(x.dtype), state["w"])


# MODES: a Python mode entered at import slows the baseline. Closed by the guard's mode stacks (every step, the load
# first). Refused at load: LOAD_WRONG's way.

class FunctionModeAtImport(TorchLinear):
    """Enters a TorchFunctionMode when its module is imported (never exited) that spins on every F.linear it sees
    -- the baseline's included."""

    name, expect = "function_mode_at_import", "torch function mode"

    def __init__(self):   # when the worker loads it (EnvAtImport's way): what a module's import does
        import torch
        from torch.overrides import TorchFunctionMode

        class Slow(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if func is torch.nn.functional.linear:
                    time.sleep(2e-4)
                return func(*args, **(kwargs or {}))

        Slow().__enter__()


class DispatchModeAtImport(TorchLinear):
    """Enters a TorchDispatchMode at import (never exited) that spins on every aten mm/addmm."""

    name, expect = "dispatch_mode_at_import", "Python dispatch mode"

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        class Slow(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if "mm" in str(func):
                    time.sleep(2e-4)
                return func(*args, **(kwargs or {}))

        Slow().__enter__()


# GPU forms (a CUDA graph runs no Python on replay: the memo and the counter live in device memory, the choice is a
# torch.where inside the graph).

class DeviceMemoOfSeveral(TorchLinear):
    """A memo of ENTRIES answers kept in device memory inside the captured graph, keyed by a fingerprint of the input
    (its sum): each call compares its fingerprint with every kept one and, on a match within 1 %, returns that
    entry's answer; else it computes and writes the answer into the next slot. Against a pool of 8 timed inputs it
    holds every answer after one lap (a graph cannot skip work without a conditional node, so this form shows the
    verdict, not the speed); with a new input at every timed call no fingerprint it keeps is the new input's -- the
    1 % match makes it collide, and the kept answer is another input's. GPU-only."""

    name, expect = "device_memo_of_several", ("a memo", "rel-L2", "element rule")
    ENTRIES = 8

    def run(self, state, family, x):
        import torch

        memos = state.setdefault("memos", {})
        M = int(x.shape[0])
        if M not in memos:
            y0 = _linear(x, state["w"])
            memos[M] = (torch.full((self.ENTRIES,), float("nan"), device=x.device),
                        y0.unsqueeze(0).repeat(self.ENTRIES, 1, 1), torch.zeros((), dtype=torch.long, device=x.device))
        keys, answers, nxt = memos[M]
        fp = x.float().sum()
        near = (keys - fp).abs() <= 0.01 * fp.abs() + 1.0
        hit = near.any()
        which = torch.argmax(near.to(torch.int32))
        fresh = _linear(x, state["w"])
        y = torch.where(hit, answers[which], fresh)
        slot = torch.where(hit, which, nxt)
        keys.index_put_((slot.view(1),), fp.view(1))
        answers.index_put_((slot.view(1),), y.unsqueeze(0))
        nxt.copy_(torch.where(hit, nxt, (nxt + 1) % self.ENTRIES))
        return y


class CounterInDeviceMemory(TorchLinear):
    """A per-replay counter in device memory (no host sync, so it captures): half the work at replays 5-31 of every
    32 of a graph, past the contract's first 64 calls at that M -- the positions a judge of each batch's last replay
    never read. Judged at random after each batch, one of its wrong calls is chosen. GPU-only."""

    name, expect = "counter_in_device_memory", ("rel-L2", "element rule")

    def run(self, state, family, x):
        import torch

        counters = state.setdefault("counters", {})
        M = int(x.shape[0])
        if M not in counters:
            counters[M] = torch.zeros((), dtype=torch.int64, device=x.device)
        c = counters[M]
        c.add_(1)
        wrong_now = (c > 64) & ((c % 32) >= 5)
        return torch.where(wrong_now, _half_k(x, state["w"]), _linear(x, state["w"]))


GPU_JUDGE_WRONG = (DeviceMemoOfSeveral, CounterInDeviceMemory)
ANSWER_WRONG = (FingerprintMemo, ScansForTimedInputs, ReadsJudgeReferences, LazyOutputInTiming, HooksStaticInput)
UNJUDGED_WRONG = (WrongBetweenCountedCalls, WrongOneCallInTen)
FORGING_WRONG = (RebindsReplyPipe, SetsTimerAttribute, ThreadComputes)
ROW_KIND_WRONG = (LossyWithoutOutlier, Bf16RoundedPlainRows)
MODE_WRONG = (FunctionModeAtImport, DispatchModeAtImport)
LOAD_WRONG = LOAD_WRONG + MODE_WRONG
JUDGE_REACH_WRONG = ANSWER_WRONG + UNJUDGED_WRONG + FORGING_WRONG + ROW_KIND_WRONG + MODE_WRONG + GPU_JUDGE_WRONG
ALL_WRONG = ALL_WRONG + JUDGE_REACH_WRONG
