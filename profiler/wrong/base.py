"""The shared parts of the known-wrong corpus: the baseline's arithmetic, the correct control every class derives
from, and the helpers several classes use (an int8 weight format, a capture probe, a per-shape call count, half the
work).
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



def _capturing(x) -> bool:
    import torch

    return bool(x.is_cuda and torch.cuda.is_current_stream_capturing())



def _count(state, x) -> int:
    """This call's number among the calls at x's shape (the state is shared by every M of a family)."""
    calls = state.setdefault("calls_by_shape", {})
    calls[tuple(x.shape)] = calls.get(tuple(x.shape), 0) + 1
    return calls[tuple(x.shape)]



def _device_count(state, x):
    """This call's number among the calls at x's M, counted on the device (a graph replay runs it too): the counter
    tensor, after this call's increment."""
    import torch

    counters = state.setdefault("counters", {})
    M = int(x.shape[0])
    if M not in counters:
        counters[M] = torch.zeros((), dtype=torch.int64, device=x.device)
    return counters[M].add_(1)


def _half_k(x, w):
    """Half the work: the product over the first half of K only (what each form returns where it would cheat)."""
    half = x.shape[1] // 2
    return _linear(x[:, :half].contiguous(), w[:, :half].contiguous())
