"""Every timed graph is a checked graph: the output of each graph the sweep times is compared with the FP64
reference of the input it ran on, with the contract's rules, before timing and again after it.

    inputs = timed_inputs(shape, weight, seeds, device, contract, salt=s)  # once per shape, FP64 references too
    judge = GraphJudge(shape, contract)
    judge.graph(handle, x_static, inputs[k], what="cold timing graph 2 of 3", when="before timing") -> [reasons]
    judge.stream(handle, inputs, what="stream-mode graph", when="after timing") -> [reasons]

Why: the lifecycle contract replays one graph a few times. A candidate can behave one way there and another in
the graphs that are timed: exact on its first capture at each M and half the work on every later one (scored
1.403x over the baseline at all 30 official shapes before this check), or right for N replays and wrong after.
So the graphs that produce the samples are the graphs that are judged:
- before timing, each graph is replayed once on its own static input (a timing input, built by make_input with
  the checked calls' layout: probe rows, plain and spiky dense rows, pairs) and its output judged;
- where an input has no pair of dense rows (M=1), the graph is replayed on the partner input too (the spike
  negated) and the pair rule is applied across the two replays; the static input is put back and replayed once,
  so the graph leaves as it came;
- during timing, every timed call's output may be the judged one (below); stream-mode graphs are judged again
  after timing as the last replay left them.
A reason names the graph and the moment ("cold timing graph 2 of 3, during timing (batch 4), timed call 97 ...").

Every timed call (cold mode): a new input and a judge chosen after it ran (FreshFeed). A pool of timing inputs
cycled through is a set of answers to learn: a memo of any size keyed by the input's value is all hits after one
lap, and the pool's inputs and their FP64 references sit in the worker's memory before timing, where a candidate
can find them. So no timed input exists before its call: it is made just before it (outside the timed interval, in
harness code, no candidate thread alive) from entropy drawn then, and no timed call's reference exists until after
it ran. Every call's output is kept, and the calls to judge are drawn after they ran -- each with probability p
(judged_share) -- so whatever a candidate does at any call, that call may be the judged one: P(caught) =
1 - (1 - p)^w for w wrong calls. On the CPU, where every timed call runs the candidate's Python, the parent makes
the inputs and judges the outputs (profiler.worker.call_judge); on a GPU the worker does, after each batch of
replays: the judged calls of a batch together (profiler.check.rules.screen_outputs: one FP64 product for all of
them), the first failure again by check_output for its reasons; an output that answers an earlier input is named a
memo.
"""
from __future__ import annotations

import base64
import math
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from profiler.check.inputs import Layout, make_input, partner_input, spike_magnitude
from profiler.check.rules import (InputReference, WeightReference, check_output, input_reference, pair_reference,
                                  pair_rule, screen_outputs)


def _torch():
    import torch

    return torch


@dataclass
class TimedInput:
    """One timing input and what it is judged with (shared by every candidate of the shape)."""

    x: Any                                   # the input; each graph reads its own copy (x.clone())
    ref: InputReference
    partner: Any = None                      # partner_input(x) where x has no pair of its own (M=1)
    partner_ref: InputReference | None = None
    cross: Any = None                        # PairReference across x and partner


def timed_inputs(shape: Mapping, weight, seeds: Sequence[int], device, contract: Mapping,
                 wref: WeightReference | None = None, salt: int = 0) -> list[TimedInput]:
    """The timing inputs of one shape (one per seed: make_input's full layout, unscaled, values salted with `salt`:
    the shape task's, drawn when it starts) with their references."""
    M, K, y_dtype = int(shape["M"]), int(shape["K"]), shape["y_dtype"]
    wref = wref if wref is not None else WeightReference(weight)
    out = []
    for seed in seeds:
        x, layout = make_input(M, K, int(seed), device, dtype=shape["x_dtype"], contract=contract, salt=salt)
        tin = TimedInput(x, input_reference(x, wref, y_dtype, layout))
        if not layout.pairs and layout.spikes:
            partner, pairs = partner_input(x, layout)
            tin.partner = partner
            tin.partner_ref = input_reference(partner, wref, y_dtype, layout)
            tin.cross = pair_reference(x, wref, y_dtype, pairs, x_b=partner, exact_a=tin.ref.exact,
                                       exact_b=tin.partner_ref.exact)
        out.append(tin)
    return out


MEMO_CAUSE = ("its output is the right answer to an input read before, not to the one this call read (each timed "
              "call reads a new input): an answer kept across replays (a memo)")


