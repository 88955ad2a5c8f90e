"""Known-wrong candidates: each one breaks one rule of the contract, and the harness must reject every one
with a clear reason (tests/profiler/test_wrong.py). `TorchLinear` is the correct control.

All follow the Candidate protocol (kernels/candidate.py): name, prepare(family, weight), run(state, family, x),
describe(family, M). CPU-friendly except MemoByPointer, whose bug only shows under CUDA-graph replay.
"""
from __future__ import annotations


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

    name, expect = "skipped_k_tail", "rel-L2"

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

    name, expect = "uninitialized_output", None  # NaN under a poisoned allocator, garbage/zeros on CPU

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

    name, expect = "scratch_not_reset", "rel-L2"

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
    CUDA graph's static input always has the same address, so capture records no work and replays are
    stale. GPU-only failure."""

    name, expect = "memo_by_pointer", "STALE"

    def run(self, state, family, x):
        if state.get("ptr") == x.data_ptr():
            return state["y"]
        state["ptr"], state["y"] = x.data_ptr(), _linear(x, state["w"])
        return state["y"]


CPU_WRONG = (StaleOutput, SkippedKTail, RouterBF16Weights, UninitializedOutput, WrongDtype, TransposedOutput,
             NaNRow, InputMutated, ScratchNotReset, WeightMutated)
GPU_ONLY_WRONG = (MemoByPointer,)
ALL_WRONG = CPU_WRONG + GPU_ONLY_WRONG
