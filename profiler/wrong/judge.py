"""Known-wrong candidates against the judge of timed calls (docs/trust.md, the classes; profiler/check/timed.py
FreshFeed): answers computed outside the timed call (a memo across replays of one entry or many, keyed by pointer,
value or fingerprint; inputs found in memory and answered ahead; the judge's references read from memory; work
inside the harness's own copies), timed calls a judge of fixed positions would never read (counted in Python or in
device memory), lossy arithmetic exact only where a row or column can be recognised (outlier columns, probe rows,
rows with an activation outlier).
"""
from __future__ import annotations

from functools import lru_cache

from profiler.wrong.base import _linear, TorchLinear, _int8_groups, _count, _device_count, _half_k  # noqa: F401


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

    name, expect = "memo_in_graph", ("a memo", "rel-L2")
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



class WrongBetweenCountedCalls(TorchLinear):
    """Counts its calls at each shape and returns half the work at calls 5-31 of every 32 past the contract's (the
    positions a judge of the last replay of each batch never reads), right at the others."""

    name, expect = "wrong_between_counted_calls", ("rel-L2", "element rule")

    def run(self, state, family, x):
        n = _count(state, x)
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
        kept = answers.index_select(0, which.view(1)).squeeze(0)   # a tensor index, never a Python int (no sync)
        y = torch.where(hit, kept, fresh)
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

        c = _device_count(state, x)
        wrong_now = (c > 64) & ((c % 32) >= 5)
        return torch.where(wrong_now, _half_k(x, state["w"]), _linear(x, state["w"]))


def _own_feed(x):
    """The harness's feed whose static input is x (the timed call's input), found in the worker's memory by its
    class's name; None outside timing."""
    import gc

    for obj in gc.get_objects():
        if type(obj).__name__ == "FreshFeed" and getattr(obj, "static", None) is not None and \
                obj.static.data_ptr() == x.data_ptr():
            return obj
    return None


class RewritesJudgeStore(TorchLinear):
    """Rewrites the judge's kept copies of its other calls: from its feed's second batch on (once it can tell where
    a batch ends: the feed counts them), every timed call but a batch's last sets every OTHER kept input and output
    to zero (zero in, zero out: right by every rule) and does half the work; the last call, whose copy nothing
    rewrites before a batch is judged, does all of it. Against a judge that reads a batch's kept copies after the
    batch, every judged call reads right. Closed where candidate code runs between calls (the CPU) by the parent's
    judge: each output is sent out of the worker as its call ends (FreshFeed.settle, profiler.worker.call_judge), so
    no kept copy is read after candidate code ran; on a GPU the timed calls are graph replays and no candidate code
    runs between them."""

    name, expect = "rewrites_judge_store", ("rel-L2", "element rule", "judged at random")

    def run(self, state, family, x):
        feed = _own_feed(x)
        if feed is None or feed.batches < 1:
            return _linear(x, state["w"])
        others = [k for k in range(feed.capacity) if k != feed.slot]
        feed.xs[others] = 0
        feed.ys[others] = 0
        if feed.n - feed.batch_first >= feed.capacity:
            return _linear(x, state["w"])
        return _half_k(x, state["w"])


class ReplaysKeptPair(RewritesJudgeStore):
    """RewritesJudgeStore with a real pair: into every other kept slot it writes the input and output of its last
    call done in full (a genuine input with its right answer) instead of zeros."""

    name = "replays_kept_pair"

    def run(self, state, family, x):
        feed = _own_feed(x)
        if feed is None or feed.batches < 1:
            return _linear(x, state["w"])
        pair = state.get("pair")
        if pair is not None:
            others = [k for k in range(feed.capacity) if k != feed.slot]
            feed.xs[others] = pair[0]
            feed.ys[others] = pair[1]
        if feed.n - feed.batch_first >= feed.capacity or pair is None:
            y = _linear(x, state["w"])
            state["pair"] = (x.detach().clone(), y.detach().clone())
            return y
        return _half_k(x, state["w"])


class ClearsJudgeVerdict(TorchLinear):
    """Wrong at every timed call until its feed has judged one wrong, then right, and at every call it clears what
    the worker holds of the verdict (the feed's failure, the harness's records of the candidate's drift, found in
    memory): the worker's reply says it was right. Where the worker judges (a GPU), the verdict left the worker when
    it was found (profiler.worker.steps.verdict) and the parent applies it to the reply ("in-process forging");
    where the parent judges (the CPU), the worker never holds a verdict to clear."""

    name, expect = "clears_judge_verdict", ("in-process forging", "by the parent")

    def run(self, state, family, x):
        import gc

        feed = _own_feed(x)
        if feed is None:
            return _linear(x, state["w"])
        if feed.failed is not None:
            state["caught"] = True
        feed.failed = None
        feed.bad.clear()
        for obj in gc.get_objects():
            if type(obj).__name__ == "Entry" and getattr(obj, "drifted", None):
                obj.drifted = []
        return _linear(x, state["w"]) if state.get("caught") else _half_k(x, state["w"])


class PausesJudge(TorchLinear):
    """Takes its feed away from the parent's judge for a batch and gives it back before the batch ends: from its
    feed's second batch on, its first call of a batch sets the feed's `parent` to None (the next inputs are then
    made in the worker and no output goes out) and does half the work, its last call puts `parent` back and does
    all of it. The feed reads as given when the batch is checked; the parent's count of the inputs it fed does
    not (fewer than the calls timed). Where the worker judges (a GPU) the feed has no parent and the batch judge
    reads the half-work calls."""

    name, expect = "pauses_judge", ("in-process forging", "judged at random")

    def run(self, state, family, x):
        feed = _own_feed(x)
        if feed is None or feed.batches < 1:
            return _linear(x, state["w"])
        position = feed.n - feed.batch_first
        if position == 1 and feed.parent is not None:
            state["parent"], feed.parent = feed.parent, None
        if position >= feed.capacity:
            feed.parent = state.get("parent", feed.parent)
            return _linear(x, state["w"])
        return _half_k(x, state["w"])


class SkewsJudgeShare(TorchLinear):
    """Changes the worker's draws of which calls are judged: from its feed's second batch on, it replaces the
    worker's uniform draws (profiler.check.timed._uniforms, found by name) with ones no share chooses and does half
    the work at every call. The worker's batch judge (a GPU) then chooses far fewer calls than its share gives
    (fewer than it does with probability 1e-9: in-process forging); the parent's judge (the CPU) draws in its own
    process, which no worker code reaches, and reads the half-work calls."""

    name, expect = "skews_judge_share", ("in-process forging", "judged at random")

    def run(self, state, family, x):
        import sys

        feed = _own_feed(x)
        timed = sys.modules.get("profiler.check.timed")
        if feed is None or feed.batches < 1 or timed is None:
            return _linear(x, state["w"])
        if not state.get("skewed"):
            state["skewed"], timed._uniforms = True, (lambda n: [1.0] * n)
        return _half_k(x, state["w"])
