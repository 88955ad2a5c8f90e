"""Diagnostic candidates (not in the registry): y = x @ W^T as PARTS column blocks of y, each a `torch.mm` on its own
stream forked from the caller's stream and joined back to it (so a CUDA graph captures the blocks as parallel
branches). The question they answer: do the library's split-K products at 32-256 tokens, which leave SMs idle and
end in a separate reduction kernel, overlap well enough side by side to beat one product on the whole N?

    python -m profiler run --plan best --candidate tests/benchmarks/split_streams_candidate.py:Split2 \\
        --shapes qkv_gate:32,128 --no-probes

`Split2`, `Split3`, `Split4`: two, three or four blocks of whole 64-column groups.
"""
from __future__ import annotations


class SplitStreams:
    parts = 2

    @property
    def name(self) -> str:
        return f"split_streams_{self.parts}"

    def prepare(self, family: str, weight):
        import torch

        N = int(weight.shape[0])
        groups = N // 64
        cuts = [64 * (groups * i // self.parts) for i in range(self.parts)] + [N]
        return {"w": weight.contiguous(), "blocks": list(zip(cuts[:-1], cuts[1:])),
                "streams": [torch.cuda.Stream(weight.device) for _ in range(self.parts - 1)]
                if weight.is_cuda else []}

    def run(self, state, family: str, x):
        import torch

        w = state["w"]
        if w.dtype != x.dtype or not x.is_cuda:       # the router's FP32 weights: not what this asks
            return torch.nn.functional.linear(x.to(w.dtype), w).to(w.dtype)
        y = torch.empty((x.shape[0], w.shape[0]), dtype=x.dtype, device=x.device)
        main = torch.cuda.current_stream(x.device)
        for s in state["streams"]:
            s.wait_stream(main)
        for i, (a, b) in enumerate(state["blocks"]):
            if i == 0:
                torch.mm(x, w[a:b].t(), out=y[:, a:b])
                continue
            side = state["streams"][i - 1]
            with torch.cuda.stream(side):
                torch.mm(x, w[a:b].t(), out=y[:, a:b])
        capturing = torch.cuda.is_current_stream_capturing()
        for s in state["streams"]:
            main.wait_stream(s)
            if not capturing:      # eager: the allocator must not hand x or y out before the side work is done
                x.record_stream(s)
                y.record_stream(s)
        return y

    def describe(self, family: str, M: int) -> str:
        return f"{self.parts} column blocks of torch.mm on {self.parts} streams"


class Split2(SplitStreams):
    parts = 2


class Split3(SplitStreams):
    parts = 3


class Split4(SplitStreams):
    parts = 4
