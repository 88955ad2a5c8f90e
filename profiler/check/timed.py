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
  the checked calls' layout: probe rows, dense spiky rows, pairs) and its output judged;
- after timing, the output the last timed replay left is judged as it is (no extra replay): a graph whose output
  drifts after many replays fails here;
- where an input has no pair of dense rows (M=1), the graph is replayed on the partner input too (the spike
  negated) and the pair rule is applied across the two replays; the static input is put back and replayed once,
  so the graph leaves as it came.
The FP64 product is the expensive part: it is computed once per timing input and shared by every candidate; each
judgement is then a few reductions on the device.
A reason names the graph and the moment ("cold timing graph 2 of 3, after timing (its last timed replay): ...").

A fresh input for every timed replay (ReplayFeed, cold mode): a graph whose input never changes lets a candidate
keep its last answer and return it again -- a memo across replays, right on every judged output and as fast as a
copy (scored 1.52 on CPU before this). So each cold graph's timed replays cycle through the shape's pool of salted
inputs (their FP64 references computed once, like the rest), the next one copied into the graph's static input
before the flush, outside the timed interval: no two consecutive replays of a graph read the same input, and none
reads the input the graph was captured and checked on (a memo learned there would otherwise pass every judgement
that happened to fall on that input again: once in input_pool replays, so a short timing could score it). The judge
then reads the last replay's output against the input that replay read (ReplayFeed.last), during timing (a sample
of batches) and after it; an output that is the previous input's answer is named as a memo. What it does not
close: a memo holding an answer for every input of the pool (the pool repeats after input_pool replays) -- it is
rejected only where it returns a wrong answer, and otherwise timed at the cost of comparing its input with every
input it kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from profiler.check.rules import (InputReference, WeightReference, check_output, input_reference, make_input,
                            pair_reference, pair_rule, partner_input)


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


class ReplayFeed:
    """A graph's feed (GraphHandle.feed): each call copies the pool's next input into the graph's static input, so
    the next replay reads another input than the last one. The input the graph was captured and checked on
    (pool[start]) is never fed again where the pool has three or more: an answer kept from the capture or from the
    check before timing is wrong at every timed replay, not right once every len(pool) replays. `last`: the input
    the last replay read."""

    def __init__(self, static, pool: Sequence[TimedInput], start: int):
        self.static, self.pool, self.k = static, list(pool), start % len(pool)
        self.skip = self.k if len(self.pool) >= 3 else None

    def __call__(self) -> None:
        self.k = (self.k + 1) % len(self.pool)
        if self.k == self.skip:
            self.k = (self.k + 1) % len(self.pool)
        self.static.copy_(self.pool[self.k].x)

    @property
    def last(self) -> TimedInput:
        return self.pool[self.k]


def fed_input(handle, default: TimedInput) -> TimedInput:
    """The input the graph's last replay read: its feed's last, or `default` for a graph without a feed."""
    feed = getattr(handle, "feed", None)
    return feed.last if isinstance(feed, ReplayFeed) else default


MEMO_CAUSE = ("its output is the right answer to another timed input, not to the one this replay read (each timed "
              "replay reads a new input): an answer kept across replays (a memo)")


class GraphJudge:
    """Judges timed graphs of one shape with the contract's rules (module docstring)."""

    def __init__(self, shape: Mapping, contract: Mapping):
        self.tol = float(shape["rel_l2_tol"])
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

    def stale(self, handle, reasons: list[str]) -> list[str]:
        """reasons, with MEMO_CAUSE added where the graph's output (as its last replay left it) is the right answer
        to another input of its feed's pool (only looked for once the output failed)."""
        feed = getattr(handle, "feed", None)
        if not reasons or not isinstance(feed, ReplayFeed):
            return reasons
        for k, tin in enumerate(feed.pool):
            if k != feed.k and not self._check(handle.output, tin.ref, "another input"):
                return [f"{reasons[0]}; {MEMO_CAUSE}"] + reasons[1:]
        return reasons

    def outputs(self, outputs: Sequence, tins: Sequence[TimedInput], what: str, when: str) -> list[str]:
        """The outputs of the calls of one graph (stream mode), call i on rotation(tins)[i % len]; the first
        failure's reasons. A partner couple's two calls are also judged together (pair rule)."""
        order = rotation(tins)
        for i, y in enumerate(outputs):
            k, is_partner = order[i % len(order)]
            tin = tins[k]
            where = f"{what}, call {i + 1} of {len(outputs)}, {when}"
            reasons = self._check(y, tin.partner_ref if is_partner else tin.ref, where)
            if not reasons and is_partner and i > 0:
                reasons = pair_rule(outputs[i - 1], y, tin.cross, f"{where} (with call {i}, partner inputs): ")[1]
            if reasons:
                return reasons
        return []


def rotation(tins: Sequence[TimedInput]) -> list[tuple[int, bool]]:
    """The inputs a stream-mode graph rotates through, in order: (index into tins, is the partner input); a
    partner input right after its input, so one graph replay holds the couple."""
    order = []
    for k, tin in enumerate(tins):
        order.append((k, False))
        if tin.partner is not None:
            order.append((k, True))
    return order


def rotation_inputs(tins: Sequence[TimedInput]) -> list:
    """The tensors of rotation(tins), in order (each a fresh copy: a stream graph's calls read their own)."""
    return [(tins[k].partner if partner else tins[k].x).clone() for k, partner in rotation(tins)]


def _sync(x) -> None:
    torch = _torch()
    if getattr(x, "is_cuda", False):
        torch.cuda.synchronize(x.device)
