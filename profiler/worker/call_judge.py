"""The judge of every timed call on the CPU, in the parent process: the worker never holds a timed input before its
call, a reference, a seed, or the choice of which calls are judged.

    judge = CallJudge(task, contract)        # one shape task of a CPU worker, cold mode (wanted(task, config))
    judge.input(msg) -> the reply to the worker's {"msg": "input"}: {"op": "input", "x": tensor_text, "token"}
    judge.output(msg)                        # the worker's {"msg": "output", "token", "y" | "bad"}: chosen or not
    judge.apply(result) -> the task's result with the parent's verdicts, counts and judged share

Why in the parent: on the CPU every timed call is the candidate's Python, and whatever runs in the worker can read
and rewrite what the worker holds -- the inputs it made, their references, the outputs it kept, the draws that
choose the judged calls, the judge's verdict. So the worker holds none of them:
- each timed call's input is made HERE when the worker's harness asks for it, just before the call (outside its
  timed interval, while no candidate code runs): profiler.check.inputs.timed_call_input (probe rows, dense rows
  with a spike or none, pairs), its values from a salt drawn from this process's entropy then (the graph's probe
  rows and pairs sit where a seed drawn here for the graph puts them); no input exists anywhere before its call,
  none repeats;
- the output the call left at its end is sent here the moment the call ends (FreshFeed.settle, before any other
  candidate code runs), with the token its input came with (an output of an input this process did not make for
  that call is forging); once in the pipe, nothing the worker does changes it;
- each output is chosen for judging with probability `share` (profiler.worker.shape_task.judge_share) by this
  process's entropy as it arrives; the chosen ones of a graph are judged together once a batch's worth is in (and
  the rest at the answer), on the inputs made here, against this process's own FP64 product of its own copy of
  the weight (made from the shape and the seed as the worker makes it), with the contract's rules
  (profiler.check.rules.screen_outputs: one product for them all; the first failure again by check_output for its
  reasons; an output that answers an earlier input of its graph is named a memo). This process judges while the
  worker waits for its next input, so no judging runs beside a timed call;
- at the task's answer, every input fed must have come back as an output, and each result's timed samples are no
  more than the inputs this process fed that candidate (a feed replaced or paused in the worker leaves the count
  short); the shape's `info.judged` is this process's count.
A failure becomes the candidate's "incorrect" at "time" (profiler.worker.records.apply_verdicts), whatever the
worker's reply says.
"""
from __future__ import annotations

import collections
import os
from dataclasses import dataclass, field

from datasets.shapes import shape_identity
from profiler.check.inputs import as_dtype, fresh_salt, make_weight, timed_call_input
from profiler.check.rules import WeightReference, check_output, input_reference, screen_outputs
from profiler.check.timed import (MEMO_CAUSE, GraphJudge, detection_probability, fresh_seed, tensor_from_text,
                                  tensor_text)

FORGING = "in-process forging"


def _torch():
    import torch

    return torch


def wanted(task: dict, config: dict) -> bool:
    """Whether the parent judges this task's timed calls: a shape task in cold mode on a CPU worker."""
    from profiler.worker.settings import SweepSettings

    return (task.get("kind") == "shape" and str(config.get("device") or "cuda").split(":")[0] == "cpu"
            and SweepSettings.from_dict(task.get("settings") or {}).mode == "cold")


def _uniform() -> float:
    """A uniform in [0, 1) from this process's entropy (53 bits). Its own, not profiler.check.timed._uniforms: that
    one is the worker's draw, which a candidate in the worker can replace (SkewsJudgeShare); the tests that drive
    this judge in the candidate's process show the parent's draws untouched by it."""
    return (int.from_bytes(os.urandom(8), "little") >> 11) * 2.0 ** -53