class GraphJudge:
    """Judges timed graphs of one shape with the contract's rules (module docstring)."""

    def __init__(self, shape: Mapping, contract: Mapping):
        self.tol = float(shape["rel_l2_tol"])
        self.y_dtype = shape["y_dtype"]
        self.kw = dict(expect_shape=(int(shape["M"]), int(shape["N"])), expect_dtype=shape["y_dtype"],
                       contract=contract)

    def _check(self, y, iref: InputReference, where: str) -> list[str]:
        return check_output(y, iref, self.tol, where=where, **self.kw).reasons

    def graph(self, handle, x_static, tin: TimedInput, what: str, when: str, replay: bool = True) -> list[str]:
        """Reasons why the graph `handle` (static input x_static, holding tin.x) is wrong `when`; [] when right.
        replay=False: judge the output as the last replay left it (after timing)."""
        torch = _torch()
        where = f"{what}, {when}"
        if not torch.equal(x_static, tin.x):
            return [f"{where}: its static input x was modified in place"]
        if replay:
            handle.replay()
            _sync(x_static)
        reasons = self._check(handle.output, tin.ref, where)
        if reasons or tin.partner is None:
            return reasons
        first = handle.output.detach().clone()
        try:
            x_static.copy_(tin.partner)
            handle.replay()
            _sync(x_static)
            reasons = self._check(handle.output, tin.partner_ref, f"{where} (partner input)")
            if not reasons:
                reasons = pair_rule(first, handle.output, tin.cross, f"{where} (partner replays): ")[1]
        finally:
            x_static.copy_(tin.x)
            handle.replay()   # the graph leaves with its own input's answer, as it came
            _sync(x_static)
        return reasons

    def outputs(self, outputs: Sequence, shape_inputs: Sequence[TimedInput], what: str, when: str) -> list[str]:
        """The outputs of the calls of one graph (stream mode), call i on rotation(shape_inputs)[i % len]; the first
        failure's reasons. A partner couple's two calls are also judged together (pair rule)."""
        order = rotation(shape_inputs)
        for i, y in enumerate(outputs):
            k, is_partner = order[i % len(order)]
            tin = shape_inputs[k]
            where = f"{what}, call {i + 1} of {len(outputs)}, {when}"
            reasons = self._check(y, tin.partner_ref if is_partner else tin.ref, where)
            if not reasons and is_partner and i > 0:
                reasons = pair_rule(outputs[i - 1], y, tin.cross, f"{where} (with call {i}, partner inputs): ")[1]
            if reasons:
                return reasons
        return []


def rotation(shape_inputs: Sequence[TimedInput]) -> list[tuple[int, bool]]:
    """The inputs a stream-mode graph rotates through, in order: (index into shape_inputs, is the partner input); a
    partner input right after its input, so one graph replay holds the couple."""
    order = []
    for k, tin in enumerate(shape_inputs):
        order.append((k, False))
        if tin.partner is not None:
            order.append((k, True))
    return order


def rotation_inputs(shape_inputs: Sequence[TimedInput]) -> list:
    """The tensors of rotation(shape_inputs), in order (each a fresh copy: a stream graph's calls read their own)."""
    return [(shape_inputs[k].partner if partner else shape_inputs[k].x).clone()
            for k, partner in rotation(shape_inputs)]


def _sync(x) -> None:
    torch = _torch()
    if getattr(x, "is_cuda", False):
        torch.cuda.synchronize(x.device)


# --- every timed call: a fresh input, its output kept, the judged ones chosen after they ran ----------------------
# The operating system's entropy, bound when the worker imports this module (before any candidate): a candidate
# that replaces os.urandom later changes neither the inputs nor the choice of judged calls.
_URANDOM = os.urandom


def fresh_seed() -> int:
    """A 63-bit seed from the operating system's entropy, drawn now."""
    return int.from_bytes(_URANDOM(8), "little") >> 1


def judged_share(min_calls: int, miss_fraction: float, confidence: float) -> float:
    """The probability p with which each timed call is judged (independently, chosen after it ran) so that a
    candidate wrong at a fraction `miss_fraction` of `min_calls` or more timed calls is caught with probability
    `confidence` or more: P(caught) = 1 - (1 - p)^w with w = ceil(miss_fraction x calls) wrong calls, so
    p = 1 - (1 - confidence)^(1 / ceil(miss_fraction x min_calls)) (1 when that is below one call)."""
    wrong = math.ceil(miss_fraction * max(1, int(min_calls)) - 1e-9)
    if wrong < 1:
        return 1.0
    return min(1.0, 1.0 - (1.0 - confidence) ** (1.0 / wrong))


