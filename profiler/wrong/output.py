"""Known-wrong candidates that break a rule of the output (the correctness contract, profiler/check/rules.py): a
stale, partial, uninitialised, mistyped or NaN output, a mutated input or weight, lossy weight or input formats that
the probe rows, the range call or the element rule expose, outputs that lie about their values, answers computed
ahead from the documented seeds.
"""
from __future__ import annotations

from functools import lru_cache

from profiler.wrong.base import _linear, TorchLinear, _int8_groups  # noqa: F401


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

    name, expect = "scratch_not_reset", ("rel-L2", "zero input row", "element rule")

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



_DOCUMENTED_SEEDS = (*range(1, 12), *range(100, 108), *range(200, 211))



class PrecomputedAnswers(TorchLinear):
    """Regenerates, at its first call at each M, every input the contract draws from the documented seeds
    (inputs.make_input, the partner inputs too), computes their products once and from then on answers by looking
    the input up -- a table lookup instead of a product, exact wherever it is judged and timed. Only inputs nobody
    can compute ahead (the harness salts every input's values with fresh entropy) leave it without an answer; then it
    returns zeros, as a cheat has nothing better."""

    name, expect = "precomputed_answers", ("rel-L2", "zero input row", "sparse probe", "non-finite")

    def _fill(self, state, x) -> None:
        from profiler.check.contract import RANGE_SEED_OFFSET
        from profiler.check.inputs import RANGE_EXPONENT, make_input, partner_input

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