@dataclass
class _Graph:
    """One timed graph's calls as this process sees them."""

    seed: int = field(default_factory=fresh_seed)   # its inputs' layout (probe rows, pairs); values salted per call
    waiting: collections.deque = field(default_factory=collections.deque)   # (call, x, layout, token) fed, not back
    recent: collections.deque = field(default_factory=lambda: collections.deque(maxlen=32))  # (call, x, layout)
    chosen: list = field(default_factory=list)      # (call, x, layout, y) chosen, judged when a batch is full
    fed: int = 0
    returned: int = 0
    judged: int = 0


class CallJudge:
    """The parent's judge of one CPU shape task's timed calls (module docstring)."""

    def __init__(self, task: dict, contract: dict, stand_in: bool = False):
        from profiler.worker.settings import SweepSettings
        from profiler.worker.shape_task import judge_share

        shape = task["shape"]
        settings = SweepSettings.from_dict(task.get("settings", {}))
        self.shape, self.contract = shape, contract
        self.M, self.N, self.K = int(shape["M"]), int(shape["N"]), int(shape["K"])
        self.x_dtype, self.y_dtype = shape["x_dtype"], shape["y_dtype"]
        weight = make_weight(shape["family"], self.N, self.K, settings.seed, "cpu", dtype=shape["w_dtype"])
        self.wref = WeightReference(weight)
        self.judge = GraphJudge(shape, contract)
        self.share = judge_share(settings.timing)
        self.batch = int(settings.timing.batch_rounds)
        self.miss_fraction = settings.timing.judge_miss_fraction
        self.graphs: dict[tuple[str, str], _Graph] = {}
        self.failed: dict[str, list[str]] = {}
        self.stand_in = stand_in   # a worker whose timer a test replaced (an init hook): it may time no call at all

    def _graph(self, msg: dict) -> tuple[str, str, _Graph]:
        candidate, graph = str(msg.get("candidate")), str(msg.get("graph"))
        return candidate, graph, self.graphs.setdefault((candidate, graph), _Graph())

    def _fail(self, candidate: str, reasons: list[str]) -> None:
        self.failed.setdefault(candidate, [str(r)[:600] for r in reasons])

    def input(self, msg: dict) -> dict:
        """A new input for the next timed call of the message's graph, made now from this process's entropy."""
        _, _, g = self._graph(msg)
        x, layout = timed_call_input(self.M, self.K, g.seed, fresh_salt(), self.x_dtype, self.contract)
        g.fed += 1
        token = os.urandom(8).hex()
        g.waiting.append((g.fed, x, layout, token))
        return {"op": "input", "x": tensor_text(x), "token": token}

    def output(self, msg: dict) -> None:
        """The output of the oldest call of the message's graph still out: chosen for judging with probability
        `share` now; the chosen ones are judged a batch at a time (_judge_chosen). An output this process cannot
        judge fails its candidate with the reason (a message is the worker's, never trusted to be well formed)."""
        try:
            self._output(msg)
        except Exception as exc:
            self._fail(str(msg.get("candidate")), [f"{msg.get('graph')}, during timing: the parent could not judge "
                                                   f"its output ({type(exc).__name__}: {exc})"[:400]])

    def _output(self, msg: dict) -> None:
        candidate, graph, g = self._graph(msg)
        if not g.waiting:
            self._fail(candidate, [f"{graph}, during timing: an output came back for no input fed ({FORGING})"])
            return
        n, x, layout, token = g.waiting.popleft()
        g.returned += 1
        if candidate in self.failed:
            return
        where = f"{graph}, during timing (batch {(n - 1) // self.batch + 1}), timed call {n}"
        if msg.get("token") != token:
            self._fail(candidate, [f"{where}: the output that came back is not of the input fed for this call (its "
                                   f"token is not that input's: the feed was changed in the worker; {FORGING})"])
            return
        if "bad" in msg:
            self._fail(candidate, [f"{where}: {str(msg['bad'])[:400]}"])
            return
        try:
            y = tensor_from_text(msg.get("y"), (self.M, self.N), as_dtype(self.y_dtype))
        except ValueError as exc:
            self._fail(candidate, [f"{where}: its output did not come back whole ({exc}; {FORGING})"])
            return
        if _uniform() < self.share:
            g.judged += 1
            g.chosen.append((n, x, layout, y))
            if len(g.chosen) >= self.batch:
                self._judge_chosen(candidate, graph, g)   # an exception here: output() fails the candidate
        g.recent.append((n, x, layout))

    def _judge_chosen(self, candidate: str, graph: str, g: _Graph) -> None:
        """Judge a graph's chosen outputs together (one FP64 product: its inputs share their probe rows and pairs),
        the first failure again by check_output for its reasons, named a memo where it answers an earlier input."""
        chosen, g.chosen = g.chosen, []
        if not chosen or candidate in self.failed:
            return
        torch = _torch()
        ys, xs = torch.stack([c[3] for c in chosen]), torch.stack([c[1] for c in chosen])
        ok = screen_outputs(ys, xs, self.wref, self.judge.y_dtype, chosen[0][2], self.judge.tol, self.contract)
        bad = next((c for c, passed in zip(chosen, ok) if not passed), None)
        if bad is None:
            return
        n, x, layout, y = bad
        where = (f"{graph}, during timing (batch {(n - 1) // self.batch + 1}), timed call {n} (judged at random "
                 f"after it ran, by the parent)")
        iref = input_reference(x, self.wref, self.judge.y_dtype, layout)
        reasons = (check_output(y, iref, self.judge.tol, where=where, **self.judge.kw).reasons
                   or [f"{where}: outside the contract's bounds"])
        earlier = [(px, playout) for m, px, playout in g.recent if m < n]
        if any(screen_outputs(y.unsqueeze(0), px.unsqueeze(0), self.wref, self.judge.y_dtype, playout,
                              self.judge.tol, self.contract)[0] for px, playout in earlier):
            reasons = [f"{reasons[0]}; {MEMO_CAUSE}"] + reasons[1:]
        self._fail(candidate, reasons)

    def apply(self, result: dict) -> dict:
        """The task's result with this process's verdicts (a failure found, an input whose output never came back,
        a candidate timed more often than it was fed) and its own `info.judged`."""
        from profiler.worker.records import apply_verdicts

        if not isinstance(result, dict) or not isinstance(result.get("results"), list):
            return result
        for (candidate, graph), g in self.graphs.items():
            try:
                self._judge_chosen(candidate, graph, g)
            except Exception as exc:
                self._fail(candidate, [f"{graph}, during timing: the parent could not judge its outputs "
                                       f"({type(exc).__name__}: {exc})"[:400]])
        timed = {r.get("candidate"): r for r in result["results"] if isinstance(r, dict)}
        for (candidate, graph), g in self.graphs.items():
            if candidate in timed and g.waiting:
                self._fail(candidate, [f"{graph}, during timing: {g.fed} inputs were fed and the outputs of "
                                       f"{g.returned} came back: the others were held back ({FORGING})"])
        for candidate, r in timed.items():
            fed = sum(g.fed for (c, _), g in self.graphs.items() if c == candidate)
            n = r.get("n_samples")
            if isinstance(n, int) and n > fed and not (self.stand_in and fed == 0):
                self._fail(candidate, [f"during timing: {n} timed calls recorded, {fed} inputs fed by the parent: "
                                       f"calls were timed on inputs it did not make ({FORGING})"])
        result = apply_verdicts(result, [{"candidate": c, "shape": shape_identity(self.shape), "reasons": reasons}
                                         for c, reasons in self.failed.items()], note=None)
        right = {r.get("candidate") for r in result["results"]} or {c for c, _ in self.graphs}
        counts = [(sum(g.fed for (c, _), g in self.graphs.items() if c == name),
                   sum(g.judged for (c, _), g in self.graphs.items() if c == name)) for name in right]
        if counts and isinstance(result.get("info"), dict):
            calls = min(c for c, _ in counts)
            result["info"]["judged"] = {
                "share": round(self.share, 6), "miss_fraction": self.miss_fraction, "calls": calls,
                "judged": min(j for _, j in counts), "by": "the parent",
                "p_catch": round(detection_probability(self.share, calls, self.miss_fraction), 6)}
        return result