def detection_probability(share: float, calls: int, miss_fraction: float) -> float:
    """P(at least one judged call is wrong) for a candidate wrong at ceil(miss_fraction x calls) of `calls` timed
    calls, each judged with probability `share` independently: 1 - (1 - share)^w."""
    wrong = math.ceil(miss_fraction * int(calls) - 1e-9)
    return 0.0 if wrong < 1 else 1.0 - (1.0 - share) ** wrong


IMPLAUSIBLE = 1e-9   # a batch that judged fewer calls than its share gives with this probability was tampered with


def fewest_judged(share: float, calls: int, below: float = IMPLAUSIBLE) -> int:
    """The largest k with P(Binomial(calls, share) < k) <= below: judging each of `calls` calls with probability
    `share`, fewer than k calls are judged with probability `below` at most."""
    if share <= 0.0 or calls <= 0:
        return 0
    if share >= 1.0:
        return calls
    k, cdf = 0, 0.0
    while k <= calls:
        term = math.exp(math.lgamma(calls + 1) - math.lgamma(k + 1) - math.lgamma(calls - k + 1)
                        + k * math.log(share) + (calls - k) * math.log1p(-share))
        if cdf + term > below:
            return k
        cdf += term
        k += 1
    return calls


def _uniforms(n: int) -> list[float]:
    """n uniforms in [0, 1) from the operating system's entropy (53 bits each)."""
    raw = _URANDOM(8 * n)
    return [(int.from_bytes(raw[8 * i:8 * i + 8], "little") >> 11) * 2.0 ** -53 for i in range(n)]


def tensor_text(t) -> str:
    """A tensor's bytes as text for the worker protocol's JSON lines (base64 of its contiguous bytes, CPU)."""
    torch = _torch()
    raw = t.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()
    return base64.b64encode(raw).decode("ascii")


def tensor_from_text(text, shape: Sequence[int], dtype, device="cpu"):
    """tensor_text's inverse: a tensor of `shape` and `dtype` from its text -> the tensor; ValueError where the text
    is not base64 of exactly that many bytes."""
    torch = _torch()
    if not isinstance(text, str):
        raise ValueError(f"a {type(text).__name__}, not base64 text")
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    size = math.prod(int(d) for d in shape) * torch.empty((), dtype=dtype).element_size()
    if len(raw) != size:
        raise ValueError(f"{len(raw)} bytes, not the {size} of a {tuple(shape)} {dtype} tensor")
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(tuple(shape)).to(device)


class FreshFeed:
    """A cold graph's feed (GraphHandle.feed) during timing. Before each timed call (outside the timed interval) it
    writes a NEW input into the graph's static input; after it, the timer keeps the call's output. Two sources:

    - `parent` set (the CPU, whose timed calls run the candidate's Python, in a worker with a parent: the lab's
      only way to run one): the PARENT makes every input and judges every output (profiler.worker.call_judge).
      `parent` is (ask, tell) for this graph: ask() -> the parent's reply {"x": tensor_text of the input, "token"}
      (asked for by harness code just before the call, made by the parent from its own entropy then),
      tell(payload) sends the output kept at the call's end ({"y": tensor_text}) or why there is none ({"bad":
      reason}), with the input's token, the moment the call ends (settle(), before any other candidate code
      runs). No input before its call, reference, seed or choice of judged calls is ever in this process; an
      output, once sent, is out of its reach.
    - no `parent` (a GPU, whose timed calls are graph replays with no candidate code between them; or a task run
      in the caller's own process): Gaussian entries from a generator seeded afresh from the operating system's
      entropy at that moment, the graph's probe rows, every unpaired dense row with a spike or none (half each,
      drawn then too) and its pairs of dense rows (profiler.check.inputs.make_input's layout). No input exists
      before its call is fed and none repeats. Each call's input and output are kept in the feed's store (one slot
      per call of a batch); after each batch, judge() chooses the calls to judge with fresh entropy -- after they
      ran -- and judges them all at once (profiler.check.rules.screen_outputs), the first failure by check_output
      for its reasons, sent to `report` (the parent, profiler.worker.steps.verdict) the moment it is found.

    The output is copied by the timer after the call: on the GPU after its end event, from the graph's output; on
    the CPU inside the timed interval, after a type check of what the call returned (keep())."""

    def __init__(self, static, base: TimedInput, layout, capacity: int, out_shape, out_dtype, contract: Mapping,
                 parent: tuple | None = None, report=None):
        torch = _torch()
        if type(static) is not torch.Tensor:
            raise TypeError(f"the static input is a {type(static).__name__}, not a plain torch.Tensor")
        self.torch, self.static = torch, static
        M, K = int(static.shape[0]), int(static.shape[1])
        dev = static.device
        self.capacity, self.n, self.bad = int(capacity), 0, {}
        self.xs = torch.empty((self.capacity, M, K), dtype=static.dtype, device=dev)
        self.ys = torch.empty((self.capacity, *out_shape), dtype=out_dtype, device=dev)
        self.buf = torch.empty((M, K), dtype=torch.float32, device=dev)
        self.gen = torch.Generator(device=dev)
        kinds = dict(layout)
        self.base_x = base.x.detach().clone()
        self.probe_idx = torch.as_tensor(sorted(kinds), dtype=torch.long, device=dev)
        self.probe_vals = base.x.detach()[self.probe_idx].float().clone() if kinds else None
        dense = [r for r in range(M) if r not in kinds]
        pairs = list(layout.pairs)
        paired = {r for p in pairs for r in p}
        self.dense = torch.as_tensor(dense, dtype=torch.long, device=dev)
        self.always = torch.as_tensor([r in paired for r in dense], dtype=torch.bool, device=dev)
        pos = {r: i for i, r in enumerate(dense)}
        self.ia = torch.as_tensor([a for a, _ in pairs], dtype=torch.long, device=dev)
        self.ib = torch.as_tensor([b for _, b in pairs], dtype=torch.long, device=dev)
        self.pa = torch.as_tensor([pos[a] for a, _ in pairs], dtype=torch.long, device=dev)
        self.spike = spike_magnitude(K)
        self.layout = Layout(kinds, {}, pairs)   # what the judge needs: probe kinds and pairs (spikes: per call)
        self.contract = contract
        self.parent = parent        # (ask, tell): the parent makes each input and judges each output
        self.token = None           # the parent's token of the input fed last, sent back with its output
        self.report = report        # report(reasons): a failure, sent out of the worker when found
        self.failed: list[str] | None = None
        self.batches, self.batch_first = 0, 0   # batches judged; the first call of this one

    def _answers_earlier_input(self, k: int, earlier: list, judge: "GraphJudge", wref) -> bool:
        """Whether the output kept in slot k is the right answer to an input read before it (an earlier call of its
        batch, or the input the graph was captured and checked on): an answer kept across calls."""
        torch = self.torch
        xs = torch.cat([self.base_x.unsqueeze(0), self.xs[torch.as_tensor(earlier, dtype=torch.long,
                                                                          device=self.xs.device)]]) \
            if earlier else self.base_x.unsqueeze(0)
        ys = self.ys[k].unsqueeze(0).expand(xs.shape[0], *self.ys.shape[1:])
        return any(screen_outputs(ys, xs, wref, judge.y_dtype, self.layout, judge.tol, self.contract))

    @property
    def slot(self) -> int:
        return (self.n - 1) % self.capacity

    def __call__(self) -> None:
        """The next call's input, made now (by the parent where there is one), into the store and the static
        input (nothing waits on the host)."""
        torch = self.torch
        self.n += 1
        k = self.slot
        self.bad.pop(k, None)
        if self.parent is not None:
            reply = self.parent[0]()
            self.token = reply.get("token")
            self.xs[k].copy_(tensor_from_text(reply.get("x"), self.xs.shape[1:], self.xs.dtype, self.xs.device))
        else:
            self.token = None
            self._make(self.xs[k])
        if type(self.static) is not torch.Tensor:   # its class swapped since: its methods are the candidate's
            self.bad[k] = (f"the graph's static input was made a {type(self.static).__name__} (its class swapped), so "
                           f"the harness's copy into it would run the candidate's code")
        with torch._C.DisableTorchFunctionSubclass():   # the harness's copy runs torch's own copy, whatever the type
            torch.Tensor.copy_(self.static, self.xs[k])

    def _make(self, into) -> None:
        """A fresh input in this process (no parent): the layout above, from entropy drawn now."""
        torch, buf, g = self.torch, self.buf, self.gen
        g.manual_seed(fresh_seed())
        buf.normal_(generator=g)
        if self.probe_vals is not None:
            buf.index_copy_(0, self.probe_idx, self.probe_vals)
        nd = int(self.dense.numel())
        if nd:
            cols = torch.randint(buf.shape[1], (nd,), generator=g, device=buf.device)
            sign = torch.randint(0, 2, (nd,), generator=g, device=buf.device).to(buf.dtype) * 2.0 - 1.0
            on = self.always | (torch.rand((nd,), generator=g, device=buf.device) < 0.5)
            buf[self.dense, cols] = torch.where(on, sign * self.spike, buf[self.dense, cols])
            if self.ia.numel():
                ca = cols[self.pa]
                buf[self.ib] = buf[self.ia]
                buf[self.ib, ca] = -buf[self.ia, ca]
        into.copy_(buf)

    def keep(self, y) -> None:
        """Keep the output of the call just made (a plain tensor of the store's shape, dtype and device, else the
        call is wrong whether judged or not)."""
        torch, slot = self.torch, self.ys[self.slot]
        if type(y) is not torch.Tensor:
            self.bad[self.slot] = (f"returned a {type(y).__name__}, not a plain torch.Tensor, at a timed call (a lazy or "
                                   f"subclassed output would do its work after the clock stopped)")
        elif tuple(y.shape) != tuple(slot.shape) or y.dtype != slot.dtype or y.device != slot.device:
            self.bad[self.slot] = (f"returned shape {tuple(y.shape)} {y.dtype} on {y.device} at a timed call, not "
                                   f"{tuple(slot.shape)} {slot.dtype} on {slot.device}")
        else:
            torch.Tensor.copy_(slot, y)

    def settle(self) -> None:
        """Right after a timed call, before any other candidate code runs (the CPU timer calls it): the output kept
        at the call's end goes to the parent, which judges it (nothing to do without a parent)."""
        if self.parent is None or self.n == 0:
            return
        k = self.slot
        self.parent[1]({"token": self.token} | ({"bad": self.bad[k]} if k in self.bad else
                                                {"y": tensor_text(self.ys[k])}))

    def _fail(self, reasons: list[str]) -> list[str]:
        if self.failed is None:
            self.failed = list(reasons)
            if self.report is not None:
                self.report(list(reasons))
        return reasons

    def _judge_chosen(self, judge: "GraphJudge", wref: WeightReference, chosen: list[tuple[int, int, list]],
                      what: str, when: str) -> list[str]:
        """Judge the calls `chosen` [(slot, call number, the slots of its batch's calls before it)] all at once
        -> the first failure's reasons ([] when all are right); the earlier slots name a memo."""
        idx = self.torch.as_tensor([k for k, _, _ in chosen], dtype=self.torch.long, device=self.xs.device)
        ok = screen_outputs(self.ys[idx], self.xs[idx], wref, judge.y_dtype, self.layout, judge.tol, self.contract)
        for i, (k, n, earlier) in enumerate(chosen):
            if ok[i]:
                continue
            where = f"{what}, {when}, timed call {n} (judged at random after it ran)"
            iref = input_reference(self.xs[k], wref, judge.y_dtype, self.layout)
            reasons = judge._check(self.ys[k], iref, where) or [f"{where}: outside the contract's bounds"]
            if self._answers_earlier_input(k, earlier, judge, wref):
                reasons = [f"{reasons[0]}; {MEMO_CAUSE}"] + reasons[1:]
            return self._fail(reasons)
        return []

    def judge(self, judge: "GraphJudge", wref: WeightReference, share: float, calls: int, what: str,
              when: str) -> tuple[int, list[str]]:
        """Judge the last `calls` calls fed (one batch): each chosen with probability `share` from entropy drawn now;
        a call whose output was not a plain tensor fails whether chosen or not. -> (calls judged, reasons). With a
        parent, the parent has judged them as they ended: (0, [])."""
        calls = min(int(calls), self.n - self.batch_first, self.capacity)
        first = self.n - calls
        self.batches, self.batch_first = self.batches + 1, self.n
        if self.parent is not None or not calls:
            return 0, []
        slots = [(first + j) % self.capacity for j in range(calls)]
        for j, k in enumerate(slots):
            if k in self.bad:
                return 0, self._fail([f"{what}, {when}, call {first + j + 1}: {self.bad[k]}"])
        chosen = [j for j, u in zip(range(calls), _uniforms(calls)) if u < share]
        if len(chosen) < fewest_judged(share, calls):
            return len(chosen), self._fail([
                f"{what}, {when}: {len(chosen)} of {calls} calls were chosen, where each is chosen with probability "
                f"{share:.3f} (fewer than {fewest_judged(share, calls)} with probability {IMPLAUSIBLE:g}): the "
                f"judge's draws were changed (in-process forging)"])
        if not chosen:
            return 0, []
        return len(chosen), self._judge_chosen(judge, wref, [(slots[j], first + j + 1, slots[:j]) for j in chosen],
                                               what, when)
